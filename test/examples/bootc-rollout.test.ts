// The bootc rollout: the buggy daemon's second, ungated reboot must come out of the explorer (a stale
// early-boot status drawn from the scenario's own fault kind), shrink to a short run that shows it, replay
// byte for byte, and disappear in the fixed variant, which also survives crash points of its own actors.
import { test } from "node:test";
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import bootcScenario from "../../examples/bootc-rollout/scenario.ts";
import { staleStatusFault, staleStatusFaultKind } from "../../examples/bootc-rollout/faults.ts";
import { bootStaged, initialHost, resolveMaxUnavailable, type BootcHost } from "../../examples/bootc-rollout/model.ts";
import { explore, type ExploreOptions, type ExploreResult } from "../../src/explore/explore.ts";
import { faultPointsOf } from "../../src/explore/plan.ts";
import { runScenario } from "../../src/explore/run.ts";
import type { Scenario } from "../../src/explore/scenario.ts";
import { fifoStrategy } from "../../src/sim/strategy.ts";
import type { TraceRecord } from "../../src/sim/trace.ts";
import type { WorldView } from "../../src/sim/types.ts";

const scenarioPath = fileURLToPath(new URL("../../examples/bootc-rollout/scenario.ts", import.meta.url));
const bootc = bootcScenario as unknown as Scenario;
const params = bootc.params;
const oneReboot = "one reboot per approval: reboots(node, image) <= 1";
const budget = "disrupted nodes <= maxUnavailable";

function options(variant: string, overrides: Partial<ExploreOptions> = {}): ExploreOptions {
  return { scenarioPath, variant, params, runs: 60, seed: 1, workers: 1, strategy: "mix", first: true, ...overrides };
}

let buggyResult: ExploreResult | undefined;
async function exploreBuggy(): Promise<ExploreResult> {
  buggyResult ??= await explore(bootc, options("buggy", { workload: "mid-rollout-change", seed: 2 }), () => 0);
  return buggyResult;
}

function logs(trace: readonly TraceRecord[], actor: RegExp, label: string): TraceRecord[] {
  return trace.filter((r) => r.kind === "log" && actor.test(r.actor) && r.label === label);
}

test("the buggy variant's first finding is a second reboot of one node into the same image, from a drawn stale status", async () => {
  const result = await exploreBuggy();
  assert.equal(result.findings.length, 1);
  const { minimal, run } = result.findings[0]!;
  assert.ok(run.index < 30, `found at run ${run.index}`);
  assert.equal(minimal.outcome.verdict.kind, "safety-violation");
  assert.ok([oneReboot, budget].includes(minimal.outcome.verdict.property ?? ""), minimal.outcome.verdict.property);
  assert.deepEqual(minimal.faults.map((f) => f.kind), [staleStatusFault], "shrunk to the stale read alone");
  assert.ok(minimal.faults.length <= run.faults.length);
});

test("the shrunk buggy run shows the cancelled stage, the stale read and two daemon reboots of the stale node from one approval", async () => {
  const { minimal } = (await exploreBuggy()).findings[0]!;
  const trace = minimal.outcome.trace;
  const node = minimal.faults[0]!.target;
  assert.ok(logs(trace, /^bootcd-/, "stage cancelled: the desired image changed").length > 0, "a stage was cancelled by the v1 -> v2 change");
  const fault = trace.find((r) => r.kind === "fault" && r.label.startsWith(`${staleStatusFault} ${node}`));
  assert.ok(fault, "the stale-status fault is in the trace");
  assert.equal(logs(trace, new RegExp(`^bootcd-${node}$`), "bootc status: early-boot read returned the pre-reboot deployments").length, 1);
  const reboots = logs(trace, new RegExp(`^kubelet-${node}$`), "kubelet: rebooting").map((r) => String(r.fields?.token));
  assert.ok(reboots.every((t) => t.startsWith("bootc-")), "every reboot of the node was the daemon's");
  const staleAt = trace.indexOf(fault);
  const after = trace.slice(staleAt).filter((r) => r.kind === "log" && r.actor === `kubelet-${node}` && r.label === "kubelet: rebooting");
  assert.ok(after.length >= 1, "the node reboots again after the stale read");
  // Between the last approval the controller wrote for the node and the violation, there are two reboots.
  const approvals = trace.filter((r) => r.actor === "bootc-operator" && r.kind === "request" && r.label === `update BootcNode ${node}`);
  const lastApproval = trace.indexOf(approvals.at(-1)!);
  assert.equal(trace.slice(lastApproval).filter((r) => r.actor === `kubelet-${node}` && r.label === "kubelet: rebooting").length, 2);
});

test("replaying the minimal buggy run gives the same verdict and trace hash twice", async () => {
  const finding = (await exploreBuggy()).findings[0]!;
  const spec = { variant: "buggy", workload: finding.run.workload, params, seed: finding.run.seed, choices: finding.minimal.choices, faults: finding.minimal.faults, traceMode: "full" as const };
  const first = await runScenario(bootc, spec);
  const second = await runScenario(bootc, spec);
  assert.equal(first.traceHash, finding.minimal.outcome.traceHash);
  assert.equal(second.traceHash, first.traceHash);
  assert.deepEqual(second.verdict, first.verdict);
});

test("the minimal buggy run passes in the fixed variant: the boot-scoped approval refuses the second reboot", async () => {
  const finding = (await exploreBuggy()).findings[0]!;
  const outcome = await runScenario(bootc, { variant: "fixed", workload: finding.run.workload, params, seed: finding.run.seed, faults: finding.minimal.faults, traceMode: "full" });
  assert.equal(outcome.verdict.kind, "ok", outcome.verdict.detail);
  const node = finding.minimal.faults[0]!.target;
  // The stale read still happened; the fixed daemon noticed through its gate and a live read.
  assert.equal(logs(outcome.trace, new RegExp(`^bootcd-${node}$`), "bootc status: early-boot read returned the pre-reboot deployments").length, 1);
});

test("exploring the fixed variant finds nothing in a small sweep over both workloads", async () => {
  const result = await explore(bootc, options("fixed", { runs: 24, seed: 7, first: false }), () => 0);
  assert.equal(result.runs, 24);
  assert.deepEqual(result.findings, []);
});

test("the fixed variant survives a kill of the pool controller or a daemon after any of a sample of their writes", async () => {
  const workload = "mid-rollout-change";
  const reference = await runScenario(bootc, { variant: "fixed", workload, params, seed: 3, strategy: fifoStrategy(), traceMode: "full" });
  assert.equal(reference.verdict.kind, "ok");
  const crashable = new Set(["bootc-operator", "bootcd-n1", "bootcd-n2", "bootcd-n3"]);
  const points = faultPointsOf({ workload, trace: reference.trace, crashable, faultable: crashable, kinds: new Set(["crash"]) });
  assert.ok(points.length > 40, `${points.length} crash points`);
  // Every fifth point keeps the test fast; the acceptance sweep runs them all.
  for (const point of points.filter((_, i) => i % 5 === 0)) {
    const outcome = await runScenario(bootc, { variant: "fixed", workload, params, seed: 3, strategy: fifoStrategy(), faults: [point.fault] });
    assert.equal(outcome.verdict.kind, "ok", `${point.label}: ${outcome.verdict.detail}`);
  }
});

test("a reboot boots the staged image and counts only the daemon's reboots", () => {
  const host = { bootId: "n1-boot-1", bootCount: 1, ...initialHost("v0"), staged: "v1" } as BootcHost;
  const daemon = bootStaged({ ...host, lastRebootToken: "bootc-n1-boot-0" });
  assert.deepEqual([daemon.booted, daemon.staged, daemon.rollback], ["v1", null, "v0"]);
  assert.deepEqual(daemon.preBoot, { booted: "v0", staged: "v1", rollback: null });
  assert.deepEqual(daemon.rebootsInto, { v1: 1 });
  const power = bootStaged({ ...daemon, lastRebootToken: "fault-1" });
  assert.deepEqual([power.booted, power.staged, power.rollback], ["v1", null, "v0"], "nothing staged: the same deployment boots again");
  assert.deepEqual(power.rebootsInto, { v1: 1 });
});

test("maxUnavailable resolves integers and percentages, never below one", () => {
  assert.equal(resolveMaxUnavailable(1, 3), 1);
  assert.equal(resolveMaxUnavailable("10%", 1000), 100);
  assert.equal(resolveMaxUnavailable("10%", 5), 1);
  assert.equal(resolveMaxUnavailable("2", 5), 2);
});

test("the stale-status fault targets every node's coming boot, three times as often after a cancelled stage", () => {
  const kind = staleStatusFaultKind();
  const base = { ...initialHost("v0"), bootId: "b", bootCount: 0, statusReadBootCount: 0 } as BootcHost;
  const hostsByNode: Record<string, BootcHost> = {
    n1: base, // status of boot 0 read: the fault is for boot 1
    n2: { ...base, bootCount: 1, statusReadBootCount: 0 }, // a new boot not read yet
    n3: { ...base, bootCount: 1, statusReadBootCount: 0, stageCancelledBootCount: 0 }, // the same, after a cancelled stage
  };
  const nodes = Object.keys(hostsByNode).map((name) => ({ apiVersion: "v1", kind: "Node", metadata: { name }, status: { conditions: [{ type: "Ready", status: "True" }] } }));
  const view = {
    revision: 1,
    now: () => 0,
    get: (ref: { name: string }) => nodes.find((n) => n.metadata.name === ref.name),
    list: () => nodes,
    external: (name: string) => hostsByNode[name.replace("host/", "")],
  } as unknown as WorldView;
  assert.deepEqual(kind.targets(view), ["n1", "n2", "n3", "n3", "n3"]);
});
