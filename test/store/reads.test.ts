import { test } from "node:test";
import assert from "node:assert/strict";
import type { StoreEvent } from "../../src/store/types.ts";
import { assertFails, configMap, newStore, pod, ref } from "./helpers.ts";

const cms = { apiVersion: "v1", kind: "ConfigMap" };
const pods = { apiVersion: "v1", kind: "Pod" };

function names(list: { items: Array<{ metadata: { namespace?: string; name?: string } }> }): string[] {
  return list.items.map((o) => (o.metadata.namespace === undefined ? o.metadata.name! : `${o.metadata.namespace}/${o.metadata.name}`));
}

test("list returns items in etcd key order with the current revision as its resourceVersion", () => {
  const store = newStore();
  store.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: "b" } });
  store.create(configMap("z", { namespace: "b" }));
  store.create(configMap("y"));
  store.create(configMap("a", { namespace: "b" }));
  const list = store.list(cms);
  assert.deepEqual(names(list), ["b/a", "b/z", "default/y"]);
  assert.equal(list.metadata.resourceVersion, String(store.revision));
  assert.equal(list.kind, "ConfigMapList");
  assert.deepEqual(names(store.list({ ...cms, namespace: "b" })), ["b/a", "b/z"]);
});

const selectorCases: Array<{ selector: { labelSelector?: string; fieldSelector?: string }; expect: string[] }> = [
  { selector: { labelSelector: "app=web" }, expect: ["default/p1", "default/p2"] },
  { selector: { labelSelector: "app in (web,db),tier!=front" }, expect: ["default/p2", "default/p3"] },
  { selector: { labelSelector: "!tier" }, expect: ["default/p3"] },
  { selector: { fieldSelector: "spec.nodeName=n1" }, expect: ["default/p1", "default/p3"] },
  { selector: { fieldSelector: "status.phase=Pending,metadata.name!=p1" }, expect: ["default/p2", "default/p3"] },
  { selector: { labelSelector: "app=web", fieldSelector: "spec.nodeName=n1" }, expect: ["default/p1"] },
  { selector: { fieldSelector: "metadata.name=p2" }, expect: ["default/p2"] },
];

for (const c of selectorCases) {
  test(`list selects pods by ${JSON.stringify(c.selector)}`, () => {
    const store = newStore();
    store.create(pod("p1", { nodeName: "n1", labels: { app: "web", tier: "front" } }));
    store.create(pod("p2", { nodeName: "n2", labels: { app: "web", tier: "back" } }));
    store.create(pod("p3", { nodeName: "n1", labels: { app: "db" } }));
    assert.deepEqual(names(store.list({ ...pods, ...c.selector })), c.expect);
  });
}

test("list selects events by involvedObject fields", () => {
  const store = newStore();
  for (const [name, target] of [["e1", "a"], ["e2", "b"]] as const) {
    store.create({ apiVersion: "v1", kind: "Event", metadata: { name, namespace: "default" }, involvedObject: { kind: "Pod", name: target, namespace: "default" }, reason: "Started" });
  }
  assert.deepEqual(names(store.list({ apiVersion: "v1", kind: "Event", fieldSelector: "involvedObject.name=b,involvedObject.kind=Pod" })), ["default/e2"]);
});

test("an unsupported field label or a malformed selector fails with 400 BadRequest", () => {
  const store = newStore();
  assertFails(store, () => store.list({ ...cms, fieldSelector: "spec.nodeName=n1" }), 400, "BadRequest", /field label not supported: spec.nodeName/);
  assertFails(store, () => store.list({ ...cms, labelSelector: "a in (" }), 400, "BadRequest");
  assertFails(store, () => store.list({ apiVersion: "v1", kind: "Gizmo" }), 404, "NotFound");
});

test("limit and continue page through a list consistently at the first page's revision", () => {
  const store = newStore();
  for (const n of ["a", "b", "c", "d", "e"]) store.create(configMap(n));
  const first = store.list({ ...cms, limit: 2 });
  assert.deepEqual(names(first), ["default/a", "default/b"]);
  assert.ok(first.metadata.continue);
  // Writes between pages do not show up in later pages.
  store.delete({ ...cms, namespace: "default", name: "c" });
  store.create(configMap("bb"));
  const second = store.list({ ...cms, limit: 2, continue: first.metadata.continue });
  assert.deepEqual(names(second), ["default/c", "default/d"]);
  assert.equal(second.metadata.resourceVersion, first.metadata.resourceVersion);
  const third = store.list({ ...cms, limit: 2, continue: second.metadata.continue });
  assert.deepEqual(names(third), ["default/e"]);
  assert.equal(third.metadata.continue, undefined);
  assertFails(store, () => store.list({ ...cms, continue: "not a token" }), 400, "BadRequest");
});

test("a continue token from before the compaction point fails with 410 Expired", () => {
  const store = newStore({ historyRevisionsMax: 3 });
  for (const n of ["a", "b", "c"]) store.create(configMap(n));
  const first = store.list({ ...cms, limit: 1 });
  for (const n of ["d", "e", "f", "g"]) store.create(configMap(n));
  assertFails(store, () => store.list({ ...cms, limit: 1, continue: first.metadata.continue }), 410, "Expired", /continue parameter is too old/);
});

test("get and list at an older revision see the state of that revision", () => {
  const store = newStore();
  const a = store.create(configMap("a"));
  const r1 = store.revision;
  const a2 = store.update({ ...a, data: { key: "two" } });
  store.create(configMap("b"));
  const r2 = store.revision;
  store.delete(ref(a2));
  assert.deepEqual(store.get(ref(a), { revision: r1 }).data, { key: "value" });
  assert.deepEqual(store.get(ref(a), { revision: r2 }).data, { key: "two" });
  assertFails(store, () => store.get(ref(a)), 404, "NotFound");
  assert.deepEqual(names(store.list({ ...cms, revision: r1 })), ["default/a"]);
  assert.deepEqual(names(store.list({ ...cms, revision: r2 })), ["default/a", "default/b"]);
  assert.equal(store.list({ ...cms, revision: r1 }).metadata.resourceVersion, String(r1));
  assertFails(store, () => store.get(ref(a), { revision: store.revision + 1 }), 504, "Timeout", /Too large resource version/);
});

test("reads and watches from before the compaction point fail with 410 Expired", () => {
  const store = newStore({ historyRevisionsMax: 5 });
  const a = store.create(configMap("a"));
  for (let i = 0; i < 10; i++) store.update({ ...store.get(ref(a)), data: { i: String(i) } });
  assert.equal(store.compactedRevision, store.revision - 5);
  const old = store.compactedRevision - 1;
  assertFails(store, () => store.get(ref(a), { revision: old }), 410, "Expired", /too old resource version/);
  assertFails(store, () => store.list({ ...cms, revision: old }), 410, "Expired");
  assertFails(store, () => store.watch({ ...cms, fromRevision: old }, () => {}), 410, "Expired", /too old resource version/);
  assertFails(store, () => store.history(old), 410, "Expired");
  assert.deepEqual(store.get(ref(a), { revision: store.compactedRevision }).data, { i: "4" });
  assert.equal(store.history(store.compactedRevision).length, 5);
});

test("a deleted key leaves the store once its deletion is compacted away", () => {
  const store = newStore({ historyRevisionsMax: 2 });
  const a = store.create(configMap("a"));
  store.delete(ref(a));
  store.create(configMap("b"));
  store.create(configMap("c"));
  assert.equal(store.compactedRevision, Number(a.metadata.resourceVersion) + 1, "the deletion is compacted");
  assert.deepEqual(names(store.list({ ...cms, revision: store.compactedRevision })), []);
  assert.deepEqual(names(store.list({ ...cms, revision: store.compactedRevision + 1 })), ["default/b"]);
  assert.deepEqual(names(store.list(cms)), ["default/b", "default/c"]);
});

test("a watch replays the history after its revision, then delivers live events in order", () => {
  const store = newStore();
  const from = store.revision;
  const a = store.create(configMap("a"));
  store.update({ ...a, data: { k: "2" } });
  const events: StoreEvent[] = [];
  const watcher = store.watch({ ...cms, fromRevision: from }, (e) => events.push(e));
  assert.deepEqual(events.map((e) => [e.type, e.revision]), [["ADDED", from + 1], ["MODIFIED", from + 2]]);
  store.delete(ref(a));
  assert.deepEqual(events.map((e) => e.type), ["ADDED", "MODIFIED", "DELETED"]);
  watcher.close();
  store.create(configMap("b"));
  assert.equal(events.length, 3, "a closed watcher hears nothing");
});

test("a filtered watch turns objects leaving the selector into DELETED and entering into ADDED", () => {
  const store = newStore();
  const from = store.revision;
  const events: StoreEvent[] = [];
  store.watch({ ...cms, labelSelector: "app=web", fromRevision: from }, (e) => events.push(e));
  const a = store.create(configMap("a", { labels: { app: "db" } }));
  const b = store.update({ ...a, metadata: { ...a.metadata, labels: { app: "web" } } });
  const c = store.update({ ...b, data: { k: "x" } });
  const d = store.update({ ...c, metadata: { ...c.metadata, labels: { app: "db" } } });
  store.delete(ref(d));
  assert.deepEqual(events.map((e) => e.type), ["ADDED", "MODIFIED", "DELETED"]);
  const left = events[2]!;
  assert.equal(left.object.metadata.labels?.app, "web", "DELETED carries the last matching state");
  assert.equal(left.object.metadata.resourceVersion, d.metadata.resourceVersion);
  assert.equal(left.revision, Number(d.metadata.resourceVersion));
});

test("a namespaced watch sees only its namespace and a field-selected watch only its object", () => {
  const store = newStore();
  store.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: "other" } });
  const seenNs: string[] = [];
  const seenName: string[] = [];
  store.watch({ ...cms, namespace: "default", fromRevision: store.revision }, (e) => seenNs.push(e.object.metadata.name!));
  store.watch({ ...cms, fieldSelector: "metadata.name=b", fromRevision: store.revision }, (e) => seenName.push(`${e.object.metadata.namespace}/${e.object.metadata.name}`));
  store.create(configMap("a"));
  store.create(configMap("b"));
  store.create(configMap("b", { namespace: "other" }));
  assert.deepEqual(seenNs, ["a", "b"]);
  assert.deepEqual(seenName, ["default/b", "other/b"]);
});

test("a write made by a listener is delivered after the current event, so every watcher sees revisions in order", () => {
  const store = newStore();
  const first: number[] = [];
  const second: number[] = [];
  store.watch({ ...cms, fromRevision: store.revision }, (e) => {
    first.push(e.revision);
    if (e.object.metadata.name === "a") store.create(configMap("from-listener"));
  });
  store.watch({ ...cms, fromRevision: store.revision }, (e) => second.push(e.revision));
  store.create(configMap("a"));
  assert.deepEqual(first, [store.revision - 1, store.revision]);
  assert.deepEqual(second, first);
});

test("a thousand single-object watchers each hear only their own object", () => {
  const store = newStore();
  const heard = new Map<string, number>();
  for (let i = 0; i < 1000; i++) {
    store.watch({ ...cms, namespace: "default", fieldSelector: `metadata.name=cm-${i}`, fromRevision: store.revision }, (e) => {
      heard.set(e.object.metadata.name!, (heard.get(e.object.metadata.name!) ?? 0) + 1);
    });
  }
  for (let i = 0; i < 1000; i += 100) store.create(configMap(`cm-${i}`));
  assert.equal(heard.size, 10);
  assert.ok([...heard.values()].every((n) => n === 1));
});

test("lists by an equal label or field answer from the kind's index exactly as a scan of every object would", () => {
  const store = newStore();
  store.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: "other" } });
  // A fixed walk of creates, label and node changes and deletes, so the indexes are built mid-way and then kept.
  const alive = new Set<string>();
  const query = (options: { labelSelector?: string; fieldSelector?: string; namespace?: string; revision?: number }) => names(store.list({ ...pods, ...options }));
  const scan = (match: (p: { labels: Record<string, string>; node: string | undefined }) => boolean, namespace?: string, revision?: number) =>
    names({
      items: store.list({ ...pods, ...(revision === undefined ? {} : { revision }) }).items.filter(
        (o) => (namespace === undefined || o.metadata.namespace === namespace) && match({ labels: o.metadata.labels ?? {}, node: (o.spec as { nodeName?: string }).nodeName }),
      ),
    });
  let oldRevision = 0;
  for (let i = 0; i < 60; i++) {
    const name = `p${(i * 7) % 23}`;
    const namespace = i % 3 === 0 ? "other" : "default";
    const key = `${namespace}/${name}`;
    const labels = { app: i % 2 === 0 ? "web" : "db", slot: String(i % 4 === 0) };
    if (!alive.has(key)) {
      store.create(pod(name, { namespace, labels, ...(i % 7 === 3 ? {} : { nodeName: `n${i % 5}` }) }));
      alive.add(key);
    } else if (i % 5 === 0) {
      store.delete({ ...pods, namespace, name });
      alive.delete(key);
    } else {
      const current = store.get({ ...pods, namespace, name });
      store.update({ ...current, metadata: { ...current.metadata, labels } });
    }
    if (i === 30) oldRevision = store.revision;
    if (i % 10 !== 9) continue;
    assert.deepEqual(query({ labelSelector: "app=web" }), scan((p) => p.labels.app === "web"));
    assert.deepEqual(query({ labelSelector: "app=db,slot=true" }), scan((p) => p.labels.app === "db" && p.labels.slot === "true"));
    assert.deepEqual(query({ labelSelector: "slot in (true)", namespace: "other" }), scan((p) => p.labels.slot === "true", "other"));
    assert.deepEqual(query({ fieldSelector: "spec.nodeName=n2" }), scan((p) => p.node === "n2"));
    assert.deepEqual(query({ fieldSelector: "spec.nodeName=" }), scan((p) => (p.node ?? "") === ""));
    assert.deepEqual(query({ fieldSelector: "spec.nodeName=n3", labelSelector: "app!=web" }), scan((p) => p.node === "n3" && p.labels.app !== "web"));
  }
  assert.ok(query({ labelSelector: "app=web" }).length > 0, "the walk leaves web pods to find");
  // A read at an older revision cannot use the indexes of the latest state: it scans that revision's objects.
  assert.deepEqual(query({ labelSelector: "app=web", revision: oldRevision }), scan((p) => p.labels.app === "web", undefined, oldRevision));
  assert.notDeepEqual(query({ labelSelector: "app=web", revision: oldRevision }), query({ labelSelector: "app=web" }));
});

test("a watch replays from its kind's own history and a one-object watch from the object's versions, across compaction", () => {
  const store = newStore({ historyRevisionsMax: 40 });
  const events = (options: { namespace?: string; fieldSelector?: string; kind?: string }, from: number) => {
    const seen: string[] = [];
    const watcher = store.watch({ apiVersion: "v1", kind: options.kind ?? "ConfigMap", ...options, fromRevision: from }, (e) => seen.push(`${e.type} ${e.object.metadata.name}@${e.revision}`));
    watcher.close();
    return seen;
  };
  // Interleaved writes of two kinds and of objects that are deleted and made again.
  for (let i = 0; i < 120; i++) {
    const name = `c${i % 4}`;
    const exists = store.list({ ...cms, fieldSelector: `metadata.name=${name}` }).items.length > 0;
    if (exists && i % 9 === 8) store.delete({ ...cms, namespace: "default", name });
    else if (!exists) store.create(configMap(name, { data: { i: String(i) } }));
    else {
      const current = store.get({ ...cms, namespace: "default", name });
      store.update({ ...current, data: { i: String(i) } });
    }
    if (i % 3 === 0) store.create({ apiVersion: "v1", kind: "Secret", metadata: { namespace: "default", name: `s${i}` } });
  }
  const from = store.compactedRevision + 3;
  const all = events({}, from);
  assert.ok(all.length > 10, "the window holds ConfigMap writes");
  assert.ok(all.every((e) => e.includes(" c")), "a ConfigMap watch replays no Secret");
  for (const name of ["c0", "c1", "c3"]) {
    const mine = all.filter((e) => e.includes(` ${name}@`));
    assert.deepEqual(events({ namespace: "default", fieldSelector: `metadata.name=${name}` }, from), mine);
    assert.deepEqual(events({ fieldSelector: `metadata.name=${name}` }, from), mine);
  }
  assert.deepEqual(events({ kind: "Secret" }, from).length, store.list({ apiVersion: "v1", kind: "Secret" }).items.filter((s) => Number(s.metadata.resourceVersion) > from).length);
});

test("watchers indexed by a selected label value are called exactly as an unindexed scan of every watcher would call them", () => {
  // The same watchers and writes twice: selectors the index can use (`app=web`) and equivalent ones it cannot
  // (`app in (web,none)`). Every call, its order across watchers and its event type must be the same.
  const run = (indexable: boolean): string[] => {
    const store = newStore();
    const log: string[] = [];
    const selectors = ["", "app=web", "app=db", "", "app=web", "tier=back"];
    selectors.forEach((selector, i) => {
      const labelSelector = selector === "" || indexable ? selector : `${selector.replace("=", " in (")},none)`;
      store.watch({ ...cms, ...(labelSelector === "" ? {} : { labelSelector }), fromRevision: store.revision }, (e) => log.push(`w${i} ${e.type} ${e.object.metadata.name}`));
    });
    for (let i = 0; i < 12; i++) {
      const name = `c${i % 3}`;
      const labels = { app: i % 2 === 0 ? "web" : "db", ...(i % 4 === 1 ? { tier: "back" } : {}) };
      const current = store.list({ ...cms, fieldSelector: `metadata.name=${name}` }).items[0];
      if (current === undefined) store.create(configMap(name, { labels }));
      else if (i % 5 === 4) store.delete({ ...cms, namespace: "default", name });
      else store.update({ ...current, metadata: { ...current.metadata, labels } });
    }
    return log;
  };
  const indexed = run(true);
  assert.ok(indexed.some((line) => line.startsWith("w1 DELETED")), "a label change turned into DELETED for the watcher it left");
  assert.ok(indexed.some((line) => line.startsWith("w2 ADDED")), "and into ADDED for the one it joined");
  assert.deepEqual(indexed, run(false));
});
