// The Skyhook ConfigMap gate, automated on pinned seeds and small budgets: the buggy variant is found and its
// minimal run tells the story of the report (stale configUpdates entry, glob match, pod still terminating at
// the closed gate); replay reproduces it; the fixed and always-write-cm variants pass small sweeps; the S2
// property can fail, and does not in clear-on-generation. The 2,000-run sweeps are in acceptance/.
import { test } from "node:test";
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import skyhookScenario, { noStaleConfigInterrupt } from "../../examples/skyhook-config/scenario.ts";
import { changedKeys, hasInterrupt, isPackageComplete, nextStage, type PackageSpec } from "../../examples/skyhook-config/skyhook.ts";
import { explore, type ExploreOptions, type ExploreResult } from "../../src/explore/explore.ts";
import { runScenario } from "../../src/explore/run.ts";
import type { Scenario } from "../../src/explore/scenario.ts";
import { fifoStrategy } from "../../src/sim/strategy.ts";

const scenarioPath = fileURLToPath(new URL("../../examples/skyhook-config/scenario.ts", import.meta.url));
const skyhook = skyhookScenario as unknown as Scenario;
const params = skyhook.params;
const workload = "config-skyhook";
const deadlineProperty = "ConfigMap == spec.packages[p].configMap within 270 s";

function options(variant: string, overrides: Partial<ExploreOptions> = {}): ExploreOptions {
  return { scenarioPath, variant, params, runs: 12, seed: 1, workers: 1, strategy: "mix", first: false, ...overrides };
}

let buggy: ExploreResult | undefined;
async function exploreBuggy(): Promise<ExploreResult> {
  buggy ??= await explore(skyhook, options("buggy"), () => 0);
  return buggy;
}

const dexter: PackageSpec = {
  version: "1.2.3",
  image: "skyhook/dexter:1.2.3",
  interrupt: { type: "reboot" },
  configInterrupts: { "game.properties": { type: "service" }, "*.properties": { type: "service" } },
};

test("a recorded key that a configInterrupts glob matches gives the package an interrupt, whatever generation recorded it", () => {
  assert.equal(hasInterrupt(dexter, ["ui.properties"]), true, "*.properties matches ui.properties");
  assert.equal(hasInterrupt({ ...dexter, configInterrupts: { "game.properties": { type: "service" } } }, ["ui.properties"]), false);
  assert.equal(hasInterrupt(dexter, []), true, "no recorded keys: the package's own interrupt counts");
  assert.equal(hasInterrupt({ ...dexter, interrupt: undefined }, []), false);
});

test("a node is complete at config without an interrupt and only at post-interrupt with one", () => {
  const atConfig = { name: "dexter", version: "1.2.3", stage: "config", state: "complete" } as const;
  assert.equal(isPackageComplete(atConfig, false), true);
  assert.equal(isPackageComplete(atConfig, true), false);
  assert.equal(isPackageComplete({ ...atConfig, stage: "post-interrupt" }, true), true);
  assert.equal(isPackageComplete({ ...atConfig, state: "in_progress" }, false), false);
  assert.deepEqual([nextStage("apply", false), nextStage("config", false), nextStage("config", true), nextStage("interrupt", true), nextStage("post-interrupt", true)], ["config", undefined, "interrupt", "post-interrupt", undefined]);
  assert.deepEqual(changedKeys({ a: "1", b: "2" }, { a: "1", b: "3", c: "4" }), ["b", "c"]);
});

test("exploring the buggy variant finds the ConfigMap still stale at the 270 s deadline with the operator idle", async () => {
  const result = await exploreBuggy();
  const finding = result.findings.find((f) => f.minimal.outcome.verdict.property === deadlineProperty);
  assert.ok(finding, JSON.stringify(result.findings.map((f) => f.key)));
  assert.equal(finding.minimal.outcome.verdict.kind, "deadline-missed");
  assert.match(finding.minimal.outcome.verdict.detail, /idle \(lost work\)/);
  assert.ok(finding.occurrences > 1, `seen in ${finding.occurrences} run(s)`);
  assert.ok(finding.minimal.faults.length <= finding.run.faults.length, "shrinking never adds faults");
});

test("the minimal buggy run shows the stale ui.properties entry, the *.properties match and the pod terminating at the closed gate", async () => {
  const finding = (await exploreBuggy()).findings.find((f) => f.minimal.outcome.verdict.property === deadlineProperty)!;
  const logs = finding.minimal.outcome.trace.filter((r) => r.kind === "log").map((r) => r.label);
  const noInterrupt = logs.findIndex((l) => /ConfigMap differs in \[ui\.properties\].*gate open/.test(l));
  assert.ok(noInterrupt >= 0, "the no-interrupt step opened the gate and recorded ui.properties");
  const closed = logs.filter((l) => l.includes("ConfigMap differs in [game.properties]") && l.includes("gate closed"));
  assert.ok(closed.length > 0, "the glob step's diff met a closed gate");
  const last = closed.at(-1)!;
  assert.match(last, /configUpdates \[ui\.properties\]/, "the stale entry of the step before");
  assert.match(last, /\*\.properties matches ui\.properties/, "the glob matched it");
  assert.match(last, /post-interrupt-kind-worker terminating/, "the last stage pod was still terminating at the gate");
  assert.ok(!logs.some((l) => l.includes("[game.properties]") && l.includes("gate open")), "no pass ever found the gate open again");
});

test("replaying the minimal buggy run reproduces its verdict and its trace byte for byte", async () => {
  const finding = (await exploreBuggy()).findings.find((f) => f.minimal.outcome.verdict.property === deadlineProperty)!;
  const spec = { variant: "buggy", workload: finding.run.workload, params, seed: finding.run.seed };
  const replayed = await runScenario(skyhook, { ...spec, choices: finding.minimal.choices, faults: finding.minimal.faults, traceMode: "full", expectTrace: finding.minimal.outcome.trace });
  assert.equal(replayed.divergedAtStep, undefined);
  assert.deepEqual(replayed.verdict, finding.minimal.outcome.verdict);
  assert.equal(replayed.traceHash, finding.minimal.outcome.traceHash);
});

test("with pods that stop within a second, one late watch event of the kubelet is enough for the buggy variant", async () => {
  // Found by `settle explore ... --param podStopMsMax=1000` (run 281 of the default mix, shrunk to this fault),
  // under replay format 1 (requests without latency): the run keeps those semantics, as its replay file would.
  const fast = { ...params, podStopMsMax: 1000 };
  const seed = 2936654649;
  const late = [{ atStep: 524, kind: "delay-watch", target: "kubelet-kind-worker/0/w0", delayMs: 5000 }];
  const faulted = await runScenario(skyhook, { variant: "buggy", workload, params: fast, seed, faults: late, traceMode: "full", semantics: 1 });
  assert.equal(faulted.verdict.kind, "deadline-missed");
  assert.equal(faulted.verdict.property, deadlineProperty);
  assert.equal(faulted.faults.length, 1);
  assert.match(faulted.faults[0]!.target, /^kubelet-kind-worker/);
  const clean = await runScenario(skyhook, { variant: "buggy", workload, params: fast, seed, faults: [], semantics: 1 });
  assert.equal(clean.verdict.kind, "ok", "without the late event the 2 s requeue finds the gate open");
  const fixed = await runScenario(skyhook, { variant: "fixed", workload, params: fast, seed, faults: late, semantics: 1 });
  assert.equal(fixed.verdict.kind, "ok", "the 30 s safety net wins the race the 2 s requeue lost");
});

test("the fixed variant passes a small sweep of systematic and random runs", async () => {
  const result = await explore(skyhook, options("fixed", { runs: 16 }), () => 0);
  assert.deepEqual(result.findings.map((f) => f.key), []);
  assert.equal(result.runs, 16);
});

test("the always-write-cm variant passes a small sweep", async () => {
  const result = await explore(skyhook, options("always-write-cm", { runs: 12 }), () => 0);
  assert.deepEqual(result.findings.map((f) => f.key), []);
});

test("the stale-interrupt property S2 fails on the buggy operator at the glob step", async () => {
  const withS2: Scenario = { ...skyhook, properties: () => [noStaleConfigInterrupt()] };
  const outcome = await runScenario(withS2, { variant: "buggy", workload, params, seed: 1, strategy: fifoStrategy() });
  assert.equal(outcome.verdict.kind, "safety-violation");
  assert.equal(outcome.verdict.property, "no config-driven interrupt without a key changed in this generation");
});

test("clear-on-generation keeps S2 but still leaves the ConfigMap stale: the package's reboot interrupt closes the same gate", async () => {
  const outcome = await runScenario(skyhook, { variant: "clear-on-generation", workload, params, seed: 1, strategy: fifoStrategy() });
  assert.equal(outcome.verdict.kind, "deadline-missed");
  assert.equal(outcome.verdict.property, deadlineProperty);
  const s2 = outcome.counters.find((c) => c.name === "no config-driven interrupt without a key changed in this generation");
  assert.ok(s2 !== undefined && s2.evaluations > 0);
  assert.equal(s2.failures, 0);
});
