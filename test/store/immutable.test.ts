// Fields the API server refuses to change once an object exists, refused by the store with its 422s: a controller that
// tries (a Job's template, a Service's cluster IP, a StatefulSet's serviceName, a claim's access modes, an immutable
// ConfigMap's data) meets the error it meets on a real cluster instead of a write that silently succeeds.
import { test } from "node:test";
import assert from "node:assert/strict";
import type { KubeObject } from "../../src/api/object.ts";
import type { Store } from "../../src/store/index.ts";
import { assertFails, newStore } from "./helpers.ts";

type Json = Record<string, any>;
const ns = "default";

function patch(store: Store, kind: { apiVersion: string; kind: string }, name: string, body: Json): KubeObject {
  return store.patch({ ...kind, namespace: ns, name, patchType: "merge", patch: body });
}

test("a Job's template, selector and completions are fixed; a suspended Job may still move its pods; parallelism may change", () => {
  const store = newStore();
  const kind = { apiVersion: "batch/v1", kind: "Job" };
  const job = (name: string, suspend: boolean) => ({ ...kind, metadata: { name, namespace: ns }, spec: { suspend, template: { spec: { restartPolicy: "Never", containers: [{ name: "c", image: "x" }] } } } });
  store.create(job("running", false) as KubeObject);
  assertFails(store, () => patch(store, kind, "running", { spec: { template: { spec: { containers: [{ name: "c", image: "y" }] } } } }), 422, "Invalid", /spec\.template: Invalid value: .*: field is immutable/);
  assertFails(store, () => patch(store, kind, "running", { spec: { completions: 3 } }), 422, "Invalid", /spec\.completions: Invalid value: 3: field is immutable/);
  assert.equal((patch(store, kind, "running", { spec: { parallelism: 2 } }).spec as Json).parallelism, 2);
  store.create(job("held", true) as KubeObject);
  const moved = patch(store, kind, "held", { spec: { template: { metadata: { labels: { zone: "b" } }, spec: { nodeSelector: { zone: "b" } } } } });
  assert.deepEqual((moved.spec as Json).template.spec.nodeSelector, { zone: "b" });
  assertFails(store, () => patch(store, kind, "held", { spec: { template: { spec: { containers: [{ name: "c", image: "y" }] } } } }), 422, "Invalid", /spec\.template/);
});

test("a StatefulSet's spec changes only in replicas, template, update strategy and the like", () => {
  const store = newStore();
  const kind = { apiVersion: "apps/v1", kind: "StatefulSet" };
  const template = { metadata: { labels: { a: "1" } }, spec: { containers: [{ name: "c", image: "x" }] } };
  store.create({ ...kind, metadata: { name: "db", namespace: ns }, spec: { serviceName: "db", selector: { matchLabels: { a: "1" } }, template } } as KubeObject);
  assert.equal((patch(store, kind, "db", { spec: { replicas: 3, minReadySeconds: 5 } }).spec as Json).replicas, 3);
  assertFails(store, () => patch(store, kind, "db", { spec: { serviceName: "other" } }), 422, "Invalid", /spec: Forbidden: updates to statefulset spec for fields other than 'replicas'/);
});

test("a Service keeps its cluster IP, a claim its spec but requests (and a first volume and class), an immutable ConfigMap or Secret its contents", () => {
  const store = newStore();
  const service = { apiVersion: "v1", kind: "Service" };
  store.create({ ...service, metadata: { name: "s", namespace: ns }, spec: { clusterIP: "10.96.0.5", ports: [{ port: 80 }] } } as KubeObject);
  assertFails(store, () => patch(store, service, "s", { spec: { clusterIP: "10.96.0.6" } }), 422, "Invalid", /spec\.clusterIPs\[0\]: Invalid value: "10\.96\.0\.6": may not change once set/);
  const claim = { apiVersion: "v1", kind: "PersistentVolumeClaim" };
  store.create({ ...claim, metadata: { name: "c", namespace: ns }, spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Gi" } } } } as KubeObject);
  assert.equal((patch(store, claim, "c", { spec: { resources: { requests: { storage: "2Gi" } } } }).spec as Json).resources.requests.storage, "2Gi");
  assertFails(store, () => patch(store, claim, "c", { spec: { accessModes: ["ReadWriteMany"] } }), 422, "Invalid", /spec: Forbidden: spec is immutable after creation except resources\.requests/);
  // The binder names the volume once, and a claim of no class may be given one; neither changes after that.
  assert.equal((patch(store, claim, "c", { spec: { volumeName: "pv-1", storageClassName: "standard" } }).spec as Json).volumeName, "pv-1");
  assertFails(store, () => patch(store, claim, "c", { spec: { volumeName: "pv-2" } }), 422, "Invalid", /spec is immutable/);
  assertFails(store, () => patch(store, claim, "c", { spec: { storageClassName: "fast" } }), 422, "Invalid", /spec is immutable/);
  const configMap = { apiVersion: "v1", kind: "ConfigMap" };
  store.create({ ...configMap, metadata: { name: "fixed", namespace: ns }, data: { a: "1" }, immutable: true } as KubeObject);
  assertFails(store, () => patch(store, configMap, "fixed", { data: { a: "2" } }), 422, "Invalid", /data: Forbidden: field is immutable when `immutable` is set/);
  assertFails(store, () => patch(store, configMap, "fixed", { immutable: false }), 422, "Invalid", /immutable: Forbidden/);
  assert.equal(patch(store, configMap, "fixed", { metadata: { labels: { x: "y" } } }).metadata.labels?.x, "y", "its metadata still changes");
  const secret = { apiVersion: "v1", kind: "Secret" };
  store.create({ ...secret, metadata: { name: "key", namespace: ns }, data: { k: "YQ==" }, immutable: true } as KubeObject);
  assertFails(store, () => patch(store, secret, "key", { data: { k: "Yg==" } }), 422, "Invalid", /data: Forbidden: field is immutable when `immutable` is set/);
});
