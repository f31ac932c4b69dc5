// A fresh store's namespaces: a store may commit the namespace objects of the store made before it instead of
// writing them again (every simulated run starts a store). What a client can see must be the same either way.
import { test } from "node:test";
import assert from "node:assert/strict";
import type { Store } from "../../src/store/types.ts";
import { newStore, snapshot, t0 } from "./helpers.ts";

/** Admission that does nothing: its presence alone makes a store write its namespaces through the pipeline. */
const passThrough = [{ name: "pass-through" }];

function everything(store: Store): unknown {
  return { state: snapshot(store), history: store.history(0), garbage: store.hasGarbage() };
}

test("a store made after another has the same namespaces, uids, revisions and history as one that wrote them", () => {
  const first = newStore();
  const shared = newStore();
  const written = newStore({ admission: passThrough });
  assert.equal(shared.revision, 4);
  assert.deepEqual(everything(shared), everything(written));
  assert.deepEqual(everything(first), everything(written));
  const uids = shared.list({ apiVersion: "v1", kind: "Namespace" }).items.map((ns) => ns.metadata.uid);
  assert.equal(new Set(uids).size, 4, "each namespace has its own uid");
});

test("the next write of a store whose namespaces were shared continues its sequences", () => {
  newStore();
  const shared = newStore();
  const written = newStore({ admission: passThrough });
  for (const store of [shared, written]) {
    store.create({ apiVersion: "v1", kind: "ConfigMap", metadata: { generateName: "cm-", namespace: "default" }, data: {} });
  }
  assert.deepEqual(everything(shared), everything(written));
});

test("namespaces are stamped with each store's own clock and names", () => {
  newStore();
  const later = newStore({ now: () => t0 + 86_400_000 });
  const ns = later.get({ apiVersion: "v1", kind: "Namespace", name: "default" });
  assert.equal(ns.metadata.creationTimestamp, "2026-01-02T12:00:00Z");
  const own = newStore({ namespaces: ["alpha", "beta"] });
  assert.deepEqual(own.list({ apiVersion: "v1", kind: "Namespace" }).items.map((n) => n.metadata.name), ["alpha", "beta"]);
  assert.equal(own.revision, 2);
  const again = newStore();
  assert.equal(again.get({ apiVersion: "v1", kind: "Namespace", name: "default" }).metadata.creationTimestamp, "2026-01-01T12:00:00Z");
});

test("a shared namespace's writes in one store are not seen by the next", () => {
  const first = newStore();
  const ns = first.get({ apiVersion: "v1", kind: "Namespace", name: "kube-public" });
  first.update({ ...ns, metadata: { ...ns.metadata, labels: { touched: "yes" } } });
  first.delete({ apiVersion: "v1", kind: "Namespace", name: "kube-node-lease" });
  const second = newStore();
  assert.equal(second.get({ apiVersion: "v1", kind: "Namespace", name: "kube-public" }).metadata.labels, undefined);
  assert.equal(second.get({ apiVersion: "v1", kind: "Namespace", name: "kube-node-lease" }).metadata.deletionTimestamp, undefined);
  assert.equal(second.hasGarbage(), false);
});

test("a store with its own uid function or a short history writes its namespaces itself", () => {
  newStore();
  let n = 0;
  const custom = newStore({ uid: () => `uid-${++n}` });
  const uidOf = (name: string) => custom.get({ apiVersion: "v1", kind: "Namespace", name }).metadata.uid;
  assert.deepEqual(["default", "kube-system", "kube-public", "kube-node-lease"].map(uidOf), ["uid-1", "uid-2", "uid-3", "uid-4"]);
  const short = newStore({ historyRevisionsMax: 2 });
  assert.equal(short.revision, 4);
  assert.equal(short.compactedRevision, 2);
  assert.equal(short.list({ apiVersion: "v1", kind: "Namespace" }).items.length, 4);
});
