import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { drill } from "../../src/drill/drill.ts";
import type { DrillRun } from "../../src/drill/types.ts";
import { yamlDrillTarget } from "../../src/drill/yaml-target.ts";
import { loadYamlScenario } from "../../src/scenario-yaml/index.ts";

// The Go examples (examples/go/<name>), each built natively from its own module (go.mod and go.sum committed) and
// drilled as its scenario.yaml's go: variants: the buggy one at a point that finds it, the fixed one at the same
// point. One point per variant keeps each example to a reference run and a point; the first build of a
// controller-runtime module takes minutes of CPU (the Go build cache and settle's own cache make the next ones
// quick), hence the timeouts.
const repo = fileURLToPath(new URL("../..", import.meta.url));
const buildTimeoutMs = 15 * 60_000;

/**
 * A fixed quiet window, the scenario's own: a point's learned window (a few times the controller's think time in
 * the reference run) can be shorter than a loaded CI machine's pause of a process, which would judge a run before
 * the controller's next write.
 */
function quietMs(scenario: ReturnType<typeof example>): number {
  return scenario.drill?.quietMs ?? 2000;
}

function example(name: string) {
  return loadYamlScenario(join(repo, "examples/go", name, "scenario.yaml"));
}

function lines(runs: readonly DrillRun[]): string[] {
  return runs.map((run) => `${run.point?.fault} ${run.point?.afterWrite} ${run.verdict}`);
}

function outputOf(runs: readonly DrillRun[]): string {
  return runs.map((run) => `${run.detail}\n${run.output?.join("\n") ?? ""}`).join("\n");
}

test("go/ensemble (controller-runtime): delta mode loses the rest of a scale-up to a kill after its second write; Reconcile survives the same kill", { timeout: buildTimeoutMs }, async () => {
  const scenario = example("ensemble");
  const delta = await drill({ target: yamlDrillTarget(scenario, "delta"), killPoints: [2], concurrency: 1, quietMs: quietMs(scenario) });
  const level = await drill({ target: yamlDrillTarget(scenario, "level"), killPoints: [2], concurrency: 1, quietMs: quietMs(scenario) });
  for (const result of [delta, level]) assert.equal(result.reference.verdict, "ok", `${result.target.variant} reference: ${result.reference.detail}\n${result.reference.output?.join("\n")}`);
  assert.deepEqual(lines(delta.runs), ["kill 2 violated"], outputOf(delta.runs));
  assert.deepEqual(delta.runs[0]!.failed, ["children == spec.voices", "status.readyVoices == spec.voices"]);
  assert.deepEqual(lines(level.runs), ["kill 2 ok"], outputOf(level.runs));
});

test("go/sample-controller (client-go): forgetting a failed key loses the scale-up to one failed create; AddRateLimited brings it back", { timeout: buildTimeoutMs }, async () => {
  const scenario = example("sample-controller");
  // Write 1 is the status the first sync writes; the next write, the scale-up's first create, fails with a 500.
  const [forget, requeue] = await Promise.all(
    ["forget-failed", "requeue"].map((variant) => {
      const target = yamlDrillTarget(scenario, variant);
      return drill({ target: { ...target, defaults: { ...target.defaults, faultKinds: ["fail-500"] } }, killPoints: [1], concurrency: 1, quietMs: quietMs(scenario) });
    }),
  );
  for (const result of [forget!, requeue!]) assert.equal(result.reference.verdict, "ok", `${result.target.variant} reference: ${result.reference.detail}`);
  // The scale-up never passes 3 children: the workload's waitFor times out and ends the workload, and once quiet
  // the world still has 3 of 6.
  assert.deepEqual(lines(forget!.runs), ["fail-500 1 violated"], outputOf(forget!.runs));
  assert.deepEqual(forget!.runs[0]!.failed, ["children == spec.voices", "status.readyVoices == spec.voices"]);
  assert.ok(forget!.runs[0]!.output?.some((line) => line.includes("dropping the key")), outputOf(forget!.runs));
  assert.deepEqual(lines(requeue!.runs), ["fail-500 1 ok"], outputOf(requeue!.runs));
});

test("go/sample-controller: the forgotten key needs the fault: without one, every kill point passes the buggy form", { timeout: buildTimeoutMs }, async () => {
  const scenario = example("sample-controller");
  const target = yamlDrillTarget(scenario, "forget-failed");
  const result = await drill({ target: { ...target, defaults: { ...target.defaults, faultKinds: ["kill"] } }, killPoints: [2], concurrency: 1, quietMs: quietMs(scenario) });
  assert.equal(result.reference.verdict, "ok", result.reference.detail);
  assert.deepEqual(lines(result.runs), ["kill 2 ok"], outputOf(result.runs));
});

test("go/leader-election (controller-runtime, two replicas): without leader election both create the missing children; with it, a kill mid-scale-up hands the lease over and nothing overshoots", { timeout: buildTimeoutMs }, async () => {
  const scenario = example("leader-election");
  const both = await drill({ target: yamlDrillTarget(scenario, "no-leader-election"), killPoints: [], concurrency: 1, quietMs: quietMs(scenario) });
  assert.equal(both.reference.verdict, "violated", `${both.reference.detail}\n${both.reference.output?.join("\n")}`);
  assert.ok(both.reference.failed.includes("no more children than voices"), both.reference.failed.join(", "));
  // Write 6 falls in the scale-up (the lease's create, an event, its renewals and the first status come before it):
  // both replicas die there, and the next leader waits out the dead one's 4 s lease.
  const one = await drill({ target: yamlDrillTarget(scenario, "short-lease"), killPoints: [6], concurrency: 1, quietMs: quietMs(scenario) });
  assert.equal(one.reference.verdict, "ok", `${one.reference.detail}\n${one.reference.output?.join("\n")}`);
  assert.deepEqual(lines(one.runs), ["kill 6 ok"], outputOf(one.runs));
});
