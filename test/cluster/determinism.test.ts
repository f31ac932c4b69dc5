// The cluster actors are deterministic: one seed, one trace; the recorded choices and faults replay it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createSimulation } from "../../src/sim/index.ts";
import type { FaultBudget } from "../../src/sim/index.ts";
import { cluster, clusterExternals } from "../../src/cluster/index.ts";
import { deployment, ns, registry } from "./helpers.ts";

function build(seed: number) {
  const sim = createSimulation({ seed, traceMode: "full" });
  sim.store.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: ns } });
  for (const [name, value] of Object.entries(clusterExternals({ nodes: 2, registry }))) sim.defineExternal(name, value);
  for (const actor of cluster({ nodes: 2 })) sim.addActor(actor);
  sim.store.create(deployment(3));
  return sim;
}

test("the same seed gives the same trace, and replaying its choices and faults reproduces it", async () => {
  const budget: FaultBudget = { chance: [1, 10], counts: { crash: 3, "fail-request": 3, "close-watch": 3 } };
  const first = await build(7).run({ untilMs: Date.UTC(2026, 0, 1, 0, 1), faultBudget: budget });
  const second = await build(7).run({ untilMs: Date.UTC(2026, 0, 1, 0, 1), faultBudget: budget });
  assert.equal(first.traceHash, second.traceHash);
  assert.ok(first.faults.length > 0, "faults were drawn");
  const replay = await build(7).run({ untilMs: Date.UTC(2026, 0, 1, 0, 1), choices: first.choices, faults: first.faults, expectTrace: first.trace });
  assert.equal(replay.status, "until", replay.message);
  assert.equal(replay.traceHash, first.traceHash);
  const other = await build(8).run({ untilMs: Date.UTC(2026, 0, 1, 0, 1), faultBudget: budget });
  assert.notEqual(other.traceHash, first.traceHash);
});

/** A cluster with the optional actors (StatefulSets, endpoints, pod networking) and work for each of them. */
function buildWithOptional(seed: number) {
  const sim = createSimulation({ seed, traceMode: "full" });
  sim.store.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: ns } });
  for (const [name, value] of Object.entries(clusterExternals({ nodes: 2, registry }))) sim.defineExternal(name, value);
  for (const actor of cluster({ nodes: 2, network: true, with: ["statefulset-controller", "endpoints-controller", "endpointslice-controller"] })) sim.addActor(actor);
  sim.store.create(deployment(2));
  sim.store.create({ apiVersion: "v1", kind: "Service", metadata: { name: "web", namespace: ns }, spec: { selector: { app: "web" }, ports: [{ port: 80 }] } });
  const template = { metadata: { labels: { app: "db" } }, spec: { containers: [{ name: "db", image: "web:v1" }] } };
  sim.store.create({ apiVersion: "apps/v1", kind: "StatefulSet", metadata: { name: "db", namespace: ns }, spec: { replicas: 2, serviceName: "db", selector: { matchLabels: { app: "db" } }, template } });
  return sim;
}

test("with StatefulSets, endpoints and pod networking the same seed still gives the same trace, and its replay reproduces it", async () => {
  const budget: FaultBudget = { chance: [1, 10], counts: { crash: 3, "fail-request": 3, "close-watch": 3, "stale-read": 3 } };
  const untilMs = Date.UTC(2026, 0, 1, 0, 1);
  const first = await buildWithOptional(9).run({ untilMs, faultBudget: budget });
  const second = await buildWithOptional(9).run({ untilMs, faultBudget: budget });
  assert.equal(first.traceHash, second.traceHash);
  assert.ok(first.faults.length > 0, "faults were drawn");
  const replay = await buildWithOptional(9).run({ untilMs, choices: first.choices, faults: first.faults, expectTrace: first.trace });
  assert.equal(replay.status, "until", replay.message);
  assert.equal(replay.traceHash, first.traceHash);
});
