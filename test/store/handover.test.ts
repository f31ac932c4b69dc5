// The store's fewer copies on the write path: a handed-over input is taken in place with the same result as a
// copied one, and a status write or a merge patch shares the stored object's frozen parts it leaves alone (a custom
// kind's only while the schema it was pruned with is still in force), with the same result and checks as a copy.
import { test } from "node:test";
import assert from "node:assert/strict";
import type { KubeObject } from "../../src/api/object.ts";
import { applyMergePatch } from "../../src/api/patch.ts";
import { deepFreeze } from "../../src/api/json.ts";
import { mergePatchSharing } from "../../src/api/patch.ts";
import { cloneMeasured, handOver, takeHandedOver } from "../../src/store/util.ts";
import { assertFails, configMap, newStore, pod, widget, widgetCrd } from "./helpers.ts";

/** Data with what the wire drops or changes: undefined fields and array items, a function. */
function messy(): Record<string, unknown> {
  return { a: "x", gone: undefined, list: [1, undefined, { b: true, f: () => 0 }], nested: { n: null, u: undefined } };
}

test("cloneMeasured of owned data makes it plain in place, with the same value and size as a copy", () => {
  const copied = cloneMeasured(messy());
  const input = messy();
  const owned = cloneMeasured(input, 0, true);
  assert.equal(owned.clone, input, "owned data is not copied");
  assert.deepEqual(owned.clone, copied.clone);
  assert.deepEqual(Object.keys(input), ["a", "list", "nested"]);
  assert.equal(owned.bytes, copied.bytes);
});

test("cloneMeasured of owned data that is not plain falls back to a JSON round trip, like a copy", () => {
  const when = new Date(Date.UTC(2026, 0, 1));
  const owned = cloneMeasured({ when, frozen: Object.freeze({ k: 1 }) }, 0, true);
  assert.deepEqual(owned.clone, { when: "2026-01-01T00:00:00.000Z", frozen: { k: 1 } });
  assert.equal(owned.bytes, Buffer.byteLength(JSON.stringify(owned.clone)));
});

test("a hand-over mark is taken once", () => {
  const object = handOver({});
  assert.equal(takeHandedOver(object), true);
  assert.equal(takeHandedOver(object), false);
  assert.equal(takeHandedOver({}), false);
});

test("a handed-over create is stored like a copied one and becomes the store's frozen object", () => {
  const plain = newStore().create({ ...configMap("a"), extra: undefined } as KubeObject);
  const input = handOver({ ...configMap("a"), extra: undefined } as KubeObject);
  const created = newStore().create(input);
  assert.deepEqual(created, plain);
  assert.equal("extra" in created, false);
  assert.ok(Object.isFrozen(created.metadata));
});

test("a handed-over write that fails changes nothing and fails with the same error as a copied one", () => {
  const store = newStore();
  store.create(configMap("a"));
  const stale = { ...configMap("a"), metadata: { name: "a", namespace: "default", resourceVersion: "1" } };
  const message = /the object has been modified; please apply your changes to the latest version and try again/;
  assertFails(store, () => store.update(handOver(structuredClone(stale))), 409, "Conflict", message);
  assertFails(store, () => store.update(structuredClone(stale)), 409, "Conflict", message);
  const bad = { apiVersion: "v1", kind: "", metadata: { name: "b" } } as KubeObject;
  assertFails(store, () => store.create(handOver(structuredClone(bad))), 400, "BadRequest", /Object 'Kind' is missing in '\{"apiVersion":"v1","kind":"",/);
});

test("a status write of a built-in kind shares the stored spec and still changes only status", () => {
  const store = newStore();
  const before = store.create(pod("p"));
  const after = store.updateStatus({ ...before, status: { phase: "Running" } } as KubeObject);
  assert.equal(after.spec, before.spec, "the unchanged spec is the stored one, not a copy");
  assert.deepEqual(after.status, { phase: "Running" });
  assert.ok(Object.isFrozen(after) && Object.isFrozen(after.status));
  assert.equal(after.metadata.generation, before.metadata.generation);
  assert.notEqual(after.metadata.resourceVersion, before.metadata.resourceVersion);
  const again = store.updateStatus({ ...after, status: { phase: "Running" } } as KubeObject);
  assert.equal(again, after, "writing the same status back is a no-op");
});

test("a status write of a custom kind shares the stored spec while its CRD is unchanged", () => {
  const store = newStore();
  store.create(widgetCrd());
  const before = store.create(widget("w", { size: 3, color: "red" }));
  const after = store.updateStatus({ ...before, status: { ready: true } } as KubeObject);
  assert.equal(after.spec, before.spec, "the unchanged spec is the stored one, not a copy");
  assert.deepEqual(after.status, { ready: true });
  assert.ok(Object.isFrozen(after.spec));
  const again = store.updateStatus({ ...after, status: { ready: false } } as KubeObject);
  assert.equal(again.spec, before.spec, "every later status write shares it too");
});

test("after its CRD drops a field, a status write of a custom kind prunes the stored spec in a copy", () => {
  const store = newStore();
  const crd = store.create(widgetCrd());
  const before = store.create(widget("w", { size: 3, color: "red" }));
  const changed = structuredClone(crd) as KubeObject & { spec: { versions: Array<{ schema: { openAPIV3Schema: { properties: { spec: { properties: Record<string, unknown> } } } } }> } };
  delete changed.spec.versions[0]!.schema.openAPIV3Schema.properties.spec.properties.color;
  store.update(changed);
  const after = store.updateStatus({ ...before, status: { ready: true } } as KubeObject);
  assert.deepEqual(after.spec, { size: 3 }, "the field the new schema does not declare is pruned");
  assert.deepEqual(before.spec, { size: 3, color: "red" }, "the older version is left as it was");
  assert.deepEqual(store.get({ ...widget("w"), name: "w", namespace: "default" }).spec, { size: 3 });
});

test("a sharing merge patch gives applyMergePatch's result, key order included, and keeps what it does not reach", () => {
  const stored = deepFreeze({ a: 1, spec: { keep: { deep: [1, 2] }, set: "x", gone: true }, status: { n: 1 }, list: [{ k: 1 }] });
  const patches: Array<Record<string, unknown>> = [
    { spec: { set: "y", gone: null, added: { inner: null, v: 2 } } },
    { status: null, z: [1, null], a: { now: "an object" } },
    { list: { k: 2 }, spec: "scalar" },
    {},
  ];
  for (const patch of patches) {
    const shared = mergePatchSharing(stored, structuredClone(patch));
    assert.equal(JSON.stringify(shared), JSON.stringify(applyMergePatch(stored, patch)), JSON.stringify(patch));
    assert.equal(Object.isFrozen(shared), false, "the top level is new");
  }
  const patched = mergePatchSharing(stored, { spec: { set: "y" } });
  assert.equal((patched.spec as Record<string, unknown>).keep, stored.spec.keep, "a subtree the patch does not reach is the stored one");
  assert.equal(patched.status, stored.status);
  assert.equal(Object.isFrozen(patched.spec), false, "an object on a patched path is new");
});

test("cloneMeasured of a result sharing stored parts measures them as a copy would, without copying them", () => {
  const stored = deepFreeze({ spec: { keep: { deep: [1, "two", null, true] } } });
  const patched = mergePatchSharing(stored, { status: { ready: true } });
  const copied = cloneMeasured(structuredClone(patched));
  const shared = cloneMeasured(patched, 0, "sharing-stored");
  assert.equal(shared.clone, patched);
  assert.equal((shared.clone.spec as object), stored.spec);
  assert.equal(shared.bytes, copied.bytes);
});

test("a merge patch shares the stored object's parts it does not reach, and the result is the same as before", () => {
  const store = newStore();
  const before = store.create(pod("p", { labels: { app: "a" } }));
  const patched = store.patch({ apiVersion: "v1", kind: "Pod", namespace: "default", name: "p", patchType: "merge", patch: { metadata: { labels: { tier: "web" } } } });
  assert.equal(patched.spec, before.spec, "the unchanged spec is the stored one, not a copy");
  assert.deepEqual(patched.metadata.labels, { app: "a", tier: "web" });
  assert.ok(Object.isFrozen(patched.metadata.labels));
  const status = store.patchStatus({ apiVersion: "v1", kind: "Pod", namespace: "default", name: "p", patchType: "merge", patch: { status: { phase: "Running" } } });
  assert.equal(status.spec, before.spec);
  assert.deepEqual(status.status, { phase: "Running" });
  assertFails(store, () => store.patch({ apiVersion: "v1", kind: "Pod", namespace: "default", name: "p", patchType: "merge", patch: { spec: { x: Number.NaN } } }), 400, "BadRequest", /merge patch is not valid JSON/);
  const badLabel = { metadata: { labels: { "bad key!": "v" } } };
  assertFails(store, () => store.patch({ apiVersion: "v1", kind: "Pod", namespace: "default", name: "p", patchType: "merge", patch: badLabel }), 422, "Invalid", /metadata.labels/);
  assertFails(store, () => store.patch({ apiVersion: "v1", kind: "Pod", namespace: "default", name: "p", patchType: "merge", patch: { metadata: { finalizers: [""] } } }), 422, "Invalid", /metadata.finalizers/);
});

test("a merge patch of a custom kind after its CRD drops a field prunes the stored spec in a copy", () => {
  const store = newStore();
  const crd = store.create(widgetCrd());
  store.create(widget("w", { size: 3, color: "red" }));
  const changed = structuredClone(crd) as KubeObject & { spec: { versions: Array<{ schema: { openAPIV3Schema: { properties: { spec: { properties: Record<string, unknown> } } } } }> } };
  delete changed.spec.versions[0]!.schema.openAPIV3Schema.properties.spec.properties.color;
  store.update(changed);
  const patched = store.patch({ apiVersion: "example.com/v1", kind: "Widget", namespace: "default", name: "w", patchType: "merge", patch: { metadata: { labels: { a: "b" } } } });
  assert.deepEqual(patched.spec, { size: 3 });
  const again = store.patch({ apiVersion: "example.com/v1", kind: "Widget", namespace: "default", name: "w", patchType: "merge", patch: { metadata: { labels: { a: "c" } } } });
  assert.equal(again.spec, patched.spec, "once stored under the new schema, it is shared again");
});
