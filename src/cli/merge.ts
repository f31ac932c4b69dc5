import { copyFileSync, existsSync, mkdirSync, readdirSync, statSync } from "node:fs";
import { basename, dirname, join, relative, resolve } from "node:path";
import { readReplayFile, type ReplayFile } from "../explore/findings.ts";
import { parse, UsageError } from "./args.ts";

export const mergeUsage = `Usage: settle merge <dirs...> [--out DIR] [--json]

Combines the findings that shards wrote (each shard's .settle/findings tree, or any directory holding
replay files): one finding per scenario, variant, verdict and property, keeping the one from the earliest
run. Copies them (with their traces) into --out (default .settle/findings).

Exit codes: 0 no finding, 1 a finding, 2 usage or input error.
`;

function replayFiles(dir: string): string[] {
  if (!existsSync(dir)) throw new UsageError(`${dir}: no such directory`);
  if (!statSync(dir).isDirectory()) return dir.endsWith(".json") ? [dir] : [];
  return readdirSync(dir).sort().flatMap((name) => replayFiles(join(dir, name)));
}

export async function mergeCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv, { out: { type: "string" }, json: { type: "boolean" } });
  if (positionals.length === 0) throw new UsageError("expects one or more directories of findings");
  const out = resolve(typeof values.out === "string" ? values.out : ".settle/findings");
  const best = new Map<string, { path: string; file: ReplayFile }>();
  for (const dir of positionals) {
    for (const path of replayFiles(resolve(dir))) {
      const { file } = readReplayFile(path);
      const key = `${file.scenario}\0${file.variant}\0${file.verdict}\0${file.property ?? ""}`;
      const seen = best.get(key);
      if (seen === undefined || (file.run ?? Infinity) < (seen.file.run ?? Infinity)) best.set(key, { path, file });
    }
  }
  const merged = [...best.values()].sort((a, b) => a.path.localeCompare(b.path));
  for (const { path } of merged) {
    const target = join(out, basename(dirname(path)), basename(path));
    if (resolve(target) === resolve(path)) continue;
    mkdirSync(dirname(target), { recursive: true });
    const trace = path.replace(/\.json$/, ".trace.jsonl");
    if (existsSync(trace)) copyFileSync(trace, target.replace(/\.json$/, ".trace.jsonl"));
    copyFileSync(path, target);
  }
  const rows = merged.map(({ path, file }) => ({ scenario: file.scenario, variant: file.variant, verdict: file.verdict, property: file.property, run: file.run ?? null, replay: relative(process.cwd(), join(out, basename(dirname(path)), basename(path))) }));
  if (values.json === true) process.stdout.write(`${JSON.stringify({ findings: rows }, null, 2)}\n`);
  else for (const r of rows) process.stdout.write(`${r.verdict}${r.property ? `: ${r.property}` : ""}  (${r.scenario} --variant ${r.variant}, run ${r.run ?? "?"})  ${r.replay}\n`);
  return rows.length > 0 ? 1 : 0;
}
