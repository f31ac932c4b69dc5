import { test } from "node:test";
import assert from "node:assert/strict";
import type { KubeObject } from "../../src/api/object.ts";
import type { StoreEvent } from "../../src/store/types.ts";
import { assertFails, configMap, deployment, drainGarbage, newStore, ownedBy, pod, ref, t0 } from "./helpers.ts";

function record(store: ReturnType<typeof newStore>, kind = { apiVersion: "v1", kind: "ConfigMap" }): StoreEvent[] {
  const events: StoreEvent[] = [];
  store.watch({ ...kind, fromRevision: store.revision }, (e) => events.push(e));
  return events;
}

test("delete removes an object without finalizers and returns its last state at the deletion's revision", () => {
  const store = newStore();
  const a = store.create(configMap("a"));
  const events = record(store);
  const gone = store.delete(ref(a));
  assert.equal(gone.metadata.resourceVersion, String(store.revision));
  assert.deepEqual(gone.data, a.data);
  assert.deepEqual(events.map((e) => e.type), ["DELETED"]);
  assert.equal(events[0]!.object.metadata.resourceVersion, String(store.revision));
  assertFails(store, () => store.get(ref(a)), 404, "NotFound");
  assertFails(store, () => store.delete(ref(a)), 404, "NotFound", /configmaps "a" not found/);
});

test("delete preconditions on uid and resourceVersion fail with 409 Conflict", () => {
  const store = newStore();
  const a = store.create(configMap("a"));
  assertFails(store, () => store.delete({ ...ref(a), preconditions: { uid: "other" } }), 409, "Conflict", /UID in precondition: other/);
  assertFails(store, () => store.delete({ ...ref(a), preconditions: { resourceVersion: "1" } }), 409, "Conflict", /ResourceVersion in precondition: 1/);
  store.delete({ ...ref(a), preconditions: { uid: a.metadata.uid!, resourceVersion: a.metadata.resourceVersion! } });
});

test("finalizers keep a deleted object, terminating, until an update removes the last one", () => {
  const store = newStore();
  const a = store.create({ ...configMap("a"), metadata: { name: "a", namespace: "default", finalizers: ["example.com/keep", "example.com/also"] } });
  const events = record(store);
  const terminating = store.delete(ref(a));
  assert.equal(terminating.metadata.deletionTimestamp, new Date(t0).toISOString().replace(".000Z", "Z"));
  assert.equal(terminating.metadata.deletionGracePeriodSeconds, 0);
  assert.equal(terminating.metadata.generation, 2, "the first deletionTimestamp bumps generation");
  const again = store.delete(ref(a));
  assert.equal(again, terminating, "a repeated delete changes nothing");
  const one = store.update({ ...terminating, metadata: { ...terminating.metadata, finalizers: ["example.com/also"] } });
  assert.equal(one.metadata.deletionTimestamp, terminating.metadata.deletionTimestamp);
  store.update({ ...one, metadata: { ...one.metadata, finalizers: [] } });
  assert.deepEqual(events.map((e) => e.type), ["MODIFIED", "MODIFIED", "DELETED"]);
  assert.deepEqual(events[2]!.object.metadata.finalizers, ["example.com/also"], "DELETED carries the last stored state");
  assertFails(store, () => store.get(ref(a)), 404, "NotFound");
});

test("no finalizer can be added to an object being deleted", () => {
  const store = newStore();
  const a = store.create({ ...configMap("a"), metadata: { name: "a", namespace: "default", finalizers: ["example.com/keep"] } });
  const terminating = store.delete(ref(a));
  assertFails(
    store,
    () => store.update({ ...terminating, metadata: { ...terminating.metadata, finalizers: ["example.com/keep", "example.com/new"] } }),
    422,
    "Invalid",
    /no new finalizers can be added if the object is being deleted/,
  );
});

test("an update cannot set or clear deletionTimestamp", () => {
  const store = newStore();
  const a = store.create(configMap("a"));
  const b = store.update({ ...a, metadata: { ...a.metadata, deletionTimestamp: "2030-01-01T00:00:00Z" } });
  assert.equal(b.metadata.deletionTimestamp, undefined);
});

test("a scheduled pod deletes gracefully: it stays terminating until a delete with grace period 0", () => {
  const store = newStore({ now: () => t0 });
  const p = store.create({ ...pod("p", { nodeName: "n1" }), spec: { containers: [{ name: "c", image: "i" }], nodeName: "n1", terminationGracePeriodSeconds: 10 } });
  const terminating = store.delete(ref(p));
  assert.equal(terminating.metadata.deletionGracePeriodSeconds, 10);
  assert.equal(terminating.metadata.deletionTimestamp, new Date(t0 + 10_000).toISOString().replace(".000Z", "Z"));
  assert.equal(store.get(ref(p)).metadata.deletionGracePeriodSeconds, 10);
  const shorter = store.delete({ ...ref(p), gracePeriodSeconds: 5 });
  assert.equal(shorter.metadata.deletionGracePeriodSeconds, 5, "a shorter grace period replaces the longer one");
  const longer = store.delete({ ...ref(p), gracePeriodSeconds: 60 });
  assert.equal(longer, shorter, "a longer grace period changes nothing");
  store.delete({ ...ref(p), gracePeriodSeconds: 0 });
  assertFails(store, () => store.get(ref(p)), 404, "NotFound");
});

test("a pod's grace period defaults to 30 seconds; unscheduled and finished pods go at once", () => {
  const store = newStore();
  const scheduled = store.create(pod("s", { nodeName: "n1" }));
  assert.equal(store.delete(ref(scheduled)).metadata.deletionGracePeriodSeconds, 30);
  const pending = store.create(pod("u"));
  store.delete(ref(pending));
  assertFails(store, () => store.get(ref(pending)), 404, "NotFound");
  const done = store.create(pod("d", { nodeName: "n1" }));
  store.updateStatus({ ...done, status: { phase: "Succeeded" } });
  store.delete(ref(done));
  assertFails(store, () => store.get(ref(done)), 404, "NotFound");
});

test("removing the last finalizer of a pod still in its grace period does not delete it", () => {
  const store = newStore();
  const p = store.create({ ...pod("p", { nodeName: "n1" }), metadata: { name: "p", namespace: "default", finalizers: ["example.com/f"] } });
  const terminating = store.delete(ref(p));
  const cleared = store.update({ ...terminating, metadata: { ...terminating.metadata, finalizers: [] } });
  assert.equal(cleared.metadata.deletionGracePeriodSeconds, 30);
  assert.ok(store.get(ref(p)));
  store.delete({ ...ref(p), gracePeriodSeconds: 0 });
  assertFails(store, () => store.get(ref(p)), 404, "NotFound");
});

test("the default namespaces may not be deleted", () => {
  const store = newStore();
  assertFails(store, () => store.delete({ apiVersion: "v1", kind: "Namespace", name: "default" }), 403, "Forbidden", /may not be deleted/);
});

function replicaSetOf(owner: KubeObject, name: string, options: { blockOwnerDeletion?: boolean } = {}): KubeObject {
  const d = deployment(name);
  return { ...d, kind: "ReplicaSet", metadata: { name, namespace: "default", ownerReferences: [ownedBy(owner, options)] } };
}

test("background deletion: the collector deletes dependents of a gone owner, one step at a time", () => {
  const store = newStore();
  const owner = store.create(deployment("web"));
  const rs = store.create(replicaSetOf(owner, "web-1"));
  const p = store.create({ ...pod("web-1-a"), metadata: { name: "web-1-a", namespace: "default", ownerReferences: [ownedBy(rs)] } });
  assert.equal(store.hasGarbage(), false);
  store.delete(ref(owner));
  assert.equal(store.hasGarbage(), true);
  assert.deepEqual(drainGarbage(store), [
    "gc: delete ReplicaSet default/web-1 (its owners are gone)",
    "gc: delete Pod default/web-1-a (its owners are gone)",
  ]);
  assertFails(store, () => store.get(ref(p)), 404, "NotFound");
  assert.equal(store.hasGarbage(), false);
});

test("a dependent whose owner was recreated under the same name (another uid) is still garbage", () => {
  const store = newStore();
  const owner = store.create(configMap("owner"));
  store.create({ ...configMap("child"), metadata: { name: "child", namespace: "default", ownerReferences: [ownedBy(owner)] } });
  store.delete(ref(owner));
  store.create(configMap("owner"));
  assert.deepEqual(drainGarbage(store), ["gc: delete ConfigMap default/child (its owners are gone)"]);
});

test("a dependent with one live owner loses only its dangling ownerReference", () => {
  const store = newStore();
  const a = store.create(configMap("a"));
  const b = store.create(configMap("b"));
  const child = store.create({ ...configMap("child"), metadata: { name: "child", namespace: "default", ownerReferences: [{ ...ownedBy(a), controller: false }, { ...ownedBy(b), controller: false }] } });
  store.delete(ref(a));
  drainGarbage(store);
  assert.deepEqual(store.get(ref(child)).metadata.ownerReferences?.map((o) => o.name), ["b"]);
});

test("foreground deletion: the owner waits with foregroundDeletion until its blocking dependents are gone", () => {
  const store = newStore();
  const owner = store.create(deployment("web"));
  const rs = store.create(replicaSetOf(owner, "web-1", { blockOwnerDeletion: true }));
  const terminating = store.delete({ ...ref(owner), propagationPolicy: "Foreground" });
  assert.deepEqual(terminating.metadata.finalizers, ["foregroundDeletion"]);
  const first = store.collectGarbage();
  assert.match(first ?? "", /^gc: delete ReplicaSet default\/web-1 \(.*foreground/);
  assert.ok(store.get(ref(owner)), "the owner is still there while its dependent is deleted");
  drainGarbage(store);
  assertFails(store, () => store.get(ref(rs)), 404, "NotFound");
  assertFails(store, () => store.get(ref(owner)), 404, "NotFound");
});

test("foreground deletion waits for a dependent held by its own finalizer", () => {
  const store = newStore();
  const owner = store.create(deployment("web"));
  const rs = store.create({ ...replicaSetOf(owner, "web-1", { blockOwnerDeletion: true }), metadata: { name: "web-1", namespace: "default", finalizers: ["example.com/hold"], ownerReferences: [ownedBy(owner, { blockOwnerDeletion: true })] } });
  store.delete({ ...ref(owner), propagationPolicy: "Foreground" });
  drainGarbage(store);
  assert.ok(store.get(ref(owner)).metadata.deletionTimestamp, "the owner waits");
  assert.equal(store.hasGarbage(), false, "nothing to do while the dependent's finalizer holds");
  const held = store.get(ref(rs));
  store.update({ ...held, metadata: { ...held.metadata, finalizers: (held.metadata.finalizers ?? []).filter((f) => f !== "example.com/hold") } });
  drainGarbage(store);
  assertFails(store, () => store.get(ref(owner)), 404, "NotFound");
});

test("orphan deletion: dependents lose their ownerReference and stay; then the owner goes", () => {
  const store = newStore();
  const owner = store.create(deployment("web"));
  const rs = store.create(replicaSetOf(owner, "web-1"));
  store.delete({ ...ref(owner), propagationPolicy: "Orphan" });
  assert.deepEqual(store.get(ref(owner)).metadata.finalizers, ["orphan"]);
  assert.deepEqual(drainGarbage(store), [
    "gc: orphan ReplicaSet default/web-1: remove its ownerReference to Deployment default/web",
    "gc: remove finalizer orphan from Deployment default/web: dependents orphaned",
  ]);
  assert.equal(store.get(ref(rs)).metadata.ownerReferences, undefined);
  assertFails(store, () => store.get(ref(owner)), 404, "NotFound");
});

test("a batch/v1 Job orphans its pods when the delete names no policy", () => {
  const store = newStore();
  const job = store.create({
    apiVersion: "batch/v1",
    kind: "Job",
    metadata: { name: "j", namespace: "default" },
    spec: { template: { spec: { containers: [{ name: "c", image: "i" }], restartPolicy: "Never" } } },
  });
  const selector = (job.spec as { selector: { matchLabels: Record<string, string> } }).selector;
  assert.deepEqual(selector.matchLabels, { "batch.kubernetes.io/controller-uid": job.metadata.uid });
  store.create({ ...pod("j-1"), metadata: { name: "j-1", namespace: "default", ownerReferences: [ownedBy(job)] } });
  store.delete(ref(job));
  drainGarbage(store);
  assert.equal(store.get({ apiVersion: "v1", kind: "Pod", namespace: "default", name: "j-1" }).metadata.ownerReferences, undefined);
});

test("deleting a namespace deletes its objects through collector steps; it stays Terminating until empty", () => {
  const store = newStore();
  const ns = store.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: "team" } });
  assert.deepEqual(ns.spec, { finalizers: ["kubernetes"] });
  assert.deepEqual(ns.status, { phase: "Active" });
  store.create(configMap("a", { namespace: "team" }));
  store.create({ ...configMap("held"), metadata: { name: "held", namespace: "team", finalizers: ["example.com/hold"] } });
  const terminating = store.delete({ apiVersion: "v1", kind: "Namespace", name: "team" });
  assert.equal((terminating.status as { phase: string }).phase, "Terminating");
  const steps = drainGarbage(store);
  assert.deepEqual(steps, [
    "namespace controller: delete ConfigMap team/a (namespace terminating)",
    "namespace controller: delete ConfigMap team/held (namespace terminating)",
  ]);
  assert.ok(store.get({ apiVersion: "v1", kind: "Namespace", name: "team" }), "waits for the held object");
  const held = store.get({ apiVersion: "v1", kind: "ConfigMap", namespace: "team", name: "held" });
  store.update({ ...held, metadata: { ...held.metadata, finalizers: [] } });
  assert.deepEqual(drainGarbage(store), ["namespace controller: finalize Namespace team (namespace empty)"]);
  assertFails(store, () => store.get({ apiVersion: "v1", kind: "Namespace", name: "team" }), 404, "NotFound");
});
