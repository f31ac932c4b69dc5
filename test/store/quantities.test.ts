// The store keeps a built-in kind's quantities as kube-apiserver does: in canonical form, so a controller that
// writes `0.5` reads back `500m` (the perpetual diff of a real cluster), and a value that is not a quantity is a 400.
// Custom resources keep their strings as sent.
import { test } from "node:test";
import assert from "node:assert/strict";
import type { KubeObject } from "../../src/api/object.ts";
import { assertFails, newStore, widgetCrd } from "./helpers.ts";

function podWith(resources: Record<string, unknown>): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: "p", namespace: "default" },
    spec: { containers: [{ name: "main", image: "busybox", resources }] },
  };
}

function resourcesOf(object: KubeObject): unknown {
  return (object.spec as { containers: Array<{ resources: unknown }> }).containers[0]!.resources;
}

test("a Pod's requests are stored in canonical form, and reads return that form", () => {
  const store = newStore({ namespaces: ["default"] });
  const created = store.create(podWith({ requests: { cpu: "0.5", memory: "1.5Gi" }, limits: { cpu: 1, memory: "2048Mi" } }));
  const expected = { requests: { cpu: "500m", memory: "1536Mi" }, limits: { cpu: "1", memory: "2Gi" } };
  assert.deepEqual(resourcesOf(created), expected);
  assert.deepEqual(resourcesOf(store.get({ apiVersion: "v1", kind: "Pod", namespace: "default", name: "p" })), expected);
});

test("an update that writes a quantity equal to the stored one in another form is a no-op", () => {
  const store = newStore({ namespaces: ["default"] });
  const created = store.create(podWith({ limits: { cpu: "1" } }));
  const revision = store.revision;
  const updated = store.update(podWith({ limits: { cpu: "1000m" } }));
  assert.equal(store.revision, revision, "no new revision");
  assert.equal(updated.metadata.resourceVersion, created.metadata.resourceVersion);
  assert.deepEqual(resourcesOf(updated), { limits: { cpu: "1" } });
  // A different value is a real change, which a Pod's immutable spec refuses: 1000m was judged equal, not ignored.
  assertFails(store, () => store.update(podWith({ limits: { cpu: "1001m" } })), 422, "Invalid", /pod updates may not change fields/);
});

test("a merge patch is canonicalized like an update, and a status write like any other", () => {
  const store = newStore({ namespaces: ["default"] });
  store.create({ apiVersion: "v1", kind: "Node", metadata: { name: "n1" }, status: { capacity: { cpu: "4", memory: "8Gi" } } });
  const revision = store.revision;
  const ref = { apiVersion: "v1", kind: "Node", name: "n1" };
  store.patchStatus({ ...ref, patchType: "merge", patch: { status: { capacity: { memory: "8192Mi" } } } });
  assert.equal(store.revision, revision, "8192Mi is the stored 8Gi");
  const patched = store.patchStatus({ ...ref, patchType: "merge", patch: { status: { allocatable: { cpu: "3.5", pods: "110" } } } });
  assert.deepEqual((patched.status as { allocatable: unknown }).allocatable, { cpu: "3500m", pods: "110" });
});

test("a custom resource keeps its strings as sent, as on a real server", () => {
  const store = newStore({ namespaces: ["default"] });
  const schema = { type: "object", properties: { spec: { type: "object", "x-kubernetes-preserve-unknown-fields": true } } };
  store.create(widgetCrd({ versions: [{ name: "v1", served: true, storage: true, schema: { openAPIV3Schema: schema } }] }));
  const widget = store.create({
    apiVersion: "example.com/v1",
    kind: "Widget",
    metadata: { name: "w", namespace: "default" },
    spec: { resources: { requests: { cpu: "0.5" } } },
  });
  assert.deepEqual(widget.spec, { resources: { requests: { cpu: "0.5" } } });
});

test("a value that is not a quantity is a 400 naming the kind, on create and on update, and changes nothing", () => {
  const store = newStore({ namespaces: ["default"] });
  const expression = /^Pod in version "v1" cannot be handled as a Pod: quantities must match the regular expression '\^\(\[\+-\]\?\[0-9\.\]\+\)\(\[eEinumkKMGTP\]\*\[-\+\]\?\[0-9\]\*\)\$'$/;
  assertFails(store, () => store.create(podWith({ limits: { cpu: "abc" } })), 400, "BadRequest", expression);
  store.create(podWith({ limits: { cpu: "1" } }));
  assertFails(store, () => store.update(podWith({ limits: { cpu: "abc" } })), 400, "BadRequest", expression);
  // A bad suffix gets the real parser's message for that cause.
  assertFails(store, () => store.update(podWith({ limits: { memory: "32MMi" } })), 400, "BadRequest", /cannot be handled as a Pod: unable to parse quantity's suffix$/);
});

test("kinds of other groups are canonicalized by their own wire message", () => {
  const store = newStore({ namespaces: ["default"] });
  const deployment = store.create({
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: "web", namespace: "default" },
    spec: {
      selector: { matchLabels: { app: "web" } },
      template: { metadata: { labels: { app: "web" } }, spec: { containers: [{ name: "main", image: "nginx", resources: { requests: { memory: "1000" } } }] } },
    },
  });
  const template = (deployment.spec as { template: KubeObject }).template;
  assert.deepEqual(resourcesOf(template), { requests: { memory: "1k" } });
});
