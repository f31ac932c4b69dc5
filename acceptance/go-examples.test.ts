// The Go examples' full drills: every variant of examples/go/<name> over every point its scenario declares (and
// the survival table's probes over every fault kind), each ending as the variant expects. test/examples/go.test.ts
// drills one point per variant in CI; this is the whole of it (several minutes of real time).
import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { drill } from "../src/drill/drill.ts";
import type { DrillResult } from "../src/drill/types.ts";
import { yamlDrillTarget } from "../src/drill/yaml-target.ts";
import { loadYamlScenario } from "../src/scenario-yaml/index.ts";

const repo = fileURLToPath(new URL("..", import.meta.url));
const timeoutMs = 30 * 60_000;
/** Failing points: the verdicts that count as lost work (a no-quiet point is not one). */
const lost = new Set(["violated", "workload-failed"]);
// Every run waits the scenario's own quiet window, not one learned from the reference run's think times: a loaded
// machine can pause a process longer than a learned window, and the run would be judged before its next write.

function failing(result: DrillResult): string[] {
  return [result.reference, ...result.runs].filter((run) => lost.has(run.verdict)).map((run) => `${run.point === undefined ? "reference" : `${run.point.fault} after write ${run.point.afterWrite}`}: ${run.verdict}`);
}

for (const name of ["ensemble", "sample-controller", "leader-election"]) {
  const scenario = loadYamlScenario(join(repo, "examples/go", name, "scenario.yaml"));
  for (const [variant, declared] of Object.entries(scenario.variants)) {
    test(`examples/go/${name} --variant ${variant}: every point, expecting ${declared.expect}`, { timeout: timeoutMs }, async () => {
      const result = await drill({ target: yamlDrillTarget(scenario, variant), concurrency: 2, quietMs: scenario.drill.quietMs ?? 2000 });
      if (declared.expect === "finding") assert.ok(failing(result).length > 0, "no point lost work");
      else assert.deepEqual([result.reference.verdict, ...result.runs.filter((run) => run.verdict !== "ok").map((run) => `${run.point?.fault} ${run.point?.afterWrite} ${run.verdict}: ${run.detail}`)], ["ok"]);
    });
  }
}

test("the survival table's probes with --faults: only client-go without AddRateLimited loses work, at its first create", { timeout: timeoutMs }, async () => {
  const results = new Map<string, DrillResult>();
  for (const [stack, variant] of [["controller-runtime", "level-no-retry"], ["controller-runtime", "level"], ["client-go", "level-no-retry"], ["client-go", "level"]] as const) {
    const scenario = loadYamlScenario(join(repo, "examples/frameworks", stack, "scenario.yaml"));
    results.set(`${stack} ${variant}`, await drill({ target: yamlDrillTarget(scenario, variant), faults: true, concurrency: 2, quietMs: scenario.drill.quietMs ?? 2000 }));
  }
  for (const [key, result] of results) assert.equal(result.reference.verdict, "ok", `${key}: ${result.reference.detail}`);
  assert.deepEqual(failing(results.get("controller-runtime level-no-retry")!), []);
  assert.deepEqual(failing(results.get("controller-runtime level")!), []);
  assert.deepEqual(failing(results.get("client-go level")!), []);
  // The first sync's status write is write 1; the scale-up's first create fails, and no event comes after it. The
  // drill's run bound (30 s) is shorter than the workload's wait (60 s), so the run ends as no-quiet.
  const forgotten = results.get("client-go level-no-retry")!.runs.filter((run) => run.verdict !== "ok").map((run) => `${run.point?.fault} ${run.point?.afterWrite} ${run.verdict}`);
  assert.deepEqual(forgotten.sort(), ["fail-409 1 no-quiet", "fail-500 1 no-quiet"]);
});
