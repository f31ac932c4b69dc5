// The server store's admission chain keeps the order its header states: defaulting, the CSR requestor, quota, then
// the caller's plugins, with names unique.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createServerStore, serverAdmissionChain, serverAdmissionOrder } from "../../src/server/admission/admission.ts";
import type { Store } from "../../src/store/index.ts";

const noStore = (): Store => {
  throw new Error("the chain is only built here, never run");
};

test("the server's admission plugins come first, in the stated order, then the caller's", () => {
  const chain = serverAdmissionChain(noStore, [{ name: "test-plugin" }]);
  assert.deepEqual(
    chain.map((plugin) => plugin.name),
    [...serverAdmissionOrder, "test-plugin"],
  );
  assert.equal(chain[2]!.mutate, undefined, "quota validates only");
});

test("a caller's plugin named like one of the server's is refused", () => {
  assert.throws(() => serverAdmissionChain(noStore, [{ name: "settle-serve-resourcequota" }]), /plugin names are unique/);
});

test("quota judges a Pod after LimitRange's defaults are filled in, as ResourceQuota follows LimitRanger", () => {
  const store = createServerStore({ now: () => 0 });
  store.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: "q" } });
  store.create({ apiVersion: "v1", kind: "LimitRange", metadata: { name: "l", namespace: "q" }, spec: { limits: [{ type: "Container", defaultRequest: { cpu: "100m" }, default: { cpu: "200m" } }] } } as never);
  store.create({ apiVersion: "v1", kind: "ResourceQuota", metadata: { name: "r", namespace: "q" }, spec: { hard: { "requests.cpu": "50m" } }, status: { hard: { "requests.cpu": "50m" }, used: { "requests.cpu": "0" } } } as never);
  // Without the default the pod would be refused for not specifying requests.cpu at all; with it, for the 100m.
  const pod = { apiVersion: "v1", kind: "Pod", metadata: { name: "a", namespace: "q" }, spec: { containers: [{ name: "c", image: "x" }] } } as never;
  assert.throws(() => store.create(pod), /exceeded quota: r, requested: requests\.cpu=100m/);
});
