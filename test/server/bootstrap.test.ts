// The `kubernetes` Service a real cluster keeps in `default`, with its Endpoints and EndpointSlice naming the server,
// made when the server starts and kept when a served world already has one.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createServerStore } from "../../src/server/index.ts";
import { kubectl, testServer } from "./helpers.ts";

test("a fresh server has the kubernetes Service at 10.96.0.1:443 and endpoints naming its own port", async () => {
  const t = await testServer();
  try {
    const service = (await kubectl(t, ["get", "service", "kubernetes", "-o", "jsonpath={.spec.clusterIP} {.spec.ports[0].name} {.spec.ports[0].port} {.spec.ports[0].targetPort}"])).stdout;
    assert.equal(service, `10.96.0.1 https 443 ${t.server.port}`);
    const endpoints = (await kubectl(t, ["get", "endpoints", "kubernetes", "-o", "jsonpath={.subsets[0].addresses[0].ip}:{.subsets[0].ports[0].port}"])).stdout;
    assert.equal(endpoints, `127.0.0.1:${t.server.port}`);
    const slice = t.server.store.list({ apiVersion: "discovery.k8s.io/v1", kind: "EndpointSlice", namespace: "default", labelSelector: "kubernetes.io/service-name=kubernetes" }).items;
    assert.equal(slice.length, 1);
  } finally {
    await t.close();
  }
});

test("a store that has a kubernetes Service already keeps it, and another Service never gets its address", async () => {
  const store = createServerStore();
  store.create({ apiVersion: "v1", kind: "Service", metadata: { name: "kubernetes", namespace: "default", labels: { mine: "yes" } }, spec: { ports: [{ port: 443 }] } });
  const t = await testServer({ store });
  try {
    const kept = t.server.store.get({ apiVersion: "v1", kind: "Service", namespace: "default", name: "kubernetes" });
    assert.equal(kept.metadata.labels?.mine, "yes");
    const other = t.server.store.create({ apiVersion: "v1", kind: "Service", metadata: { name: "web", namespace: "default" }, spec: { ports: [{ port: 80 }] } });
    assert.notEqual((other.spec as { clusterIP: string }).clusterIP, "10.96.0.1");
  } finally {
    await t.close();
  }
});
