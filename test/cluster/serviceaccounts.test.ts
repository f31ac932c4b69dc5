// The service account controller: every namespace that is not being deleted gets a `default` ServiceAccount, again
// after someone deletes it; a terminating namespace gets none.
import { test } from "node:test";
import assert from "node:assert/strict";
import { cluster } from "../../src/cluster/index.ts";
import type { Simulation } from "../../src/sim/index.ts";
import { list, ns, runFor, world } from "./helpers.ts";

const accounts = (sim: Simulation) => list(sim, "v1", "ServiceAccount").map((a) => `${a.metadata.namespace}/${a.metadata.name}`).sort();

test("every namespace gets a default ServiceAccount, again after it is deleted, and a terminating one gets none", async () => {
  const sim = world(5, { actors: cluster({ nodes: 1, with: ["serviceaccount-controller"] }) });
  await runFor(sim, 5_000);
  const namespaces = list(sim, "v1", "Namespace").map((n) => n.metadata.name);
  assert.ok(namespaces.includes(ns) && namespaces.includes("kube-system"));
  assert.deepEqual(accounts(sim), namespaces.map((n) => `${n}/default`).sort());

  sim.store.delete({ apiVersion: "v1", kind: "ServiceAccount", namespace: ns, name: "default" });
  sim.store.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: "later" } });
  // A namespace held by a finalizer stays, terminating: nothing is created in it.
  sim.store.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: "going", finalizers: ["example.com/hold"] } });
  sim.store.delete({ apiVersion: "v1", kind: "Namespace", name: "going" });
  await runFor(sim, 5_000);
  const after = accounts(sim);
  assert.ok(after.includes(`${ns}/default`), "re-created after its deletion");
  assert.ok(after.includes("later/default"), "a new namespace gets one");
  const going = list(sim, "v1", "Namespace").find((n) => n.metadata.name === "going");
  assert.ok(going?.metadata.deletionTimestamp !== undefined, "the held namespace is still there, terminating");
  assert.ok(!after.includes("going/default"), "a terminating namespace gets none");
});

test("without the option, the cluster creates no ServiceAccount (recorded runs replay unchanged)", async () => {
  const sim = world(5, { actors: cluster({ nodes: 1 }) });
  await runFor(sim, 5_000);
  assert.deepEqual(accounts(sim), []);
});
