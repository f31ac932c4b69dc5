// A merge patch of the status subresource that leaves the status as stored takes a short way to the write
// pipeline's no-op answer. These tests hold it to that answer, and show that every request the pipeline could
// refuse, or that admission must see, still goes the whole way.
import { test } from "node:test";
import assert from "node:assert/strict";
import { isApiError } from "../../src/api/errors.ts";
import type { KubeObject } from "../../src/api/object.ts";
import type { AdmissionRequest } from "../../src/store/types.ts";
import { deployment, newStore, widgetCrd as sharedWidgetCrd } from "./helpers.ts";

const ref = { apiVersion: "apps/v1", kind: "Deployment", namespace: "default", name: "web" };

/** The shared Widget CRD with a typed status, and `statusRules` as its CEL rules when given. */
function widgetCrd(statusRules?: unknown[]): KubeObject {
  const status: Record<string, unknown> = { type: "object", properties: { count: { type: "integer" } } };
  if (statusRules !== undefined) status["x-kubernetes-validations"] = statusRules;
  const schema = { type: "object", properties: { spec: { type: "object" }, status } };
  return sharedWidgetCrd({ versions: [{ name: "v1", served: true, storage: true, subresources: { status: {} }, schema: { openAPIV3Schema: schema } }] });
}

const widget = { apiVersion: "example.com/v1", kind: "Widget", namespace: "default", name: "w" };

test("a status patch that changes nothing answers the stored object and writes nothing", () => {
  const store = newStore({ namespaces: ["default"] });
  store.create(deployment("web"));
  const written = store.patchStatus({ ...ref, patchType: "merge", patch: { status: { readyReplicas: 1, replicas: 1 } } });
  const revision = store.revision;
  const again = store.patchStatus({ ...ref, patchType: "merge", patch: { status: { readyReplicas: 1 } } });
  assert.equal(store.revision, revision, "no new revision");
  assert.equal(again, written, "the stored object itself, as the pipeline's no-op answer gives it");
  const changed = store.patchStatus({ ...ref, patchType: "merge", patch: { status: { readyReplicas: 2 } } });
  assert.equal(store.revision, revision + 1, "a changed status is written");
  assert.equal((changed.status as { readyReplicas: number }).readyReplicas, 2);
});

test("a no-op status patch with a stale resourceVersion is still a conflict", () => {
  const store = newStore({ namespaces: ["default"] });
  const created = store.create(deployment("web"));
  store.patchStatus({ ...ref, patchType: "merge", patch: { status: { replicas: 1 } } });
  const stale = created.metadata.resourceVersion;
  assert.throws(
    () => store.patchStatus({ ...ref, patchType: "merge", patch: { metadata: { resourceVersion: stale }, status: { replicas: 1 } } }),
    (error: unknown) => isApiError(error) && error.code === 409,
  );
});

test("a status patch of a kind without a status subresource is still not found", () => {
  const store = newStore({ namespaces: ["default"] });
  store.create({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "c", namespace: "default" } });
  assert.throws(
    // `status: null` leaves the (absent) status as it is: only the missing subresource can refuse it.
    () => store.patchStatus({ apiVersion: "v1", kind: "ConfigMap", namespace: "default", name: "c", patchType: "merge", patch: { status: null } }),
    (error: unknown) => isApiError(error) && error.code === 404,
  );
});

test("admission sees a no-op status patch, and may deny it", () => {
  const seen: AdmissionRequest[] = [];
  const store = newStore({ namespaces: ["default"], admission: [{ name: "watch", validate: (request) => void seen.push(request) }] });
  store.create(deployment("web"));
  store.patchStatus({ ...ref, patchType: "merge", patch: { status: { replicas: 1 } } });
  const before = seen.length;
  store.patchStatus({ ...ref, patchType: "merge", patch: { status: { replicas: 1 } } });
  assert.equal(seen.length, before + 1, "the no-op went through validating admission");
  assert.equal(seen.at(-1)?.subresource, "status");
});

test("a custom kind's transition rule still judges an unchanged status", () => {
  const store = newStore({ namespaces: ["default"] });
  // A rule an unchanged value breaks: the API server checks transition rules even on values the update kept.
  store.create(widgetCrd([{ rule: "!has(oldSelf.count) || self.count != oldSelf.count", message: "count must move" }]));
  store.create({ apiVersion: "example.com/v1", kind: "Widget", metadata: { name: "w", namespace: "default" }, spec: {} });
  store.patchStatus({ ...widget, patchType: "merge", patch: { status: { count: 1 } } });
  assert.throws(
    () => store.patchStatus({ ...widget, patchType: "merge", patch: { status: { count: 1 } } }),
    (error: unknown) => isApiError(error) && error.code === 422 && /count must move/.test(error.message),
  );
});

test("a custom kind without rules takes the no-op answer like a built-in one", () => {
  const store = newStore({ namespaces: ["default"] });
  store.create(widgetCrd());
  store.create({ apiVersion: "example.com/v1", kind: "Widget", metadata: { name: "w", namespace: "default" }, spec: {} });
  const written = store.patchStatus({ ...widget, patchType: "merge", patch: { status: { count: 3 } } });
  const revision = store.revision;
  assert.equal(store.patchStatus({ ...widget, patchType: "merge", patch: { status: { count: 3 } } }), written);
  assert.equal(store.revision, revision);
});
