// autoscaling/v1 HorizontalPodAutoscalers: a conversion of the stored autoscaling/v2 object, both ways, so that
// v1 clients see `targetCPUUtilizationPercentage` and a read-modify-write through v1 loses nothing v2 said.
import { test } from "node:test";
import assert from "node:assert/strict";
import { kubectl, readEvents, request, testServer, watchRequest } from "./helpers.ts";

const v1 = "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers";
const v2 = "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers";
const target = { apiVersion: "apps/v1", kind: "Deployment", name: "web" };

const v2Hpa = {
  apiVersion: "autoscaling/v2",
  kind: "HorizontalPodAutoscaler",
  metadata: { name: "web", annotations: { team: "a" } },
  spec: {
    scaleTargetRef: target,
    minReplicas: 2,
    maxReplicas: 5,
    metrics: [
      { type: "Resource", resource: { name: "cpu", target: { type: "Utilization", averageUtilization: 50 } } },
      { type: "Pods", pods: { metric: { name: "qps" }, target: { type: "AverageValue", averageValue: "10" } } },
    ],
    behavior: { scaleDown: { stabilizationWindowSeconds: 60 } },
  },
};

test("a v2 HPA read as v1 has its CPU target as targetCPUUtilizationPercentage and the rest in annotations", async () => {
  const t = await testServer();
  try {
    assert.equal((await request(t.server, "POST", v2, { body: v2Hpa })).status, 201);
    const got = await request(t.server, "GET", `${v1}/web`);
    assert.equal(got.status, 200, got.text);
    assert.equal(got.json.apiVersion, "autoscaling/v1");
    assert.deepEqual(got.json.spec, { scaleTargetRef: target, minReplicas: 2, maxReplicas: 5, targetCPUUtilizationPercentage: 50 });
    assert.deepEqual(got.json.status, { currentReplicas: 0, desiredReplicas: 0 });
    const annotations = got.json.metadata.annotations;
    assert.equal(annotations.team, "a");
    assert.deepEqual(JSON.parse(annotations["autoscaling.alpha.kubernetes.io/metrics"]), [{ type: "Pods", pods: { metricName: "qps", targetAverageValue: "10" } }]);
    // The behavior annotation holds the internal type as Go writes it: field names capitalized.
    assert.equal(JSON.parse(annotations["autoscaling.alpha.kubernetes.io/behavior"]).ScaleDown.StabilizationWindowSeconds, 60);
    const list = await request(t.server, "GET", v1);
    assert.equal(list.json.apiVersion, "autoscaling/v1");
    assert.equal(list.json.kind, "HorizontalPodAutoscalerList");
    assert.equal(list.json.items[0].spec.targetCPUUtilizationPercentage, 50);
  } finally {
    await t.close();
  }
});

test("a read-modify-write through v1 keeps the v2 metrics and behavior, and the annotations do not reach v2", async () => {
  const t = await testServer();
  try {
    await request(t.server, "POST", v2, { body: v2Hpa });
    const read = (await request(t.server, "GET", `${v1}/web`)).json;
    const put = await request(t.server, "PUT", `${v1}/web`, { body: { ...read, spec: { ...read.spec, maxReplicas: 7, targetCPUUtilizationPercentage: 65 } } });
    assert.equal(put.status, 200, put.text);
    assert.equal(put.json.spec.maxReplicas, 7);
    const stored = (await request(t.server, "GET", `${v2}/web`)).json;
    assert.deepEqual(stored.metadata.annotations, { team: "a" });
    // As upstream converts: the annotation's metrics first, then the CPU target.
    assert.deepEqual(stored.spec.metrics, [
      { type: "Pods", pods: { metric: { name: "qps" }, target: { type: "AverageValue", averageValue: "10" } } },
      { type: "Resource", resource: { name: "cpu", target: { type: "Utilization", averageUtilization: 65 } } },
    ]);
    assert.equal(stored.spec.behavior.scaleDown.stabilizationWindowSeconds, 60);
    const patched = await request(t.server, "PATCH", `${v1}/web`, { body: { spec: { targetCPUUtilizationPercentage: 30 } }, contentType: "application/merge-patch+json" });
    assert.equal(patched.status, 200, patched.text);
    const after = (await request(t.server, "GET", `${v2}/web`)).json;
    assert.deepEqual(after.spec.metrics.map((m: any) => m.type), ["Pods", "Resource"]);
    assert.equal(after.spec.metrics[1].resource.target.averageUtilization, 30);
  } finally {
    await t.close();
  }
});

test("a v1 HPA is stored as v2: its CPU target becomes a Resource metric, none at all the implied 80%", async () => {
  const t = await testServer();
  try {
    const body = { apiVersion: "autoscaling/v1", kind: "HorizontalPodAutoscaler", metadata: { name: "a" }, spec: { scaleTargetRef: target, maxReplicas: 3, targetCPUUtilizationPercentage: 70 } };
    const created = await request(t.server, "POST", v1, { body });
    assert.equal(created.status, 201, created.text);
    assert.equal(created.json.spec.targetCPUUtilizationPercentage, 70);
    assert.equal(created.json.spec.minReplicas, 1, "defaulted in v2, seen in v1");
    const stored = (await request(t.server, "GET", `${v2}/a`)).json;
    assert.deepEqual(stored.spec.metrics, [{ type: "Resource", resource: { name: "cpu", target: { type: "Utilization", averageUtilization: 70 } } }]);
    await request(t.server, "POST", v1, { body: { ...body, metadata: { name: "b" }, spec: { scaleTargetRef: target, maxReplicas: 3 } } });
    assert.equal((await request(t.server, "GET", `${v2}/b`)).json.spec.metrics[0].resource.target.averageUtilization, 80);
  } finally {
    await t.close();
  }
});

test("v2 status shows in v1 as currentCPUUtilizationPercentage, with the full metrics and conditions in annotations", async () => {
  const t = await testServer();
  try {
    await request(t.server, "POST", v2, { body: v2Hpa });
    const current = (await request(t.server, "GET", `${v2}/web`)).json;
    const status = {
      currentReplicas: 2,
      desiredReplicas: 3,
      currentMetrics: [{ type: "Resource", resource: { name: "cpu", current: { averageUtilization: 42, averageValue: "120m" } } }],
      conditions: [{ type: "AbleToScale", status: "True", lastTransitionTime: "2026-01-01T00:00:00Z", reason: "ReadyForNewScale" }],
    };
    assert.equal((await request(t.server, "PUT", `${v2}/web/status`, { body: { ...current, status } })).status, 200);
    const watch = await watchRequest(t.server, `${v1}?watch=true`);
    const [event] = await readEvents(watch, (e) => e.length >= 1);
    assert.equal(event.object.apiVersion, "autoscaling/v1");
    assert.deepEqual(event.object.status, { currentReplicas: 2, desiredReplicas: 3, currentCPUUtilizationPercentage: 42 });
    const annotations = event.object.metadata.annotations;
    assert.deepEqual(JSON.parse(annotations["autoscaling.alpha.kubernetes.io/current-metrics"]), [{ type: "Resource", resource: { name: "cpu", currentAverageUtilization: 42, currentAverageValue: "120m" } }]);
    assert.equal(JSON.parse(annotations["autoscaling.alpha.kubernetes.io/conditions"])[0].type, "AbleToScale");
  } finally {
    await t.close();
  }
});

test("discovery serves autoscaling v2 (preferred) and v1, and kubectl reads and applies v1 HPAs", async () => {
  const t = await testServer();
  try {
    const group = (await request(t.server, "GET", "/apis/autoscaling")).json;
    assert.deepEqual(group.versions.map((v: any) => v.version), ["v2", "v1"]);
    assert.equal(group.preferredVersion.version, "v2");
    const names = (await request(t.server, "GET", "/apis/autoscaling/v1")).json.resources.map((r: any) => r.name);
    assert.deepEqual(names, ["horizontalpodautoscalers", "horizontalpodautoscalers/status"]);
    assert.ok((await request(t.server, "GET", "/openapi/v3/apis/autoscaling/v1")).json.components.schemas["io.k8s.api.autoscaling.v1.HorizontalPodAutoscaler"] !== undefined);
    const manifest = `apiVersion: autoscaling/v1\nkind: HorizontalPodAutoscaler\nmetadata: {name: k, namespace: default}\nspec:\n  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}\n  maxReplicas: 4\n  targetCPUUtilizationPercentage: 55\n`;
    const applied = await kubectl(t, ["apply", "-f", "-"], { input: manifest });
    assert.equal(applied.code, 0, applied.stderr);
    const again = await kubectl(t, ["apply", "-f", "-"], { input: manifest.replace("55", "45") });
    assert.equal(again.code, 0, again.stderr);
    const got = await kubectl(t, ["get", "horizontalpodautoscalers.v1.autoscaling", "k", "-o", "json"]);
    assert.equal(got.code, 0, got.stderr);
    assert.equal(JSON.parse(got.stdout).spec.targetCPUUtilizationPercentage, 45);
    const viaV2 = await kubectl(t, ["get", "hpa", "k", "-o", "jsonpath={.spec.metrics[0].resource.target.averageUtilization}"]);
    assert.equal(viaV2.stdout, "45");
  } finally {
    await t.close();
  }
});
