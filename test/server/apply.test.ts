// Server-side apply over HTTP: create if absent, fieldManager required, ownership, conflicts, force, removal of
// fields a manager stops applying, and ownership taken by ordinary updates.
import { test } from "node:test";
import assert from "node:assert/strict";
import { request, testServer } from "./helpers.ts";
import type { TestServer } from "./helpers.ts";

const path = "/api/v1/namespaces/default/configmaps/app";
const apply = (t: TestServer, body: string, query: string) => request(t.server, "PATCH", `${path}?${query}`, { raw: body, contentType: "application/apply-patch+yaml" });
const cm = (data: string) => `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app}\ndata: {${data}}\n`;

test("apply creates an absent object with 201, then updates it with 200, and needs a fieldManager (422)", async () => {
  const t = await testServer();
  try {
    assert.equal((await apply(t, cm("a: '1'"), "")).status, 422);
    const created = await apply(t, cm("a: '1'"), "fieldManager=one");
    assert.equal(created.status, 201);
    assert.equal(created.json.metadata.managedFields[0].manager, "one");
    assert.deepEqual(created.json.metadata.managedFields[0].fieldsV1, { "f:data": { "f:a": {} } });
    const updated = await apply(t, cm("a: '2'"), "fieldManager=one");
    assert.equal(updated.status, 200);
    assert.deepEqual(updated.json.data, { a: "2" });
    assert.equal((await apply(t, "{kind: ConfigMap}", "fieldManager=one")).status, 400);
    assert.equal((await apply(t, cm("a: '1'").replace("name: app", "name: other"), "fieldManager=one")).status, 400);
    assert.equal((await request(t.server, "PATCH", `${path}?force=true`, { body: { data: {} }, contentType: "application/merge-patch+json" })).status, 422);
  } finally {
    await t.close();
  }
});

test("a second manager changing the first one's field gets a 409 naming it; force takes the field", async () => {
  const t = await testServer();
  try {
    await apply(t, cm("a: '1', b: '1'"), "fieldManager=one");
    const shared = await apply(t, cm("a: '1'"), "fieldManager=two");
    assert.equal(shared.status, 200, "the same value is shared ownership, not a conflict");
    const conflict = await apply(t, cm("b: '2'"), "fieldManager=two");
    assert.equal(conflict.status, 409);
    assert.match(conflict.json.message, /conflict with "one"/);
    assert.deepEqual(conflict.json.details.causes, [{ reason: "FieldManagerConflict", message: 'conflict with "one" using v1', field: ".data.b" }]);
    assert.equal((t.server.store.get({ apiVersion: "v1", kind: "ConfigMap", namespace: "default", name: "app" }).data as Record<string, string>).b, "1");
    const forced = await apply(t, cm("b: '2'"), "fieldManager=two&force=true");
    assert.equal(forced.status, 200);
    const managers = Object.fromEntries(forced.json.metadata.managedFields.map((e: any) => [e.manager, Object.keys(e.fieldsV1["f:data"]).sort()]));
    assert.deepEqual(managers, { one: ["f:a"], two: ["f:b"] });
    // "one" stops applying `a`, but "two" applied it too (before): it stays. Then "two" lets go of it as well.
    await apply(t, cm("b: '2'"), "fieldManager=two");
    const alone = await apply(t, cm("c: '3'"), "fieldManager=one");
    assert.deepEqual(alone.json.data, { b: "2", c: "3" });
  } finally {
    await t.close();
  }
});

test("fields a manager no longer applies are removed, unless another manager owns them", async () => {
  const t = await testServer();
  try {
    await apply(t, cm("a: '1', b: '1'"), "fieldManager=one");
    await request(t.server, "PATCH", `${path}?fieldManager=editor`, { body: { data: { b: "9" } }, contentType: "application/merge-patch+json" });
    const after = await apply(t, cm("c: '1'"), "fieldManager=one");
    assert.deepEqual(after.json.data, { b: "9", c: "1" });
    const editor = after.json.metadata.managedFields.find((e: any) => e.manager === "editor");
    assert.deepEqual(editor.operation, "Update");
    assert.deepEqual(editor.fieldsV1, { "f:data": { "f:b": {} } });
  } finally {
    await t.close();
  }
});

test("apply on a deployment merges containers by name and env by name, and drops a removed env var", async () => {
  const t = await testServer();
  try {
    const deploy = (env: string) => `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: web, image: nginx, env: [${env}]}
`;
    const url = "/apis/apps/v1/namespaces/default/deployments/web?fieldManager=me";
    await request(t.server, "PATCH", url, { raw: deploy("{name: A, value: '1'}, {name: B, value: '2'}"), contentType: "application/apply-patch+yaml" });
    await request(t.server, "PATCH", "/apis/apps/v1/namespaces/default/deployments/web", { body: { spec: { template: { spec: { containers: [{ name: "side", image: "busybox" }] } } } }, contentType: "application/strategic-merge-patch+json" });
    const out = await request(t.server, "PATCH", url, { raw: deploy("{name: B, value: '3'}"), contentType: "application/apply-patch+yaml" });
    assert.equal(out.status, 200, out.text);
    const containers = out.json.spec.template.spec.containers;
    assert.deepEqual(containers.map((c: any) => c.name), ["web", "side"]);
    assert.deepEqual(containers[0].env, [{ name: "B", value: "3" }]);
    assert.equal(out.json.metadata.generation, 3);
  } finally {
    await t.close();
  }
});

test("apply matches a Service port without a protocol to the stored TCP one (key fields take their defaults)", async () => {
  const t = await testServer();
  try {
    const service = (ports: string) => `apiVersion: v1\nkind: Service\nmetadata: {name: db}\nspec:\n  clusterIP: None\n  ports: [${ports}]\n`;
    const url = "/api/v1/namespaces/default/services/db?fieldManager=helm";
    const first = await request(t.server, "PATCH", url, { raw: service("{name: pg, port: 5432}"), contentType: "application/apply-patch+yaml" });
    assert.equal(first.status, 201, first.text);
    assert.equal(first.json.spec.ports[0].protocol, "TCP", "defaulted when stored");
    // The same configuration again, and a change of the port's target: still one port, no duplicate name.
    const again = await request(t.server, "PATCH", url, { raw: service("{name: pg, port: 5432, targetPort: 6432}"), contentType: "application/apply-patch+yaml" });
    assert.equal(again.status, 200, again.text);
    assert.deepEqual(again.json.spec.ports, [{ name: "pg", port: 5432, protocol: "TCP", targetPort: 6432 }]);
  } finally {
    await t.close();
  }
});
