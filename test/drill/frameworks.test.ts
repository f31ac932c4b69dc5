import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { drill } from "../../src/drill/drill.ts";
import { loadYamlScenario } from "../../src/scenario-yaml/index.ts";
import { yamlDrillTarget } from "../../src/drill/yaml-target.ts";

// The framework examples' module: variants, drilled as `node operator.mjs ARGS`: the delta variant loses the rest of
// a scale-up to a kill after its second write and the level one survives the same point, and the failed write there
// (each scenario's faults.kinds is [kill, fail-500]), which it retries. One write each keeps these to a reference run
// and two points per variant; the full tables are in the README.
const repo = fileURLToPath(new URL("../..", import.meta.url));
const frameworks = ["client-node", "fluent-client", "dot-i-operator"] as const;

for (const name of frameworks) {
  test(`${name}: the delta variant is found at kill point 2 and the level variant passes it`, async () => {
    const scenario = loadYamlScenario(join(repo, "examples/frameworks", name, "scenario.yaml"));
    const [delta, level] = await Promise.all(["delta", "level"].map((variant) => drill({ target: yamlDrillTarget(scenario, variant), killPoints: [2], concurrency: 1 })));
    for (const result of [delta!, level!]) assert.equal(result.reference.verdict, "ok", `${result.target.variant} reference: ${result.reference.detail}`);
    const kill = delta!.runs.find((r) => r.point?.fault === "kill");
    assert.equal(kill?.verdict, "violated", delta!.runs.map((r) => r.output?.join("\n")).join("\n"));
    assert.deepEqual(kill.failed, ["children == spec.voices"]);
    assert.deepEqual(level!.runs.map((r) => `${r.point?.fault} ${r.verdict}`), ["kill ok", "fail-500 ok"], level!.runs.map((r) => r.output?.join("\n")).join("\n"));
  });
}

test("dot-i-operator: the README's handler without a retry of its own loses the scale-up to one failed create; the framework does not call it again", async () => {
  const scenario = loadYamlScenario(join(repo, "examples/frameworks/dot-i-operator/scenario.yaml"));
  const target = yamlDrillTarget(scenario, "level-no-retry");
  const result = await drill({ target: { ...target, defaults: { ...target.defaults, faultKinds: ["fail-500"] } }, killPoints: [2] });
  assert.equal(result.reference.verdict, "ok", result.reference.detail);
  const run = result.runs[0];
  assert.equal(`${run?.point?.fault} ${run?.verdict}`, "fail-500 violated", run?.detail);
  assert.ok(run!.output?.some((l) => l.includes('"msg":"handler failed"')), run!.output?.join("\n"));
});
