// The bounded search on worker threads and in shards (issue 36): each gives the one-thread search's schedule
// count, completeness and findings (the same first run of each, the same minimal replay), shards merge through
// their search records, and a shard interrupted and resumed from its checkpoint adds up the same.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { explore, type ExploreOptions, type ExploreResult } from "../../src/explore/explore.ts";
import { comparePositions, type BoundedOptions } from "../../src/explore/bounded.ts";
import { summarizeVariant } from "../../src/report/summary.ts";
import { loadScenario } from "../../src/explore/load.ts";
import type { Scenario } from "../../src/explore/scenario.ts";

const repo = fileURLToPath(new URL("../../", import.meta.url));
const fixturePath = join(repo, "test", "fixtures", "bounded", "scenario.ts");
const zooPath = (name: string) => join(repo, "examples", "zoo", name, "scenario.ts");

function options(path: string, scenario: Scenario, variant: string, bounded: BoundedOptions, overrides: Partial<ExploreOptions> = {}): ExploreOptions {
  return { scenarioPath: path, variant, params: scenario.params, runs: Number.POSITIVE_INFINITY, seed: 1, workers: 1, strategy: "bounded", first: false, bounded, ...overrides };
}

/** What must not depend on threads or shards: figures, and per finding its first run and minimal replay. */
function essence(result: ExploreResult) {
  const { complete, schedules, pruned, placements, placementsTotal, stoppedBy } = result.bounded!;
  const findings = result.findings.map((f) => ({ key: f.key, run: f.run.index, occurrences: f.occurrences, choices: f.minimal.choices, faults: f.minimal.faults, traceHash: f.minimal.outcome.traceHash }));
  return { complete, schedules, pruned, placements, placementsTotal, stoppedBy, steps: result.steps, pointsCovered: result.pointsCovered, findings };
}

/** The shards' figures added up and their findings merged, each from the shard where it came first in search order. */
function union(parts: ExploreResult[]) {
  const sum = (key: "schedules" | "pruned" | "placements") => parts.reduce((n, p) => n + p.bounded![key], 0);
  const firsts = new Map<string, { position: { root: number; choices: Array<[number, number]> }; traceHash: string; occurrences: number }>();
  for (const part of parts) {
    for (const found of part.search!.found) {
      const traceHash = part.findings.find((f) => f.key === found.key)!.minimal.outcome.traceHash;
      const seen = firsts.get(found.key);
      const occurrences = (seen?.occurrences ?? 0) + found.occurrences;
      if (seen === undefined || comparePositions(found.position, seen.position) < 0) firsts.set(found.key, { position: found.position, traceHash, occurrences });
      else seen.occurrences = occurrences;
    }
  }
  const findings = [...firsts.entries()].map(([key, f]) => ({ key, occurrences: f.occurrences, traceHash: f.traceHash })).sort((a, b) => a.key.localeCompare(b.key));
  return { complete: parts.every((p) => p.bounded!.complete), schedules: sum("schedules"), pruned: sum("pruned"), placements: sum("placements"), steps: parts.reduce((n, p) => n + p.steps, 0), findings };
}

function unionOfWhole(whole: ExploreResult) {
  const e = essence(whole);
  const findings = e.findings.map(({ key, occurrences, traceHash }) => ({ key, occurrences, traceHash })).sort((a, b) => a.key.localeCompare(b.key));
  return { complete: e.complete, schedules: e.schedules, pruned: e.pruned, placements: e.placements, steps: e.steps, findings };
}

const zoo: Array<{ name: string; variant: string; bounds: { preemptions: number; faultPoints: number } }> = [
  { name: "time-travel", variant: "buggy", bounds: { preemptions: 1, faultPoints: 1 } },
  { name: "cache-mutation", variant: "fixed", bounds: { preemptions: 1, faultPoints: 1 } },
  { name: "generation-filter", variant: "buggy", bounds: { preemptions: 1, faultPoints: 1 } },
];

test("shards of zoo searches add up to the unsharded search: schedules, pruned, placements, completeness, findings", async () => {
  for (const { name, variant, bounds } of zoo) {
    const path = zooPath(name);
    const scenario = await loadScenario(path);
    const whole = await explore(scenario, options(path, scenario, variant, bounds), () => 0);
    assert.ok(whole.bounded!.schedules > 20, `${name}: a search with some work`);
    for (const count of [2, 3]) {
      const parts: ExploreResult[] = [];
      for (let index = 0; index < count; index++) parts.push(await explore(scenario, options(path, scenario, variant, bounds, { shard: { index, count } }), () => 0));
      assert.ok(parts.every((p) => p.bounded!.schedules > 0), `${name} in ${count}: every shard has work`);
      assert.deepEqual(union(parts), unionOfWhole(whole), `${name} ${variant} in ${count} shards`);
    }
  }
});

test("two threads give the one-thread search exactly, run indexes of the findings included", async () => {
  for (const [path, variant, bounds] of [
    [fixturePath, "racy", { preemptions: 3, faultPoints: 0 }],
    [zooPath("time-travel"), "buggy", { preemptions: 1, faultPoints: 1 }],
  ] as const) {
    const scenario = await loadScenario(path);
    const one = await explore(scenario, options(path, scenario, variant, bounds), () => 0);
    assert.ok(one.findings.length > 0, `${variant}: something to find`);
    // This thread and a worker thread (what --workers 2 runs), then two worker threads with every task.
    for (const ownThreadTasks of [true, false]) {
      const byThread = new Map<number, number>();
      const onTask = (thread: number, schedules: number) => byThread.set(thread, (byThread.get(thread) ?? 0) + schedules);
      const two = await explore(scenario, options(path, scenario, variant, { ...bounds, ownThreadTasks, onTask }, { workers: 2 }), () => 0);
      assert.deepEqual(essence(two), essence(one), `${path} ${variant}, own thread ${ownThreadTasks}`);
      assert.equal(two.bounded!.runs, one.bounded!.runs, "no schedule ran twice");
      assert.equal([...byThread.values()].reduce((a, b) => a + b, 0), one.bounded!.schedules, "each task's schedules counted once");
      if (!ownThreadTasks) assert.deepEqual([...byThread.keys()].filter((thread) => thread === 0), [], "no task in this thread");
    }
  }
});

test("with --first, two threads stop at the finding the one-thread search stops at, with its figures", async () => {
  const scenario = await loadScenario(fixturePath);
  const bounds = { preemptions: 2, faultPoints: 1 };
  const one = await explore(scenario, options(fixturePath, scenario, "racy", bounds, { first: true }), () => 0);
  assert.equal(one.bounded!.stoppedBy, "first");
  for (const ownThreadTasks of [true, false]) {
    const two = await explore(scenario, options(fixturePath, scenario, "racy", { ...bounds, ownThreadTasks }, { first: true, workers: 2 }), () => 0);
    assert.deepEqual(essence(two), essence(one), `own thread ${ownThreadTasks}`);
  }
});

test("a shard on two worker threads is the same shard on one", async () => {
  const path = zooPath("time-travel");
  const scenario = await loadScenario(path);
  const bounds = { preemptions: 1, faultPoints: 1 };
  const one = await explore(scenario, options(path, scenario, "fixed", bounds, { shard: { index: 1, count: 2 } }), () => 0);
  for (const ownThreadTasks of [true, false]) {
    const two = await explore(scenario, options(path, scenario, "fixed", { ...bounds, ownThreadTasks }, { shard: { index: 1, count: 2 }, workers: 2 }), () => 0);
    assert.deepEqual(essence(two), essence(one), `own thread ${ownThreadTasks}`);
  }
});

test("shards interrupted and resumed from their checkpoints, on one thread and on two, add up to the whole", async () => {
  const dir = mkdtempSync(join(tmpdir(), "settle-bounded-par-"));
  try {
    const scenario = await loadScenario(fixturePath);
    const bounds = { preemptions: 2, faultPoints: 0 };
    const whole = await explore(scenario, options(fixturePath, scenario, "safe", bounds), () => 0);
    const parts: ExploreResult[] = [];
    for (let index = 0; index < 2; index++) {
      const checkpoint = join(dir, `shard-${index}.json`);
      const withCheckpoint = { ...bounds, checkpoint, checkpointEveryRuns: 10 };
      const shard = { index, count: 2 };
      // Shard 0 on one thread, stopped by --runs; shard 1 on two, stopped by its budget after some tasks.
      let asked = 0;
      const first =
        index === 0
          ? await explore(scenario, options(fixturePath, scenario, "safe", withCheckpoint, { shard, runs: 30 }), () => 0)
          : await explore(scenario, options(fixturePath, scenario, "safe", { ...withCheckpoint, shouldStop: () => ++asked > 5 }, { shard, workers: 2 }), () => 0);
      assert.equal(first.bounded!.complete, false, `shard ${index} was interrupted`);
      assert.ok(first.bounded!.schedules > 0, `shard ${index} did some work first`);
      parts.push(await explore(scenario, options(fixturePath, scenario, "safe", withCheckpoint, { shard, workers: index + 1 }), () => 0));
    }
    assert.deepEqual(union(parts), unionOfWhole(whole));
    const onOther = explore(scenario, options(fixturePath, scenario, "safe", { ...bounds, checkpoint: join(dir, "shard-1.json") }, { shard: { index: 1, count: 2 } }), () => 0);
    await assert.rejects(onOther, /saved by a search on worker threads.*resume it the same way/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

/** Runs a CLI command in this process in `cwd`, with stdout captured and stderr dropped; a thrown error's name stands for the exit code. */
async function inDir(cwd: string, command: () => Promise<number>): Promise<{ code: number | string; stdout: string }> {
  const previous = process.cwd();
  let stdout = "";
  const write = { out: process.stdout.write, err: process.stderr.write };
  process.stdout.write = ((chunk: string) => ((stdout += chunk), true)) as typeof process.stdout.write;
  process.stderr.write = (() => true) as typeof process.stderr.write;
  process.chdir(cwd);
  try {
    return { code: await command(), stdout };
  } catch (error) {
    return { code: (error as Error).name, stdout: `${stdout}${(error as Error).message}` };
  } finally {
    process.chdir(previous);
    process.stdout.write = write.out;
    process.stderr.write = write.err;
  }
}

interface MergedJson {
  findings: Array<{ verdict: string; property: string | null; replay: string; run: number }>;
  searches: Array<{ complete: boolean; schedules: number; pruned: number; placements: number; placementsTotal: number; shards: number; missing: number[]; findings: Array<{ key: string; occurrences: number }> }>;
}

test("settle merge of every shard's findings directory says what the unsharded search says, and names a missing shard", async () => {
  const dir = mkdtempSync(join(tmpdir(), "settle-bounded-merge-"));
  try {
    const path = zooPath("time-travel");
    const scenario = await loadScenario(path);
    const bounds = { preemptions: 1, faultPoints: 1 };
    const write = (where: string, result: ExploreResult) => {
      mkdirSync(where, { recursive: true });
      summarizeVariant({ name: scenario.name, scenarioPath: path, variant: "buggy", params: scenario.params, result, cwd: where });
    };
    write(join(dir, "whole"), await explore(scenario, options(path, scenario, "buggy", bounds), () => 0));
    for (let index = 0; index < 3; index++) write(join(dir, `shard-${index}`), await explore(scenario, options(path, scenario, "buggy", bounds, { shard: { index, count: 3 } }), () => 0));
    const { mergeCommand } = await import("../../src/cli/merge.ts");
    const merge = async (...dirs: string[]) => inDir(dir, () => mergeCommand([...dirs.map((d) => join(d, ".settle", "findings")), "--out", `merged-${dirs.join("-")}`, "--json"]));
    const whole = await merge("whole");
    const shards = await merge("shard-0", "shard-1", "shard-2");
    assert.equal(shards.code, 1, "a finding");
    const [w, s] = [JSON.parse(whole.stdout) as MergedJson, JSON.parse(shards.stdout) as MergedJson];
    assert.equal(s.searches.length, 1);
    const figures = ({ complete, schedules, pruned, placements, placementsTotal, findings }: MergedJson["searches"][number]) => ({ complete, schedules, pruned, placements, placementsTotal, findings });
    assert.deepEqual(figures(s.searches[0]!), figures(w.searches[0]!));
    assert.equal(s.searches[0]!.complete, true);
    assert.equal(s.searches[0]!.shards, 3);
    // The same replay file, byte for byte: shrunk from the first finding run in search order, with that run's
    // index in the unsharded search.
    const replays = (m: MergedJson) => m.findings.map((f) => readFileSync(join(dir, f.replay), "utf8"));
    assert.deepEqual(replays(s), replays(w));
    assert.deepEqual(s.findings.map((f) => f.run), w.findings.map((f) => f.run));
    const text = await inDir(dir, () => mergeCommand(["shard-0", "shard-1", "shard-2"].map((d) => join(d, ".settle", "findings"))));
    assert.match(text.stdout, /time-travel --variant buggy: complete for K=1, F=1 \(latency \d+ ms\): \d+ schedules over \d+ of \d+ fault placements \(\d+ pruned\), 1 finding\(s\); 3 shard\(s\)/);
    const partial = JSON.parse((await merge("shard-0", "shard-2")).stdout) as MergedJson;
    assert.equal(partial.searches[0]!.complete, false);
    assert.deepEqual(partial.searches[0]!.missing, [1]);
    // The merged directory holds the merged record: merging it again says the same.
    const again = JSON.parse((await inDir(dir, () => mergeCommand([join(dir, "merged-shard-0-shard-1-shard-2"), "--out", "again", "--json"]))).stdout) as MergedJson;
    assert.deepEqual(figures(again.searches[0]!), figures(w.searches[0]!));
    const twice = await inDir(dir, () => mergeCommand([join(dir, "shard-0"), join(dir, "shard-0", ".settle")]));
    assert.equal(twice.code, "UsageError");
    assert.match(twice.stdout, /shard 0\/3 is given twice/);
    // A record of another split of the same search is refused.
    const other = join(dir, "other", ".settle", "findings", scenario.name);
    mkdirSync(other, { recursive: true });
    const record = JSON.parse(readFileSync(join(dir, "shard-1", ".settle", "findings", scenario.name, "buggy.search.json"), "utf8")) as { shard: { index: number; count: number } };
    writeFileSync(join(other, "buggy.search.json"), JSON.stringify({ ...record, shard: { index: 1, count: 2 } }));
    const mixed = await inDir(dir, () => mergeCommand([join(dir, "shard-0"), join(dir, "other")]));
    assert.equal(mixed.code, "UsageError");
    assert.match(mixed.stdout, /shard 1\/2 of a search that .* splits in 3/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("settle explore refuses a shard past its count with a usage error (exit 2)", async () => {
  const { exploreCommand } = await import("../../src/cli/explore.ts");
  const dir = mkdtempSync(join(tmpdir(), "settle-bounded-shard-"));
  try {
    for (const shard of ["3/2", "2/2", "1/0", "x"]) {
      const out = await inDir(dir, () => exploreCommand([fixturePath, "--strategy", "bounded", "--shard", shard]));
      assert.equal(out.code, "UsageError", shard);
      assert.match(out.stdout, /--shard expects i\/n with 0 <= i < n/);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
