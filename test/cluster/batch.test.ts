// The Job and CronJob controllers in the simulator: completions, failures, cron schedules on the virtual
// clock, Forbid, history limits, and a program's log lines as external state.
import { test } from "node:test";
import assert from "node:assert/strict";
import { cluster, cronTimes, jobFinished, jobLogs, annotations } from "../../src/cluster/index.ts";
import type { PodProgram } from "../../src/cluster/index.ts";
import type { KubeObject } from "../../src/api/object.ts";
import { list, ns, runFor, world } from "./helpers.ts";

const registry = { "task:v1": "sha256:t1" };

function job(name: string, options: { runMs?: number; exitCode?: number; completions?: number; parallelism?: number; backoffLimit?: number } = {}): KubeObject {
  return { apiVersion: "batch/v1", kind: "Job", metadata: { name, namespace: ns }, spec: jobSpec(options) };
}

function jobSpec(options: { runMs?: number; exitCode?: number; completions?: number; parallelism?: number; backoffLimit?: number; image?: string }) {
  return {
    ...(options.completions ? { completions: options.completions } : {}),
    ...(options.parallelism ? { parallelism: options.parallelism } : {}),
    ...(options.backoffLimit !== undefined ? { backoffLimit: options.backoffLimit } : {}),
    template: {
      metadata: { annotations: { [annotations.runMs]: String(options.runMs ?? 5000), [annotations.exitCode]: String(options.exitCode ?? 0) } },
      spec: { restartPolicy: "Never", containers: [{ name: "task", image: options.image ?? "task:v1" }] },
    },
  };
}

function jobOf(sim: ReturnType<typeof world>, name: string): KubeObject {
  return sim.view().get({ apiVersion: "batch/v1", kind: "Job", namespace: ns, name })!;
}

test("cron times are computed on the given clock, the latest missed one first", () => {
  const t0 = Date.UTC(2026, 0, 1, 0, 0);
  assert.deepEqual(cronTimes("*/15 * * * *", undefined, t0, t0 + 7 * 60_000), { next: t0 + 15 * 60_000 });
  assert.deepEqual(cronTimes("*/15 * * * *", undefined, t0, t0 + 31 * 60_000), { latest: t0 + 30 * 60_000, next: t0 + 45 * 60_000 });
  assert.throws(() => cronTimes("0 */15 * * * *", undefined, t0, t0), /want 5 fields/);
});

test("a Job runs its pods to the completions it asks for and is Complete", async () => {
  const sim = world(21, { nodes: ["n1", "n2"], registry, actors: cluster({ nodes: 2 }) });
  sim.store.create(job("batch", { completions: 3, parallelism: 2 }));
  await runFor(sim, 60_000);
  assert.equal(jobFinished(jobOf(sim, "batch")), "Complete");
  assert.equal((jobOf(sim, "batch").status as { succeeded: number }).succeeded, 3);
  assert.equal(list(sim, "v1", "Pod").length, 3);
});

test("with batchRunMs a Job's pod without a run time completes after it; a Deployment's pods keep running", async () => {
  const plainJob = (name: string): KubeObject => ({
    apiVersion: "batch/v1",
    kind: "Job",
    metadata: { name, namespace: ns },
    spec: { template: { spec: { restartPolicy: "Never", containers: [{ name: "task", image: "task:v1" }] } } },
  });
  const sim = world(23, { nodes: ["n1"], registry, actors: cluster({ nodes: 1, kubelet: { batchRunMs: 2000 } }) });
  sim.store.create(plainJob("once"));
  sim.store.create({ apiVersion: "v1", kind: "Pod", metadata: { name: "server", namespace: ns }, spec: { containers: [{ name: "task", image: "task:v1" }] } });
  await runFor(sim, 30_000);
  assert.equal(jobFinished(jobOf(sim, "once")), "Complete");
  const server = sim.view().get({ apiVersion: "v1", kind: "Pod", namespace: ns, name: "server" })!;
  assert.equal((server.status as { phase: string }).phase, "Running", "restartPolicy Always: it runs until deleted");
  // Without the option the Job's pod runs on, as before.
  const plain = world(23, { nodes: ["n1"], registry, actors: cluster({ nodes: 1 }) });
  plain.store.create(plainJob("once"));
  await runFor(plain, 30_000);
  assert.equal(jobFinished(jobOf(plain, "once")), undefined);
});

test("a Job whose pods keep failing is Failed after backoffLimit", async () => {
  const sim = world(22, { nodes: ["n1"], registry, actors: cluster({ nodes: 1 }) });
  sim.store.create(job("doomed", { exitCode: 1, backoffLimit: 2 }));
  await runFor(sim, 120_000);
  assert.equal(jobFinished(jobOf(sim, "doomed")), "Failed");
  assert.equal((jobOf(sim, "doomed").status as { failed: number }).failed, 3);
});

test("a program's log lines are readable by Job, and its exit code decides the pod", async () => {
  const program: PodProgram = async (ctx) => {
    await ctx.log("checking");
    await ctx.clock.sleep(1000);
    await ctx.log("FLAP DETECTED");
    return 3;
  };
  const sim = world(23, { nodes: ["n1"], registry, actors: cluster({ nodes: 1, kubelet: { programs: { task: program } } }) });
  sim.store.create(job("tick", { backoffLimit: 0 }));
  await runFor(sim, 30_000);
  assert.deepEqual(jobLogs(sim.view(), ns, "tick"), ["checking", "FLAP DETECTED"]);
  assert.equal(jobFinished(jobOf(sim, "tick")), "Failed");
});

test("a program reads and writes external state through its context, each access a step", async () => {
  const program: PodProgram = async (ctx) => {
    const chart = ctx.external<{ version: string }>("chart-repo");
    const { version } = await chart.read();
    await ctx.log(`chart ${version}`);
    await chart.write({ version: `${version}+seen` });
    return 0;
  };
  const sim = world(25, { nodes: ["n1"], registry, actors: cluster({ nodes: 1, kubelet: { programs: { task: program } } }) });
  sim.defineExternal("chart-repo", { version: "1.2.3" });
  sim.store.create(job("tick", { backoffLimit: 0 }));
  await runFor(sim, 30_000);
  assert.deepEqual(jobLogs(sim.view(), ns, "tick"), ["chart 1.2.3"]);
  assert.deepEqual(sim.view().external("chart-repo"), { version: "1.2.3+seen" });
  assert.equal(jobFinished(jobOf(sim, "tick")), "Complete");
});

test("a CronJob every 15 minutes starts one Job per schedule and keeps three successful ones", async () => {
  const sim = world(24, { nodes: ["n1"], registry, actors: cluster({ nodes: 1 }) });
  sim.store.create({ apiVersion: "batch/v1", kind: "CronJob", metadata: { name: "tick", namespace: ns }, spec: { schedule: "*/15 * * * *", jobTemplate: { spec: jobSpec({ runMs: 60_000 }) } } });
  await runFor(sim, 2 * 60 * 60_000 + 10 * 60_000);
  const jobs = list(sim, "batch/v1", "Job");
  assert.equal(jobs.length, 3);
  assert.ok(jobs.every((j) => jobFinished(j) === "Complete"));
  const status = sim.view().get({ apiVersion: "batch/v1", kind: "CronJob", namespace: ns, name: "tick" })!.status as { lastScheduleTime: string };
  assert.equal(status.lastScheduleTime, "2026-01-01T02:00:00Z");
  // Jobs of garbage-collected schedules took their pods with them.
  assert.equal(list(sim, "v1", "Pod").length, 3);
});

test("concurrencyPolicy Forbid never runs two Jobs at once, and a missed schedule runs when the last one ends", async () => {
  const sim = world(25, { nodes: ["n1"], registry, actors: cluster({ nodes: 1 }) });
  sim.store.create({
    apiVersion: "batch/v1",
    kind: "CronJob",
    metadata: { name: "slow", namespace: ns },
    spec: { schedule: "*/15 * * * *", concurrencyPolicy: "Forbid", jobTemplate: { spec: jobSpec({ runMs: 20 * 60_000 }) } },
  });
  let overlap = false;
  let started = 0;
  const result = await sim.run({
    untilMs: sim.clock.now() + 60 * 60_000,
    onStep: (_r, view) => {
      const jobs = view.list({ apiVersion: "batch/v1", kind: "Job" });
      started = Math.max(started, jobs.length);
      overlap ||= jobs.filter((j) => jobFinished(j) === undefined).length > 1;
    },
  });
  assert.equal(result.status, "until");
  assert.equal(overlap, false);
  const names = list(sim, "batch/v1", "Job").map((j) => j.metadata.annotations?.["batch.kubernetes.io/cronjob-scheduled-timestamp"]);
  // 00:15 runs until ~00:35; 00:30 is held back, then starts late at ~00:35; 00:45 likewise at ~00:55.
  assert.deepEqual(names, ["2026-01-01T00:15:00Z", "2026-01-01T00:30:00Z", "2026-01-01T00:45:00Z"]);
  const created = list(sim, "batch/v1", "Job").map((j) => Date.parse(String(j.metadata.creationTimestamp)) - Date.UTC(2026, 0, 1));
  assert.ok(created[1]! >= 35 * 60_000 && created[2]! >= 55 * 60_000, `late starts: ${created.join(",")}`);
});
