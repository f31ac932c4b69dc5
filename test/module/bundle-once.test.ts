// An exploration on worker threads bundles its module once, in the main thread (loading the scenario does), and
// hands the bundle to the workers: each of them bundled client-node's 918 files again before, all at once on the
// same cores (31 s to the first finding with 2 workers under load, against 2.6 s). Bundlings are counted through
// SETTLE_DEBUG_BUNDLE_LOG, which every thread appends to. Likewise each module variant is evaluated once, by the main
// thread, to tell a module that throws while loading (exit 2) before exploring: each worker did that again for every
// variant when it loaded the scenario (SETTLE_DEBUG_PREFLIGHT_LOG counts them). The findings do not depend on the
// thread count. Seed pinned.
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
const logs = mkdtempSync(join(tmpdir(), "settle-bundles-"));
const log = join(logs, "bundles.log");
const preflightLog = join(logs, "preflights.log");
const lines = (file: string) => readFileSync(file, "utf8").split("\n").filter((line) => line !== "");

test("explore on two workers bundles the module once and evaluates each variant once, and finds what one thread finds", async () => {
  writeFileSync(log, "");
  writeFileSync(preflightLog, "");
  process.env.SETTLE_DEBUG_BUNDLE_LOG = log;
  process.env.SETTLE_DEBUG_PREFLIGHT_LOG = preflightLog;
  try {
    const yaml = loadYamlScenario(path);
    const scenario = await loadYamlExplore(yaml);
    const variants = Object.keys(yaml.variants);
    const preflights = lines(preflightLog);
    assert.equal(preflights.length, variants.length, preflights.join("\n"));
    assert.equal(new Set(preflights).size, variants.length, "one preflight per variant (args differ)");
    const options = (workers: number): ExploreOptions => ({ scenarioPath: path, variant: "delta", params: {}, runs: 4, seed: 1, workers, strategy: "mix", first: false });
    const two = await explore(scenario, options(2), () => 0);
    const bundled = lines(log);
    assert.deepEqual(bundled, [join(repo, "examples/frameworks/client-node/operator.mjs")], "one bundling, by the main thread");
    assert.deepEqual(lines(preflightLog), preflights, "the workers evaluated no variant again");
    const one = await explore(scenario, options(1), () => 0);
    const summary = (r: typeof one) => r.findings.map((f) => `${f.key} run ${f.run.index} seed ${f.run.seed} ${f.minimal.outcome.traceHash}`);
    assert.ok(two.findings.length > 0);
    assert.deepEqual(summary(two), summary(one));
    assert.equal(two.runs, one.runs);
  } finally {
    delete process.env.SETTLE_DEBUG_BUNDLE_LOG;
    delete process.env.SETTLE_DEBUG_PREFLIGHT_LOG;
  }
});
