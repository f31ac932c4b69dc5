// The framework examples (examples/frameworks) under `settle explore`, in process: each one's delta and
// level-no-retry variants are found (the scale-up they lose) with the default fault budget, seeds pinned. The level
// variants' 500-run sweeps are test/examples/frameworks-level.sweep.test.ts (a level run of these examples costs
// about 0.1 s of CPU: the fresh module load of every incarnation and Node's HTTP on both ends). fluent-client's
// delta variant is covered by test/module/fluent-client.test.ts. A sweep file (CPU only, in virtual time), which
// scripts/run-tests.mjs runs beside the other files.
import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { explore, type ExploreOptions } from "../../src/explore/explore.ts";
import { loadYamlExplore } from "../../src/explore/yaml.ts";
import { loadYamlScenario } from "../../src/scenario-yaml/load.ts";
import { quietly } from "../module/quietly.ts";

const repo = fileURLToPath(new URL("../../", import.meta.url));
/** Runs the delta variant may take: each is found well within this at its pinned seed. */
const deltaRunsMax = 40;
/** Runs the level-no-retry variant may take (client-node: found at run 24 of seed 1; dot-i-operator: run 2). */
const noRetryRunsMax = 40;


for (const example of ["client-node", "dot-i-operator"]) {
  test(`${example}: explore finds the delta and level-no-retry variants' lost scale-up, and the level variant declares what it expects`, async () => {
    const path = join(repo, "examples/frameworks", example, "scenario.yaml");
    const scenario = await loadYamlExplore(loadYamlScenario(path));
    assert.equal(scenario.variants.delta?.expect, "finding");
    // @dot-i/k8s-operator's own watch dies on a 410 Expired ERROR event (its replay is findings/level-expire-watch.json),
    // so its level variant declares a finding; the operator's logic is clean (frameworks-level.sweep.test.ts).
    assert.equal(scenario.variants.level?.expect, example === "dot-i-operator" ? "finding" : "ok");
    // Drawn close-watches expire one time in four, and @dot-i/k8s-operator dies on the 410 in any variant, so its
    // search may meet that crash first: it runs all its runs, and the lost scale-up must be among its findings,
    // beside nothing but the crash.
    const first = example !== "dot-i-operator";
    const options = (variant: string, runs: number): ExploreOptions => ({ scenarioPath: path, variant, params: {}, runs, seed: 1, workers: 1, strategy: "mix", first });
    const lostScaleUp = "silent-divergence:children == spec.voices";
    const expected = (keys: string[]) => (first ? [lostScaleUp] : [lostScaleUp, ...keys.filter((key) => key === "actor-error:controller")]);
    const delta = await quietly(() => explore(scenario, options("delta", deltaRunsMax), () => 0));
    const deltaKeys = delta.findings.map((f) => f.key).sort();
    assert.deepEqual(deltaKeys, expected(deltaKeys).sort(), `after ${delta.runs} runs`);
    // The handler without a retry of its own loses work under the default budget's failed requests: the variant
    // declares the finding, so a tour of examples/frameworks counts it as expected.
    assert.equal(scenario.variants["level-no-retry"]?.expect, "finding");
    const noRetry = await quietly(() => explore(scenario, options("level-no-retry", noRetryRunsMax), () => 0));
    const noRetryKeys = noRetry.findings.map((f) => f.key).sort();
    assert.deepEqual(noRetryKeys, expected(noRetryKeys).sort(), `after ${noRetry.runs} runs`);
  });
}
