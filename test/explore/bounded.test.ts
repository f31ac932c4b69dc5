// The bounded search (issue 23): every schedule within K preemptions of FIFO order crossed with every placement of
// up to F planned faults, with sleep-set reduction, sharding and a checkpoint. The soundness tests compare the
// reduced search with the plain one on small scenarios: the same distinct final worlds, the same findings.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import fixture from "../fixtures/bounded/scenario.ts";
import { explore, type ExploreOptions, type ExploreResult } from "../../src/explore/explore.ts";
import { boundedLatencyMs, placementAt, placementCount, type BoundedOptions } from "../../src/explore/bounded.ts";
import { summarizeVariant } from "../../src/report/summary.ts";
import { readReplayFile } from "../../src/explore/findings.ts";
import { eventually } from "../../src/check/properties.ts";
import { loadScenario } from "../../src/explore/load.ts";
import type { Scenario } from "../../src/explore/scenario.ts";
import type { WorldView } from "../../src/sim/types.ts";
import { commute } from "../../src/sim/commute.ts";
import type { ReadyStep } from "../../src/sim/strategy.ts";

const fixturePath = fileURLToPath(new URL("../fixtures/bounded/scenario.ts", import.meta.url));

function options(variant: string, bounded: BoundedOptions, overrides: Partial<ExploreOptions> = {}): ExploreOptions {
  return { scenarioPath: fixturePath, variant, params: {}, runs: Number.POSITIVE_INFINITY, seed: 1, workers: 1, strategy: "bounded", first: false, bounded, ...overrides };
}

/** Every ConfigMap and Secret (name, resourceVersion, data) and the named external cells, as one string. */
function fingerprint(view: WorldView, externals: readonly string[]): string {
  const objects = ["ConfigMap", "Secret"].flatMap((kind) => view.list({ apiVersion: "v1", kind }).map((o) => [kind, o.metadata.namespace, o.metadata.name, o.metadata.resourceVersion, (o as { data?: unknown }).data]));
  return JSON.stringify({ objects, externals: externals.map((name) => view.external(name)) });
}

/** The scenario with one more property that records the final world of every run that reaches its end. */
function recording(base: Scenario, externals: readonly string[] = []): { scenario: Scenario; worlds: Set<string> } {
  const worlds = new Set<string>();
  const record = eventually("(test) the final world is recorded", (view) => {
    worlds.add(fingerprint(view, externals));
    return true;
  });
  return { scenario: { ...base, properties: (ctx) => [...base.properties(ctx), record] }, worlds };
}

async function both(base: Scenario, variant: string, bounds: { preemptions: number; faultPoints: number }, externals: readonly string[] = [], path = fixturePath) {
  const run = async (reduction: boolean) => {
    const { scenario, worlds } = recording(base, externals);
    const result = await explore(scenario, { ...options(variant, { ...bounds, reduction }), scenarioPath: path, params: base.params }, () => 0);
    return { result, worlds };
  };
  return { reduced: await run(true), plain: await run(false) };
}

const keys = (result: ExploreResult) => result.findings.map((f) => f.key).sort();

test("placements enumerate none, each point, then each pair, in order", () => {
  assert.equal(placementCount(4, 0), 1);
  assert.equal(placementCount(4, 1), 5);
  assert.equal(placementCount(4, 2), 11);
  const all = Array.from({ length: placementCount(4, 2) }, (_, i) => placementAt(4, i));
  assert.deepEqual(all, [[], [0], [1], [2], [3], [0, 1], [0, 2], [0, 3], [1, 2], [1, 3], [2, 3]]);
  assert.throws(() => placementAt(4, 11), /past the last/);
});

test("a bounded search takes one constant latency: the one the scenario pins, else the middle of its range", () => {
  assert.equal(boundedLatencyMs({ requestLatencyMs: [1, 20] }), 10, "the default range");
  assert.equal(boundedLatencyMs({ requestLatencyMs: [5, 5] }), 5, "a pinned latency is kept");
  assert.equal(boundedLatencyMs({ requestLatencyMs: [0, 0] }), 0, "so is a pinned zero");
  assert.equal(boundedLatencyMs({ requestLatencyMs: [0, 1] }), 1, "at least 1 ms when the range allows it");
  assert.equal(boundedLatencyMs({ requestLatencyMs: [1, 20] }, 7), 7, "an explicit latency wins");
});

test("with a latency range, the search runs at its constant latency: the same space as a scenario pinned there", async () => {
  const ranged: Scenario = { ...fixture, timing: { ...fixture.timing, requestLatencyMs: [1, 20] } };
  const pinned: Scenario = { ...fixture, timing: { ...fixture.timing, requestLatencyMs: [10, 10] } };
  const bounds = { preemptions: 1, faultPoints: 0 };
  const a = await explore(ranged, options("racy", bounds), () => 0);
  const b = await explore(pinned, options("racy", bounds), () => 0);
  assert.equal(a.bounded?.latencyMs, 10);
  assert.equal(a.bounded!.schedules, b.bounded!.schedules);
  assert.equal(a.bounded!.pruned, b.bounded!.pruned);
  assert.ok(a.bounded!.schedules > 1, "same-instant steps are choices");
  assert.deepEqual(keys(a), ["silent-divergence:both increments landed"]);
  assert.equal(a.findings[0]!.minimal.outcome.traceHash, b.findings[0]!.minimal.outcome.traceHash);
});

test("a finding's replay file records the search's latency, and settle replay reproduces it at that latency", async () => {
  const dir = mkdtempSync(join(tmpdir(), "settle-bounded-replay-"));
  const cwd = process.cwd();
  try {
    // 7 ms is not the fixture's own 5 ms: a replay that ignored the file's latency would diverge.
    const result = await explore(fixture, options("racy", { preemptions: 1, faultPoints: 0, latencyMs: 7 }), () => 0);
    assert.equal(result.bounded?.latencyMs, 7);
    const { summary, line } = summarizeVariant({ name: fixture.name, scenarioPath: fixturePath, variant: "racy", params: {}, result, cwd: dir });
    assert.match(line, /\(latency 7 ms\)/);
    const replay = join(dir, summary.findings[0]!.replay);
    assert.deepEqual(readReplayFile(replay).file.requestLatencyMs, [7, 7]);
    const { replayCommand } = await import("../../src/cli/replay.ts");
    process.chdir(dir);
    const out = await captureStdout(() => replayCommand([replay, "--json"]));
    assert.equal(out.code, 1, "the finding reproduced");
    assert.equal((JSON.parse(out.stdout) as { reproduced: boolean }).reproduced, true);
  } finally {
    process.chdir(cwd);
    rmSync(dir, { recursive: true, force: true });
  }
});

test("steps commute only across actors, on disjoint state, and never two writes", () => {
  const step = (actor: string, kind: ReadyStep["kind"], facts?: ReadyStep["facts"]): ReadyStep => ({ seq: 0, actor, kind, label: kind, ...(facts === undefined ? {} : { facts }) });
  const get = (actor: string, name: string) => step(actor, "request", { verb: "get", access: "read", object: { kind: "ConfigMap", namespace: "a", name } });
  const write = (actor: string, name: string) => step(actor, "request", { verb: "update", access: "write", object: { kind: "ConfigMap", namespace: "a", name } });
  const list = (actor: string) => step(actor, "request", { verb: "list", access: "read", object: { kind: "ConfigMap", namespace: "a" } });
  const ext = (actor: string, cell: string, access: "read" | "write") => step(actor, "external", { verb: access, access, external: cell });
  assert.equal(commute(step("a", "response"), step("a", "timer")), false, "one actor's steps are ordered");
  assert.equal(commute(step("a", "response"), write("b", "x")), true, "a response runs only its actor's code");
  assert.equal(commute(write("a", "x"), write("b", "y")), false, "two writes take each other's revisions");
  assert.equal(commute(get("a", "x"), write("b", "y")), true);
  assert.equal(commute(get("a", "x"), write("b", "x")), false);
  assert.equal(commute(list("a"), write("b", "y")), false, "a list sees every object of its collection");
  const crd = step("b", "request", { verb: "create", access: "write", object: { kind: "CustomResourceDefinition", name: "foos.example.com" } });
  assert.equal(commute(get("a", "x"), crd), false, "a CRD decides whether a kind exists");
  assert.equal(commute(step("a", "start"), step("b", "response")), false, "a start is treated as touching everything");
  assert.equal(commute(step("sim", "timer"), step("b", "response")), false);
  assert.equal(commute(ext("a", "c", "write"), ext("b", "c", "read")), false);
  assert.equal(commute(ext("a", "c", "read"), ext("b", "c", "read")), true);
  assert.equal(commute(ext("a", "c", "write"), ext("b", "d", "read")), true);
  assert.equal(commute(ext("a", "c", "write"), write("b", "x")), false, "the world between two writes is checked");
  assert.equal(commute(ext("a", "c", "write"), get("b", "x")), true);
  // A watch delivery takes an event off a queue that writes into its collection add to.
  const delivery = (actor: string, namespace: string): ReadyStep => ({ ...step(actor, "watch", { watchId: `${actor}/1/w1` }), collection: { kind: "ConfigMap", namespace } });
  assert.equal(commute(delivery("a", "a"), write("b", "x")), false, "a write into the watched collection feeds the delivery");
  assert.equal(commute(write("b", "x"), delivery("a", "a")), false);
  assert.equal(commute(delivery("a", "other"), write("b", "x")), true, "a write elsewhere does not");
  assert.equal(commute(delivery("a", "a"), get("b", "x")), true, "a read adds no event");
  assert.equal(commute(delivery("a", "a"), delivery("b", "a")), true);
  assert.equal(commute(delivery("a", "other"), crd), false, "a CRD write may delete objects of any kind");
  assert.equal(commute(delivery("a", "a"), step("gc", "gc")), false, "garbage collection deletes anywhere");
  assert.equal(commute(step("a", "watch"), get("b", "x")), false, "a delivery without its collection is treated as touching everything");
});

test("the race needs one preemption: FIFO alone is clean, K=1 finds the lost update, and the space is complete", async () => {
  const fifo = await explore(fixture, options("racy", { preemptions: 0, faultPoints: 0 }), () => 0);
  assert.equal(fifo.bounded?.complete, true);
  assert.equal(fifo.bounded?.schedules, 1);
  assert.deepEqual(fifo.findings, []);
  const one = await explore(fixture, options("racy", { preemptions: 1, faultPoints: 0 }), () => 0);
  assert.equal(one.bounded?.complete, true);
  assert.deepEqual(keys(one), ["silent-divergence:both increments landed"]);
  assert.ok(one.findings[0]!.minimal.choices.length >= 1, "the minimal run keeps a preemption");
});

test("reduced and plain searches reach the same final worlds and findings, and the reduced one runs fewer schedules", async () => {
  for (const variant of ["racy", "safe"]) {
    for (const bounds of [
      { preemptions: 1, faultPoints: 0 },
      { preemptions: 2, faultPoints: 0 },
      { preemptions: 1, faultPoints: 1 },
    ]) {
      const { reduced, plain } = await both(fixture, variant, bounds, ["ledger"]);
      const what = `${variant} K=${bounds.preemptions} F=${bounds.faultPoints}`;
      assert.equal(reduced.result.bounded?.complete, true, what);
      assert.equal(plain.result.bounded?.complete, true, what);
      assert.deepEqual([...reduced.worlds].sort(), [...plain.worlds].sort(), `${what}: final worlds`);
      assert.deepEqual(keys(reduced.result), keys(plain.result), `${what}: findings`);
      assert.ok(reduced.result.bounded!.pruned > 0, `${what}: the reduction pruned something`);
      assert.ok(reduced.result.bounded!.schedules < plain.result.bounded!.schedules, `${what}: fewer schedules`);
      assert.equal(plain.result.bounded!.pruned, 0, `${what}: the plain search prunes nothing`);
    }
  }
});

test("on a zoo controller with a constant latency, reduced and plain searches agree on worlds and findings", async () => {
  const path = fileURLToPath(new URL("../../examples/zoo/stale-update/scenario.ts", import.meta.url));
  const loaded = await loadScenario(path);
  const constant: Scenario = { ...loaded, timing: { ...loaded.timing, requestLatencyMs: [5, 5] } };
  for (const variant of ["buggy", "fixed"]) {
    const { reduced, plain } = await both(constant, variant, { preemptions: 2, faultPoints: 0 }, [], path);
    assert.deepEqual([...reduced.worlds].sort(), [...plain.worlds].sort(), `${variant}: final worlds`);
    assert.deepEqual(keys(reduced.result), keys(plain.result), `${variant}: findings`);
    assert.ok(reduced.worlds.size > 0, "runs reached their end");
  }
});

test("--first stops at the first finding in search order, the same one on every repeat", async () => {
  const a = await explore(fixture, options("racy", { preemptions: 2, faultPoints: 0 }, { first: true }), () => 0);
  const b = await explore(fixture, options("racy", { preemptions: 2, faultPoints: 0 }, { first: true }), () => 0);
  assert.equal(a.bounded?.complete, false);
  assert.equal(a.bounded?.stoppedBy, "first");
  assert.equal(a.findings.length, 1);
  assert.deepEqual(a.findings[0]!.run.choices, b.findings[0]!.run.choices);
  assert.equal(a.bounded!.schedules, b.bounded!.schedules);
});

test("shards split the search tree: disjoint, and together the whole search", async () => {
  const bounds = { preemptions: 1, faultPoints: 1 };
  const whole = recording(fixture, ["ledger"]);
  const all = await explore(whole.scenario, options("safe", bounds), () => 0);
  let schedules = 0;
  let pruned = 0;
  const worlds = new Set<string>();
  for (let index = 0; index < 3; index++) {
    const part = recording(fixture, ["ledger"]);
    const result = await explore(part.scenario, options("safe", bounds, { shard: { index, count: 3 } }), () => 0);
    assert.equal(result.bounded?.complete, true);
    assert.ok(result.bounded!.schedules > 0, `shard ${index} has work`);
    schedules += result.bounded!.schedules;
    pruned += result.bounded!.pruned;
    for (const w of part.worlds) worlds.add(w);
  }
  assert.equal(schedules, all.bounded!.schedules);
  assert.equal(pruned, all.bounded!.pruned);
  assert.deepEqual([...worlds].sort(), [...whole.worlds].sort());
});

test("a search stopped by --runs resumes from its checkpoint to the same totals as an uninterrupted one", async () => {
  const dir = mkdtempSync(join(tmpdir(), "settle-bounded-"));
  try {
    const checkpoint = join(dir, "search.json");
    const bounds = { preemptions: 1, faultPoints: 1, checkpoint, checkpointEveryRuns: 7 };
    const whole = await explore(fixture, options("safe", { preemptions: 1, faultPoints: 1 }), () => 0);
    const first = await explore(fixture, options("safe", bounds, { runs: 30 }), () => 0);
    assert.equal(first.bounded?.complete, false);
    assert.equal(first.bounded?.stoppedBy, "runs");
    assert.ok(existsSync(checkpoint));
    const resumed = await explore(fixture, options("safe", bounds), () => 0);
    assert.equal(resumed.bounded?.complete, true);
    for (const key of ["schedules", "pruned", "placements", "runs"] as const) assert.equal(resumed.bounded![key], whole.bounded![key], key);
    assert.deepEqual(keys(resumed), keys(whole));
    await assert.rejects(explore(fixture, options("racy", bounds), () => 0), /belongs to another search/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

/** Runs `command` with stdout captured and stderr dropped; a thrown error's name stands for the exit code. */
async function captureStdout(command: () => Promise<number>): Promise<{ code: number | string; stdout: string }> {
  let stdout = "";
  const write = { out: process.stdout.write, err: process.stderr.write };
  process.stdout.write = ((chunk: string) => ((stdout += chunk), true)) as typeof process.stdout.write;
  process.stderr.write = (() => true) as typeof process.stderr.write;
  try {
    return { code: await command(), stdout };
  } catch (error) {
    return { code: (error as Error).name, stdout };
  } finally {
    process.stdout.write = write.out;
    process.stderr.write = write.err;
  }
}

/** Runs `settle explore` in this process (the sources, not dist/), in a fresh directory, and captures what it prints. */
async function exploreCli(args: string[]): Promise<{ code: number | string; stdout: string }> {
  const { exploreCommand } = await import("../../src/cli/explore.ts");
  const cwd = process.cwd();
  const dir = mkdtempSync(join(tmpdir(), "settle-bounded-cli-"));
  process.chdir(dir);
  try {
    return await captureStdout(() => exploreCommand(args));
  } finally {
    process.chdir(cwd);
    rmSync(dir, { recursive: true, force: true });
  }
}

test("settle explore --strategy bounded says whether the space was complete, in text and in --json stats", async () => {
  const text = await exploreCli([fixturePath, "--variant", "safe", "--strategy", "bounded", "--preemptions", "1", "--fault-points", "0"]);
  assert.equal(text.code, 0);
  assert.match(text.stdout, /bounded-fixture --variant safe: complete for K=1, F=0 \(latency 5 ms\): \d+ schedules over 1 of 1 fault placements \(\d+ pruned\), no finding, \d+\.\d s/);
  const json = await exploreCli([fixturePath, "--variant", "racy", "--strategy", "bounded", "--preemptions", "1", "--fault-points", "0", "--json"]);
  assert.equal(json.code, 1);
  const stats = (JSON.parse(json.stdout) as { stats: { complete: boolean; schedules: number; pruned: number; latencyMs: number } }).stats;
  assert.equal(stats.complete, true);
  assert.equal(stats.latencyMs, 5, "the fixture pins 5 ms");
  assert.ok(stats.schedules > 1);
  assert.ok(stats.pruned > 0);
  const limited = await exploreCli([fixturePath, "--variant", "safe", "--strategy", "bounded", "--preemptions", "1", "--fault-points", "0", "--runs", "2", "--json"]);
  assert.equal((JSON.parse(limited.stdout) as { stats: { complete: boolean } }).stats.complete, false, "--runs given bounds the search");
  const bad = await exploreCli([fixturePath, "--strategy", "bounded", "--fault-points", "3"]);
  assert.equal(bad.code, "UsageError");
});
