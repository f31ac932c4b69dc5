// Costs that must grow with the input, not faster: the history's bytes stay under their bound however much is
// written (compacting as etcd does, with 410 for reads and watches behind it), and emptying a terminating namespace
// takes work in proportion to its objects. Work is counted (history bytes, map lookups), never timed.
import { test } from "node:test";
import assert from "node:assert/strict";
import { MemoryStore } from "../../src/store/store.ts";
import { assertFails, configMap, drainGarbage, newStore, t0 } from "./helpers.ts";

const kib = 1024;

function blobMap(name: string, bytes: number, fill: string): ReturnType<typeof configMap> {
  return configMap(name, { data: { blob: fill.repeat(bytes) } });
}

test("history is bounded by bytes: older revisions are compacted, and reads and watches behind them get 410 Gone", () => {
  const historyBytesMax = 256 * kib;
  const store = new MemoryStore({ now: () => t0, historyBytesMax });
  const first = store.create(blobMap("big", 50 * kib, "a"));
  const firstRevision = Number(first.metadata.resourceVersion);
  for (let i = 0; i < 40; i++) store.update({ ...store.get({ apiVersion: "v1", kind: "ConfigMap", namespace: "default", name: "big" }), data: { blob: String(i % 10).repeat(50 * kib) } });
  // 41 writes of 50 KiB are 2 MiB: all but the newest ~5 are compacted.
  assert.ok(store.historyBytes <= historyBytesMax, `history holds ${store.historyBytes} bytes, bound ${historyBytesMax}`);
  assert.ok(store.historyBytes > historyBytesMax - 60 * kib, `history keeps what fits: ${store.historyBytes} bytes`);
  assert.ok(store.compactedRevision > firstRevision, `compacted to ${store.compactedRevision}, past the first write at ${firstRevision}`);
  const ref = { apiVersion: "v1", kind: "ConfigMap", namespace: "default", name: "big" };
  assertFails(store, () => store.watch({ apiVersion: "v1", kind: "ConfigMap", fromRevision: firstRevision }, () => {}), 410, "Expired", /too old resource version/);
  assertFails(store, () => store.get(ref, { revision: firstRevision }), 410, "Expired");
  assertFails(store, () => store.list({ apiVersion: "v1", kind: "ConfigMap", revision: firstRevision }), 410, "Expired");
  // At and after the compaction point, everything is still there.
  const events: string[] = [];
  store.watch({ apiVersion: "v1", kind: "ConfigMap", fromRevision: store.compactedRevision }, (e) => events.push(e.type));
  assert.equal(events.length, store.revision - store.compactedRevision);
  assert.equal((store.get(ref, { revision: store.compactedRevision }).data as Record<string, string>).blob!.length, 50 * kib);
});

test("deleting a large object leaves a small tombstone in the history, and later writes compact its versions away", () => {
  const store = new MemoryStore({ now: () => t0, historyBytesMax: 128 * kib });
  for (let i = 0; i < 4; i++) store.create(blobMap(`big-${i}`, 30 * kib, "x"));
  for (let i = 0; i < 4; i++) store.delete({ apiVersion: "v1", kind: "ConfigMap", namespace: "default", name: `big-${i}` });
  const afterDeletes = store.historyBytes;
  const firstSmall = store.revision + 1;
  for (let i = 0; i < 1500; i++) store.create(configMap(`small-${i}`));
  assert.ok(store.historyBytes <= 128 * kib);
  assert.ok(store.compactedRevision >= firstSmall, `the large versions and their tombstones were compacted (to ${store.compactedRevision})`);
  assert.ok(afterDeletes < 4 * 31 * kib, `four 30 KiB objects and their deletions count ${afterDeletes} bytes`);
});

test("a store without historyBytesMax compacts by revisions only, as the simulator's stores do", () => {
  const store = newStore({ historyRevisionsMax: 1000 });
  for (let i = 0; i < 20; i++) store.create(blobMap(`big-${i}`, 100 * kib, "y"));
  assert.equal(store.compactedRevision, 0);
});

/** Calls of `Map.prototype.get` while `run` runs: the store's lookups of objects by key. */
function mapGets(run: () => void): number {
  const original = Map.prototype.get;
  let calls = 0;
  Map.prototype.get = function (this: Map<unknown, unknown>, key: unknown) {
    calls++;
    return original.call(this, key);
  };
  try {
    run();
  } finally {
    Map.prototype.get = original;
  }
  return calls;
}

function namespaceCleanupLookups(objects: number): number {
  const store = newStore();
  store.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: "scratch" } });
  for (let i = 0; i < objects; i++) store.create(configMap(`c-${String(i).padStart(5, "0")}`, { namespace: "scratch" }));
  store.delete({ apiVersion: "v1", kind: "Namespace", name: "scratch" });
  const lookups = mapGets(() => drainGarbage(store, objects + 10));
  assertFails(store, () => store.get({ apiVersion: "v1", kind: "Namespace", name: "scratch" }), 404, "NotFound");
  assert.equal(store.list({ apiVersion: "v1", kind: "ConfigMap", namespace: "scratch" }).items.length, 0);
  return lookups;
}

test("emptying a terminating namespace takes lookups in proportion to its objects, not to their square", () => {
  const small = namespaceCleanupLookups(300);
  const large = namespaceCleanupLookups(1200);
  // Linear work is 4x for 4x the objects; a scan of the namespace per deletion made it about 16x.
  assert.ok(large / small < 6, `lookups: ${small} for 300 objects, ${large} for 1200 (ratio ${(large / small).toFixed(1)})`);
});

test("the namespace controller deletes a namespace's content in kind and key order, waiting for finalizers", () => {
  const store = newStore();
  store.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: "scratch" } });
  store.create(configMap("b", { namespace: "scratch" }));
  store.create({ ...configMap("a", { namespace: "scratch" }), metadata: { name: "a", namespace: "scratch", finalizers: ["example.com/hold"] } });
  store.create({ apiVersion: "v1", kind: "Secret", metadata: { name: "s", namespace: "scratch" } });
  store.delete({ apiVersion: "v1", kind: "Namespace", name: "scratch" });
  const steps = drainGarbage(store);
  assert.deepEqual(
    steps.map((s) => s.replace(/ \(namespace terminating\)$/, "")),
    ["namespace controller: delete ConfigMap scratch/a", "namespace controller: delete ConfigMap scratch/b", "namespace controller: delete Secret scratch/s"],
  );
  // `a` waits for its finalizer: the namespace stays.
  assert.equal(store.get({ apiVersion: "v1", kind: "Namespace", name: "scratch" }).metadata.name, "scratch");
  const held = store.get({ apiVersion: "v1", kind: "ConfigMap", namespace: "scratch", name: "a" });
  store.update({ ...held, metadata: { ...held.metadata, finalizers: [] } });
  assert.deepEqual(drainGarbage(store), ["namespace controller: finalize Namespace scratch (namespace empty)"]);
  assertFails(store, () => store.get({ apiVersion: "v1", kind: "Namespace", name: "scratch" }), 404, "NotFound");
});
