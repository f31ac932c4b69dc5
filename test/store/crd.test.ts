import { test } from "node:test";
import assert from "node:assert/strict";
import type { KubeObject } from "../../src/api/object.ts";
import type { StoreEvent } from "../../src/store/types.ts";
import { isApiError, type ApiError } from "../../src/api/errors.ts";
import { assertFails, drainGarbage, newStore, widget, widgetCrd } from "./helpers.ts";

const widgets = { apiVersion: "example.com/v1", kind: "Widget" };
const crdRef = { apiVersion: "apiextensions.k8s.io/v1", kind: "CustomResourceDefinition", name: "widgets.example.com" };

test("the built-in kinds are served with their group, version, plural, scope and status subresource", () => {
  const store = newStore();
  const table = Object.fromEntries(store.resources().map((r) => [r.kind, `${r.group}/${r.version} ${r.plural} ${r.namespaced ? "ns" : "cluster"}${r.statusSubresource ? " status" : ""}`]));
  assert.equal(table.Namespace, "/v1 namespaces cluster status");
  assert.equal(table.ConfigMap, "/v1 configmaps ns");
  assert.equal(table.Pod, "/v1 pods ns status");
  assert.equal(table.Node, "/v1 nodes cluster status");
  assert.equal(table.Lease, "coordination.k8s.io/v1 leases ns");
  assert.equal(table.Deployment, "apps/v1 deployments ns status");
  assert.equal(table.Job, "batch/v1 jobs ns status");
  assert.equal(table.CronJob, "batch/v1 cronjobs ns status");
  assert.equal(table.PodDisruptionBudget, "policy/v1 poddisruptionbudgets ns status");
  assert.equal(table.CustomResourceDefinition, "apiextensions.k8s.io/v1 customresourcedefinitions cluster status");
  assert.equal(store.resourceForPlural("apps", "v1", "daemonsets")?.kind, "DaemonSet");
  assert.equal(store.resourceForPlural("apps", "v1", "nothings"), undefined);
  assert.throws(() => store.resourceFor({ apiVersion: "v1", kind: "Gizmo" }), { code: 404, reason: "NotFound" });
});

test("creating a CRD registers its kind and marks it Established with its accepted names", () => {
  const store = newStore();
  assert.throws(() => store.resourceFor(widgets), { code: 404 });
  const crd = store.create(widgetCrd());
  const status = crd.status as { conditions: Array<{ type: string; status: string }>; acceptedNames: Record<string, unknown>; storedVersions: string[] };
  assert.deepEqual(status.conditions.map((c) => `${c.type}=${c.status}`), ["NamesAccepted=True", "Established=True"]);
  assert.deepEqual(status.acceptedNames, { plural: "widgets", singular: "widget", kind: "Widget", listKind: "WidgetList", shortNames: ["wd"] });
  assert.deepEqual(status.storedVersions, ["v1"]);
  const resource = store.resourceFor(widgets);
  assert.equal(resource.plural, "widgets");
  assert.equal(resource.namespaced, true);
  assert.equal(resource.statusSubresource, true);
  assert.equal(store.resourceForPlural("example.com", "v1", "widgets")?.kind, "Widget");
  const w = store.create(widget("w1"));
  assert.equal(w.metadata.generation, 1);
  assert.deepEqual(store.list(widgets).items.map((o) => o.metadata.name), ["w1"]);
});

test("custom resources are validated against openAPIV3Schema: 422 with field paths as causes", () => {
  const store = newStore();
  store.create(widgetCrd());
  assertFails(store, () => store.create(widget("w", { size: "big" })), 422, "Invalid", /spec.size in body must be of type integer/);
  assertFails(store, () => store.create(widget("w", {})), 422, "Invalid", /spec.size: Required value/);
  assert.throws(
    () => store.create(widget("w", { size: 1, color: "green" })),
    (error: ApiError) => {
      assert.ok(isApiError(error), `expected an ApiError, got ${String(error)}`);
      assert.equal(error.status.code, 422, error.message);
      assert.equal(error.status.reason, "Invalid", error.message);
      assert.deepEqual(error.status.details?.causes?.map((c) => [c.field, c.reason]), [["spec.color", "FieldValueNotSupported"]]);
      return true;
    },
  );
});

test("fields a schema does not declare are pruned", () => {
  const store = newStore();
  store.create(widgetCrd());
  const w = store.create({ ...widget("w", { size: 1, extra: true }), surplus: 1 });
  assert.deepEqual(w.spec, { size: 1 });
  assert.equal((w as Record<string, unknown>).surplus, undefined);
});

test("a CRD's status subresource applies to its custom resources", () => {
  const store = newStore();
  store.create(widgetCrd());
  const w = store.create({ ...widget("w"), status: { ready: true } });
  assert.equal(w.status, undefined);
  const s = store.updateStatus({ ...w, spec: { size: 5 }, status: { ready: true } });
  assert.deepEqual(s.status, { ready: true });
  assert.deepEqual(s.spec, { size: 1 });
  assert.equal(s.metadata.generation, 1);
  assert.equal(store.update({ ...s, spec: { size: 2 } }).metadata.generation, 2);
});

const badCrds: Array<{ name: string; change: (crd: KubeObject) => KubeObject; field: string }> = [
  { name: "a name that is not plural.group", change: (c) => ({ ...c, metadata: { name: "gadgets.example.com" } }), field: "metadata.name" },
  { name: "a group without a dot", change: (c) => ({ ...c, metadata: { name: "widgets.example" }, spec: { ...(c.spec as object), group: "example" } }), field: "spec.group" },
  { name: "an unknown scope", change: (c) => ({ ...c, spec: { ...(c.spec as object), scope: "Galaxy" } }), field: "spec.scope" },
  { name: "no storage version", change: (c) => ({ ...c, spec: { ...(c.spec as object), versions: [{ name: "v1", served: true, storage: false, schema: { openAPIV3Schema: { type: "object" } } }] } }), field: "spec.versions" },
  { name: "a version without a schema", change: (c) => ({ ...c, spec: { ...(c.spec as object), versions: [{ name: "v1", served: true, storage: true }] } }), field: "spec.versions[0].schema.openAPIV3Schema" },
  { name: "no kind", change: (c) => ({ ...c, spec: { ...(c.spec as object), names: { plural: "widgets" } } }), field: "spec.names.kind" },
];

for (const c of badCrds) {
  test(`a CRD with ${c.name} is refused with 422 on ${c.field}`, () => {
    const store = newStore();
    assert.throws(
      () => store.create(c.change(widgetCrd())),
      (error: ApiError) => {
        assert.ok(isApiError(error), `expected an ApiError, got ${String(error)}`);
        assert.equal(error.status.code, 422, error.message);
        assert.equal(error.status.reason, "Invalid", error.message);
        assert.ok(error.status.details?.causes?.some((cause) => cause.field === c.field), JSON.stringify(error.status.details?.causes));
        return true;
      },
    );
    assertFails(store, () => store.create(c.change(widgetCrd())), 422, "Invalid");
    assert.throws(() => store.resourceFor(widgets), { code: 404 });
  });
}

test("a cluster-scoped custom kind needs no namespace", () => {
  const store = newStore();
  store.create(widgetCrd({ scope: "Cluster" }));
  const w = store.create({ ...widget("w"), metadata: { name: "w", namespace: "ignored" } });
  assert.equal(w.metadata.namespace, undefined);
});

test("a CRD with two versions serves objects in the version asked for", () => {
  const store = newStore();
  const schema = { openAPIV3Schema: { type: "object", properties: { spec: { type: "object", "x-kubernetes-preserve-unknown-fields": true } } } };
  store.create(widgetCrd({ versions: [
    { name: "v1", served: true, storage: true, schema },
    { name: "v1beta1", served: true, storage: false, schema },
  ] }));
  const created = store.create({ ...widget("w"), apiVersion: "example.com/v1beta1" });
  assert.equal(created.apiVersion, "example.com/v1beta1");
  assert.equal(store.get({ apiVersion: "example.com/v1", kind: "Widget", namespace: "default", name: "w" }).apiVersion, "example.com/v1");
  const seen: StoreEvent[] = [];
  store.watch({ apiVersion: "example.com/v1beta1", kind: "Widget", fromRevision: 0 }, (e) => seen.push(e));
  assert.equal(seen[0]!.object.apiVersion, "example.com/v1beta1");
});

test("deleting a CRD deletes its custom resources through collector steps, then unregisters the kind", () => {
  const store = newStore();
  store.create(widgetCrd());
  store.create(widget("a"));
  store.create(widget("b"));
  const events: StoreEvent[] = [];
  store.watch({ ...widgets, fromRevision: store.revision }, (e) => events.push(e));
  const terminating = store.delete(crdRef);
  assert.ok(terminating.metadata.deletionTimestamp);
  assert.ok((terminating.status as { conditions: Array<{ type: string }> }).conditions.some((c) => c.type === "Terminating"));
  assertFails(store, () => store.create(widget("c")), 405, "MethodNotAllowed", /terminating/);
  const steps = drainGarbage(store);
  assert.equal(steps.length, 3);
  assert.deepEqual(events.map((e) => `${e.type} ${e.object.metadata.name}`), ["DELETED a", "DELETED b"]);
  assert.throws(() => store.get(crdRef), { code: 404 });
  assert.throws(() => store.resourceFor(widgets), { code: 404 });
  store.create(widgetCrd());
  assert.deepEqual(store.list(widgets).items, [], "a recreated CRD starts empty");
});

test("exclusiveMinimum/exclusiveMaximum are OpenAPI 3.0 booleans on minimum/maximum, as CRDs write them", () => {
  const store = newStore();
  const schema = {
    type: "object",
    properties: {
      spec: {
        type: "object",
        properties: {
          size: { type: "integer", minimum: 0, exclusiveMinimum: true, maximum: 10, exclusiveMaximum: true },
          ratio: { type: "number", minimum: 0, exclusiveMinimum: false },
          items: { type: "array", items: { type: "integer", maximum: 3, exclusiveMaximum: true } },
        },
        required: ["size"],
      },
    },
  };
  store.create({ ...widgetCrd(), spec: { ...(widgetCrd().spec as object), versions: [{ name: "v1", served: true, storage: true, schema: { openAPIV3Schema: schema } }] } });
  store.create(widget("w1", { size: 1, ratio: 0, items: [2] }));
  store.create(widget("w9", { size: 9 }));
  assertFails(store, () => store.create(widget("w0", { size: 0 })), 422, "Invalid", /spec.size/);
  assertFails(store, () => store.create(widget("w10", { size: 10 })), 422, "Invalid", /spec.size/);
  assertFails(store, () => store.create(widget("wi", { size: 1, items: [3] })), 422, "Invalid", /spec.items\[0\]/);
});
