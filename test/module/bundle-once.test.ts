// An exploration on worker threads bundles its module once, in the main thread (loading the scenario does), and
// hands the bundle to the workers: each of them bundled client-node's 918 files again before, all at once on the
// same cores (31 s to the first finding with 2 workers under load, against 2.6 s). Bundlings are counted through
// SETTLE_DEBUG_BUNDLE_LOG, which every thread appends to. The findings do not depend on the thread count. Seed pinned.
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { explore, type ExploreOptions } from "../../src/explore/explore.ts";
import { loadYamlExplore } from "../../src/explore/yaml.ts";
import { loadYamlScenario } from "../../src/scenario-yaml/load.ts";

const repo = fileURLToPath(new URL("../../", import.meta.url));
const path = join(repo, "examples/frameworks/client-node/scenario.yaml");
const log = join(mkdtempSync(join(tmpdir(), "settle-bundles-")), "bundles.log");

test("explore on two workers bundles the module once, and finds what one thread finds", async () => {
  writeFileSync(log, "");
  process.env.SETTLE_DEBUG_BUNDLE_LOG = log;
  try {
    const scenario = await loadYamlExplore(loadYamlScenario(path));
    const options = (workers: number): ExploreOptions => ({ scenarioPath: path, variant: "delta", params: {}, runs: 4, seed: 1, workers, strategy: "mix", first: false });
    const two = await explore(scenario, options(2), () => 0);
    const bundled = readFileSync(log, "utf8").split("\n").filter((line) => line !== "");
    assert.deepEqual(bundled, [join(repo, "examples/frameworks/client-node/operator.mjs")], "one bundling, by the main thread");
    const one = await explore(scenario, options(1), () => 0);
    const summary = (r: typeof one) => r.findings.map((f) => `${f.key} run ${f.run.index} seed ${f.run.seed} ${f.minimal.outcome.traceHash}`);
    assert.ok(two.findings.length > 0);
    assert.deepEqual(summary(two), summary(one));
    assert.equal(two.runs, one.runs);
  } finally {
    delete process.env.SETTLE_DEBUG_BUNDLE_LOG;
  }
});
