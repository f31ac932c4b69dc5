// From client-side to server-side apply: the manager "kubectl" takes back, without force, the fields its
// last-applied annotation still holds at their live values, and keeps that annotation current; other managers, and
// fields someone else changed since, still conflict. Over HTTP as kubectl sends it, and with kubectl 1.35 itself.
import { test } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { parse as parseYaml } from "yaml";
import { kubectl, request, testServer } from "./helpers.ts";
import type { TestServer } from "./helpers.ts";

const annotation = "kubectl.kubernetes.io/last-applied-configuration";
const path = "/api/v1/namespaces/default/configmaps/app";

/** A ConfigMap as client-side `kubectl apply` creates it: the annotation, and its fields owned by an Update. */
async function createdClientSide(t: TestServer, data: Record<string, string>): Promise<void> {
  const configuration = { apiVersion: "v1", data, kind: "ConfigMap", metadata: { annotations: {}, name: "app", namespace: "default" } };
  const body = { ...configuration, metadata: { ...configuration.metadata, annotations: { [annotation]: `${JSON.stringify(configuration)}\n` } } };
  const created = await request(t.server, "POST", "/api/v1/namespaces/default/configmaps?fieldManager=kubectl-client-side-apply", { body });
  assert.equal(created.status, 201);
}

const apply = (t: TestServer, manager: string, data: string) =>
  request(t.server, "PATCH", `${path}?fieldManager=${manager}`, { raw: `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app, namespace: default}\ndata: {${data}}\n`, contentType: "application/apply-patch+yaml" });

test("kubectl's server-side apply takes its client-side fields without force and rewrites the annotation; others conflict", async () => {
  const t = await testServer();
  try {
    await createdClientSide(t, { a: "1", b: "1" });
    const other = await apply(t, "helm", "a: '2'");
    assert.equal(other.status, 409, "only the manager named kubectl is forgiven");
    const applied = await apply(t, "kubectl", "a: '2', b: '1', c: '3'");
    assert.equal(applied.status, 200, applied.text);
    assert.deepEqual(applied.json.data, { a: "2", b: "1", c: "3" });
    const owners = Object.fromEntries(applied.json.metadata.managedFields.map((e: any) => [e.manager, Object.keys(e.fieldsV1["f:data"] ?? {}).sort()]));
    assert.deepEqual(owners["kubectl"], ["f:a", "f:b", "f:c"]);
    assert.deepEqual(owners["kubectl-client-side-apply"], ["f:b"], "a field applied at the same value stays shared");
    assert.equal(applied.json.metadata.annotations[annotation], '{"apiVersion":"v1","data":{"a":"2","b":"1","c":"3"},"kind":"ConfigMap","metadata":{"name":"app","namespace":"default"}}\n');
  } finally {
    await t.close();
  }
});

test("a field changed by someone else since the client-side apply still conflicts, and only that one", async () => {
  const t = await testServer();
  try {
    await createdClientSide(t, { a: "1", b: "1" });
    const edited = await request(t.server, "PATCH", `${path}?fieldManager=editor`, { body: { data: { b: "9" } }, contentType: "application/merge-patch+json" });
    assert.equal(edited.status, 200);
    const refused = await apply(t, "kubectl", "a: '2', b: '2'");
    assert.equal(refused.status, 409);
    assert.deepEqual(refused.json.details.causes.map((c: any) => c.field), [".data.b"]);
    assert.match(refused.json.message, /conflict with "editor"/);
    const stored = t.server.store.get({ apiVersion: "v1", kind: "ConfigMap", namespace: "default", name: "app" });
    assert.deepEqual(stored.data, { a: "1", b: "9" }, "a refused apply writes nothing");
  } finally {
    await t.close();
  }
});

test("without the annotation, kubectl's apply conflicts as any manager's does, and none is added", async () => {
  const t = await testServer();
  try {
    const created = await request(t.server, "POST", "/api/v1/namespaces/default/configmaps?fieldManager=editor", { body: { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "app" }, data: { a: "1" } } });
    assert.equal(created.status, 201);
    assert.equal((await apply(t, "kubectl", "a: '2'")).status, 409);
    const shared = await apply(t, "kubectl", "a: '1'");
    assert.equal(shared.status, 200);
    assert.equal(shared.json.metadata.annotations?.[annotation], undefined);
  } finally {
    await t.close();
  }
});

test("a client may write managedFields: a JSON patch or an update replaces the entries, one empty entry clears them", async () => {
  const t = await testServer();
  try {
    await createdClientSide(t, { a: "1" });
    const entry = (manager: string, fields: unknown) => ({ manager, operation: "Apply", apiVersion: "v1", time: "2026-01-01T00:00:00Z", fieldsType: "FieldsV1", fieldsV1: fields });
    const moved = [entry("kubectl", { "f:data": { "f:a": {} }, "f:metadata": { "f:annotations": { [`f:${annotation}`]: {} } } })];
    const patched = await request(t.server, "PATCH", `${path}?fieldManager=kubectl`, { body: [{ op: "replace", path: "/metadata/managedFields", value: moved }], contentType: "application/json-patch+json" });
    assert.equal(patched.status, 200, patched.text);
    assert.deepEqual(patched.json.metadata.managedFields, moved);
    assert.deepEqual((await request(t.server, "GET", path)).json.metadata.managedFields, moved);
    // An update that also changes a field: its manager's Update entry is recorded on top of the entries it wrote.
    const current = (await request(t.server, "GET", path)).json;
    const updated = await request(t.server, "PUT", `${path}?fieldManager=editor`, { body: { ...current, data: { a: "2" }, metadata: { ...current.metadata, managedFields: [entry("other", { "f:data": { "f:a": {} } })] } } });
    assert.equal(updated.status, 200, updated.text);
    assert.deepEqual(updated.json.metadata.managedFields.map((e: any) => [e.manager, e.operation]), [["editor", "Update"]], "the field changed hands to the writer");
    const cleared = await request(t.server, "PATCH", path, { body: { metadata: { managedFields: [{}] } }, contentType: "application/merge-patch+json" });
    assert.equal(cleared.status, 200, cleared.text);
    assert.equal(cleared.json.metadata.managedFields, undefined);
    const kept = await request(t.server, "PATCH", `${path}?fieldManager=x`, { body: { metadata: { managedFields: [{ manager: 1 }] } }, contentType: "application/merge-patch+json" });
    assert.equal(kept.status, 200, "managedFields that do not decode are ignored, as on a real server");
  } finally {
    await t.close();
  }
});

test("kubectl 1.35: apply, then apply --server-side of a changed manifest, then apply again, with no conflict", async () => {
  const t = await testServer();
  try {
    const file = join(t.dir, "cm.yaml");
    const manifest = (value: string) => writeFileSync(file, `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app}\ndata: {mode: "${value}", keep: "x"}\n`);
    const run = async (args: string[]) => {
      const result = await kubectl(t, args);
      assert.equal(result.code, 0, `kubectl ${args.join(" ")}: ${result.stderr}`);
      return result.stdout;
    };
    manifest("one");
    await run(["apply", "-f", file]);
    manifest("two");
    const upgraded = await kubectl(t, ["apply", "--server-side", "-f", file]);
    assert.equal(upgraded.code, 0, upgraded.stderr);
    assert.match(upgraded.stdout, /serverside-applied/);
    // kubectl then moves the client-side entry's fields to its own with a JSON patch of managedFields.
    assert.doesNotMatch(upgraded.stderr, /rejected managed fields migration/);
    const managers = parseYaml(await run(["get", "configmap", "app", "-o", "yaml", "--show-managed-fields"])).metadata.managedFields.map((e: any) => e.manager);
    assert.ok(!managers.includes("kubectl-client-side-apply"), managers.join(" "));
    const cm = parseYaml(await run(["get", "configmap", "app", "-o", "yaml"]));
    assert.equal(cm.data.mode, "two");
    assert.deepEqual(JSON.parse(cm.metadata.annotations[annotation]).data, { keep: "x", mode: "two" });
    manifest("three");
    await run(["apply", "-f", file]);
    assert.equal(parseYaml(await run(["get", "configmap", "app", "-o", "yaml"])).data.mode, "three");
  } finally {
    await t.close();
  }
});
