import { test } from "node:test";
import assert from "node:assert/strict";
import { getCondition, isConditionTrue, setCondition, withCondition } from "../../src/runtime/conditions.ts";
import { createEventRecorder } from "../../src/runtime/events.ts";
import { OwnershipError, ensureOwned, matchesDesired, setControllerReference } from "../../src/runtime/ownership.ts";
import { Cache } from "../../src/runtime/cache.ts";
import { alreadyExists, internalError } from "../../src/api/errors.ts";
import type { KubeObject } from "../../src/api/object.ts";
import { FakeClient } from "./fake-client.ts";
import { ManualClock } from "./manual-clock.ts";

const owner: KubeObject = { apiVersion: "example.com/v1", kind: "App", metadata: { name: "app", namespace: "ns", uid: "u-1", generation: 3 } };

test("setCondition moves lastTransitionTime only when the status changes", () => {
  const t0 = Date.UTC(2026, 0, 1);
  let list = setCondition(undefined, { type: "Ready", status: "False", reason: "Starting", message: "" }, t0);
  assert.equal(getCondition(list, "Ready")?.lastTransitionTime, "2026-01-01T00:00:00Z");
  list = setCondition(list, { type: "Ready", status: "False", reason: "Waiting", message: "still" }, t0 + 60_000);
  assert.equal(getCondition(list, "Ready")?.lastTransitionTime, "2026-01-01T00:00:00Z");
  assert.equal(getCondition(list, "Ready")?.reason, "Waiting");
  list = setCondition(list, { type: "Ready", status: "True", reason: "Done", message: "" }, t0 + 120_000);
  assert.equal(getCondition(list, "Ready")?.lastTransitionTime, "2026-01-01T00:02:00Z");
  assert.equal(list.length, 1);
});

test("withCondition records the object's generation and isConditionTrue checks it", () => {
  const next = withCondition(owner, { type: "Ready", status: "True", reason: "Done", message: "" }, 0);
  const conditions = (next["status"] as { conditions: never[] }).conditions;
  assert.equal(isConditionTrue(conditions, "Ready", 3), true);
  assert.equal(isConditionTrue(conditions, "Ready", 4), false, "a condition about generation 3 says nothing about 4");
  assert.equal(owner["status"], undefined, "the input is not changed");
});

test("setControllerReference refuses an object controlled by someone else", () => {
  const child: KubeObject = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "c", namespace: "ns" } };
  const owned = setControllerReference(owner, child);
  assert.equal(owned.metadata.ownerReferences?.[0]?.uid, "u-1");
  const other = { ...owner, metadata: { ...owner.metadata, uid: "u-2" } };
  assert.throws(() => setControllerReference(other, owned), OwnershipError);
});

test("matchesDesired ignores fields the controller does not set", () => {
  const desired = setControllerReference(owner, { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "c", namespace: "ns", labels: { a: "1" } }, data: { k: "v" } });
  const current = { ...desired, metadata: { ...desired.metadata, labels: { a: "1", other: "x" }, resourceVersion: "9" }, extra: { defaulted: true } };
  assert.equal(matchesDesired(current, desired), true);
  assert.equal(matchesDesired({ ...current, data: { k: "w" } }, desired), false);
});

test("ensureOwned creates, leaves alone, then updates an owned object", async () => {
  const client = new FakeClient();
  const desired: KubeObject = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "c" }, data: { k: "v" } };
  assert.equal((await ensureOwned(owner, desired, { client })).operation, "created");
  assert.equal((await ensureOwned(owner, desired, { client })).operation, "unchanged");
  const result = await ensureOwned(owner, { ...desired, data: { k: "w" } }, { client });
  assert.equal(result.operation, "updated");
  assert.deepEqual(client.all("ConfigMap")[0]?.["data"], { k: "w" });
});

test("ensureOwned recovers from a stale cache: AlreadyExists on create, Conflict on update", async () => {
  const client = new FakeClient();
  const desired: KubeObject = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "c" }, data: { k: "v" } };
  const emptyCache = new Cache();
  await ensureOwned(owner, desired, { client });
  // The cache has not seen the object: the create fails with AlreadyExists, then the GET shows it matches.
  assert.equal((await ensureOwned(owner, desired, { client, lister: emptyCache })).operation, "unchanged");
  // The cache holds an old version: the update conflicts, then succeeds on the fresh object.
  const stale = new Cache();
  stale.upsert(client.all("ConfigMap")[0] as KubeObject);
  const current = client.all("ConfigMap")[0] as KubeObject;
  await client.update({ object: { ...current, metadata: { ...current.metadata, labels: { touched: "yes" } } } });
  const result = await ensureOwned(owner, { ...desired, data: { k: "w" } }, { client, lister: stale });
  assert.equal(result.operation, "updated");
  assert.deepEqual(client.all("ConfigMap")[0]?.metadata.labels, { touched: "yes" });
});

test("ensureOwned gives up after its retries and throws the last error", async () => {
  const client = new FakeClient();
  for (let i = 0; i < 10; i++) client.failNext("create", alreadyExists("configmaps", "c"));
  for (let i = 0; i < 10; i++) client.failNext("get", internalError("down"));
  const desired: KubeObject = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "c" } };
  await assert.rejects(ensureOwned(owner, desired, { client }), /down/);
});

test("the event recorder creates an Event once and counts its repeats", async () => {
  const client = new FakeClient();
  const clock = new ManualClock();
  const recorder = createEventRecorder({ client, clock, component: "app-controller" });
  await recorder.record(owner, { type: "Normal", reason: "Created", message: "made c" });
  await recorder.record(owner, { type: "Normal", reason: "Created", message: "made c" });
  await recorder.record(owner, { type: "Warning", reason: "Failed", message: "oops" });
  const events = client.all("Event");
  assert.equal(events.length, 2);
  const created = events.find((e) => e["reason"] === "Created") as KubeObject;
  assert.equal(created["count"], 2);
  assert.deepEqual((created["involvedObject"] as { uid: string }).uid, "u-1");
});

test("the event recorder starts a new Event when the old one is gone and never throws on API errors", async () => {
  const client = new FakeClient();
  const clock = new ManualClock();
  const recorder = createEventRecorder({ client, clock, component: "c" });
  await recorder.record(owner, { type: "Normal", reason: "R", message: "m" });
  const [event] = client.all("Event") as [KubeObject];
  await client.delete({ apiVersion: "v1", kind: "Event", namespace: "ns", name: event.metadata.name as string });
  await recorder.record(owner, { type: "Normal", reason: "R", message: "m" });
  assert.equal(client.all("Event").length, 1);
  client.failNext("patch", internalError("down"));
  await recorder.record(owner, { type: "Normal", reason: "R", message: "m" });
});

test("a cache indexes by namespace, owner uid, label and custom functions, and updates its indexes", () => {
  const cache = new Cache({ indexers: { byData: (o) => Object.keys((o["data"] as Record<string, string>) ?? {}) } });
  const child = (name: string, ns: string, labels: Record<string, string>, data: Record<string, string>): KubeObject =>
    setControllerReference({ ...owner, metadata: { ...owner.metadata, namespace: ns } }, { apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace: ns, labels }, data });
  cache.upsert(child("a", "ns", { app: "x" }, { k: "1" }));
  cache.upsert(child("b", "ns", { app: "y" }, { j: "1" }));
  cache.upsert(child("c", "other", { app: "x" }, { k: "1" }));
  assert.deepEqual(cache.list({ namespace: "ns" }).map((o) => o.metadata.name), ["a", "b"]);
  assert.deepEqual(cache.byIndex("owner-uid", "u-1").length, 3);
  assert.deepEqual(cache.byIndex("label", "app=x").map((o) => o.metadata.name), ["a", "c"]);
  assert.deepEqual(cache.list({ labelSelector: { app: "x" } }).map((o) => o.metadata.name), ["a", "c"]);
  assert.deepEqual(cache.list({ namespace: "ns", labelSelector: "app in (x,z),tier!=db" }).map((o) => o.metadata.name), ["a"]);
  assert.deepEqual(cache.byIndex("byData", "k").map((o) => o.metadata.name), ["a", "c"]);
  cache.upsert(child("a", "ns", { app: "y" }, { j: "1" }));
  assert.deepEqual(cache.byIndex("label", "app=x").map((o) => o.metadata.name), ["c"]);
  assert.deepEqual(cache.byIndex("byData", "j").map((o) => o.metadata.name), ["a", "b"]);
  cache.remove("other/c");
  assert.deepEqual(cache.byIndex("label", "app=x"), []);
  assert.throws(() => {
    (cache.get("ns/a")?.metadata as { name: string }).name = "changed";
  }, TypeError);
});

test("a cache update that keeps an object's index values leaves it filed once, and a remove then unfiles it everywhere", () => {
  // The "twice" index repeats its value on purpose: an index function's repeated values file the key once.
  const cache = new Cache({ indexers: { twice: (o) => [o.metadata.name ?? "", o.metadata.name ?? ""] } });
  const map = (labels: Record<string, string>, value: string): KubeObject => ({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "a", namespace: "ns", labels }, data: { value } });
  cache.upsert(map({ app: "x", tier: "web" }, "1"));
  cache.upsert(map({ app: "x", tier: "web" }, "2"));
  assert.deepEqual(cache.byIndex("label", "app=x").map((o) => (o["data"] as Record<string, string>)["value"]), ["2"]);
  assert.deepEqual(cache.byIndex("twice", "a").map((o) => (o["data"] as Record<string, string>)["value"]), ["2"]);
  cache.upsert(map({ app: "x" }, "3"));
  assert.deepEqual(cache.byIndex("label", "tier=web"), []);
  assert.deepEqual(cache.byIndex("label", "app=x").map((o) => (o["data"] as Record<string, string>)["value"]), ["3"]);
  cache.remove("ns/a");
  assert.deepEqual(cache.byIndex("label", "app=x"), []);
  assert.deepEqual(cache.byIndex("twice", "a"), []);
  assert.deepEqual(cache.byIndex("namespace", "ns"), []);
});
