// The `settle` command end to end: spawned as a user runs it, from a temporary working directory (replay
// files and their paths are relative to it), with absolute scenario paths.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const repo = fileURLToPath(new URL("../../", import.meta.url));
const bin = join(repo, "bin", "settle.js");
const ensembleDir = join(repo, "examples", "ensemble");
const canaryDir = join(repo, "test", "fixtures", "canary");
const root = mkdtempSync(join(tmpdir(), "settle-cli-"));
after(() => rmSync(root, { recursive: true, force: true }));

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

function settle(args: string[], cwd = root): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bin, ...args], { cwd, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

function freshDir(name: string): string {
  const dir = join(root, name);
  mkdirSync(dir, { recursive: true });
  return dir;
}

interface ExploreJson {
  scenario: string;
  variant: string;
  runs: number;
  findings: Array<{ verdict: string; property: string | null; seed: number; workload: string; replay: string; steps: number; faults: number; choices: number; run: number }>;
  stats: { steps: number; runsPerSec: number; wallMs: number; faultPointsCovered: number; faultPoints: number };
}

// One exploration of the delta variant, shared by the replay and merge tests.
const work = freshDir("work");
let explored: Ran;
let report: ExploreJson;
before(async () => {
  explored = await settle(["explore", ensembleDir, "--variant", "delta", "--runs", "60", "--seed", "1", "--workers", "1", "--json"], work);
  report = JSON.parse(explored.stdout) as ExploreJson;
});

function replayFile(): { path: string; data: Record<string, unknown> } {
  const path = join(work, report.findings[0]!.replay);
  return { path, data: JSON.parse(readFileSync(path, "utf8")) as Record<string, unknown> };
}

/** Writes an edited copy of the replay file (and its trace) into `dir`; returns its path. */
function editedCopy(dir: string, name: string, edit: (data: Record<string, unknown>) => void): string {
  const { path, data } = replayFile();
  // The copy is replayed from another working directory: name the scenario by its absolute path.
  data.scenario = join(ensembleDir, "scenario.ts");
  edit(data);
  const target = join(dir, `${name}.json`);
  writeFileSync(target, JSON.stringify(data));
  cpSync(path.replace(/\.json$/, ".trace.jsonl"), target.replace(/\.json$/, ".trace.jsonl"));
  return target;
}

test("--help and --version exit 0 and print to stdout", async () => {
  const help = await settle(["--help"]);
  assert.equal(help.code, 0);
  assert.match(help.stdout, /Usage: settle <command>/);
  for (const command of ["explore", "replay", "merge", "list-examples"]) assert.match(help.stdout, new RegExp(command));
  const version = await settle(["--version"]);
  assert.equal(version.code, 0);
  const pkg = JSON.parse(readFileSync(join(repo, "package.json"), "utf8")) as { version: string };
  assert.equal(version.stdout.trim(), pkg.version);
  const exploreHelp = await settle(["explore", "--help"]);
  assert.equal(exploreHelp.code, 0);
  assert.match(exploreHelp.stdout, /--shard i\/n/);
});

describe("bad input exits 2 with a message naming the problem", { concurrency: 4 }, () => {
  const cases: Array<[string, string[], RegExp]> = [
    ["an unknown command", ["frobnicate"], /unknown command "frobnicate"/],
    ["no command at all", [], /Usage: settle/],
    ["--runs that is not a number", ["explore", ensembleDir, "--runs", "abc"], /--runs expects an integer >= 1, got "abc"/],
    ["--runs 0", ["explore", ensembleDir, "--runs", "0"], /--runs expects an integer >= 1/],
    ["--shard with i >= n", ["explore", ensembleDir, "--shard", "3/2"], /--shard expects i\/n with 0 <= i < n, got "3\/2"/],
    ["--shard that is not i/n", ["explore", ensembleDir, "--shard", "1"], /--shard expects i\/n/],
    ["an unknown variant", ["explore", ensembleDir, "--variant", "nope", "--runs", "1"], /no variant "nope" \(known: level, delta\)/],
    ["an unknown workload", ["explore", ensembleDir, "--workload", "nope", "--runs", "1"], /no workload "nope"/],
    ["an unknown strategy", ["explore", ensembleDir, "--strategy", "nope"], /--strategy expects one of mix, random, pct, systematic/],
    ["a --param without =", ["explore", ensembleDir, "--param", "resyncMs"], /--param expects key=value, got "resyncMs"/],
    ["an unknown option", ["explore", ensembleDir, "--frob"], /--frob/],
    ["a missing scenario path", ["explore", join(root, "no-such-dir")], /no-such-dir: no such file or directory/],
    ["no scenario path", ["explore"], /expects exactly one scenario file or example directory/],
    ["a directory without a scenario", ["explore", join(repo, "bin")], /a directory without a scenario file/],
    ["a missing replay file", ["replay", join(root, "missing.json")], /missing\.json: no such file/],
    ["merge without directories", ["merge"], /expects one or more directories/],
  ];
  for (const [what, args, message] of cases) {
    test(what, async () => {
      const ran = await settle(args);
      assert.equal(ran.code, 2, ran.stderr);
      assert.match(ran.stderr, message);
    });
  }
});

test("a replay file that is not JSON, or has a bad field, exits 2 naming the field", async () => {
  const dir = freshDir("bad-replays");
  const notJson = join(dir, "not-json.json");
  writeFileSync(notJson, "{ this is not json");
  let ran = await settle(["replay", notJson]);
  assert.equal(ran.code, 2);
  assert.match(ran.stderr, /not-json\.json: not valid JSON/);

  const edits: Array<[string, (d: Record<string, unknown>) => void, RegExp]> = [
    ["seed", (d) => (d.seed = "forty-two"), /field "seed" must be an integer, got "forty-two"/],
    ["choices", (d) => (d.choices = [[1, 2, 3]]), /field "choices" must be a list of \[step, index\] pairs/],
    ["faults", (d) => (d.faults = [{ atStep: "soon", kind: "crash", target: "operator" }]), /field "faults"/],
    ["version", (d) => (d.version = 99), /format version 99 is not supported/],
    ["variant", (d) => (d.variant = "nope"), /unknown variant "nope"/],
    ["array", (d) => Object.assign(d, { scenario: 7 }), /field "scenario" must be a path/],
  ];
  for (const [name, edit, message] of edits) {
    ran = await settle(["replay", editedCopy(dir, name, edit)]);
    assert.equal(ran.code, 2, `${name}: ${ran.stderr}`);
    assert.match(ran.stderr, message, name);
  }
});

test("explore --json on the delta variant prints one JSON object with the documented fields and exits 1", () => {
  assert.equal(explored.code, 1, explored.stderr);
  assert.deepEqual(Object.keys(report).sort(), ["findings", "properties", "runs", "scenario", "stats", "variant"]);
  assert.equal(report.scenario, "ensemble");
  assert.equal(report.variant, "delta");
  assert.equal(report.runs, 60);
  assert.equal(report.findings.length, 1);
  const finding = report.findings[0]!;
  for (const field of ["verdict", "property", "seed", "workload", "replay", "steps", "faults", "choices"]) assert.ok(field in finding, field);
  assert.equal(finding.verdict, "silent-divergence");
  assert.equal(finding.property, "children == spec.voices");
  assert.equal(finding.faults, 1);
  assert.equal(finding.choices, 0);
  assert.match(finding.replay, /^\.settle\/findings\/ensemble\/delta-[0-9a-f]{10}\.json$/);
  assert.ok(existsSync(join(work, finding.replay)));
  assert.ok(existsSync(join(work, finding.replay.replace(/\.json$/, ".trace.jsonl"))));
  for (const field of ["steps", "runsPerSec", "wallMs", "faultPointsCovered"]) assert.equal(typeof (report.stats as unknown as Record<string, unknown>)[field], "number", field);
  assert.ok(report.stats.faultPointsCovered > 0);
  // Progress goes to stderr; stdout is the JSON alone.
  assert.match(explored.stderr, /60\/60 runs/);
});

test("the replay file records what the issue lists, with the scenario path relative to the working directory", () => {
  const { data } = replayFile();
  for (const field of ["version", "scenario", "variant", "workload", "params", "seed", "choices", "faults", "verdict", "property", "traceHash"]) assert.ok(field in data, field);
  assert.equal(join(work, data.scenario as string), join(ensembleDir, "scenario.ts"));
  assert.match(data.traceHash as string, /^[0-9a-f]{64}$/);
  assert.deepEqual(readdirSync(join(work, ".settle", "findings", "ensemble")).filter((n) => n.endsWith(".tmp")), [], "no temp files left");
});

test("replaying the written file reproduces the finding: exit 1, and --json says reproduced with the same trace hash", async () => {
  const relativePath = report.findings[0]!.replay;
  const json = await settle(["replay", relativePath, "--json"], work);
  assert.equal(json.code, 1, json.stderr);
  const answer = JSON.parse(json.stdout) as Record<string, unknown>;
  assert.deepEqual(answer, {
    verdict: "silent-divergence",
    property: "children == spec.voices",
    reproduced: true,
    traceHash: replayFile().data.traceHash,
    divergedAtStep: null,
  });
  const text = await settle(["replay", relativePath], work);
  assert.equal(text.code, 1);
  assert.match(text.stdout, /FINDING silent-divergence: children == spec.voices/);
  assert.match(text.stdout, /reproduced: same verdict, byte-identical trace/);
  assert.match(text.stdout, new RegExp(`npx settle replay ${relativePath.replace(/\./g, "\\.")}`));
});

test("a replay file edited so the run takes another path exits 3 and names the first differing step", async () => {
  const dir = freshDir("diverging");
  const moved = editedCopy(dir, "moved-crash", (d) => {
    const faults = d.faults as Array<{ atStep: number }>;
    faults[0]!.atStep += 2;
  });
  const ran = await settle(["replay", moved, "--json"]);
  assert.equal(ran.code, 3, ran.stderr);
  const answer = JSON.parse(ran.stdout) as { reproduced: boolean; divergedAtStep: number | null; traceHash: string };
  assert.equal(answer.reproduced, false);
  assert.equal(typeof answer.divergedAtStep, "number");
  assert.ok(answer.divergedAtStep! >= 0);
  assert.notEqual(answer.traceHash, replayFile().data.traceHash);
  const text = await settle(["replay", moved]);
  assert.equal(text.code, 3);
  assert.match(text.stdout, /nondeterminism: the replay diverged \(first differing step \d+, from the same scenario file;/);
});

test("a replay file records its scenario file's sha256, and a replay that diverges from a changed scenario says so", async () => {
  const { data } = replayFile();
  const scenarioSha256 = createHash("sha256").update(readFileSync(join(ensembleDir, "scenario.ts"))).digest("hex");
  assert.equal(data.scenarioSha256, scenarioSha256);
  const dir = freshDir("changed-scenario");
  const changed = editedCopy(dir, "changed", (d) => {
    (d.faults as Array<{ atStep: number }>)[0]!.atStep += 2;
    d.scenarioSha256 = "0".repeat(64);
  });
  const text = await settle(["replay", changed]);
  assert.equal(text.code, 3);
  assert.match(text.stdout, /^changed: the scenario file .*scenario\.ts is not the one this replay was written from \(its sha256 differs\), so the run diverged \(first differing step \d+\)/m);
  assert.doesNotMatch(text.stdout, /nondeterminism/);
});

test("explore without --json prints the report with counters, a timeline and the replay command", async () => {
  const dir = freshDir("text");
  const ran = await settle(["explore", ensembleDir, "--variant", "delta", "--runs", "8", "--workers", "1"], dir);
  assert.equal(ran.code, 1, ran.stderr);
  assert.match(ran.stdout, /FINDING silent-divergence: children == spec.voices/);
  assert.match(ran.stdout, /minimal run: 1 fault\(s\), 0 non-default choice\(s\)/);
  assert.match(ran.stdout, /eventually\s+children == spec.voices: \d+ \/ \d+/);
  assert.match(ran.stdout, /!!.*crash/);
  assert.match(ran.stdout, /replay: npx settle replay \.settle\/findings\/ensemble\/delta-[0-9a-f]{10}\.json/);
  assert.match(ran.stdout, /systematic fault points covered \d+\/\d+/);
});

test("exploring a passing scenario exits 0 and writes no replay file", async () => {
  const dir = freshDir("passing");
  const ran = await settle(["explore", canaryDir, "--variant", "healthy", "--runs", "6", "--workers", "1", "--json"], dir);
  assert.equal(ran.code, 0, ran.stderr);
  const answer = JSON.parse(ran.stdout) as ExploreJson;
  assert.deepEqual(answer.findings, []);
  assert.equal(existsSync(join(dir, ".settle", "findings")), false);
});

test("merge of two directories keeps one finding per key, the one from the earliest run, and exits 1", async () => {
  const a = freshDir("merge/a/ensemble");
  const b = freshDir("merge/b/ensemble");
  const { path } = replayFile();
  const name = path.split("/").pop()!.replace(/\.json$/, "");
  editedCopy(a, name, (d) => (d.run = 7));
  editedCopy(b, name, (d) => (d.run = 3));
  // A second finding only in b: the canary's safety violation.
  const canaryWork = freshDir("merge/canary-work");
  const canary = await settle(["explore", canaryDir, "--variant", "always-false", "--runs", "2", "--workers", "1", "--json"], canaryWork);
  assert.equal(canary.code, 1, canary.stderr);
  cpSync(join(canaryWork, ".settle", "findings"), join(root, "merge", "b"), { recursive: true });

  const out = join(root, "merge", "out");
  const ran = await settle(["merge", join(root, "merge", "a"), join(root, "merge", "b"), "--out", out, "--json"]);
  assert.equal(ran.code, 1, ran.stderr);
  const merged = JSON.parse(ran.stdout) as { findings: Array<{ variant: string; verdict: string; property: string | null; run: number | null }> };
  assert.deepEqual(
    merged.findings.map((f) => [f.variant, f.verdict, f.property, f.run]).sort(),
    [
      ["always-false", "safety-violation", "canary: never true", -1],
      ["delta", "silent-divergence", "children == spec.voices", 3],
    ],
  );
  const kept = JSON.parse(readFileSync(join(out, "ensemble", `${name}.json`), "utf8")) as { run: number };
  assert.equal(kept.run, 3);
  assert.ok(existsSync(join(out, "ensemble", `${name}.trace.jsonl`)));

  const empty = freshDir("merge/empty");
  const none = await settle(["merge", empty, "--out", join(root, "merge", "out-empty")]);
  assert.equal(none.code, 0, none.stderr);
});

test("list-examples lists the ensemble example with its variants and workloads", async () => {
  const text = await settle(["list-examples", join(repo, "examples")]);
  assert.equal(text.code, 0, text.stderr);
  assert.match(text.stdout, /\(ensemble\)/);
  assert.match(text.stdout, /--variant level\s+expect ok/);
  assert.match(text.stdout, /--variant delta\s+expect finding/);
  assert.match(text.stdout, /workloads: scale-up, scale-down, up-then-down/);
  const json = await settle(["list-examples", join(repo, "examples"), "--json"]);
  assert.equal(json.code, 0);
  const rows = JSON.parse(json.stdout) as Array<{ name: string; variants: Record<string, unknown> }>;
  const ensemble = rows.find((r) => r.name === "ensemble");
  assert.deepEqual(Object.keys(ensemble!.variants), ["level", "delta"]);
});
