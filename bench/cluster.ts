// Cluster benchmark: a simulated day of a 100-node cluster with one CronJob every 15 minutes and a
// DaemonSet rollout, wall time. Benchmarks may read real time. Runnable alone: `node --import tsx bench/cluster.ts`.
import { performance } from "node:perf_hooks";
import { createSimulation, randomStrategy } from "../src/sim/index.ts";
import { annotations, cluster, clusterExternals, daemonSetRolloutStatus, jobFinished } from "../src/cluster/index.ts";

const dayMs = 24 * 60 * 60 * 1000;

export async function benchCluster(): Promise<Record<string, string | number>> {
  const nodes = 100;
  const sim = createSimulation({ seed: 1, traceMode: "hash-only", historyRevisionsMax: 20_000 });
  sim.store.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: "ops" } });
  const registry = { "agent:v1": "sha256:a1", "agent:v2": "sha256:a2", "refresh:v1": "sha256:r1" };
  for (const [name, value] of Object.entries(clusterExternals({ nodes, registry }))) sim.defineExternal(name, value);
  // A heartbeat a minute and a lease check every 30 s: the node lifecycle still notices a dead kubelet within minutes.
  for (const actor of cluster({ nodes, kubelet: { heartbeatMs: 60_000 }, nodeLifecycle: { monitorPeriodMs: 30_000, gracePeriodMs: 180_000 } })) sim.addActor(actor);
  sim.store.create({
    apiVersion: "apps/v1",
    kind: "DaemonSet",
    metadata: { name: "agent", namespace: "ops" },
    spec: { selector: { matchLabels: { app: "agent" } }, template: { metadata: { labels: { app: "agent" } }, spec: { containers: [{ name: "agent", image: "agent:v1" }] } } },
  });
  sim.store.create({
    apiVersion: "batch/v1",
    kind: "CronJob",
    metadata: { name: "refresh", namespace: "ops" },
    spec: {
      schedule: "*/15 * * * *",
      concurrencyPolicy: "Forbid",
      jobTemplate: { spec: { template: { metadata: { annotations: { [annotations.runMs]: "120000" } }, spec: { restartPolicy: "Never", containers: [{ name: "r", image: "refresh:v1" }] } } } },
    },
  });
  const started = performance.now();
  const strategy = randomStrategy();
  const first = await sim.run({ strategy, untilMs: sim.clock.now() + 6 * 60 * 60 * 1000, maxSteps: 50_000_000 });
  // The rollout: a new agent image six hours in.
  sim.store.patch({ apiVersion: "apps/v1", kind: "DaemonSet", namespace: "ops", name: "agent", patchType: "merge", patch: { spec: { template: { spec: { containers: [{ name: "agent", image: "agent:v2" }] } } } } });
  const rest = await sim.run({ strategy, untilMs: sim.clock.now() + dayMs - 6 * 60 * 60 * 1000, maxSteps: 50_000_000 });
  const seconds = (performance.now() - started) / 1000;
  const view = sim.view();
  const ds = view.get({ apiVersion: "apps/v1", kind: "DaemonSet", namespace: "ops", name: "agent" })!;
  const jobs = view.list({ apiVersion: "batch/v1", kind: "Job", namespace: "ops" });
  const cron = view.get({ apiVersion: "batch/v1", kind: "CronJob", namespace: "ops", name: "refresh" })!;
  return {
    "simulated day, 100 nodes (s wall)": seconds.toFixed(2),
    "steps": rest.steps,
    "steps/s": Math.round(rest.steps / seconds),
    "store revision": view.revision,
    "run status": `${first.status}/${rest.status}`,
    "daemonset rollout": daemonSetRolloutStatus(ds).message,
    "cron last schedule": String((cron.status as { lastScheduleTime?: string }).lastScheduleTime),
    "jobs kept (complete)": `${jobs.length} (${jobs.filter((j) => jobFinished(j) === "Complete").length})`,
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  for (const [key, value] of Object.entries(await benchCluster())) process.stdout.write(`${key}: ${value}\n`);
}
