// The Ensemble drill, automated: the delta variant's lost scale-up must be found and shrunk to one crash, the
// level variant must pass with every systematic crash point covered, and results must not depend on workers,
// shards or anything but the seed.
import { test } from "node:test";
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import ensembleScenario from "../../examples/ensemble/scenario.ts";
import { faultPoints } from "../../src/explore/runs.ts";
import { explore, runIndexes, type ExploreOptions, type ExploreResult, type Finding, type RunSummary } from "../../src/explore/explore.ts";
import type { PlanContext } from "../../src/explore/plan.ts";
import { runScenario } from "../../src/explore/run.ts";
import type { Scenario } from "../../src/explore/scenario.ts";

const scenarioPath = fileURLToPath(new URL("../../examples/ensemble/scenario.ts", import.meta.url));
// A scenario typed with its own params is not assignable to Scenario<Params> (hooks take params contravariantly),
// while the explorer's entry points take the untyped form, as the CLI's loader produces it.
const ensemble = ensembleScenario as unknown as Scenario;
const params = ensemble.params;

function options(variant: string, overrides: Partial<ExploreOptions> = {}): ExploreOptions {
  return { scenarioPath, variant, params, runs: 60, seed: 1, workers: 1, strategy: "mix", first: false, ...overrides };
}

/** What must be identical between two explorations: everything but wall time. */
function comparable(result: ExploreResult): object {
  return {
    runs: result.runs,
    points: result.points,
    pointsCovered: result.pointsCovered,
    steps: result.steps,
    findings: result.findings.map((f: Finding) => ({
      key: f.key,
      run: f.run,
      occurrences: f.occurrences,
      choices: f.minimal.choices,
      faults: f.minimal.faults,
      verdict: f.minimal.outcome.verdict,
      traceHash: f.minimal.outcome.traceHash,
      steps: f.minimal.outcome.steps,
    })),
  };
}

let deltaResult: ExploreResult | undefined;
async function exploreDelta(): Promise<ExploreResult> {
  deltaResult ??= await explore(ensemble, options("delta"), () => 0);
  return deltaResult;
}

async function planContext(variant: string, seed: number): Promise<PlanContext> {
  const points = await faultPoints(ensemble, { variant, workload: undefined, params, seed });
  return { scenario: ensemble, variant, workload: undefined, params, seed, strategy: "mix", points };
}

async function summaries(ctx: PlanContext, indexes: readonly number[]): Promise<RunSummary[]> {
  const out: RunSummary[] = [];
  await runIndexes(ctx, indexes, undefined, (s) => out.push(s));
  return out;
}

test("exploring the delta variant finds silent divergence of the child count, shrunk to one crash and no choices", async () => {
  const result = await exploreDelta();
  assert.equal(result.runs, 60);
  assert.deepEqual(result.findings.map((f) => f.key), ["silent-divergence:children == spec.voices"]);
  const { minimal, occurrences } = result.findings[0]!;
  assert.ok(occurrences > 1, `seen in ${occurrences} run(s)`);
  assert.equal(minimal.faults.length, 1);
  assert.equal(minimal.faults[0]!.kind, "crash");
  assert.equal(minimal.faults[0]!.target, "operator");
  assert.equal(minimal.choices.length, 0, "the bug needs no unusual interleaving, only the kill");
  assert.equal(minimal.outcome.verdict.kind, "silent-divergence");
  assert.equal(minimal.outcome.verdict.property, "children == spec.voices");
  assert.ok(minimal.outcome.trace.length > 0, "the minimal run keeps its full trace for the report");
});

test("the first delta finding is the earliest failing run and the shrunk run is no longer than it", async () => {
  const result = await exploreDelta();
  const finding = result.findings[0]!;
  const all = await summaries(await planContext("delta", 1), Array.from({ length: finding.run.index + 1 }, (_, i) => i));
  assert.deepEqual(all.filter((s) => s.verdict.kind !== "ok").map((s) => s.index), [finding.run.index]);
  assert.ok(finding.minimal.faults.length <= finding.run.faults.length);
  assert.ok(finding.minimal.choices.length <= finding.run.choices.length);
});

test("replaying the minimal delta run with its choices and faults twice gives the same verdict and trace hash", async () => {
  const finding = (await exploreDelta()).findings[0]!;
  const spec = { variant: "delta", workload: finding.run.workload, params, seed: finding.run.seed, choices: finding.minimal.choices, faults: finding.minimal.faults, traceMode: "full" as const };
  const first = await runScenario(ensemble, spec);
  const second = await runScenario(ensemble, spec);
  assert.equal(first.traceHash, second.traceHash);
  assert.equal(first.traceHash, finding.minimal.outcome.traceHash);
  assert.deepEqual(second.verdict, first.verdict);
  assert.equal(first.verdict.kind, "silent-divergence");
  assert.deepEqual(first.trace, second.trace);
});

test("the minimal delta run passes in the level variant: the fix, not the schedule, makes the difference", async () => {
  const finding = (await exploreDelta()).findings[0]!;
  // The same seed and the same kill at the same step, given to the level operator: it converges, because its
  // input is spec.voices in the API server, not an event that died with the process.
  const outcome = await runScenario(ensemble, { variant: "level", workload: finding.run.workload, params, seed: finding.run.seed, faults: finding.minimal.faults });
  assert.equal(outcome.verdict.kind, "ok", outcome.verdict.detail);
});

test("exploring the level variant finds nothing and covers every systematic fault point of the reference runs", async () => {
  // 204 points (198 before the watches expired with a 410, 173 before per-kind time travel after a failed watch):
  // mix gives every other run to them.
  const result = await explore(ensemble, options("level", { runs: 410 }), () => 0);
  assert.deepEqual(result.findings, []);
  assert.ok(result.points.length > 0);
  assert.ok(2 * result.points.length <= 410, `${result.points.length} points need more runs`);
  assert.equal(result.pointsCovered, result.points.length);
  const kinds = new Set(result.points.map((p) => p.fault.kind));
  assert.deepEqual(kinds, new Set(["crash", "stale-read", "delay-watch", "close-watch"]));
  assert.ok(result.points.some((p) => p.fault.kind === "crash" && typeof p.fault.relistAtRevision === "number"), "time-travel points: a crash whose restart relists from before the write");
  assert.ok(result.points.every((p) => p.fault.target === "operator" || p.fault.target.startsWith("operator/")));
  assert.deepEqual(new Set(result.points.map((p) => p.workload)), new Set(Object.keys(ensemble.workloads)));
});

test("the same seed gives identical run summaries, and another seed gives different ones", async () => {
  const indexes = Array.from({ length: 25 }, (_, i) => 60 + i);
  const ctx = await planContext("delta", 11);
  const first = await summaries(ctx, indexes);
  const second = await summaries(await planContext("delta", 11), indexes);
  assert.deepEqual(second, first);
  const other = await summaries(await planContext("delta", 12), indexes);
  assert.notDeepEqual(other.map((s) => s.traceHash), first.map((s) => s.traceHash));
});

test("two worker threads running the TypeScript scenario give the same findings as one thread", async () => {
  const one = await explore(ensemble, options("delta", { runs: 40, seed: 5 }), () => 0);
  const two = await explore(ensemble, options("delta", { runs: 40, seed: 5, workers: 2 }), () => 0);
  assert.ok(one.findings.length > 0, "the comparison needs a finding");
  assert.deepEqual(comparable(two), comparable(one));
});

test("--first reports the lowest-index finding and the same runs with 1 and 4 workers", async () => {
  // Random schedules with random faults: findings are scattered, so a worker may find a later one first.
  const first = (workers: number) => explore(ensemble, options("delta", { runs: 300, seed: 3, strategy: "random", first: true, workers }), () => 0);
  const one = await first(1);
  const four = await first(4);
  assert.equal(one.findings.length, 1);
  assert.ok(one.findings[0]!.run.index > 3, `the first finding is at run ${one.findings[0]!.run.index}: the comparison needs runs before it`);
  assert.equal(one.runs, one.findings[0]!.run.index + 1, "every run up to the first finding, none after");
  assert.deepEqual(comparable(four), comparable(one));
});

test("the shards 0/3, 1/3 and 2/3 are disjoint and their union equals the unsharded run", async () => {
  const seed = 9;
  const ctx = await planContext("delta", seed);
  const total = 30;
  const whole = await summaries(ctx, Array.from({ length: total }, (_, i) => i));
  const sharded: Array<{ index: number; shard: number; summary: RunSummary }> = [];
  for (let shard = 0; shard < 3; shard++) {
    // A shard is a separate process in practice: plan it afresh from the same options.
    const own = await planContext("delta", seed);
    const indexes = Array.from({ length: total }, (_, i) => i).filter((i) => i % 3 === shard);
    for (const summary of await summaries(own, indexes)) sharded.push({ index: summary.index, shard, summary });
  }
  sharded.sort((a, b) => a.index - b.index);
  assert.deepEqual(sharded.map((s) => s.index), whole.map((s) => s.index), "every index once");
  assert.deepEqual(
    sharded.map((s) => [s.index, s.summary.traceHash, s.summary.verdict.kind, s.summary.verdict.property]),
    whole.map((s) => [s.index, s.traceHash, s.verdict.kind, s.verdict.property]),
  );

  // Through explore's own --shard option: the shards' runs, steps and covered points add up to the whole, and
  // the earliest finding over the shards is the unsharded one.
  const unsharded = await explore(ensemble, options("delta", { runs: total, seed }), () => 0);
  const parts = [];
  for (let index = 0; index < 3; index++) parts.push(await explore(ensemble, options("delta", { runs: total, seed, shard: { index, count: 3 } }), () => 0));
  assert.equal(parts.reduce((n, p) => n + p.runs, 0), unsharded.runs);
  assert.equal(parts.reduce((n, p) => n + p.steps, 0), unsharded.steps);
  assert.equal(parts.reduce((n, p) => n + p.pointsCovered, 0), unsharded.pointsCovered);
  const earliest = new Map<string, Finding>();
  for (const f of parts.flatMap((p) => p.findings)) {
    const seen = earliest.get(f.key);
    if (seen === undefined || f.run.index < seen.run.index) earliest.set(f.key, f);
  }
  assert.deepEqual(
    [...earliest.values()].sort((a, b) => a.run.index - b.run.index).map((f) => [f.key, f.run, f.minimal.outcome.traceHash]),
    unsharded.findings.map((f) => [f.key, f.run, f.minimal.outcome.traceHash]),
  );
});
