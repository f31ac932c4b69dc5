// The write preconditions as pure functions (src/store/preconditions.ts): which uid and resourceVersion values
// are preconditions at all, which are malformed, and the exact Status of each refusal.
import { test } from "node:test";
import assert from "node:assert/strict";
import { ApiError } from "../../src/api/errors.ts";
import type { KubeObject } from "../../src/api/object.ts";
import { checkDeletePreconditions, checkUpdatePreconditions } from "../../src/store/preconditions.ts";
import { configMap, deployment, newStore } from "./helpers.ts";

const store = newStore();
const configMaps = store.resourceFor({ apiVersion: "v1", kind: "ConfigMap" });
const deployments = store.resourceFor({ apiVersion: "apps/v1", kind: "Deployment" });
const current: KubeObject = { ...configMap("a"), metadata: { name: "a", namespace: "default", uid: "uid-1", resourceVersion: "12" } };

function withMeta(meta: Record<string, unknown>): KubeObject {
  return { ...configMap("a"), metadata: { name: "a", namespace: "default", ...meta } };
}

/** The Status `run` throws, which must be an ApiError. */
function statusOf(run: () => void): ApiError["status"] {
  try {
    run();
  } catch (error) {
    assert.ok(error instanceof ApiError, `expected an ApiError, got ${String(error)}`);
    return error.status;
  }
  assert.fail("expected the check to refuse");
}

test("an update with no uid or resourceVersion, or an empty one, has no precondition", () => {
  for (const meta of [{}, { uid: "" }, { resourceVersion: "" }, { uid: "", resourceVersion: "" }]) {
    assert.doesNotThrow(() => checkUpdatePreconditions(withMeta(meta), current, configMaps), JSON.stringify(meta));
  }
  assert.doesNotThrow(() => checkUpdatePreconditions(withMeta({ uid: "uid-1", resourceVersion: "12" }), current, configMaps));
});

test("an update whose uid differs is a 409 Conflict naming both uids", () => {
  const status = statusOf(() => checkUpdatePreconditions(withMeta({ uid: "uid-2" }), current, configMaps));
  assert.equal(status.code, 409);
  assert.equal(status.reason, "Conflict");
  assert.equal(status.message, 'Operation cannot be fulfilled on configmaps "a": Precondition failed: UID in precondition: uid-2, UID in object meta: uid-1');
});

test("an update whose resourceVersion is not a number is a 400 BadRequest, not a conflict", () => {
  for (const rv of ["abc", "12a", "-1", " 12"]) {
    const status = statusOf(() => checkUpdatePreconditions(withMeta({ resourceVersion: rv }), current, configMaps));
    assert.equal(status.code, 400, rv);
    assert.equal(status.reason, "BadRequest");
    assert.equal(status.message, `invalid resource version: ${JSON.stringify(rv)}`);
  }
  const number = statusOf(() => checkUpdatePreconditions(withMeta({ resourceVersion: 12 }), current, configMaps));
  assert.equal(number.code, 400, "a resourceVersion that is a JSON number, not a string");
});

test("an update at an older resourceVersion is a 409 Conflict with the group in the resource", () => {
  const status = statusOf(() => checkUpdatePreconditions({ ...deployment("a"), metadata: { name: "a", namespace: "default", resourceVersion: "11" } }, { ...deployment("a"), metadata: { name: "a", namespace: "default", uid: "u", resourceVersion: "12" } }, deployments));
  assert.equal(status.code, 409);
  assert.match(status.message, /^Operation cannot be fulfilled on deployments\.apps "a": the object has been modified/);
  assert.deepEqual(status.details, { name: "a", group: "apps", kind: "deployments" });
});

test("a delete's preconditions: absent ones pass, a different uid or resourceVersion is a 409 naming both", () => {
  const ref = { apiVersion: "v1", kind: "ConfigMap", namespace: "default", name: "a" };
  assert.doesNotThrow(() => checkDeletePreconditions(ref, current, configMaps));
  assert.doesNotThrow(() => checkDeletePreconditions({ ...ref, preconditions: {} }, current, configMaps));
  assert.doesNotThrow(() => checkDeletePreconditions({ ...ref, preconditions: { uid: "uid-1", resourceVersion: "12" } }, current, configMaps));
  const uid = statusOf(() => checkDeletePreconditions({ ...ref, preconditions: { uid: "uid-2" } }, current, configMaps));
  assert.equal(uid.code, 409);
  assert.equal(uid.message, 'Operation cannot be fulfilled on configmaps "a": Precondition failed: UID in precondition: uid-2, UID in object meta: uid-1');
  const rv = statusOf(() => checkDeletePreconditions({ ...ref, preconditions: { resourceVersion: "11" } }, current, configMaps));
  assert.equal(rv.code, 409);
  assert.equal(rv.message, 'Operation cannot be fulfilled on configmaps "a": Precondition failed: ResourceVersion in precondition: 11, ResourceVersion in meta: 12');
});

test("a namespace being deleted refuses new content of a grouped kind with a 403 naming plural.group, and its cause", () => {
  const s = newStore();
  s.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: "doomed" } });
  s.delete({ apiVersion: "v1", kind: "Namespace", name: "doomed" });
  const status = statusOf(() => s.create({ ...deployment("web"), metadata: { name: "web", namespace: "doomed" } }));
  assert.deepEqual(status, {
    apiVersion: "v1",
    kind: "Status",
    metadata: {},
    status: "Failure",
    message: 'deployments.apps "web" is forbidden: unable to create new content in namespace doomed because it is being terminated',
    reason: "Forbidden",
    code: 403,
    details: {
      name: "web",
      group: "apps",
      kind: "deployments",
      causes: [{ reason: "NamespaceTerminating", message: "namespace doomed is being terminated", field: "metadata.namespace" }],
    },
  });
  const missing = statusOf(() => s.create(configMap("a", { namespace: "absent" })));
  assert.equal(missing.code, 404);
  assert.equal(missing.message, 'namespaces "absent" not found');
});

test("a namespace being deleted refuses new content of a core kind with a 403 naming the plural alone", () => {
  const s = newStore();
  s.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: "doomed" } });
  s.delete({ apiVersion: "v1", kind: "Namespace", name: "doomed" });
  const status = statusOf(() => s.create(configMap("a", { namespace: "doomed" })));
  assert.equal(status.code, 403);
  assert.equal(status.message, 'configmaps "a" is forbidden: unable to create new content in namespace doomed because it is being terminated');
  assert.equal(status.details?.group, "");
});
