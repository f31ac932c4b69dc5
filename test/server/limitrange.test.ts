// LimitRange in `settle serve`'s store: the LimitRange's own defaulting, container defaults on a new pod (with the
// annotation that names them), and the min/max/ratio constraints per container, per pod and per claim as 403s in the
// real words; a quota on requests sees the defaulted ones.
import { test } from "node:test";
import assert from "node:assert/strict";
import type { KubeObject } from "../../src/api/object.ts";
import { isApiError } from "../../src/api/errors.ts";
import { createServerStore } from "../../src/server/index.ts";
import type { Store } from "../../src/store/index.ts";

type Json = Record<string, any>;

function limitRange(store: Store, limits: Json[]): KubeObject {
  return store.create({ apiVersion: "v1", kind: "LimitRange", metadata: { name: `lr-${limits.length}`, namespace: "default" }, spec: { limits } } as unknown as KubeObject);
}

function pod(name: string, containers: Json[]): KubeObject {
  return { apiVersion: "v1", kind: "Pod", metadata: { name, namespace: "default" }, spec: { containers } } as unknown as KubeObject;
}

function refused(store: Store, object: KubeObject, message: string): void {
  assert.throws(
    () => store.create(object),
    (error: unknown) => isApiError(error) && error.status.code === 403 && error.message === message,
  );
}

test("a LimitRange item defaults its limit from max and its request from the default, else from min", () => {
  const store = createServerStore();
  const created = limitRange(store, [{ type: "Container", max: { cpu: "2" }, min: { memory: "64Mi" } }]);
  const item = (created.spec as Json).limits[0];
  assert.deepEqual([item.default, item.defaultRequest], [{ cpu: "2" }, { cpu: "2", memory: "64Mi" }]);
});

test("a new pod's containers get the namespace's defaults, and the pod an annotation naming them", () => {
  const store = createServerStore();
  limitRange(store, [{ type: "Container", default: { cpu: "500m", memory: "256Mi" }, defaultRequest: { cpu: "100m" } }]);
  const created = store.create(pod("p", [{ name: "app", image: "x" }, { name: "side", image: "y", resources: { limits: { cpu: "1" } } }]));
  const [app, side] = (created.spec as Json).containers;
  assert.deepEqual(app.resources, { requests: { cpu: "100m", memory: "256Mi" }, limits: { cpu: "500m", memory: "256Mi" } });
  assert.deepEqual(side.resources, { requests: { cpu: "1", memory: "256Mi" }, limits: { cpu: "1", memory: "256Mi" } }, "its own values stay (requests from its limits)");
  assert.equal(created.metadata.annotations?.["kubernetes.io/limit-ranger"], "LimitRanger plugin set: cpu, memory request for container app; cpu, memory limit for container app; memory request for container side; memory limit for container side");
});

test("min, max and ratio are enforced per container, per pod and per claim, with the real messages", () => {
  const store = createServerStore();
  limitRange(store, [
    { type: "Container", max: { cpu: "2" }, min: { cpu: "100m" }, maxLimitRequestRatio: { cpu: "4" } },
    { type: "Pod", max: { cpu: "3" } },
    { type: "PersistentVolumeClaim", max: { storage: "10Gi" } },
  ]);
  const sized = (cpu: string, limit: string) => ({ name: `c${cpu}`, image: "x", resources: { requests: { cpu }, limits: { cpu: limit } } });
  refused(store, pod("big", [sized("1", "3")]), 'pods "big" is forbidden: maximum cpu usage per Container is 2, but limit is 3');
  refused(store, pod("tiny", [sized("50m", "100m")]), 'pods "tiny" is forbidden: minimum cpu usage per Container is 100m, but request is 50m');
  refused(store, pod("skewed", [sized("200m", "1")]), 'pods "skewed" is forbidden: cpu max limit to request ratio per Container is 4, but provided ratio is 5.000000');
  refused(store, pod("many", [sized("1", "2"), { ...sized("1", "2"), name: "other" }]), 'pods "many" is forbidden: maximum cpu usage per Pod is 3, but limit is 4');
  assert.equal(store.create(pod("fits", [sized("1", "2")])).metadata.name, "fits");
  const claim = (storage: string) => ({ apiVersion: "v1", kind: "PersistentVolumeClaim", metadata: { name: "data", namespace: "default" }, spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage } } } }) as unknown as KubeObject;
  refused(store, claim("20Gi"), 'persistentvolumeclaims "data" is forbidden: maximum storage usage per PersistentVolumeClaim is 10Gi, but request is 20Gi');
  assert.equal(store.create(claim("5Gi")).metadata.name, "data");
});

test("a quota on requests counts what the LimitRange filled in", () => {
  const store = createServerStore();
  limitRange(store, [{ type: "Container", defaultRequest: { cpu: "300m" } }]);
  store.create({ apiVersion: "v1", kind: "ResourceQuota", metadata: { name: "q", namespace: "default" }, spec: { hard: { "requests.cpu": "500m" } } } as unknown as KubeObject);
  assert.equal(store.create(pod("a", [{ name: "app", image: "x" }])).metadata.name, "a", "no must-specify: the default request counts");
  refused(store, pod("b", [{ name: "app", image: "x" }]), 'pods "b" is forbidden: exceeded quota: q, requested: requests.cpu=300m, used: requests.cpu=300m, limited: requests.cpu=500m');
});
