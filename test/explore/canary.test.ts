// The canary proves the checker can fail: each broken variant of the fixture must be found by a small
// exploration, with the right verdict and property, and the healthy control must pass.
import { test } from "node:test";
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import canary from "../fixtures/canary/scenario.ts";
import { explore, type ExploreOptions } from "../../src/explore/explore.ts";
import { runScenario } from "../../src/explore/run.ts";

const scenarioPath = fileURLToPath(new URL("../fixtures/canary/scenario.ts", import.meta.url));

function options(variant: string, overrides: Partial<ExploreOptions> = {}): ExploreOptions {
  return { scenarioPath, variant, params: {}, runs: 12, seed: 7, workers: 1, strategy: "mix", first: false, ...overrides };
}

test("exploring a scenario whose always-property is always false finds a safety violation in every run", async () => {
  const result = await explore(canary, options("always-false"), () => 0);
  // The fault-free reference run already fails: it is a finding of its own (run -1), and one of the 12 runs asked
  // for (11 planned runs follow it), so the run count is the one asked for.
  assert.equal(result.runs, 12);
  assert.deepEqual(result.findings.map((f) => f.key), ["safety-violation:canary: never true"]);
  const [finding] = result.findings;
  assert.equal(finding!.occurrences, 12);
  assert.equal(finding!.run.index, -1);
  assert.equal(finding!.run.strategy, "reference");
  assert.equal(finding!.minimal.faults.length, 0, "no fault is needed to break an always-false property");
  assert.equal(finding!.minimal.choices.length, 0);
  const counter = finding!.minimal.outcome.counters.find((c) => c.name === "canary: never true");
  assert.deepEqual(counter, { name: "canary: never true", kind: "always", evaluations: 1, failures: 1, everHeld: false });
});

test("exploring a scenario whose eventually-property is always false finds silent divergence, not a safety violation", async () => {
  const result = await explore(canary, options("eventually-false"), () => 0);
  assert.deepEqual(result.findings.map((f) => f.key), ["silent-divergence:canary: never true"]);
  const outcome = result.findings[0]!.minimal.outcome;
  assert.equal(outcome.verdict.kind, "silent-divergence");
  const byName = new Map(outcome.counters.map((c) => [c.name, c]));
  assert.equal(byName.get("canary: always true")!.failures, 0);
  assert.ok(byName.get("canary: always true")!.evaluations > 0, "safety was checked at every step");
  assert.equal(byName.get("the ConfigMap is marked done")!.everHeld, true);
  assert.equal(byName.get("canary: never true")!.everHeld, false);
});

test("an eventually-property with withinMs that is false at its deadline is deadline-missed, and the idle world says so", async () => {
  const result = await explore(canary, options("deadline"), () => 0);
  assert.deepEqual(result.findings.map((f) => f.key), ["deadline-missed:canary: never true within 10 s"]);
  const verdict = result.findings[0]!.minimal.outcome.verdict;
  assert.equal(verdict.idleAtDeadline, true);
  assert.match(verdict.detail, /10000 ms after the faults stopped/);
});

test("a property that becomes true only after its withinMs is deadline-missed even though the world later converges", async () => {
  const outcome = await runScenario(canary, { variant: "deadline-busy", workload: "touch", params: {}, seed: 3 });
  assert.equal(outcome.verdict.kind, "deadline-missed");
  assert.equal(outcome.verdict.property, "the ConfigMap is marked done within 1 s");
  // The same world without the deadline converges: the only difference is the bound.
  const healthy = await runScenario(canary, { variant: "healthy", workload: "touch", params: {}, seed: 3 });
  assert.equal(healthy.verdict.kind, "ok");
});

test("the healthy control of the canary passes every run, with random crashes of its writer", async () => {
  const result = await explore(canary, options("healthy", { runs: 20 }), () => 0);
  assert.deepEqual(result.findings, []);
  assert.equal(result.runs, 20);
  assert.ok(result.points.length > 0, "the writer's create is a systematic crash point");
  assert.equal(result.pointsCovered, result.points.length);
});
