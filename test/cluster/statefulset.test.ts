// The StatefulSet controller in the simulator: ordered and parallel pod management, stable names and identity
// labels, claims from templates, rolling updates from the highest ordinal down (with a partition), scale-down in
// reverse order, status fields and revisions as kubectl reads them, and convergence under faults.
import { test } from "node:test";
import assert from "node:assert/strict";
import { annotations, cluster, statefulSetRolloutStatus } from "../../src/cluster/index.ts";
import type { Simulation, TraceRecord, WorldView } from "../../src/sim/index.ts";
import type { KubeObject } from "../../src/api/object.ts";
import { list, ns, runFor, world } from "./helpers.ts";

const registry = { "db:v1": "sha256:d1", "db:v2": "sha256:d2" };
const setRef = { apiVersion: "apps/v1", kind: "StatefulSet", namespace: ns, name: "db" };
const withSets = (nodes: number) => cluster({ nodes, with: ["statefulset-controller"] });

type AnyPod = KubeObject & { spec: any; status?: any };

function statefulSet(replicas: number, options: { policy?: string; partition?: number; readyMs?: number; claims?: boolean } = {}): KubeObject {
  return {
    apiVersion: "apps/v1",
    kind: "StatefulSet",
    metadata: { name: "db", namespace: ns },
    spec: {
      replicas,
      serviceName: "db",
      selector: { matchLabels: { app: "db" } },
      ...(options.policy === undefined ? {} : { podManagementPolicy: options.policy }),
      updateStrategy: { type: "RollingUpdate", ...(options.partition === undefined ? {} : { rollingUpdate: { partition: options.partition } }) },
      template: {
        metadata: { labels: { app: "db" }, annotations: { [annotations.readyMs]: String(options.readyMs ?? 2000) } },
        spec: { containers: [{ name: "db", image: "db:v1" }] },
      },
      ...(options.claims === true ? { volumeClaimTemplates: [{ metadata: { name: "data" }, spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "2Gi" } } } }] } : {}),
    },
  };
}

function pods(view: WorldView): AnyPod[] {
  return view.list({ apiVersion: "v1", kind: "Pod", namespace: ns }) as AnyPod[];
}

const isReady = (pod: AnyPod) => pod.status?.phase === "Running" && (pod.status?.conditions ?? []).some((c: any) => c.type === "Ready" && c.status === "True");

function setStatus(sim: Simulation): Record<string, unknown> {
  return (sim.view().get(setRef)?.status ?? {}) as Record<string, unknown>;
}

function setImage(sim: Simulation, image: string): void {
  sim.store.patch({ ...setRef, patchType: "merge", patch: { spec: { template: { spec: { containers: [{ name: "db", image }] } } } } });
}

/** Records, after every step, the order pods first appear and are deleted, and the most pods not ready at once. */
function watchPods(sim: Simulation) {
  const seen = { created: [] as string[], deleted: [] as string[], maxNotReady: 0, createdBeforePredecessorsReady: [] as string[] };
  const known = new Set<string>();
  return {
    seen,
    onStep(_record: TraceRecord, view: WorldView) {
      const now = pods(view);
      for (const pod of now) {
        const key = `${pod.metadata.name}/${pod.metadata.uid}`;
        if (known.has(key)) continue;
        known.add(key);
        seen.created.push(pod.metadata.name ?? "");
        const ordinal = Number((pod.metadata.name ?? "").split("-").pop());
        const predecessors = now.filter((p) => Number((p.metadata.name ?? "").split("-").pop()) < ordinal);
        if (predecessors.length < ordinal || !predecessors.every(isReady)) seen.createdBeforePredecessorsReady.push(pod.metadata.name ?? "");
      }
      const present = new Set(now.map((p) => `${p.metadata.name}/${p.metadata.uid}`));
      for (const key of [...known]) {
        if (present.has(key)) continue;
        known.delete(key);
        seen.deleted.push(key.split("/")[0]!);
      }
      seen.maxNotReady = Math.max(seen.maxNotReady, now.filter((p) => !isReady(p) || p.metadata.deletionTimestamp !== undefined).length);
    },
  };
}

test("cluster() leaves the StatefulSet and endpoints controllers out unless asked, so recorded runs replay unchanged", () => {
  const names = cluster({ nodes: 1 }).map((actor) => actor.name);
  assert.ok(!names.includes("statefulset-controller"));
  assert.ok(!names.includes("endpoints-controller"));
  const opted = cluster({ nodes: 1, with: ["statefulset-controller", "endpoints-controller", "endpointslice-controller"] }).map((actor) => actor.name);
  assert.deepEqual(opted.slice(-3), ["statefulset-controller", "endpoints-controller", "endpointslice-controller"]);
});

test("OrderedReady creates db-0, db-1, db-2 in order, each once its predecessors are Ready, with identity labels and bound claims", async () => {
  const sim = world(21, { nodes: ["n1", "n2"], registry, actors: withSets(2) });
  sim.store.create(statefulSet(3, { claims: true }));
  const watcher = watchPods(sim);
  const result = await sim.run({ untilMs: sim.clock.now() + 60_000, onStep: watcher.onStep });
  assert.equal(result.status, "until", result.message);
  assert.deepEqual(watcher.seen.created, ["db-0", "db-1", "db-2"]);
  assert.deepEqual(watcher.seen.createdBeforePredecessorsReady, []);
  const status = setStatus(sim);
  const revision = String(status.updateRevision);
  assert.match(revision, /^db-[0-9a-z]{10}$/);
  assert.deepEqual(
    { ...status, updateRevision: revision },
    { observedGeneration: 1, replicas: 3, readyReplicas: 3, availableReplicas: 3, currentReplicas: 3, updatedReplicas: 3, currentRevision: revision, updateRevision: revision, collisionCount: 0 },
  );
  const [revisionObject, ...more] = list(sim, "apps/v1", "ControllerRevision") as any[];
  assert.equal(more.length, 0);
  assert.equal(revisionObject.metadata.name, revision);
  assert.equal(revisionObject.revision, 1);
  for (const pod of pods(sim.view())) {
    const name = pod.metadata.name ?? "";
    assert.deepEqual(pod.metadata.labels, { app: "db", "controller-revision-hash": revision, "statefulset.kubernetes.io/pod-name": name, "apps.kubernetes.io/pod-index": name.slice(3) });
    assert.equal(pod.spec.hostname, name);
    assert.equal(pod.spec.subdomain, "db");
    assert.deepEqual(pod.spec.volumes, [{ name: "data", persistentVolumeClaim: { claimName: `data-${name}` } }]);
  }
  const claims = list(sim, "v1", "PersistentVolumeClaim") as any[];
  assert.deepEqual(claims.map((c) => [c.metadata.name, c.status?.phase, c.status?.capacity?.storage]), [["data-db-0", "Bound", "2Gi"], ["data-db-1", "Bound", "2Gi"], ["data-db-2", "Bound", "2Gi"]]);
  assert.deepEqual(statefulSetRolloutStatus(sim.view().get(setRef)!), { done: true, message: "statefulset rolling update complete 3 pods at revision " + revision + "..." });
});

test("Parallel creates every pod at once, before any is Ready", async () => {
  const sim = world(22, { nodes: ["n1"], registry, actors: withSets(1) });
  sim.store.create(statefulSet(3, { policy: "Parallel", readyMs: 20_000 }));
  const watcher = watchPods(sim);
  await sim.run({ untilMs: sim.clock.now() + 10_000, onStep: watcher.onStep });
  assert.equal(pods(sim.view()).length, 3);
  assert.ok(pods(sim.view()).every((p) => !isReady(p)), "none Ready yet");
  assert.deepEqual([...watcher.seen.createdBeforePredecessorsReady].sort(), ["db-1", "db-2"]);
  await runFor(sim, 30_000);
  assert.equal(setStatus(sim).readyReplicas, 3);
});

test("a template change rolls db-2, db-1, db-0 one at a time; the current revision follows once all are updated", async () => {
  const sim = world(23, { nodes: ["n1", "n2"], registry, actors: withSets(2) });
  sim.store.create(statefulSet(3));
  await runFor(sim, 60_000);
  const before = String(setStatus(sim).currentRevision);
  setImage(sim, "db:v2");
  const watcher = watchPods(sim);
  const result = await sim.run({ untilMs: sim.clock.now() + 120_000, onStep: watcher.onStep });
  assert.equal(result.status, "until", result.message);
  assert.deepEqual(watcher.seen.deleted, ["db-2", "db-1", "db-0"]);
  assert.equal(watcher.seen.maxNotReady, 1, "one pod at a time");
  const status = setStatus(sim);
  assert.notEqual(status.updateRevision, before);
  assert.equal(status.currentRevision, status.updateRevision);
  assert.equal(status.updatedReplicas, 3);
  assert.ok(pods(sim.view()).every((p) => p.spec.containers[0].image === "db:v2"));
  const revisions = (list(sim, "apps/v1", "ControllerRevision") as any[]).map((r) => [r.metadata.name, r.revision]);
  assert.deepEqual(revisions.sort(), [[before, 1], [status.updateRevision, 2]].sort());
  // Going back to the first template reuses its revision and makes it the newest.
  setImage(sim, "db:v1");
  await runFor(sim, 120_000);
  assert.equal(setStatus(sim).currentRevision, before);
  assert.equal((sim.view().get({ apiVersion: "apps/v1", kind: "ControllerRevision", namespace: ns, name: before }) as any).revision, 3);
});

test("a partition keeps ordinals below it at the current revision, and rollout status calls the partitioned roll out complete", async () => {
  const sim = world(24, { nodes: ["n1"], registry, actors: withSets(1) });
  sim.store.create(statefulSet(3, { partition: 2 }));
  await runFor(sim, 60_000);
  const before = String(setStatus(sim).currentRevision);
  setImage(sim, "db:v2");
  await runFor(sim, 60_000);
  const images = Object.fromEntries(pods(sim.view()).map((p) => [p.metadata.name, p.spec.containers[0].image]));
  assert.deepEqual(images, { "db-0": "db:v1", "db-1": "db:v1", "db-2": "db:v2" });
  const status = setStatus(sim);
  assert.equal(status.currentRevision, before);
  assert.deepEqual([status.currentReplicas, status.updatedReplicas], [2, 1]);
  assert.deepEqual(statefulSetRolloutStatus(sim.view().get(setRef)!), { done: true, message: "partitioned roll out complete: 1 new pods have been updated..." });
  // A deleted pod below the partition comes back at the current revision, not the update one.
  sim.store.delete({ apiVersion: "v1", kind: "Pod", namespace: ns, name: "db-0" });
  await runFor(sim, 60_000);
  assert.equal((sim.view().get({ apiVersion: "v1", kind: "Pod", namespace: ns, name: "db-0" }) as AnyPod).spec.containers[0].image, "db:v1");
});

test("OnDelete leaves running pods alone after a template change; a deleted pod comes back at the update revision", async () => {
  const sim = world(26, { nodes: ["n1"], registry, actors: withSets(1) });
  const set = statefulSet(2) as any;
  set.spec.updateStrategy = { type: "OnDelete" };
  sim.store.create(set);
  await runFor(sim, 60_000);
  const before = String(setStatus(sim).currentRevision);
  setImage(sim, "db:v2");
  await runFor(sim, 60_000);
  assert.deepEqual(pods(sim.view()).map((p) => p.spec.containers[0].image), ["db:v1", "db:v1"]);
  sim.store.delete({ apiVersion: "v1", kind: "Pod", namespace: ns, name: "db-1" });
  await runFor(sim, 60_000);
  assert.deepEqual(pods(sim.view()).map((p) => p.spec.containers[0].image), ["db:v1", "db:v2"]);
  const status = setStatus(sim);
  // Only RollingUpdate moves the current revision forward; under OnDelete it keeps naming the first one.
  assert.deepEqual([status.currentRevision, status.currentReplicas, status.updatedReplicas], [before, 1, 1]);
  assert.notEqual(status.updateRevision, before);
});

test("scaling down removes the highest ordinal first, one at a time", async () => {
  const sim = world(25, { nodes: ["n1"], registry, actors: withSets(1) });
  sim.store.create(statefulSet(4));
  await runFor(sim, 60_000);
  sim.store.patch({ ...setRef, patchType: "merge", patch: { spec: { replicas: 1 } } });
  const watcher = watchPods(sim);
  await sim.run({ untilMs: sim.clock.now() + 60_000, onStep: watcher.onStep });
  assert.deepEqual(watcher.seen.deleted, ["db-3", "db-2", "db-1"]);
  assert.equal(watcher.seen.maxNotReady, 1);
  assert.deepEqual(pods(sim.view()).map((p) => p.metadata.name), ["db-0"]);
  assert.equal(setStatus(sim).replicas, 1);
});

test("under crashes, failed requests, closed watches and stale reads a StatefulSet still rolls out exactly once per ordinal", async () => {
  for (const seed of [31, 32, 33]) {
    const sim = world(seed, { nodes: ["n1", "n2"], registry, actors: withSets(2) });
    sim.store.create(statefulSet(3, { claims: true }));
    const budget = { chance: [1, 8] as const, counts: { crash: 4, "fail-request": 4, "close-watch": 4, "stale-read": 4 } };
    const first = await runFor(sim, 30_000, { faultBudget: budget });
    setImage(sim, "db:v2");
    const second = await runFor(sim, 30_000, { faultBudget: budget });
    assert.ok(first.faults.length + second.faults.length > 4, `seed ${seed}: faults were drawn`);
    sim.stopFaults();
    await runFor(sim, 240_000);
    const names = pods(sim.view()).map((p) => p.metadata.name).sort();
    assert.deepEqual(names, ["db-0", "db-1", "db-2"], `seed ${seed}`);
    assert.ok(pods(sim.view()).every((p) => isReady(p) && p.spec.containers[0].image === "db:v2"), `seed ${seed}: all updated and Ready`);
    assert.equal(list(sim, "v1", "PersistentVolumeClaim").length, 3, `seed ${seed}: one claim per ordinal`);
    assert.equal(statefulSetRolloutStatus(sim.view().get(setRef)!).done, true, `seed ${seed}`);
  }
});
