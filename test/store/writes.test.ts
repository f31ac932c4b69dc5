import { test } from "node:test";
import assert from "node:assert/strict";
import type { KubeObject } from "../../src/api/object.ts";
import { assertFails, configMap, deployment, newStore, pod, ref, t0 } from "./helpers.ts";

test("a fresh store holds the namespaces of a fresh cluster and its revision counts their creation", () => {
  const store = newStore();
  const names = store.list({ apiVersion: "v1", kind: "Namespace" }).items.map((ns) => ns.metadata.name);
  assert.deepEqual(names, ["default", "kube-node-lease", "kube-public", "kube-system"]);
  assert.equal(store.revision, 4);
  assert.equal(newStore({ namespaces: [] }).revision, 0);
});

test("create sets uid, creationTimestamp, generation and resourceVersion from the global revision", () => {
  const store = newStore();
  const a = store.create(configMap("a"));
  const b = store.create(configMap("b"));
  assert.equal(a.metadata.resourceVersion, "5");
  assert.equal(b.metadata.resourceVersion, "6");
  assert.equal(store.revision, 6);
  assert.equal(a.metadata.generation, 1);
  assert.equal(a.metadata.creationTimestamp, new Date(t0).toISOString().replace(".000Z", "Z"));
  assert.match(a.metadata.uid!, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  assert.notEqual(a.metadata.uid, b.metadata.uid);
  assert.equal(newStore().create(configMap("a")).metadata.uid, a.metadata.uid, "uids are deterministic");
});

test("uids come from the uid option when given", () => {
  let n = 0;
  const store = newStore({ uid: () => `uid-${++n}`, namespaces: [] });
  store.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: "default" } });
  assert.equal(store.create(configMap("a")).metadata.uid, "uid-2");
});

test("returned objects are deep-frozen, shared between reads, and never the caller's object", () => {
  const store = newStore();
  const input = configMap("a");
  const created = store.create(input);
  assert.notEqual(created, input);
  assert.equal(input.metadata.uid, undefined, "the caller's object is not touched");
  (input.data as Record<string, string>).key = "changed";
  const got = store.get(ref(created));
  assert.equal(got, created);
  assert.equal((got.data as Record<string, string>).key, "value");
  assert.ok(Object.isFrozen(got) && Object.isFrozen(got.metadata) && Object.isFrozen(got.data));
  assert.throws(() => {
    (got.metadata as { name: string }).name = "x";
  }, TypeError);
});

test("generateName draws a 5-character suffix deterministically and redraws on a collision", () => {
  const store = newStore();
  const a = store.create({ apiVersion: "v1", kind: "ConfigMap", metadata: { generateName: "web-", namespace: "default" } });
  assert.match(a.metadata.name!, /^web-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
  const again = newStore();
  // Take the first generated name by hand: the store must redraw rather than fail.
  again.create(configMap(a.metadata.name!));
  const b = again.create({ apiVersion: "v1", kind: "ConfigMap", metadata: { generateName: "web-", namespace: "default" } });
  assert.notEqual(b.metadata.name, a.metadata.name);
  assert.match(b.metadata.name!, /^web-.{5}$/);
});

test("update with the current resourceVersion succeeds and bumps it", () => {
  const store = newStore();
  const a = store.create(configMap("a"));
  const b = store.update({ ...a, data: { key: "other" } });
  assert.equal(b.metadata.resourceVersion, String(store.revision));
  assert.equal(Number(b.metadata.resourceVersion), Number(a.metadata.resourceVersion) + 1);
  assert.equal(b.metadata.uid, a.metadata.uid);
  assert.equal(b.metadata.creationTimestamp, a.metadata.creationTimestamp);
});

test("update with a stale resourceVersion fails with 409 Conflict and changes nothing", () => {
  const store = newStore();
  const a = store.create(configMap("a"));
  store.update({ ...a, data: { key: "b" } });
  assertFails(
    store,
    () => store.update({ ...a, data: { key: "c" } }),
    409,
    "Conflict",
    /^Operation cannot be fulfilled on configmaps "a": the object has been modified; please apply your changes to the latest version and try again$/,
  );
});

test("update without a resourceVersion is unconditional", () => {
  const store = newStore();
  const a = store.create(configMap("a"));
  store.update({ ...a, data: { key: "b" } });
  const { resourceVersion: _rv, ...meta } = a.metadata;
  const c = store.update({ ...a, metadata: meta, data: { key: "c" } });
  assert.deepEqual(c.data, { key: "c" });
});

test("update with another uid fails with 409 Conflict naming both uids", () => {
  const store = newStore();
  const a = store.create(configMap("a"));
  assertFails(store, () => store.update({ ...a, metadata: { ...a.metadata, uid: "other" } }), 409, "Conflict", /Precondition failed: UID in precondition: other/);
});

test("a no-op update changes nothing: same object back, no revision, no event", () => {
  const store = newStore();
  const a = store.create(configMap("a", { labels: { x: "1" } }));
  const events: string[] = [];
  store.watch({ apiVersion: "v1", kind: "ConfigMap", fromRevision: store.revision }, (e) => events.push(e.type));
  const revision = store.revision;
  // Same content with keys in another order and without the server-set fields.
  const same = store.update({ data: { key: "value" }, kind: "ConfigMap", apiVersion: "v1", metadata: { labels: { x: "1" }, namespace: "default", name: "a" } });
  assert.equal(same, a);
  assert.equal(store.revision, revision);
  assert.deepEqual(events, []);
});

test("a no-op after defaulting is still a no-op (a pod written back without its defaults)", () => {
  const store = newStore();
  const p = store.create(pod("p"));
  assert.equal((p.spec as Record<string, unknown>).restartPolicy, "Always");
  const revision = store.revision;
  store.update(pod("p"));
  assert.equal(store.revision, revision);
});

const generationCases: Array<{ name: string; change: (d: KubeObject) => KubeObject; bumps: boolean; status?: boolean }> = [
  { name: "a spec change", change: (d) => ({ ...d, spec: { ...(d.spec as object), replicas: 3 } }), bumps: true },
  { name: "a label change", change: (d) => ({ ...d, metadata: { ...d.metadata, labels: { a: "b" } } }), bumps: false },
  { name: "an annotation change", change: (d) => ({ ...d, metadata: { ...d.metadata, annotations: { a: "b" } } }), bumps: false },
  { name: "a status write", change: (d) => ({ ...d, status: { replicas: 3 } }), bumps: false, status: true },
];

for (const c of generationCases) {
  test(`generation ${c.bumps ? "bumps" : "stays"} on ${c.name} of a Deployment`, () => {
    const store = newStore();
    const d = store.create(deployment("web"));
    const next = c.status === true ? store.updateStatus(c.change(d)) : store.update(c.change(d));
    assert.equal(next.metadata.generation, c.bumps ? 2 : 1);
    assert.ok(store.revision > Number(d.metadata.resourceVersion));
  });
}

test("generation bumps on any change outside metadata for a kind without a status subresource", () => {
  const store = newStore();
  const a = store.create(configMap("a"));
  assert.equal(store.update({ ...a, data: { key: "x" } }).metadata.generation, 2);
});

test("main writes keep the stored status and status writes keep everything but status", () => {
  const store = newStore();
  const d = store.create({ ...deployment("web"), status: { replicas: 9 } });
  assert.equal(d.status, undefined, "create drops status for a kind with a status subresource");
  const withStatus = store.updateStatus({ ...d, spec: { ...(d.spec as object), replicas: 5 }, metadata: { ...d.metadata, labels: { a: "b" } }, status: { replicas: 2 } });
  assert.deepEqual(withStatus.status, { replicas: 2 });
  assert.equal((withStatus.spec as { replicas: number }).replicas, 1, "a status write ignores spec");
  assert.equal(withStatus.metadata.labels, undefined, "a status write ignores labels");
  const main = store.update({ ...withStatus, spec: { ...(withStatus.spec as object), replicas: 4 }, status: { replicas: 100 } });
  assert.deepEqual(main.status, { replicas: 2 }, "a main write ignores status");
  assert.equal((main.spec as { replicas: number }).replicas, 4);
});

test("a Node keeps the status it is created with; a Pod starts Pending", () => {
  const store = newStore();
  const node = store.create({ apiVersion: "v1", kind: "Node", metadata: { name: "n1" }, status: { capacity: { cpu: "4" } } });
  assert.deepEqual(node.status, { capacity: { cpu: "4" } });
  assert.deepEqual(store.create(pod("p")).status, { phase: "Pending" });
});

test("merge patch and JSON patch apply to the current object", () => {
  const store = newStore();
  const a = store.create(configMap("a"));
  const merged = store.patch({ ...ref(a), patchType: "merge", patch: { data: { other: "1" } } });
  assert.deepEqual(merged.data, { key: "value", other: "1" });
  const json = store.patch({ ...ref(a), patchType: "json", patch: [{ op: "remove", path: "/data/key" }] });
  assert.deepEqual(json.data, { other: "1" });
});

test("a resourceVersion inside a patch is a precondition", () => {
  const store = newStore();
  const a = store.create(configMap("a"));
  store.patch({ ...ref(a), patchType: "merge", patch: { metadata: { resourceVersion: a.metadata.resourceVersion }, data: { k: "1" } } });
  assertFails(
    store,
    () => store.patch({ ...ref(a), patchType: "merge", patch: { metadata: { resourceVersion: a.metadata.resourceVersion }, data: { k: "2" } } }),
    409,
    "Conflict",
  );
});

test("patchStatus changes only status", () => {
  const store = newStore();
  const d = store.create(deployment("web"));
  const next = store.patchStatus({ ...ref(d), patchType: "merge", patch: { status: { readyReplicas: 1 }, spec: { replicas: 7 } } });
  assert.deepEqual(next.status, { readyReplicas: 1 });
  assert.equal((next.spec as { replicas: number }).replicas, 1);
});

const bad = (store: ReturnType<typeof newStore>) => store;

const badInputs: Array<{ name: string; write: (s: ReturnType<typeof newStore>) => unknown; code: number; reason: string; message?: RegExp }> = [
  { name: "an unknown kind", write: (s) => s.create({ apiVersion: "v1", kind: "Gizmo", metadata: { name: "g" } }), code: 404, reason: "NotFound", message: /no matches for kind "Gizmo" in version "v1"/ },
  { name: "a known kind in an unserved version", write: (s) => s.create({ ...deployment("d"), apiVersion: "apps/v2" }), code: 404, reason: "NotFound" },
  { name: "a missing kind", write: (s) => s.create({ apiVersion: "v1", metadata: { name: "a" } } as unknown as KubeObject), code: 400, reason: "BadRequest", message: /Kind/ },
  { name: "a missing name", write: (s) => s.create({ apiVersion: "v1", kind: "ConfigMap", metadata: { namespace: "default" } }), code: 422, reason: "Invalid", message: /metadata.name: Required value/ },
  { name: "an invalid name", write: (s) => s.create(configMap("Not_Valid")), code: 422, reason: "Invalid", message: /metadata.name: Invalid value/ },
  { name: "a namespace name that is not a DNS label", write: (s) => s.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: "a.b" } }), code: 422, reason: "Invalid" },
  { name: "an invalid label", write: (s) => s.create(configMap("a", { labels: { "bad key!": "x" } })), code: 422, reason: "Invalid", message: /metadata.labels/ },
  { name: "a namespaced kind without a namespace", write: (s) => s.create({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "a" } }), code: 422, reason: "Invalid", message: /metadata.namespace: Required value/ },
  { name: "a missing namespace", write: (s) => s.create(configMap("a", { namespace: "nowhere" })), code: 404, reason: "NotFound", message: /namespaces "nowhere" not found/ },
  { name: "an object over the size limit", write: (s) => s.create({ ...configMap("a"), data: { big: "x".repeat(1.5 * 1024 * 1024) } }), code: 413, reason: "RequestEntityTooLarge" },
  { name: "a create with a resourceVersion", write: (s) => s.create({ ...configMap("a"), metadata: { name: "a", namespace: "default", resourceVersion: "3" } }), code: 500, reason: "InternalError", message: /resourceVersion should not be set on objects to be created/ },
  { name: "a duplicate create", write: (s) => s.create(configMap("exists")), code: 409, reason: "AlreadyExists", message: /configmaps "exists" already exists/ },
  { name: "an update of a missing object", write: (s) => s.update(configMap("missing")), code: 404, reason: "NotFound", message: /configmaps "missing" not found/ },
  { name: "a pod without containers", write: (s) => s.create({ ...pod("p"), spec: { containers: [] } }), code: 422, reason: "Invalid", message: /spec.containers: Required value/ },
  { name: "a deployment whose selector does not match its template", write: (s) => s.create({ ...deployment("d"), spec: { selector: { matchLabels: { a: "b" } }, template: { metadata: { labels: { a: "c" } }, spec: { containers: [{ name: "c", image: "i" }] } } } }), code: 422, reason: "Invalid", message: /selector/ },
  { name: "a malformed JSON patch", write: (s) => s.patch({ apiVersion: "v1", kind: "ConfigMap", namespace: "default", name: "exists", patchType: "json", patch: { op: "add" } }), code: 400, reason: "BadRequest" },
  { name: "a JSON patch whose test fails", write: (s) => s.patch({ apiVersion: "v1", kind: "ConfigMap", namespace: "default", name: "exists", patchType: "json", patch: [{ op: "test", path: "/data/key", value: "nope" }] }), code: 422, reason: "Invalid" },
  { name: "a patch that renames the object", write: (s) => s.patch({ apiVersion: "v1", kind: "ConfigMap", namespace: "default", name: "exists", patchType: "merge", patch: { metadata: { name: "other" } } }), code: 400, reason: "BadRequest" },
  { name: "a patch of a missing object", write: (s) => s.patch({ apiVersion: "v1", kind: "ConfigMap", namespace: "default", name: "missing", patchType: "merge", patch: {} }), code: 404, reason: "NotFound" },
  { name: "a status write to a kind without a status subresource", write: (s) => s.updateStatus(configMap("exists")), code: 404, reason: "NotFound" },
  { name: "a pod spec change other than the image", write: (s) => s.update({ ...pod("running"), spec: { containers: [{ name: "main", image: "busybox", command: ["sh"] }] } }), code: 422, reason: "Invalid", message: /pod updates may not change fields/ },
];

for (const c of badInputs) {
  test(`bad input changes nothing and gets the right Status: ${c.name}`, () => {
    const store = bad(newStore());
    store.create(configMap("exists"));
    store.create(pod("running"));
    assertFails(store, () => c.write(store), c.code, c.reason, c.message);
  });
}

test("a namespace being deleted refuses new content with 403 Forbidden", () => {
  const store = newStore();
  store.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: "doomed" } });
  store.delete({ apiVersion: "v1", kind: "Namespace", name: "doomed" });
  assertFails(store, () => store.create(configMap("a", { namespace: "doomed" })), 403, "Forbidden", /because it is being terminated/);
});

test("dryRun validates and answers like the real write but stores nothing", () => {
  const store = newStore();
  const before = store.revision;
  const dry = store.create(configMap("a"), { dryRun: true });
  assert.equal(dry.metadata.name, "a");
  assert.equal(dry.metadata.resourceVersion, undefined);
  assert.equal(store.revision, before);
  assert.throws(() => store.get({ apiVersion: "v1", kind: "ConfigMap", namespace: "default", name: "a" }), { code: 404 });
  const real = store.create(configMap("a"));
  assert.equal(real.metadata.uid, dry.metadata.uid, "a dry run does not advance the uid sequence");
  assertFails(store, () => store.create(configMap("Bad_Name"), { dryRun: true }), 422, "Invalid");
  const updated = store.update({ ...real, data: { key: "dry" } }, { dryRun: true });
  assert.deepEqual(updated.data, { key: "dry" });
  assert.deepEqual(store.get(ref(real)).data, { key: "value" });
  store.delete({ ...ref(real), dryRun: true });
  assert.equal(store.get(ref(real)), real);
});

test("admission mutates in order, then validates; a denial stores nothing", () => {
  const seen: string[] = [];
  const store = newStore({
    admission: [
      {
        name: "registry-rewrite",
        mutate(request) {
          seen.push(`mutate ${request.operation} ${request.resource.plural}`);
          const labels = (request.object.metadata.labels ??= {});
          labels.mutated = "yes";
        },
      },
      {
        name: "no-forbidden",
        validate(request) {
          seen.push(`validate ${request.operation}`);
          assert.ok(Object.isFrozen(request.object), "validation sees a frozen object");
          if (request.object.metadata.name === "forbidden") {
            throw new (class extends Error {})("denied");
          }
        },
      },
    ],
    namespaces: ["default"],
  });
  const a = store.create(configMap("a"));
  assert.equal(a.metadata.labels?.mutated, "yes");
  assert.deepEqual(seen.slice(-2), ["mutate CREATE configmaps", "validate CREATE"]);
  const revision = store.revision;
  assert.throws(() => store.create(configMap("forbidden")), /denied/);
  assert.equal(store.revision, revision);
  store.delete(ref(a));
  assert.equal(seen.at(-1), "validate DELETE");
});

test("a plugin whose concerns leave a write out is not called for it, and the write shares what it did not change", () => {
  const seen: string[] = [];
  const asked: string[] = [];
  const store = newStore({
    admission: [
      {
        name: "pods-only",
        concerns(operation, resource, subresource) {
          asked.push(`${operation} ${resource.plural}${subresource === undefined ? "" : `/${subresource}`}`);
          return resource.kind === "Pod" && subresource === undefined;
        },
        mutate(request) {
          seen.push(`mutate ${request.operation} ${request.resource.plural}`);
        },
        validate(request) {
          seen.push(`validate ${request.operation} ${request.resource.plural}`);
        },
      },
    ],
    namespaces: ["default"],
  });
  const a = store.create({ ...configMap("a"), data: { x: "1" }, binaryData: { b: "AA==" } });
  const patched = store.patch({ ...ref(a), patchType: "merge", patch: { data: { x: "2" } } });
  store.delete(ref(a));
  assert.deepEqual(seen, []);
  // Unchanged subtrees stay shared with the stored object: no copy was made for a mutation that cannot happen.
  assert.equal(patched.binaryData, a.binaryData);
  store.create(pod("p"));
  store.patch({ ...ref(pod("p")), patchType: "merge", patch: { metadata: { labels: { l: "1" } } } });
  assert.deepEqual(seen, ["mutate CREATE pods", "validate CREATE pods", "mutate UPDATE pods", "validate UPDATE pods"]);
  // The answer is asked once per resource and kind of write (the first is the fresh store's namespace), then remembered.
  assert.deepEqual(asked, ["CREATE namespaces", "CREATE configmaps", "UPDATE configmaps", "DELETE configmaps", "CREATE pods", "UPDATE pods"]);
});

test("the size limit counts bytes of UTF-8 JSON, so multi-byte text is measured exactly", () => {
  const store = newStore({ objectBytesMax: 1000 });
  store.create({ ...configMap("ascii"), data: { text: "a".repeat(800) } });
  assertFails(store, () => store.create({ ...configMap("wide"), data: { text: "語".repeat(400) } }), 413, "RequestEntityTooLarge", /limit is 1000/);
  assertFails(store, () => store.create({ ...configMap("escaped"), data: { text: "\u0001".repeat(300) } }), 413, "RequestEntityTooLarge");
});

test("inputs are cloned as JSON: undefined fields vanish and dates become strings", () => {
  const store = newStore();
  const created = store.create({ ...configMap("a"), data: { key: "v", gone: undefined }, extra: [undefined, 1], when: new Date(0) } as unknown as Parameters<typeof store.create>[0]);
  assert.deepEqual(created.data, { key: "v" });
  assert.deepEqual(created.extra, [null, 1]);
  assert.equal(created.when, "1970-01-01T00:00:00.000Z");
});

test("the scheduler may set a pod's nodeName once, but not move it", () => {
  const store = newStore();
  const p = store.create(pod("p"));
  const bound = store.update({ ...p, spec: { ...(p.spec as object), nodeName: "n1" } });
  assert.equal((bound.spec as { nodeName: string }).nodeName, "n1");
  assertFails(store, () => store.update({ ...bound, spec: { ...(bound.spec as object), nodeName: "n2" } }), 422, "Invalid", /spec.nodeName/);
  const image = store.update({ ...bound, spec: { ...(bound.spec as object), containers: [{ name: "main", image: "busybox:2" }] } });
  assert.equal((image.spec as { containers: Array<{ image: string }> }).containers[0]!.image, "busybox:2");
});

test("a Job's generated selector and labels survive a client that sends them back", () => {
  const store = newStore();
  const job = store.create({ apiVersion: "batch/v1", kind: "Job", metadata: { name: "j", namespace: "default" }, spec: { template: { spec: { containers: [{ name: "c", image: "i" }], restartPolicy: "Never" } } } });
  const labels = ((job.spec as { template: { metadata: { labels: Record<string, string> } } }).template.metadata.labels);
  assert.equal(labels["batch.kubernetes.io/job-name"], "j");
  const revision = store.revision;
  store.update(job);
  assert.equal(store.revision, revision, "sending the stored Job back is a no-op");
});

test("a Secret's stringData is merged into data (base64, over the same key) and never stored", () => {
  const store = newStore();
  const created = store.create({ apiVersion: "v1", kind: "Secret", metadata: { name: "s", namespace: "default" }, data: { pw: "b2xk", user: "eA==" }, stringData: { pw: "new", note: "héllo" } } as unknown as KubeObject);
  assert.deepEqual(created.data, { pw: Buffer.from("new").toString("base64"), user: "eA==", note: Buffer.from("héllo", "utf8").toString("base64") });
  assert.equal((created as Record<string, unknown>).stringData, undefined);
  const patched = store.patch({ apiVersion: "v1", kind: "Secret", namespace: "default", name: "s", patchType: "merge", patch: { stringData: { user: "root" } } });
  assert.equal((patched.data as Record<string, string>).user, Buffer.from("root").toString("base64"));
  assert.equal((patched as Record<string, unknown>).stringData, undefined);
});
