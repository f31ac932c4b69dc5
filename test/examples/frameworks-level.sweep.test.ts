// Issue #31's acceptance: each framework example's level variant (examples/frameworks) over 500 runs of `settle
// explore`'s default mix (every systematic point first, on the even runs, then random and PCT schedules with faults
// drawn from the default budget), seed 1. A sweep file (scripts/run-tests.mjs runs it beside the other files, at
// the lowest priority): CPU only, in virtual time, about 200 CPU-s in all. Two worker threads (dot-i-operator: every run
// in this thread, to see each run's verdict and faults): the results do not
// depend on the thread count (test/explore/ensemble.test.ts, test/module/bundle-once.test.ts). The first 40 runs of
// each sweep are the runs test/examples/frameworks-explore.sweep.test.ts used to check (the same seed and plan).
import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { explore, runIndexes, type ExploreOptions, type RunSummary } from "../../src/explore/explore.ts";
import { pointOfRun, type PlanContext } from "../../src/explore/plan.ts";
import { referencePlan } from "../../src/explore/runs.ts";
import { loadYamlExplore } from "../../src/explore/yaml.ts";
import { loadYamlScenario } from "../../src/scenario-yaml/load.ts";
import { quietly } from "../module/quietly.ts";

const repo = fileURLToPath(new URL("../../", import.meta.url));
/** The figure. */
const levelRuns = 500;
const seed = 1;
const workers = 2;

function options(example: string): ExploreOptions {
  const scenarioPath = join(repo, "examples/frameworks", example, "scenario.yaml");
  return { scenarioPath, variant: "level", params: {}, runs: levelRuns, seed, workers, strategy: "mix", first: false };
}

const described = (findings: Awaited<ReturnType<typeof explore>>["findings"]) =>
  findings.map((f) => `${f.key} x${f.occurrences} (run ${f.run.index}, seed ${f.run.seed}): ${f.run.verdict.detail}`);

for (const example of ["client-node", "fluent-client"]) {
  test(`${example}: the level variant is clean over ${levelRuns} runs, every systematic point among them`, async () => {
    const scenario = await loadYamlExplore(loadYamlScenario(options(example).scenarioPath));
    assert.equal(scenario.variants.level?.expect, "ok");
    const result = await quietly(() => explore(scenario, options(example), () => 0));
    assert.deepEqual(described(result.findings), []);
    assert.equal(result.runs, levelRuns);
    // The points take the even runs until they are all covered: 500 runs reach every one of them.
    assert.ok(result.points.length > 0 && 2 * result.points.length <= levelRuns, `${result.points.length} points`);
    assert.equal(result.pointsCovered, result.points.length);
  });
}

// @dot-i/k8s-operator itself dies on a watch's 410 Expired ERROR event: its watch callback takes the Status for an
// object and throws "Malformed event object" inside the stream's listener, where no handler of the operator can
// catch it (examples/frameworks/dot-i-operator/README.md). The level variant therefore declares a finding, and
// "clean over 500 runs" can only mean: the 410 is the one thing that goes wrong. The 410 comes from the expire-watch
// points and from drawn watch closes (the default budget expires one in four), so the sweep runs every index and
// checks that each run that is not clean is that crash with a 410 among its faults, that each expire-watch point's run
// is one, and that random runs meet it too (every verdict but ok is a finding: a run that went wrong in any other way
// would show here). Its minimal run, the 410 alone, is findings/level-expire-watch.json (framework-findings.test.ts).
test(`dot-i-operator: over ${levelRuns} runs of the level variant, the only thing that goes wrong is the framework's death on a 410 Expired`, async () => {
  const scenario = await loadYamlExplore(loadYamlScenario(options("dot-i-operator").scenarioPath));
  assert.equal(scenario.variants.level?.expect, "finding");
  const { points } = await referencePlan(scenario, { variant: "level", params: {}, seed });
  const ctx: PlanContext = { scenario, variant: "level", workload: undefined, params: {}, seed, strategy: "mix", points };
  const expiring: number[] = [];
  for (let index = 0; index < levelRuns; index++) {
    const point = pointOfRun(ctx, index);
    if (point !== undefined && points[point]!.pointClass === "expire-watch") expiring.push(index);
  }
  assert.ok(expiring.length > 0, "the plan has expire-watch points");
  const runs: RunSummary[] = [];
  await quietly(() => runIndexes(ctx, Array.from({ length: levelRuns }, (_, i) => i), undefined, (summary) => runs.push(summary)));
  assert.equal(runs.length, levelRuns);
  const crashed = runs.filter((run) => run.verdict.kind !== "ok");
  for (const run of crashed) {
    assert.equal(run.verdict.kind, "actor-error", `run ${run.index}: ${run.verdict.detail}`);
    assert.match(run.verdict.detail ?? "", /Malformed event object/, `run ${run.index}`);
    assert.ok(run.faults.some((f) => f.kind === "close-watch" && f.expired === 1), `run ${run.index}: ${JSON.stringify(run.faults)}`);
  }
  const crashedIndexes = new Set(crashed.map((run) => run.index));
  for (const index of expiring) assert.ok(crashedIndexes.has(index), `expire-watch point run ${index}`);
  const random = crashed.filter((run) => run.point === undefined);
  assert.ok(random.length > 0, "random runs draw an expired watch close too");
});
