// Every shell block of README.md, CONTRIBUTING.md and docs/*.md is run here, or says why it is not, so that no command
// the documentation gives can drift from what settle does. A block is preceded by a comment that does not show on a
// rendered page:
//
//   <!-- sh: run [exit=N | exit=N,M,...] [runs=N] [points=N] [cwd=scratch] [slow] -->
//   <!-- sh: skip: REASON -->
//
// `run` runs the block's commands in order, each in bash, from the repository root (or, with `cwd=scratch`, from a
// new directory of the documentation file's own, holding a link to examples/ and shared by its blocks in order, so
// that the findings its commands write are the only ones there). Each command must exit with its code: one `exit=`
// for all, a list for each in turn, 0 by default; `-` in the list is the README's test command (`npm ci && npm
// test`), which is what runs this test and is checked against .ci/run instead. Lines that start
// with `#` are sample output, not commands; a comment after two spaces ends a command. `npx settle` runs this
// package's bin/settle.js and `npx tsx` its tsx (a user's `npx` finds both in node_modules/.bin); a leading
// `npm ci && ` is left out (CI ran it before the tests); `<id>` names the one finding file the block's commands made.
// `runs=N` gives each `settle explore` N runs and `points=N` drills only point N where a command names no points itself, for blocks whose commands take
// minutes as written. `slow` blocks (real processes drilled at every fault kind, a Go program's first build) run
// under `npm run acceptance` (acceptance/docs-snippets.test.ts), not `npm test`, which must stay within CI's time.
// `skip` is for what no test here has (a real cluster, a registry, your own operator's files).
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const repo = fileURLToPath(new URL("../../", import.meta.url));

export type Marker =
  | { mode: "skip"; reason: string }
  | { mode: "run"; exits: Array<number | "-">; runs?: number; points?: number; scratch: boolean; slow: boolean };

export interface ShellBlock {
  file: string;
  /** The line of the opening fence, 1-based. */
  line: number;
  marker: Marker | undefined;
  commands: string[];
}

/** The documentation files whose shell blocks are checked. */
export function documentationFiles(): string[] {
  const docs = readdirSync(join(repo, "docs")).filter((name) => name.endsWith(".md")).sort().map((name) => `docs/${name}`);
  return ["README.md", "CONTRIBUTING.md", ...docs];
}

export function parseMarker(text: string, where: string): Marker {
  const skip = /^skip: (.+)$/.exec(text);
  if (skip !== null) return { mode: "skip", reason: skip[1]! };
  const words = text.split(/\s+/);
  assert.equal(words[0], "run", `${where}: a shell block's marker is "sh: run ..." or "sh: skip: REASON", not "sh: ${text}"`);
  const marker: Marker = { mode: "run", exits: [0], scratch: false, slow: false };
  for (const word of words.slice(1)) {
    const [key, value = ""] = word.split("=");
    if (key === "exit") marker.exits = value.split(",").map((code) => (code === "-" ? "-" : Number(code)));
    else if (key === "runs") marker.runs = Number(value);
    else if (key === "points") marker.points = Number(value);
    else if (key === "cwd" && value === "scratch") marker.scratch = true;
    else if (key === "slow" && value === "") marker.slow = true;
    else assert.fail(`${where}: unknown marker word ${word}`);
  }
  assert.ok(marker.exits.every((code) => code === "-" || Number.isInteger(code)), `${where}: exit codes are integers or -`);
  return marker;
}

/** The ```sh blocks of one Markdown text, each with the marker comment right above it, if any. */
export function shellBlocks(file: string, text: string): ShellBlock[] {
  const blocks: ShellBlock[] = [];
  for (const match of text.matchAll(/(?:<!-- sh: (.*?) -->\n)?```sh\n([\s\S]*?)```/g)) {
    const line = text.slice(0, match.index + match[0].indexOf("```sh")).split("\n").length;
    const marker = match[1] === undefined ? undefined : parseMarker(match[1], `${file}:${line}`);
    const commands = match[2]!.split("\n").filter((l) => l.trim() !== "" && !l.trimStart().startsWith("#"));
    blocks.push({ file, line, marker, commands: commands.map((c) => c.replace(/\s{2,}#.*$/, "").trim()) });
  }
  return blocks;
}

/** A documented command as this test runs it (see the top of the file). */
export function asRun(command: string, marker: Extract<Marker, { mode: "run" }>): string {
  let run = command.replace(/^npm ci && /, "");
  run = run.replace(/\bnpx settle\b/g, `node ${JSON.stringify(join(repo, "bin", "settle.js"))}`);
  run = run.replace(/\bnpx tsx\b/g, JSON.stringify(join(repo, "node_modules", ".bin", "tsx")));
  run = run.replace(/<id>/g, "*");
  if (marker.runs !== undefined && / explore /.test(run)) {
    run = /--runs \d+/.test(run) ? run.replace(/--runs \d+/, `--runs ${marker.runs}`) : `${run} --runs ${marker.runs}`;
  }
  if (marker.points !== undefined && / drill /.test(run) && !/--replay|--kill-points/.test(run)) {
    run = run.replace(/ drill (\S+)/, ` drill $1 --kill-points ${marker.points}`);
  }
  return run;
}

const blocks = documentationFiles().flatMap((file) => shellBlocks(file, readFileSync(join(repo, file), "utf8")));

test("every shell block of the documentation says how it is checked", () => {
  assert.ok(blocks.length >= 10, `found ${blocks.length} shell blocks`);
  const unmarked = blocks.filter((b) => b.marker === undefined).map((b) => `${b.file}:${b.line}`);
  assert.deepEqual(unmarked, [], "shell blocks without a <!-- sh: run|skip --> marker");
  for (const block of blocks) {
    const marker = block.marker!;
    if (marker.mode === "run") {
      assert.ok(marker.exits.length === 1 || marker.exits.length === block.commands.length, `${block.file}:${block.line}: one exit code, or one per command`);
    }
  }
});

test("a marker that is neither run nor skip, or a run with an unknown word, is refused", () => {
  assert.throws(() => parseMarker("maybe", "x.md:1"), /"sh: run \.\.\." or "sh: skip: REASON"/);
  assert.throws(() => parseMarker("run fast=1", "x.md:1"), /unknown marker word fast=1/);
  assert.deepEqual(parseMarker("run exit=1,0 runs=5", "x.md:1"), { mode: "run", exits: [1, 0], runs: 5, scratch: false, slow: false });
});

test("documented commands are rewritten only as the top of this file says", () => {
  const marker = { mode: "run" as const, exits: [0], runs: 5, points: 2, scratch: false, slow: false };
  const bin = JSON.stringify(join(repo, "bin", "settle.js"));
  assert.equal(asRun("npm ci && npx settle explore examples", marker), `node ${bin} explore examples --runs 5`);
  assert.equal(asRun("npx settle explore x --runs 2000", marker), `node ${bin} explore x --runs 5`);
  assert.equal(asRun("npx settle drill s.yaml --variant v --faults", marker), `node ${bin} drill s.yaml --kill-points 2 --variant v --faults`);
  assert.equal(asRun("npx settle drill s.yaml --faults --kill-points 3", marker), `node ${bin} drill s.yaml --faults --kill-points 3`);
  assert.equal(asRun("npx settle replay .settle/findings/e/delta-<id>.json", marker), `node ${bin} replay .settle/findings/e/delta-*.json`);
});

test("the README's test command is the one .ci/run runs, and the only command a block leaves to CI", () => {
  const left = blocks.flatMap((b) => (b.marker?.mode === "run" ? b.commands.filter((_, i) => (b.marker as { exits: unknown[] }).exits[i] === "-") : []));
  assert.deepEqual(left, ["npm ci && npm test"]);
  const ci = readFileSync(join(repo, ".ci", "run"), "utf8").split("\n").filter((l) => l.trim() !== "" && !l.startsWith("#"));
  assert.deepEqual(ci.slice(-2), ["npm ci", "npm test"]);
});

/** Per documentation file, the scratch directory its `cwd=scratch` blocks share. */
const scratches = new Map<string, string>();
after(() => {
  for (const dir of scratches.values()) rmSync(dir, { recursive: true, force: true });
});

function scratchOf(file: string): string {
  let dir = scratches.get(file);
  if (dir === undefined) {
    dir = mkdtempSync(join(tmpdir(), "settle-docs-"));
    symlinkSync(join(repo, "examples"), join(dir, "examples"), "dir");
    // The examples are ES modules, as the repository's package.json says of them.
    writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "settle-docs-scratch", private: true, type: "module" }));
    scratches.set(file, dir);
  }
  return dir;
}

/** Set by acceptance/docs-snippets.test.ts: the slow blocks run there, the others here. */
const slowOnly = process.env.SETTLE_DOCS_SLOW === "1";

for (const block of blocks) {
  const marker = block.marker;
  if (marker === undefined || marker.mode !== "run" || marker.slow !== slowOnly) continue;
  test(`${block.file}:${block.line} runs as documented`, () => {
    const cwd = marker.scratch ? scratchOf(block.file) : repo;
    block.commands.forEach((command, i) => {
      const expected = marker.exits.length === 1 ? marker.exits[0] : marker.exits[i];
      if (expected === "-") return;
      const run = asRun(command, marker);
      const ran = spawnSync("bash", ["-c", run], { cwd, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
      const tail = `${ran.stdout}${ran.stderr}`.split("\n").slice(-30).join("\n");
      assert.equal(ran.status, expected, `${block.file}:${block.line}: \`${command}\` (run as \`${run}\`) exited ${ran.status}, not ${expected}:\n${tail}`);
    });
  });
}
