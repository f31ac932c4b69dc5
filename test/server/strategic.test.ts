// Strategic merge patch against the built-in schemas: merge keys by position in the type, directives, and errors.
import { test } from "node:test";
import assert from "node:assert/strict";
import { ApiError } from "../../src/api/errors.ts";
import { schemaOf } from "../../src/server/schema.ts";
import { applyStrategicPatch } from "../../src/server/strategic.ts";

const deployment = schemaOf({ group: "apps", kind: "Deployment" });
const podOf = (containers: unknown[], extra: Record<string, unknown> = {}) => ({ spec: { template: { spec: { containers, ...extra } } } });
const containersOf = (o: any) => o.spec.template.spec.containers;

test("containers merge by name, env by name, volumeMounts by mountPath and ports by containerPort", () => {
  const live = podOf([
    { name: "web", image: "a", env: [{ name: "A", value: "1" }, { name: "B", value: "2" }], volumeMounts: [{ mountPath: "/x", name: "v" }], ports: [{ containerPort: 80 }] },
    { name: "side", image: "s" },
  ]);
  const patch = podOf([{ name: "web", image: "b", env: [{ name: "B", value: "3" }, { name: "C", value: "4" }], volumeMounts: [{ mountPath: "/x", readOnly: true }], ports: [{ containerPort: 443 }] }]);
  const out = applyStrategicPatch(live, patch, deployment);
  const web = containersOf(out)[0];
  assert.equal(web.image, "b");
  assert.deepEqual(web.env, [{ name: "A", value: "1" }, { name: "B", value: "3" }, { name: "C", value: "4" }]);
  assert.deepEqual(web.volumeMounts, [{ mountPath: "/x", name: "v", readOnly: true }]);
  assert.deepEqual(web.ports, [{ containerPort: 80 }, { containerPort: 443 }]);
  assert.equal(containersOf(out)[1].name, "side");
  assert.deepEqual(containersOf(live)[0].env.length, 2, "the original is not changed");
});

test("$patch delete removes an element by key, and $setElementOrder orders the merged list", () => {
  const live = podOf([{ name: "a" }, { name: "b" }, { name: "c" }]);
  const patch = { spec: { template: { spec: { "$setElementOrder/containers": [{ name: "c" }, { name: "a" }], containers: [{ name: "b", $patch: "delete" }] } } } };
  assert.deepEqual(containersOf(applyStrategicPatch(live, patch, deployment)).map((c: any) => c.name), ["c", "a"]);
});

test("$patch replace replaces a list or a map, and $retainKeys drops the other keys of a map", () => {
  const live = { spec: { strategy: { type: "RollingUpdate", rollingUpdate: { maxSurge: 1 } }, template: { spec: { containers: [{ name: "a" }, { name: "b" }] } } } };
  const replaced = applyStrategicPatch(live, { spec: { template: { spec: { containers: [{ name: "z" }, { $patch: "replace" }] } } } }, deployment);
  assert.deepEqual(containersOf(replaced), [{ name: "z" }]);
  const retained = applyStrategicPatch(live, { spec: { strategy: { $retainKeys: ["type"], type: "Recreate" } } }, deployment);
  assert.deepEqual((retained.spec as any).strategy, { type: "Recreate" });
  const map = applyStrategicPatch({ metadata: { labels: { a: "1", b: "2" } } }, { metadata: { labels: { $patch: "replace", c: "3" } } }, deployment);
  assert.deepEqual((map.metadata as any).labels, { c: "3" });
});

test("finalizers take the union, $deleteFromPrimitiveList removes values, and atomic lists are replaced", () => {
  const live = { metadata: { finalizers: ["a", "b"] }, spec: { template: { spec: { containers: [], tolerations: [{ key: "x" }, { key: "y" }] } } } };
  const out = applyStrategicPatch(live, { metadata: { finalizers: ["c"], "$deleteFromPrimitiveList/finalizers": ["a"] }, spec: { template: { spec: { tolerations: [{ key: "z" }] } } } }, deployment);
  assert.deepEqual((out.metadata as any).finalizers, ["b", "c"]);
  assert.deepEqual((out.spec as any).template.spec.tolerations, [{ key: "z" }]);
});

test("a service port list and a node's taints follow their own types, not a field-name guess", () => {
  const node = schemaOf({ group: "", kind: "Node" });
  const out = applyStrategicPatch({ spec: { taints: [{ key: "a", effect: "NoSchedule" }] } }, { spec: { unschedulable: true, taints: [{ key: "b", effect: "NoSchedule" }] } }, node);
  assert.deepEqual(out.spec, { unschedulable: true, taints: [{ key: "b", effect: "NoSchedule" }] });
  const cm = schemaOf({ group: "", kind: "ConfigMap" });
  // `ports` is not a container's field here: the list is replaced, not merged by containerPort.
  assert.deepEqual(applyStrategicPatch({ data: { a: "1" }, ports: [{ containerPort: 1 }] }, { ports: [{ containerPort: 2 }] }, cm).ports, [{ containerPort: 2 }]);
});

test("malformed strategic patches are refused with 400: unknown directives, elements without the merge key", () => {
  const cases: unknown[] = [[], { $patch: "explode" }, { $bogus: 1 }, podOf([{ image: "no-name" }]), podOf(["text"]), { metadata: { "$setElementOrder/finalizers": "x" } }, { metadata: { $retainKeys: [1] } }];
  for (const patch of cases) {
    assert.throws(() => applyStrategicPatch({}, patch, deployment), (e: unknown) => e instanceof ApiError && e.code === 400, JSON.stringify(patch));
  }
});

test("a struct marked patchStrategy=replace (a PodDisruptionBudget's selector) is replaced whole, others merge", () => {
  const pdb = schemaOf({ group: "policy", kind: "PodDisruptionBudget" });
  const original = { spec: { minAvailable: 1, selector: { matchLabels: { app: "web", tier: "front" } } } };
  const patched = applyStrategicPatch(original, { spec: { selector: { matchLabels: { app: "api" } } } }, pdb) as any;
  assert.deepEqual(patched.spec.selector, { matchLabels: { app: "api" } });
  assert.equal(patched.spec.minAvailable, 1);
  // A Deployment's selector carries no such marker: its maps merge.
  const merged = applyStrategicPatch({ spec: { selector: { matchLabels: { app: "web", tier: "front" } } } }, { spec: { selector: { matchLabels: { app: "api" } } } }, deployment) as any;
  assert.deepEqual(merged.spec.selector.matchLabels, { app: "api", tier: "front" });
});

test("a strategic merge patch key named __proto__ is data, in the map it patches and in a map it creates", () => {
  const out = applyStrategicPatch({ data: { a: "1" } }, JSON.parse('{"data": {"__proto__": {"polluted": true}}, "more": {"__proto__": "x"}}'), schemaOf({ group: "", kind: "ConfigMap" }));
  const data = out.data as Record<string, unknown>;
  assert.equal(Object.getPrototypeOf(data), Object.prototype);
  assert.deepEqual(Object.keys(data), ["a", "__proto__"]);
  assert.deepEqual(Object.getOwnPropertyDescriptor(data, "__proto__")?.value, { polluted: true });
  assert.deepEqual(Object.keys(out.more as object), ["__proto__"]);
  assert.equal(({} as Record<string, unknown>)["polluted"], undefined);
});
