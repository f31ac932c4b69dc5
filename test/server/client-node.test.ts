// @kubernetes/client-node 1.4.0 against the server: typed CRUD, custom objects, and an informer that sees every
// event and recovers from a 410 by relisting.
import { test } from "node:test";
import assert from "node:assert/strict";
import * as k8s from "@kubernetes/client-node";
import { realClock } from "../../src/api/clock.ts";
import { createStore } from "../../src/store/index.ts";
import { testServer, widgetCrd } from "./helpers.ts";
import type { TestServer } from "./helpers.ts";

function config(t: TestServer): k8s.KubeConfig {
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(t.kubeconfig);
  return kc;
}

async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (check()) return;
    await realClock.sleep(10);
  }
  assert.fail(`never happened: ${what}`);
}

test("client-node creates, reads, replaces, patches and deletes ConfigMaps and custom objects", async () => {
  const t = await testServer();
  try {
    const kc = config(t);
    const core = kc.makeApiClient(k8s.CoreV1Api);
    const created = await core.createNamespacedConfigMap({ namespace: "default", body: { metadata: { name: "a" }, data: { x: "1" } } });
    assert.equal(created.metadata?.namespace, "default");
    const read = await core.readNamespacedConfigMap({ name: "a", namespace: "default" });
    assert.deepEqual(read.data, { x: "1" });
    const replaced = await core.replaceNamespacedConfigMap({ name: "a", namespace: "default", body: { ...read, data: { x: "2" } } });
    assert.deepEqual(replaced.data, { x: "2" });
    const patched = await core.patchNamespacedConfigMap(
      { name: "a", namespace: "default", body: { data: { y: "3" } } },
      k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
    );
    assert.deepEqual(patched.data, { x: "2", y: "3" });
    const list = await core.listNamespacedConfigMap({ namespace: "default", labelSelector: "" });
    assert.deepEqual(list.items.map((c) => c.metadata?.name), ["a"]);
    await core.deleteNamespacedConfigMap({ name: "a", namespace: "default" });
    await assert.rejects(core.readNamespacedConfigMap({ name: "a", namespace: "default" }), (error: any) => error.code === 404);

    await kc.makeApiClient(k8s.ApiextensionsV1Api).createCustomResourceDefinition({ body: widgetCrd as k8s.V1CustomResourceDefinition });
    const custom = kc.makeApiClient(k8s.CustomObjectsApi);
    const ref = { group: "example.com", version: "v1", namespace: "default", plural: "widgets" };
    await custom.createNamespacedCustomObject({ ...ref, body: { apiVersion: "example.com/v1", kind: "Widget", metadata: { name: "w" }, spec: { size: 1 } } });
    const widget = await custom.getNamespacedCustomObject({ ...ref, name: "w" });
    assert.equal(widget.spec.size, 1);
    const listed = await custom.listNamespacedCustomObject(ref);
    assert.equal(listed.items.length, 1);
  } finally {
    await t.close();
  }
});

test("a client-node informer sees every event, and after a 410 it relists to the store's state", async () => {
  const t = await testServer({ store: createStore({ historyRevisionsMax: 20, now: () => realClock.now() }) });
  const kc = config(t);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const informer = k8s.makeInformer(kc, "/api/v1/namespaces/default/configmaps", () => core.listNamespacedConfigMap({ namespace: "default" }));
  const seen: string[] = [];
  const errors: unknown[] = [];
  informer.on("add", (cm) => seen.push(`add ${cm.metadata?.name}`));
  informer.on("update", (cm) => seen.push(`update ${cm.metadata?.name}`));
  informer.on("delete", (cm) => seen.push(`delete ${cm.metadata?.name}`));
  informer.on("error", (error) => errors.push(error));
  try {
    await informer.start();
    await until(() => t.server.watches === 1, "the informer watches");
    await core.createNamespacedConfigMap({ namespace: "default", body: { metadata: { name: "a" } } });
    await core.createNamespacedConfigMap({ namespace: "default", body: { metadata: { name: "b" } } });
    await core.patchNamespacedConfigMap({ name: "a", namespace: "default", body: { data: { k: "v" } } }, k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch));
    await core.deleteNamespacedConfigMap({ name: "b", namespace: "default" });
    await until(() => seen.length === 4, "four events");
    assert.deepEqual(seen, ["add a", "add b", "update a", "delete b"]);

    // In one synchronous stretch: drop the watch, change ConfigMaps, and write enough elsewhere that the
    // informer's revision is compacted away before it can reconnect. Its resumed watch must get a 410.
    const store = t.server.store;
    const lastSeen = Number((informer as unknown as k8s.ListWatch<k8s.V1ConfigMap>).latestResourceVersion());
    assert.equal(t.server.closeWatches(), 1);
    store.create({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "c", namespace: "default" } });
    store.delete({ apiVersion: "v1", kind: "ConfigMap", namespace: "default", name: "a" });
    for (let i = 0; i < 30; i++) store.create({ apiVersion: "v1", kind: "Secret", metadata: { name: `s${i}`, namespace: "default" } });
    assert.ok(store.compactedRevision > lastSeen);

    await until(() => seen.includes("add c") && seen.includes("delete a"), "the relist");
    assert.deepEqual(informer.list().map((cm) => cm.metadata?.name), ["c"]);
    assert.deepEqual(errors, []);
    await core.createNamespacedConfigMap({ namespace: "default", body: { metadata: { name: "d" } } });
    await until(() => seen.includes("add d"), "a watch event after the relist");
  } finally {
    await informer.stop();
    await t.close();
  }
});
