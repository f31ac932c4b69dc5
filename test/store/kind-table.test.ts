// The kind table as a store shows it, now that a store makes its state of a built-in kind on first use: discovery,
// REST paths, the order kinds are walked in and the isolation of stores must read as if every kind existed from the
// start. Also the key order of lists served from an equality index, which is kept up to date instead of re-sorted.
import { test } from "node:test";
import assert from "node:assert/strict";
import type { KubeObject } from "../../src/api/object.ts";
import { builtinKinds } from "../../src/store/index.ts";
import type { StoreEvent } from "../../src/store/types.ts";
import { configMap, deployment, drainGarbage, newStore, pod, widget, widgetCrd } from "./helpers.ts";

const cms = { apiVersion: "v1", kind: "ConfigMap" };
const widgets = { apiVersion: "example.com/v1", kind: "Widget" };
const crdRef = { apiVersion: "apiextensions.k8s.io/v1", kind: "CustomResourceDefinition", name: "widgets.example.com" };

function kindsOf(resources: ReadonlyArray<{ group: string; version: string; kind: string }>): string[] {
  return resources.map((r) => `${r.group}/${r.version}/${r.kind}`);
}

const builtinOrder = kindsOf(builtinKinds.map((b) => b.resource));

test("a fresh store serves every built-in kind, in table order, each by its REST path", () => {
  const store = newStore();
  assert.equal(builtinOrder.length, builtinKinds.length);
  assert.deepEqual(kindsOf(store.resources()), builtinOrder);
  for (const { resource } of builtinKinds) {
    assert.equal(store.resourceForPlural(resource.group, resource.version, resource.plural), resource, resource.plural);
    const apiVersion = resource.group === "" ? resource.version : `${resource.group}/${resource.version}`;
    assert.equal(store.resourceFor({ apiVersion, kind: resource.kind }), resource);
  }
  assert.equal(store.resourceForPlural("", "v1", "widgets"), undefined);
});

test("using kinds out of table order and registering a CRD keep discovery in table order, custom kinds last", () => {
  const store = newStore();
  store.create(deployment("d"));
  store.list({ apiVersion: "v1", kind: "Pod" });
  store.create(configMap("c"));
  store.create(widgetCrd());
  assert.deepEqual(kindsOf(store.resources()), [...builtinOrder, "example.com/v1/Widget"]);
  assert.equal(store.resourceForPlural("example.com", "v1", "widgets")?.kind, "Widget");
  store.delete(crdRef);
  drainGarbage(store);
  assert.deepEqual(kindsOf(store.resources()), builtinOrder, "a deleted CRD's kind leaves discovery");
  assert.equal(store.resourceForPlural("example.com", "v1", "widgets"), undefined);
  store.create(widgetCrd());
  assert.deepEqual(kindsOf(store.resources()).slice(-1), ["example.com/v1/Widget"]);
  assert.deepEqual(store.list(widgets).items, []);
});

test("a terminating namespace's content is deleted in kind table order, whatever order the kinds were first used in", () => {
  const store = newStore();
  store.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: "team" } });
  const inTeam = (object: KubeObject): KubeObject => ({ ...object, metadata: { ...object.metadata, namespace: "team" } });
  store.create(inTeam(deployment("d")));
  store.create(inTeam(pod("p")));
  store.create(inTeam(configMap("c")));
  store.delete({ apiVersion: "v1", kind: "Namespace", name: "team" });
  const deletions = drainGarbage(store).filter((step) => step.includes("(namespace terminating)"));
  // ConfigMap, Pod and Deployment come in this order in the table: the namespace controller walks the table.
  assert.equal(deletions.length, 3, deletions.join("\n"));
  assert.match(deletions[0]!, /delete ConfigMap team\/c /);
  assert.match(deletions[1]!, /delete Pod team\/p /);
  assert.match(deletions[2]!, /delete Deployment team\/d /);
});

test("stores made one after another share no objects, revisions, indexes or watchers", () => {
  const first = newStore();
  const seen: StoreEvent[] = [];
  first.watch({ ...cms, fromRevision: first.revision }, (event) => seen.push(event));
  first.create(configMap("a", { labels: { app: "x" } }));
  assert.equal(first.list({ ...cms, labelSelector: "app=x" }).items.length, 1);
  const second = newStore();
  assert.equal(second.revision, 4, "a new store starts after its four namespaces");
  assert.deepEqual(second.list(cms).items, []);
  assert.deepEqual(second.list({ ...cms, labelSelector: "app=x" }).items, []);
  second.create(configMap("b", { labels: { app: "x" } }));
  assert.deepEqual(seen.map((e) => e.object.metadata.name), ["a"], "a watcher of one store hears nothing of another");
  assert.deepEqual(first.list({ ...cms, labelSelector: "app=x" }).items.map((o) => o.metadata.name), ["a"]);
});

test("lists served from an equality index stay in key order as objects join, leave and change labels", () => {
  // A short history, so compaction also removes deleted keys from the kind's key order.
  const store = newStore({ historyRevisionsMax: 16 });
  const names = (list: { items: KubeObject[] }): string[] => list.items.map((o) => `${o.metadata.namespace}/${o.metadata.name}`);
  const expected = (): string[] => names(store.list(cms)).filter((key) => store.get({ ...cms, namespace: key.split("/")[0], name: key.split("/")[1]! }).metadata.labels?.app === "x");
  store.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: "a-team" } });
  let value = 7;
  for (let i = 0; i < 120; i++) {
    // A fixed pseudo-random walk: creates, deletes and relabels across two namespaces, listing after each write.
    value = (value * 31 + 11) % 97;
    const name = `cm-${value % 23}`;
    const namespace = value % 2 === 0 ? "default" : "a-team";
    const ref = { ...cms, namespace, name };
    const exists = store.list({ ...cms, namespace, fieldSelector: `metadata.name=${name}` }).items.length > 0;
    const app = value % 3 === 0 ? "y" : "x";
    if (!exists) store.create(configMap(name, { namespace, labels: { app } }));
    else if (value % 5 === 0) store.delete(ref);
    else store.patch({ ...ref, patch: { metadata: { labels: { app } } }, patchType: "merge" });
    const selected = names(store.list({ ...cms, labelSelector: "app=x" }));
    assert.deepEqual(selected, expected(), `after write ${i}`);
    assert.deepEqual(selected, [...selected].sort(), `after write ${i}: key order`);
    assert.deepEqual(names(store.list({ ...cms, namespace: "a-team", labelSelector: "app=x" })), selected.filter((key) => key.startsWith("a-team/")));
  }
  assert.ok(store.compactedRevision > 0, "the walk compacted history");
  const all = names(store.list(cms));
  assert.deepEqual(all, [...all].sort(), "the kind's key order survives compaction");
  assert.ok(all.length > 5 && all.length < 46, `the walk left a mix of objects (${all.length})`);
});

test("a deleted widget's kind and a built-in kind of the same store stay apart", () => {
  const store = newStore();
  store.create(widgetCrd());
  store.create(widget("w"));
  store.create(configMap("w"));
  assert.deepEqual(store.list(widgets).items.map((o) => o.kind), ["Widget"]);
  assert.deepEqual(store.list(cms).items.map((o) => o.kind), ["ConfigMap"]);
});
