// The root CA publisher: every namespace that is not being deleted gets a `kube-root-ca.crt` ConfigMap with the
// cluster's CA, again after someone deletes it, set back after someone changes it; a terminating namespace gets none.
import { test } from "node:test";
import assert from "node:assert/strict";
import { cluster, rootCaConfigMap, simulatedRootCa } from "../../src/cluster/index.ts";
import type { Simulation } from "../../src/sim/index.ts";
import { list, ns, runFor, world } from "./helpers.ts";

const published = (sim: Simulation) =>
  Object.fromEntries(list(sim, "v1", "ConfigMap").filter((cm) => cm.metadata.name === rootCaConfigMap).map((cm) => [cm.metadata.namespace, (cm.data as Record<string, string>)["ca.crt"]]));

test("every namespace gets kube-root-ca.crt with the cluster's CA, again after it is deleted or changed", async () => {
  const ca = "-----BEGIN CERTIFICATE-----\nTEST\n-----END CERTIFICATE-----\n";
  const sim = world(6, { actors: cluster({ nodes: 1, with: ["root-ca-cert-publisher"], rootCa: ca }) });
  await runFor(sim, 5_000);
  const namespaces = list(sim, "v1", "Namespace").map((n) => n.metadata.name ?? "");
  assert.deepEqual(published(sim), Object.fromEntries(namespaces.map((n) => [n, ca])));
  const ref = { apiVersion: "v1", kind: "ConfigMap", namespace: ns, name: rootCaConfigMap };
  sim.store.delete(ref);
  sim.store.patch({ ...ref, namespace: "kube-system", patchType: "merge", patch: { data: { "ca.crt": "tampered", extra: "x" } } });
  sim.store.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: "going", finalizers: ["example.com/hold"] } });
  sim.store.delete({ apiVersion: "v1", kind: "Namespace", name: "going" });
  await runFor(sim, 5_000);
  const after = published(sim);
  assert.equal(after[ns], ca, "made again after its deletion");
  assert.deepEqual(sim.view().get({ ...ref, namespace: "kube-system" })?.data, { "ca.crt": ca }, "set back after a change");
  assert.equal(after.going, undefined, "a terminating namespace gets none");
});

test("without a certificate the cluster publishes a stand-in; without the option, nothing", async () => {
  const sim = world(6, { actors: cluster({ nodes: 1, with: ["root-ca-cert-publisher"] }) });
  await runFor(sim, 5_000);
  assert.equal(published(sim)[ns], simulatedRootCa);
  const plain = world(6, { actors: cluster({ nodes: 1 }) });
  await runFor(plain, 5_000);
  assert.deepEqual(published(plain), {});
});
