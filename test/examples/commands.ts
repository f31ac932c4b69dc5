// The commands settle prints for running the examples, and what each must find: the catalogue of
// test/examples/commands.test.ts (the drill commands), test/examples/commands-explore.sweep.test.ts (the explore
// commands) and acceptance/commands.test.ts (the long ones).
//
// The commands come from `settle list-examples --json` (its `commands`: every command that runs a variant, with what
// it is expected to find), the same function (src/explore/example-commands.ts) that makes `settle explore`'s hint for
// a skipped command-only example, its error for a command variant, and the drill's replay line: never a copy.
// `settle list-examples` runs in a fresh folder, given the examples' absolute folder, so every command reads as
// settle prints it there and runs there (a drill's artifacts and explore's findings land in that folder, not in the
// repository).
//
// A printed `settle explore` command of a TypeScript scenario runs 1000 runs of the variant, every finding shrunk.
// The tour (`settle explore examples`, the README's first command) runs each buggy variant to its first finding and
// each fixed one over `tourFixedRuns` runs; the commands run here under the tour's plan (`--first`, `--runs N`
// appended), as the tour would run them. Every other command runs exactly as printed.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { tourFixedRuns } from "../../src/cli/explore.ts";

export const repo = fileURLToPath(new URL("../../", import.meta.url));
const bin = join(repo, "bin", "settle.js");

export type Expect = "finding" | "ok";

export interface PrintedCommand {
  /** The example's folder as list-examples shows it (relative to `cwd`). */
  example: string;
  scenarioName: string;
  kind: "code" | "yaml";
  variant: string;
  runner: "explore" | "drill";
  /** The command line exactly as settle prints it. */
  run: string;
  expect: Expect;
}

export interface Catalogue {
  /** Where list-examples ran: the commands are relative to it, and run there. */
  cwd: string;
  commands: PrintedCommand[];
  /** Removes the folder. */
  remove(): void;
}

interface ListedRow {
  path: string;
  name: string;
  kind: "code" | "yaml";
  variants: Record<string, { expect: Expect; commands: Array<{ runner: "explore" | "drill"; run: string; expect: Expect }> }>;
}

/** Every example's every variant's every command, as `settle list-examples --json` prints them in a fresh folder. */
export function printedCommands(): Catalogue {
  const cwd = mkdtempSync(join(tmpdir(), "settle-commands-"));
  const listed = spawnSync(process.execPath, [bin, "list-examples", join(repo, "examples"), "--json"], { cwd, encoding: "utf8" });
  if (listed.status !== 0) throw new Error(`settle list-examples exited ${listed.status}: ${listed.stderr}`);
  const rows = JSON.parse(listed.stdout) as ListedRow[];
  const commands = rows.flatMap((row) =>
    Object.entries(row.variants).flatMap(([variant, info]) =>
      info.commands.map((c) => ({ example: row.path, scenarioName: row.name, kind: row.kind, variant, runner: c.runner, run: c.run, expect: c.expect })),
    ),
  );
  return { cwd, commands, remove: () => rmSync(cwd, { recursive: true, force: true }) };
}

/** A printed command's arguments after `settle` (settle prints no quoting: its paths hold no spaces). */
export function argvOf(run: string): string[] {
  const words = run.split(" ");
  if (words[0] !== "settle") throw new Error(`not a settle command: ${run}`);
  return words.slice(1);
}

/** The arguments a TypeScript scenario's explore command runs with here: the tour's plan for its expectation. */
export function tourPlan(command: PrintedCommand): string[] {
  if (command.runner !== "explore") return [];
  return command.expect === "finding" ? ["--first"] : ["--runs", String(tourFixedRuns)];
}

export interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
  /** The last non-empty line of stdout. */
  lastLine: string;
}

/** Runs `settle ARGS` in `cwd`, as a user types it. */
export function runSettle(args: readonly string[], cwd: string): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bin, ...args], { cwd, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.on("error", reject);
    child.on("close", (code) => {
      const lines = stdout.split("\n").filter((line) => line.trim() !== "");
      resolve({ code, stdout, stderr, lastLine: lines.at(-1) ?? "" });
    });
  });
}

/**
 * What is wrong with a run of `command` against its expectation, or undefined: the exit code (1 a finding, 0 none)
 * and, for a drill, its last line, which says what was found and what the variant expects, with "(unexpected)"
 * when they differ; for an explore, the variant's summary line.
 */
export function mismatch(command: PrintedCommand, ran: Ran): string | undefined {
  const code = command.expect === "finding" ? 1 : 0;
  const tail = `\n--- stdout (end)\n${ran.stdout.slice(-3000)}\n--- stderr (end)\n${ran.stderr.slice(-2000)}`;
  if (ran.code !== code) return `${command.run}: exit ${ran.code}, expected ${code} (expect: ${command.expect})${tail}`;
  if (command.runner === "drill") {
    const line = command.expect === "finding" ? "a finding; the variant expects a finding" : "no finding; the variant expects none";
    if (ran.lastLine !== line) return `${command.run}: last line ${JSON.stringify(ran.lastLine)}, expected ${JSON.stringify(line)}${tail}`;
    return undefined;
  }
  const summary = ran.stdout.split("\n").find((l) => l.startsWith(`${command.scenarioName} --variant ${command.variant}: `));
  const said = command.expect === "finding" ? / [1-9]\d* finding\(s\)/ : / no finding/;
  if (summary === undefined || !said.test(summary)) return `${command.run}: summary ${JSON.stringify(summary)}, expected ${said}${tail}`;
  return undefined;
}

/**
 * The commands for examples that the repository's documents (README.md, docs/, the examples' README files) give as a
 * variant's plain command (`settle drill|explore PATH --variant V`, no other option): each must be one settle prints.
 */
export function readmeCommands(): Array<{ file: string; path: string; runner: "explore" | "drill"; variant: string }> {
  const docs = existsSync(join(repo, "docs")) ? markdownFiles(join(repo, "docs"), () => true) : [];
  const examples = markdownFiles(join(repo, "examples"), (name) => name === "README.md");
  const files = ["README.md", ...[...docs, ...examples].map((f) => f.slice(repo.length))];
  const found: Array<{ file: string; path: string; runner: "explore" | "drill"; variant: string }> = [];
  for (const file of files) {
    const text = readFileSync(join(repo, file), "utf8");
    // A command ends at a comment, a backquote or the end of its line; one with more options is another command.
    for (const match of text.matchAll(/settle (drill|explore) (examples\/\S+) --variant ([\w-]+)(?=\s*(?:#|`|$))/gm)) {
      found.push({ file, runner: match[1] as "explore" | "drill", path: match[2]!, variant: match[3]! });
    }
  }
  return found;
}

function markdownFiles(dir: string, wanted: (name: string) => boolean): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return markdownFiles(path, wanted);
    return name.endsWith(".md") && wanted(name) ? [path] : [];
  });
}

/**
 * Commands of more than a few minutes each on a 2-core machine, run by acceptance/commands.test.ts only, each with
 * what it took under `nice` on a shared machine: "scenario/variant runner".
 */
export const longCommands: Readonly<Record<string, string>> = {
  // 18 writes of the reference run, a kill and a fail-500 point at each (36 points); cold starts (drill.coldStart).
  "framework-fluent-client/level drill": "about 4 minutes",
  "framework-fluent-client/level-no-retry drill": "about 4 minutes",
  // 9 kill points, each waiting out the 45 s lease the killed replicas held before the next leader takes over
  // (4 min 51 s under nice, load average near 19).
  "go-leader-election/leader-election drill": "about 5 minutes",
  // 100 runs of two replicas each holding a 45 s lease, every run minutes of virtual time (8.5 min with one worker
  // under nice, load average near 19; clean over 500 runs in all when it was measured).
  "go-leader-election/leader-election explore": "about 8 minutes",
};

export function isLong(command: PrintedCommand): boolean {
  return `${command.scenarioName}/${command.variant} ${command.runner}` in longCommands;
}
