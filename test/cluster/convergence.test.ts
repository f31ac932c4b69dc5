// Under crashes of each cluster actor (and under a random mix of every fault kind) the cluster still
// converges: the Deployment and the DaemonSet finish their rollouts, the Job completes, nothing is duplicated.
import { test } from "node:test";
import assert from "node:assert/strict";
import { cluster, daemonSetRolloutStatus, deploymentRolloutStatus, jobFinished, annotations } from "../../src/cluster/index.ts";
import type { FaultBudget, PlannedFault, Simulation } from "../../src/sim/index.ts";
import { deployment, list, ns, runFor, world } from "./helpers.ts";

const registry = { "web:v1": "sha256:w1", "web:v2": "sha256:w2", "agent:v1": "sha256:a1", "agent:v2": "sha256:a2", "task:v1": "sha256:t1" };
const nodes = ["n1", "n2"];

function setup(sim: Simulation): void {
  sim.store.create(deployment(3));
  sim.store.create({
    apiVersion: "apps/v1",
    kind: "DaemonSet",
    metadata: { name: "agent", namespace: ns },
    spec: { selector: { matchLabels: { app: "agent" } }, template: { metadata: { labels: { app: "agent" } }, spec: { containers: [{ name: "agent", image: "agent:v1" }] } } },
  });
  sim.store.create({
    apiVersion: "batch/v1",
    kind: "Job",
    metadata: { name: "batch", namespace: ns },
    spec: { completions: 2, template: { metadata: { annotations: { [annotations.runMs]: "20000" } }, spec: { restartPolicy: "Never", containers: [{ name: "t", image: "task:v1" }] } } },
  });
  sim.store.create({
    apiVersion: "batch/v1",
    kind: "CronJob",
    metadata: { name: "tick", namespace: ns },
    spec: {
      schedule: "* * * * *",
      concurrencyPolicy: "Forbid",
      jobTemplate: { spec: { template: { metadata: { annotations: { [annotations.runMs]: "20000" } }, spec: { restartPolicy: "Never", containers: [{ name: "t", image: "task:v1" }] } } } },
    },
  });
}

/** Starts both rollouts, runs the fault phase, then a healing phase, and checks the end state. */
async function converges(seed: number, options: { faults?: PlannedFault[]; faultBudget?: FaultBudget }): Promise<number> {
  const sim = world(seed, { nodes, registry, actors: cluster({ nodes }) });
  setup(sim);
  await runFor(sim, 30_000);
  sim.store.patch({ apiVersion: "apps/v1", kind: "Deployment", namespace: ns, name: "web", patchType: "merge", patch: { spec: { template: { spec: { containers: [{ name: "web", image: "web:v2" }] } } } } });
  sim.store.patch({ apiVersion: "apps/v1", kind: "DaemonSet", namespace: ns, name: "agent", patchType: "merge", patch: { spec: { template: { spec: { containers: [{ name: "agent", image: "agent:v2" }] } } } } });
  const faults = (options.faults ?? []).map((f) => ({ ...f, atStep: f.atStep + sim.steps }));
  const faulted = await sim.run({ untilMs: sim.clock.now() + 60_000, maxSteps: sim.steps + 100_000, faults, ...(options.faultBudget ? { faultBudget: options.faultBudget } : {}) });
  assert.ok(faulted.status === "until", `${faulted.status}: ${faulted.message ?? ""}`);
  sim.stopFaults();
  await runFor(sim, 240_000);
  const view = sim.view();
  const deploy = view.get({ apiVersion: "apps/v1", kind: "Deployment", namespace: ns, name: "web" })!;
  const ds = view.get({ apiVersion: "apps/v1", kind: "DaemonSet", namespace: ns, name: "agent" })!;
  const job = view.get({ apiVersion: "batch/v1", kind: "Job", namespace: ns, name: "batch" })!;
  assert.equal(deploymentRolloutStatus(deploy).done, true, `seed ${seed}: ${deploymentRolloutStatus(deploy).message}`);
  assert.equal(daemonSetRolloutStatus(ds).done, true, `seed ${seed}: ${daemonSetRolloutStatus(ds).message}`);
  assert.equal(jobFinished(job), "Complete", `seed ${seed}: job`);
  const ticks = list(sim, "batch/v1", "Job").filter((j) => j.metadata.name?.startsWith("tick-"));
  assert.ok(ticks.filter((j) => jobFinished(j) === undefined).length <= 1, `seed ${seed}: Forbid keeps one tick at a time`);
  const lastSchedule = Date.parse(String((view.get({ apiVersion: "batch/v1", kind: "CronJob", namespace: ns, name: "tick" })!.status as { lastScheduleTime: string }).lastScheduleTime));
  assert.ok(view.now() - lastSchedule <= 60_000, `seed ${seed}: the CronJob is still on schedule`);
  const pods = list(sim, "v1", "Pod").filter((p) => !p.metadata.name?.startsWith("tick-"));
  const images = (prefix: string) => pods.filter((p) => p.metadata.name?.startsWith(prefix)).map((p) => (p.spec as { containers: Array<{ image: string }> }).containers[0]?.image);
  assert.deepEqual(images("web-"), ["web:v2", "web:v2", "web:v2"], `seed ${seed}: web pods`);
  assert.deepEqual(images("agent-"), ["agent:v2", "agent:v2"], `seed ${seed}: one agent per node`);
  assert.ok(pods.every((p) => p.metadata.deletionTimestamp === undefined), `seed ${seed}: nothing left terminating`);
  return faulted.faults.length;
}

const actors = ["kubelet-n1", "scheduler", "node-lifecycle", "replicaset-controller", "deployment-controller", "daemonset-controller", "job-controller", "cronjob-controller", "disruption-controller"];

for (const actor of actors) {
  test(`the cluster converges when ${actor} is crashed again and again`, async () => {
    const faults: PlannedFault[] = [7, 40, 90, 160, 250, 400].map((atStep) => ({ atStep, kind: "crash", target: actor }));
    const applied = await converges(100 + actors.indexOf(actor), { faults });
    assert.ok(applied >= 3, `crashes reached: ${applied}`);
  });
}

test("the cluster converges under a random mix of crashes, pauses, stale reads, failed requests and watch faults", async () => {
  const budget: FaultBudget = {
    chance: [1, 8],
    counts: { crash: 6, pause: 3, "stale-read": 6, "fail-request": 8, "lost-response": 4, "close-watch": 6, "delay-watch": 6 },
    pauseMs: [1000, 20_000],
  };
  for (const seed of [201, 202, 203, 204]) {
    const applied = await converges(seed, { faultBudget: budget });
    assert.ok(applied >= 10, `seed ${seed}: faults drawn ${applied}`);
  }
});
