// The image-refresh example: each buggy variant is found by the invariant the model says it breaks, shrunk,
// and replayed to the same trace; the minimal buggy runs pass in the fixed variant; a small sweep of the fixed
// variant over every scenario finds nothing. Seeds are pinned; the 2,000-run sweeps are in acceptance/.
import { test } from "node:test";
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import imageRefreshScenario from "../../examples/image-refresh/scenario.ts";
import { propertyNames } from "../../examples/image-refresh/properties.ts";
import { explore, type ExploreOptions, type Finding } from "../../src/explore/explore.ts";
import { runScenario } from "../../src/explore/run.ts";
import type { Scenario } from "../../src/explore/scenario.ts";
import { fifoStrategy } from "../../src/sim/strategy.ts";

const scenarioPath = fileURLToPath(new URL("../../examples/image-refresh/scenario.ts", import.meta.url));
// A scenario typed with its own params is not assignable to Scenario<Params>; the explorer takes the loader's form.
const imageRefresh = imageRefreshScenario as unknown as Scenario;
const params = imageRefresh.params;

function options(variant: string, workload: string, overrides: Partial<ExploreOptions> = {}): ExploreOptions {
  return { scenarioPath, variant, workload, params, runs: 20, seed: 1, workers: 1, strategy: "mix", first: true, ...overrides };
}

/** Explores until the first finding and checks it is the expected property, shrunk and replayable. */
async function findAndReplay(variant: string, workload: string, property: string, overrides: Partial<ExploreOptions> = {}): Promise<Finding> {
  const result = await explore(imageRefresh, options(variant, workload, overrides), () => 0);
  assert.equal(result.findings.length, 1, `one finding for ${variant}`);
  const finding = result.findings[0]!;
  assert.equal(finding.minimal.outcome.verdict.kind, "safety-violation");
  assert.equal(finding.minimal.outcome.verdict.property, property);
  assert.ok(finding.minimal.faults.length <= finding.run.faults.length, "shrinking never adds faults");
  assert.ok(finding.minimal.choices.length <= finding.run.choices.length, "shrinking never adds choices");
  const spec = { variant, workload, params, seed: finding.run.seed, choices: finding.minimal.choices, faults: finding.minimal.faults };
  const replayed = await runScenario(imageRefresh, spec);
  assert.equal(replayed.traceHash, finding.minimal.outcome.traceHash, "the replay is byte-identical");
  assert.deepEqual(replayed.verdict, finding.minimal.outcome.verdict);
  return finding;
}

async function passesWhenFixed(finding: Finding, workload: string): Promise<void> {
  const outcome = await runScenario(imageRefresh, { variant: "fixed", workload, params, seed: finding.run.seed, choices: finding.minimal.choices, faults: finding.minimal.faults });
  assert.equal(outcome.verdict.kind, "ok", outcome.verdict.detail);
}

test("b0 (before the PR) never re-pins after a helm revert: L1 is found with no fault, and the fixed script passes the same run", async () => {
  const finding = await findAndReplay("b0", "a-helm-revert", propertyNames.repin);
  assert.equal(finding.minimal.faults.length, 0, "the bug needs no fault: only the chart release");
  assert.equal(finding.minimal.choices.length, 0);
  await passesWhenFixed(finding, "a-helm-revert");
});

test("b1 (forced retry without the < MAX bound) drops a pending first observation on latched ticks: S2 is found after a failed registry read", async () => {
  const finding = await findAndReplay("b1", "b-notready-latch", propertyNames.bookkeeping, { runs: 60 });
  assert.deepEqual(finding.minimal.faults.map((f) => f.kind), ["registry-read-fail"], "shrunk to the one failed HEAD");
  await passesWhenFixed(finding, "b-notready-latch");
});

test("b1 with a registry read failing on the first tick: the latched ticks exit at the flap guard and the record never lands", async () => {
  const run = (variant: string) =>
    runScenario(imageRefresh, { variant, workload: "b-notready-latch", params, seed: 7, strategy: fifoStrategy(), faults: [{ atStep: 1, kind: "registry-read-fail", target: "registry" }] });
  const buggy = await run("b1");
  assert.equal(buggy.verdict.kind, "safety-violation");
  assert.equal(buggy.verdict.property, propertyNames.bookkeeping);
  const fixed = await run("fixed");
  assert.equal(fixed.verdict.kind, "ok", fixed.verdict.detail);
});

test("b2 (bounded retry, silent latched arm) goes green and quiet once latched behind a NotReady node: S1 is found with no fault", async () => {
  const finding = await findAndReplay("b2", "b-notready-latch", propertyNames.loudLatch);
  assert.equal(finding.minimal.faults.length, 0);
  await passesWhenFixed(finding, "b-notready-latch");
});

test("b3 (whole-reference comparison) re-images every tick behind a prefix-rewriting webhook: S3 is found with no fault", async () => {
  const finding = await findAndReplay("b3", "c-mirror-webhook", propertyNames.noThrash);
  assert.equal(finding.minimal.faults.length, 0);
  await passesWhenFixed(finding, "c-mirror-webhook");
});

test("the fixed variant has no finding over a small sweep of every scenario", async () => {
  for (const workload of Object.keys(imageRefresh.workloads)) {
    const result = await explore(imageRefresh, options("fixed", workload, { runs: 3, seed: 3, first: false }), () => 0);
    assert.deepEqual(result.findings.map((f) => `${f.key} (${workload})`), [], workload);
    assert.equal(result.runs, 3);
  }
});
