// The autoscaler without a metrics API: a target below minReplicas (or above maxReplicas) is scaled to the bound; one
// within them keeps its replicas and the HPA says it cannot compute a count (ScalingActive=False,
// FailedGetResourceMetric) with the target's current replicas; a target at 0 replicas disables scaling; a missing
// target is FailedGetScale.
import { test } from "node:test";
import assert from "node:assert/strict";
import { cluster } from "../../src/cluster/index.ts";
import type { KubeObject } from "../../src/api/object.ts";
import type { Simulation } from "../../src/sim/index.ts";
import { ns, runFor, world } from "./helpers.ts";

const registry = { "web:v1": "sha256:w1" };

function deployment(name: string, replicas: number): KubeObject {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name, namespace: ns },
    spec: { replicas, selector: { matchLabels: { app: name } }, template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: "web", image: "web:v1" }] } } },
  } as KubeObject;
}

function hpa(name: string, target: string, min: number, max: number): KubeObject {
  return {
    apiVersion: "autoscaling/v2",
    kind: "HorizontalPodAutoscaler",
    metadata: { name, namespace: ns },
    spec: { scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: target }, minReplicas: min, maxReplicas: max, metrics: [{ type: "Resource", resource: { name: "cpu", target: { type: "Utilization", averageUtilization: 80 } } }] },
  } as KubeObject;
}

const get = (sim: Simulation, apiVersion: string, kind: string, name: string) => sim.view().get({ apiVersion, kind, namespace: ns, name }) as any;
const conditions = (h: any) => Object.fromEntries((h.status?.conditions ?? []).map((c: any) => [c.type, `${c.status}/${c.reason}`]));

test("an HPA keeps its target within its bounds and, with no metrics, reports the target's replicas and why it cannot scale", async () => {
  const sim = world(8, { registry, actors: cluster({ nodes: 1, with: ["horizontal-pod-autoscaler"], events: true }) });
  sim.store.create(deployment("low", 1));
  sim.store.create(deployment("ok", 2));
  sim.store.create(deployment("off", 0));
  sim.store.create(hpa("low", "low", 3, 5));
  sim.store.create(hpa("ok", "ok", 1, 5));
  sim.store.create(hpa("off", "off", 1, 5));
  sim.store.create(hpa("gone", "missing", 1, 5));
  await runFor(sim, 40_000);
  assert.equal(get(sim, "apps/v1", "Deployment", "low").spec.replicas, 3, "scaled up to minReplicas");
  const low = get(sim, "autoscaling/v2", "HorizontalPodAutoscaler", "low");
  assert.equal(low.status.currentReplicas, 3, "then within bounds: the target's replicas");
  assert.ok(low.status.lastScaleTime);
  const ok = get(sim, "autoscaling/v2", "HorizontalPodAutoscaler", "ok");
  assert.equal(ok.status.currentReplicas, 2);
  assert.equal(get(sim, "apps/v1", "Deployment", "ok").spec.replicas, 2, "left alone");
  assert.deepEqual(conditions(ok), { AbleToScale: "True/SucceededGetScale", ScalingActive: "False/FailedGetResourceMetric" });
  assert.match(ok.status.conditions.find((c: any) => c.type === "ScalingActive").message, /^the HPA was unable to compute the replica count: failed to get cpu utilization: unable to get metrics for resource cpu/);
  assert.deepEqual(conditions(get(sim, "autoscaling/v2", "HorizontalPodAutoscaler", "off")), { AbleToScale: "True/SucceededGetScale", ScalingActive: "False/ScalingDisabled" });
  assert.equal(get(sim, "apps/v1", "Deployment", "off").spec.replicas, 0);
  assert.deepEqual(conditions(get(sim, "autoscaling/v2", "HorizontalPodAutoscaler", "gone")), { AbleToScale: "False/FailedGetScale" });
  const reasons = sim.view().list({ apiVersion: "v1", kind: "Event", namespace: ns }).map((e: any) => `${e.involvedObject.name}:${e.reason}`);
  assert.ok(reasons.includes("low:SuccessfulRescale"), reasons.join(" "));
  assert.ok(reasons.includes("ok:FailedGetResourceMetric"), reasons.join(" "));
});
