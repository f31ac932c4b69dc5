// With `events: true` the cluster actors record the Events their real counterparts record, so `kubectl describe`
// and `kubectl events` show a rollout's story; without it they record none (runs recorded before replay unchanged).
import { test } from "node:test";
import assert from "node:assert/strict";
import { cluster } from "../../src/cluster/index.ts";
import type { Simulation } from "../../src/sim/index.ts";
import type { KubeObject } from "../../src/api/object.ts";
import { deployment, list, ns, registry, runFor, world } from "./helpers.ts";

type Event = KubeObject & { reason: string; message: string; involvedObject: { kind: string; name: string; fieldPath?: string }; source: { component: string; host?: string } };

const events = (sim: Simulation) => list(sim, "v1", "Event") as Event[];
const line = (e: Event) => `${e.source.component}${e.source.host === undefined ? "" : `@${e.source.host}`} ${e.involvedObject.kind} ${e.reason}: ${e.message}`;

test("a Deployment's rollout and scale-down are told in Events by the controllers, the scheduler and the kubelet", async () => {
  const sim = world(41, { nodes: ["n1"], registry, actors: cluster({ nodes: 1, events: true, kubelet: { batchRunMs: 1000 } }) });
  sim.store.create(deployment(1));
  sim.store.create({ apiVersion: "batch/v1", kind: "Job", metadata: { name: "once", namespace: ns }, spec: { template: { spec: { restartPolicy: "Never", containers: [{ name: "task", image: "web:v1" }] } } } });
  await runFor(sim, 30_000);
  const rs = list(sim, "apps/v1", "ReplicaSet")[0]!.metadata.name!;
  const pod = list(sim, "v1", "Pod").find((p) => p.metadata.name!.startsWith(rs))!.metadata.name!;
  const jobPod = list(sim, "v1", "Pod").find((p) => p.metadata.name!.startsWith("once-"))!.metadata.name!;
  const told = events(sim).map(line);
  for (const expected of [
    `deployment-controller Deployment ScalingReplicaSet: Scaled up replica set ${rs} from 0 to 1`,
    `replicaset-controller ReplicaSet SuccessfulCreate: Created pod: ${pod}`,
    `default-scheduler Pod Scheduled: Successfully assigned ${ns}/${pod} to n1`,
    `kubelet@n1 Pod Pulled: Container image "web:v1" already present on machine`,
    `kubelet@n1 Pod Created: Created container: web`,
    `kubelet@n1 Pod Started: Started container web`,
    `job-controller Job SuccessfulCreate: Created pod: ${jobPod}`,
    "job-controller Job Completed: Job completed",
  ]) {
    assert.ok(told.includes(expected), `${expected}\nin:\n${told.join("\n")}`);
  }
  assert.ok(events(sim).filter((e) => e.source.component === "kubelet").every((e) => /^spec\.containers\{(web|task)\}$/.test(e.involvedObject.fieldPath ?? "")));
  sim.store.patch({ apiVersion: "apps/v1", kind: "Deployment", namespace: ns, name: "web", patchType: "merge", patch: { spec: { replicas: 0 } } });
  await runFor(sim, 30_000);
  const later = events(sim).map(line);
  assert.ok(later.includes(`deployment-controller Deployment ScalingReplicaSet: Scaled down replica set ${rs} from 1 to 0`), later.join("\n"));
  assert.ok(later.includes(`replicaset-controller ReplicaSet SuccessfulDelete: Deleted pod: ${pod}`));
  assert.ok(later.includes("kubelet@n1 Pod Killing: Stopping container web"));
});

test("a pod no node fits gets a FailedScheduling warning that counts the nodes by reason, as the real scheduler's", async () => {
  const sim = world(42, { nodes: ["n1", "n2", "n3"], registry, actors: cluster({ nodes: 3, events: true }) });
  await runFor(sim, 2000);
  sim.store.patch({ apiVersion: "v1", kind: "Node", name: "n1", patchType: "merge", patch: { spec: { unschedulable: true } } });
  sim.store.patch({ apiVersion: "v1", kind: "Node", name: "n2", patchType: "merge", patch: { spec: { taints: [{ key: "dedicated", value: "gpu", effect: "NoSchedule" }] } } });
  sim.store.create({ apiVersion: "v1", kind: "Pod", metadata: { name: "picky", namespace: ns }, spec: { nodeSelector: { disk: "ssd" }, containers: [{ name: "web", image: "web:v1" }] } });
  await runFor(sim, 5000);
  const warning = events(sim).find((e) => e.reason === "FailedScheduling");
  assert.equal(warning?.type, "Warning");
  assert.equal(
    warning?.message,
    "0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 1 node(s) had untolerated taint {dedicated: gpu}, 1 node(s) were unschedulable. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.",
  );
});

test("without the option the cluster records no Events", async () => {
  const sim = world(41, { nodes: ["n1"], registry, actors: cluster({ nodes: 1 }) });
  sim.store.create(deployment(1));
  await runFor(sim, 30_000);
  assert.equal(list(sim, "v1", "Pod").length, 1);
  assert.deepEqual(events(sim), []);
});
