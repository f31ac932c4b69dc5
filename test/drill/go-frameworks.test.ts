import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { drill } from "../../src/drill/drill.ts";
import { yamlDrillTarget } from "../../src/drill/yaml-target.ts";
import { loadYamlScenario } from "../../src/scenario-yaml/index.ts";

// The controller-runtime probe of examples/frameworks, built natively: the delta variant loses the rest of a
// scale-up to a kill after its second write, and a Reconcile that returns its error with no retry of its own
// survives a failed create, because controller-runtime requeues the request with backoff (the README's survival
// table, measured over every point with --faults). The client-go probe is examples/go/sample-controller, tested in
// test/examples/go.test.ts.
const repo = fileURLToPath(new URL("../..", import.meta.url));
const buildTimeoutMs = 15 * 60_000;

test("controller-runtime probe: delta is found at kill point 2; level passes it", { timeout: buildTimeoutMs }, async () => {
  const scenario = loadYamlScenario(join(repo, "examples/frameworks/controller-runtime/scenario.yaml"));
  const delta = await drill({ target: yamlDrillTarget(scenario, "delta"), killPoints: [2], concurrency: 1, quietMs: 1500 });
  const level = await drill({ target: yamlDrillTarget(scenario, "level"), killPoints: [2], concurrency: 1, quietMs: 1500 });
  for (const result of [delta, level]) assert.equal(result.reference.verdict, "ok", `${result.target.variant}: ${result.reference.detail}`);
  assert.deepEqual(delta.runs.map((r) => `${r.point?.fault} ${r.verdict}`), ["kill violated"], delta.runs.map((r) => r.output?.join("\n")).join("\n"));
  assert.deepEqual(delta.runs[0]!.failed, ["children == spec.voices"]);
  assert.deepEqual(level.runs.map((r) => `${r.point?.fault} ${r.verdict}`), ["kill ok"]);
});

test("controller-runtime probe: a Reconcile that returns a failed create's error is called again (the library's requeue with backoff)", { timeout: buildTimeoutMs }, async () => {
  const scenario = loadYamlScenario(join(repo, "examples/frameworks/controller-runtime/scenario.yaml"));
  const target = yamlDrillTarget(scenario, "level-no-retry");
  // Write 1 is the first status patch; the next write, the scale-up's first create, fails with a 500.
  const result = await drill({ target: { ...target, defaults: { ...target.defaults, faultKinds: ["fail-500"] } }, killPoints: [1], concurrency: 1, quietMs: 1500 });
  assert.equal(result.reference.verdict, "ok", result.reference.detail);
  assert.deepEqual(result.runs.map((r) => `${r.point?.fault} ${r.verdict}`), ["fail-500 ok"], result.runs.map((r) => `${r.detail}\n${r.output?.join("\n")}`).join("\n"));
  assert.match(result.runs[0]!.applied ?? "", /fail-500/);
});
