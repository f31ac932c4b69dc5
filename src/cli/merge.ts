import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { basename, dirname, join, relative, resolve } from "node:path";
import { readReplayFile, readSearchRecord, searchRecordSuffix, searchRecordVersion, writeSearchRecord, type ReplayFile, type SearchRecord } from "../explore/findings.ts";
import { boundsText, comparePositions, type BoundedStats, type SearchPosition, type Unit } from "../explore/bounded.ts";
import { parse, UsageError } from "./args.ts";

export const mergeUsage = `Usage: settle merge <dirs...> [--out DIR] [--json]

Combines the findings that shards wrote (each shard's .settle/findings tree, or any directory holding
replay files): one finding per scenario, variant, verdict and property, keeping the one from the earliest
run (for a bounded search, the earliest in its search order). Copies them (with their traces) into --out
(default .settle/findings). The search records of bounded searches (<variant>.search.json, written beside
the findings) are added up: one line per search says whether every shard's part was complete, with the
schedules, pruned schedules and fault placements of all shards, as the unsharded search reports them, and
the merged record is written into --out when no shard is missing.

Exit codes: 0 no finding, 1 a finding, 2 usage or input error.
`;

function walk(dir: string): string[] {
  if (!existsSync(dir)) throw new UsageError(`${dir}: no such directory`);
  if (!statSync(dir).isDirectory()) return dir.endsWith(".json") ? [dir] : [];
  return readdirSync(dir).sort().flatMap((name) => walk(join(dir, name)));
}

interface Found {
  path: string;
  file: ReplayFile;
  /** Its first schedule's place in a bounded search, from the search record beside it. */
  position?: SearchPosition;
}

/** True when `a` came first: by search position when both have one, else by run index. */
function earlier(a: Found, b: Found): boolean {
  if (a.position !== undefined && b.position !== undefined) return comparePositions(a.position, b.position) < 0;
  return (a.file.run ?? Infinity) < (b.file.run ?? Infinity);
}

/** What identifies a bounded search apart from its shard: records with the same identity are parts of one search. */
function identity(record: SearchRecord): string {
  const { scenario, variant, workload, params, seed, stats } = record;
  return JSON.stringify({ scenario, variant, workload, params, seed, preemptions: stats.preemptions, faultPoints: stats.faultPoints, reduction: stats.reduction, latencyMs: stats.latencyMs });
}

interface MergedSearch {
  record: SearchRecord;
  shards: number;
  missing: number[];
  /** Shards whose own part stopped early (--runs, --first, a budget). */
  stopped: number[];
}

function compareUnits(a: Unit, b: Unit): number {
  return a[0] - b[0] || a[1] - b[1] || a[2] - b[2];
}

/** Schedules of `units` before the unit of `position`. */
function schedulesBefore(units: readonly Unit[], position: SearchPosition): number {
  const [step, index] = position.choices[0] ?? [-1, -1];
  const at: Unit = [position.root, step, index, 0];
  return units.reduce((sum, u) => (compareUnits(u, at) < 0 ? sum + u[3] : sum), 0);
}

/**
 * Adds up the records of each search; a shard given twice, or shards of different counts, is an input error. Each
 * finding's run index becomes the unsharded search's: the schedules of all shards before its unit of the tree,
 * plus its place in that unit (which one shard searched whole). `runs` maps `<record path>\0<replay name>` to it.
 */
function mergeSearches(records: Array<{ path: string; record: SearchRecord }>, runs: Map<string, number>): MergedSearch[] {
  const groups = new Map<string, Array<{ path: string; record: SearchRecord }>>();
  for (const entry of records) groups.set(identity(entry.record), [...(groups.get(identity(entry.record)) ?? []), entry]);
  const merged: MergedSearch[] = [];
  for (const parts of groups.values()) {
    const count = parts[0]!.record.shard.count;
    const odd = parts.find((p) => p.record.shard.count !== count);
    if (odd !== undefined) throw new UsageError(`${odd.path} is shard ${odd.record.shard.index}/${odd.record.shard.count} of a search that ${parts[0]!.path} splits in ${count}: merge the shards of one split`);
    const byIndex = new Map<number, string>();
    for (const { path, record } of parts) {
      const other = byIndex.get(record.shard.index);
      if (other !== undefined) throw new UsageError(`shard ${record.shard.index}/${count} is given twice (${other} and ${path})`);
      byIndex.set(record.shard.index, path);
    }
    parts.sort((a, b) => a.record.shard.index - b.record.shard.index);
    const first = parts[0]!.record;
    const stats: BoundedStats = { ...first.stats, schedules: 0, pruned: 0, placements: 0, runs: 0, complete: true };
    delete stats.stoppedBy;
    const findings: SearchRecord["findings"] = [];
    let steps = 0;
    const units = parts.flatMap((p) => p.record.units).sort(compareUnits);
    for (const { path, record } of parts) {
      for (const key of ["schedules", "pruned", "placements", "runs"] as const) stats[key] += record.stats[key];
      stats.complete &&= record.stats.complete;
      steps += record.steps;
      for (const own of record.findings) {
        const f = { ...own, run: schedulesBefore(units, own.position) + own.run - schedulesBefore(record.units, own.position) };
        if (f.replay !== null) runs.set(`${path}\0${f.replay}`, f.run);
        const seen = findings.find((s) => s.key === f.key);
        if (seen === undefined) findings.push(f);
        else {
          seen.occurrences += f.occurrences;
          if (comparePositions(f.position, seen.position) < 0) Object.assign(seen, { position: f.position, run: f.run, replay: f.replay });
        }
      }
    }
    const missing = Array.from({ length: count }, (_, i) => i).filter((i) => !byIndex.has(i));
    if (missing.length > 0) stats.complete = false;
    findings.sort((a, b) => comparePositions(a.position, b.position));
    const stopped = parts.filter((p) => !p.record.stats.complete).map((p) => p.record.shard.index);
    merged.push({ record: { ...first, shard: { index: 0, count: 1 }, stats, steps, units: mergeUnits(units), findings }, shards: count, missing, stopped });
  }
  return merged;
}

/** Units in order with the parts of one unit (a root's own run, counted by the shard owning it) added up. */
function mergeUnits(sorted: readonly Unit[]): Unit[] {
  const out: Unit[] = [];
  for (const u of sorted) {
    const last = out[out.length - 1];
    if (last !== undefined && compareUnits(last, u) === 0) last[3] += u[3];
    else out.push([...u]);
  }
  return out;
}

/** `<scenario> --variant <v>: complete for K=1, F=1 (latency 5 ms): 270 schedules over 29 of 29 fault placements (74 pruned), no finding; 3 shards`. */
function searchLine(search: MergedSearch): string {
  const { record, shards, missing, stopped } = search;
  const n = (x: number) => x.toLocaleString("en-US");
  const why = missing.length > 0 ? `shard(s) ${missing.join(", ")} of ${shards} missing` : `shard(s) ${stopped.join(", ")} stopped early`;
  const how = record.stats.complete ? `complete for ${boundsText(record.stats)}` : `incomplete for ${boundsText(record.stats)} (${why})`;
  const verdict = record.findings.length === 0 ? "no finding" : `${record.findings.length} finding(s)`;
  const placements = `${n(record.stats.placements)} of ${n(record.stats.placementsTotal)} fault placements`;
  return `${record.scenario} --variant ${record.variant}: ${how}: ${n(record.stats.schedules)} schedules over ${placements} (${n(record.stats.pruned)} pruned), ${verdict}; ${shards} shard(s)`;
}

export async function mergeCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv, { out: { type: "string" }, json: { type: "boolean" } });
  if (positionals.length === 0) throw new UsageError("expects one or more directories of findings");
  const out = resolve(typeof values.out === "string" ? values.out : ".settle/findings");
  const files = positionals.flatMap((dir) => walk(resolve(dir)));
  const records = files.filter((path) => path.endsWith(searchRecordSuffix)).map((path) => ({ path, record: readSearchRecord(path) }));
  // A replay file's search record: the one of its variant in its own directory.
  const recordOf = (path: string, file: ReplayFile) => records.find((r) => dirname(r.path) === dirname(path) && r.record.variant === file.variant);
  const positionOf = (path: string, file: ReplayFile) => recordOf(path, file)?.record.findings.findLast((f) => f.replay === basename(path))?.position;
  const best = new Map<string, Found>();
  for (const path of files.filter((p) => !p.endsWith(searchRecordSuffix))) {
    const { file } = readReplayFile(path);
    const position = positionOf(path, file);
    const found: Found = position === undefined ? { path, file } : { path, file, position };
    const key = `${file.scenario}\0${file.variant}\0${file.verdict}\0${file.property ?? file.actor ?? ""}`;
    const seen = best.get(key);
    if (seen === undefined || earlier(found, seen)) best.set(key, found);
  }
  const globalRuns = new Map<string, number>();
  const searches = mergeSearches(records, globalRuns);
  const merged = [...best.values()].sort((a, b) => a.path.localeCompare(b.path));
  // A bounded finding takes the unsharded search's run index, in the copy and in what is printed.
  for (const found of merged) {
    const record = recordOf(found.path, found.file);
    const run = record === undefined ? undefined : globalRuns.get(`${record.path}\0${basename(found.path)}`);
    if (run !== undefined) found.file = { ...found.file, run };
  }
  for (const { path, file } of merged) {
    const target = join(out, basename(dirname(path)), basename(path));
    if (resolve(target) === resolve(path)) continue;
    mkdirSync(dirname(target), { recursive: true });
    const trace = path.replace(/\.json$/, ".trace.jsonl");
    if (existsSync(trace)) copyFileSync(trace, target.replace(/\.json$/, ".trace.jsonl"));
    const original = JSON.parse(readFileSync(path, "utf8")) as { run?: number };
    if (file.run === undefined || original.run === file.run) copyFileSync(path, target);
    else writeFileSync(target, `${JSON.stringify({ ...original, run: file.run }, null, 2)}\n`);
  }
  // The merged record is the unsharded search's, so merging merged directories again works; not with a shard missing.
  for (const search of searches) if (search.missing.length === 0) writeSearchRecord(out, { ...search.record, version: searchRecordVersion });
  const rows = merged.map(({ path, file }) => ({ scenario: file.scenario, variant: file.variant, verdict: file.verdict, property: file.property, run: file.run ?? null, replay: relative(process.cwd(), join(out, basename(dirname(path)), basename(path))) }));
  if (values.json === true) {
    const summaries = searches.map(({ record, shards, missing }) => ({ scenario: record.scenario, variant: record.variant, shards, missing, steps: record.steps, ...record.stats, findings: record.findings.map(({ key, occurrences }) => ({ key, occurrences })) }));
    process.stdout.write(`${JSON.stringify({ findings: rows, searches: summaries }, null, 2)}\n`);
  } else {
    for (const r of rows) process.stdout.write(`${r.verdict}${r.property ? `: ${r.property}` : ""}  (${r.scenario} --variant ${r.variant}, run ${r.run ?? "?"})  ${r.replay}\n`);
    for (const search of searches) process.stdout.write(`${searchLine(search)}\n`);
  }
  return rows.length > 0 ? 1 : 0;
}
