// The store's fewer copies on the write path: a handed-over input is taken in place with the same result as a
// copied one, and a status write of a built-in kind shares the stored object's unchanged frozen parts.
import { test } from "node:test";
import assert from "node:assert/strict";
import type { KubeObject } from "../../src/api/object.ts";
import { cloneMeasured, handOver, takeHandedOver } from "../../src/store/util.ts";
import { assertFails, configMap, newStore, pod } from "./helpers.ts";

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
