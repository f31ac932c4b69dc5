// The default admission plugins' changes to new Pods in `settle serve`'s store: ServiceAccount (account name, the
// token volume and its mounts), DefaultTolerationSeconds and Priority; and that a simulator's store makes none of them.
import { test } from "node:test";
import assert from "node:assert/strict";
import type { KubeObject } from "../../src/api/object.ts";
import { isApiError } from "../../src/api/errors.ts";
import { createStore } from "../../src/store/index.ts";
import { createServerStore } from "../../src/server/index.ts";

type Json = Record<string, any>;

function pod(name: string, spec: Json = {}): KubeObject {
  return { apiVersion: "v1", kind: "Pod", metadata: { name, namespace: "default" }, spec: { containers: [{ name: "app", image: "nginx" }], ...spec } };
}

function specOf(object: KubeObject): Json {
  return object.spec as Json;
}

const tokenPath = "/var/run/secrets/kubernetes.io/serviceaccount";

test("a new pod runs as the default ServiceAccount with its token mounted in every container that has nothing at that path", () => {
  const store = createServerStore();
  const created = specOf(
    store.create(
      pod("a", {
        initContainers: [{ name: "init", image: "busybox" }],
        containers: [
          { name: "app", image: "nginx" },
          { name: "own", image: "nginx", volumeMounts: [{ name: "mine", mountPath: tokenPath }] },
        ],
        volumes: [{ name: "mine", emptyDir: {} }],
      }),
    ),
  );
  assert.equal(created.serviceAccountName, "default");
  assert.equal(created.serviceAccount, "default");
  const volume = created.volumes.find((v: Json) => v.name.startsWith("kube-api-access-"));
  assert.match(volume.name, /^kube-api-access-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
  assert.deepEqual(volume.projected.sources.map((s: Json) => Object.keys(s)[0]), ["serviceAccountToken", "configMap", "downwardAPI"]);
  assert.equal(volume.projected.sources[1].configMap.name, "kube-root-ca.crt");
  const mountOf = (container: Json) => container.volumeMounts?.find((m: Json) => m.mountPath === tokenPath);
  assert.deepEqual(mountOf(created.initContainers[0]), { name: volume.name, readOnly: true, mountPath: tokenPath });
  assert.deepEqual(mountOf(created.containers[0]), { name: volume.name, readOnly: true, mountPath: tokenPath });
  assert.equal(mountOf(created.containers[1]).name, "mine", "a container's own mount at the path is left alone");
  const other = specOf(store.create(pod("b"))).volumes[0].name;
  assert.notEqual(other, volume.name, "each pod's volume gets its own suffix");
});

test("no token is mounted when the pod or its ServiceAccount turns automounting off", () => {
  const store = createServerStore();
  assert.equal(specOf(store.create(pod("off", { automountServiceAccountToken: false }))).volumes, undefined);
  store.create({ apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "quiet", namespace: "default" }, automountServiceAccountToken: false } as unknown as KubeObject);
  const quiet = specOf(store.create(pod("quiet", { serviceAccountName: "quiet" })));
  assert.equal(quiet.serviceAccountName, "quiet");
  assert.equal(quiet.volumes, undefined);
  assert.equal(quiet.containers[0].volumeMounts, undefined);
  // The pod's own setting wins over its account's.
  assert.equal(specOf(store.create(pod("loud", { serviceAccountName: "quiet", automountServiceAccountToken: true }))).volumes.length, 1);
});

test("a pod tolerates not-ready and unreachable nodes for 300 s unless it tolerates them already", () => {
  const store = createServerStore();
  assert.deepEqual(specOf(store.create(pod("plain"))).tolerations, [
    { key: "node.kubernetes.io/not-ready", operator: "Exists", effect: "NoExecute", tolerationSeconds: 300 },
    { key: "node.kubernetes.io/unreachable", operator: "Exists", effect: "NoExecute", tolerationSeconds: 300 },
  ]);
  const own = { key: "node.kubernetes.io/unreachable", operator: "Exists", effect: "NoExecute", tolerationSeconds: 5 };
  assert.deepEqual(specOf(store.create(pod("own", { tolerations: [own] }))).tolerations, [own, { key: "node.kubernetes.io/not-ready", operator: "Exists", effect: "NoExecute", tolerationSeconds: 300 }]);
  const everything = { operator: "Exists" };
  assert.deepEqual(specOf(store.create(pod("all", { tolerations: [everything] }))).tolerations, [everything]);
});

test("a pod's priority comes from its PriorityClass, the global default or 0; an unknown class or a wrong priority is refused", () => {
  const store = createServerStore();
  const names = store.list({ apiVersion: "scheduling.k8s.io/v1", kind: "PriorityClass" }).items.map((c) => c.metadata.name);
  assert.deepEqual(names, ["system-cluster-critical", "system-node-critical"], "what a fresh cluster has");
  const plain = specOf(store.create(pod("plain")));
  assert.equal(plain.priority, 0);
  assert.equal(plain.preemptionPolicy, "PreemptLowerPriority");
  assert.equal(specOf(store.create(pod("critical", { priorityClassName: "system-node-critical" }))).priority, 2_000_001_000);
  const refused = (object: KubeObject, message: RegExp) =>
    assert.throws(() => store.create(object), (error: unknown) => isApiError(error) && error.status.code === 403 && error.reason === "Forbidden" && message.test(error.message));
  refused(pod("unknown", { priorityClassName: "gold" }), /^pods "unknown" is forbidden: no PriorityClass with name gold was found$/);
  refused(pod("wrong", { priority: 7 }), /the integer value of priority \(7\) must not be provided in pod spec; priority admission controller computed 0/);
  store.create({ apiVersion: "scheduling.k8s.io/v1", kind: "PriorityClass", metadata: { name: "batch" }, value: 50, globalDefault: true, preemptionPolicy: "Never" } as unknown as KubeObject);
  const defaulted = specOf(store.create(pod("defaulted")));
  assert.deepEqual([defaulted.priorityClassName, defaulted.priority, defaulted.preemptionPolicy], ["batch", 50, "Never"]);
});

test("a simulator's store leaves new pods as they were sent (its runs and traces do not change)", () => {
  const created = specOf(createStore().create(pod("sim")));
  for (const field of ["serviceAccountName", "serviceAccount", "volumes", "tolerations", "priority", "preemptionPolicy"]) assert.equal(created[field], undefined, field);
  assert.equal(created.containers[0].volumeMounts, undefined);
});
