// Errors in the client's media type: kube-apiserver negotiates a Status like any object, so a client that asks for
// protobuf first gets its errors in protobuf (a `runtime.Unknown` envelope holding a v1 Status) and must be able to
// read the reason and message from them.
import { test } from "node:test";
import assert from "node:assert/strict";
import { decodeProtobuf } from "../../src/server/encoding/protobuf.ts";
import { kubectl, request, testServer, widgetCrd } from "./helpers.ts";

const protobuf = "application/vnd.kubernetes.protobuf";

async function fetchBytes(url: string, token: string, init: { method?: string; accept: string; body?: string }): Promise<{ status: number; type: string | null; bytes: Uint8Array }> {
  const headers: Record<string, string> = { authorization: `Bearer ${token}`, accept: init.accept };
  if (init.body !== undefined) headers["content-type"] = "application/json";
  const response = await fetch(url, { method: init.method ?? "GET", headers, body: init.body });
  return { status: response.status, type: response.headers.get("content-type"), bytes: new Uint8Array(await response.arrayBuffer()) };
}

test("a protobuf-only client gets a NotFound, a Conflict and an Invalid as protobuf Status objects with their details", async () => {
  const t = await testServer();
  try {
    const missing = await fetchBytes(`${t.server.url}/apis/apps/v1/namespaces/default/deployments/missing`, t.server.token, { accept: protobuf });
    assert.equal(missing.status, 404);
    assert.equal(missing.type, protobuf);
    // The k8s protobuf magic, then an envelope whose type is v1 Status whatever the group asked.
    assert.deepEqual([...missing.bytes.subarray(0, 4)], [0x6b, 0x38, 0x73, 0x00]);
    const json = (await request(t.server, "GET", "/apis/apps/v1/namespaces/default/deployments/missing")).json;
    assert.deepEqual(decodeProtobuf(missing.bytes), json);
    assert.equal(json.message, 'deployments.apps "missing" not found');

    const body = JSON.stringify({ metadata: { name: "cm" } });
    assert.equal((await request(t.server, "POST", "/api/v1/namespaces/default/configmaps", { raw: body })).status, 201);
    const conflict = await fetchBytes(`${t.server.url}/api/v1/namespaces/default/configmaps`, t.server.token, { method: "POST", accept: `${protobuf}, application/json`, body });
    assert.equal(conflict.status, 409);
    assert.equal(conflict.type, protobuf);
    const status = decodeProtobuf(conflict.bytes) as any;
    assert.equal(status.reason, "AlreadyExists");
    assert.deepEqual(status.details, { name: "cm", kind: "configmaps" });

    const invalid = await fetchBytes(`${t.server.url}/api/v1/namespaces/default/configmaps`, t.server.token, { method: "POST", accept: protobuf, body: JSON.stringify({ metadata: { name: "Bad_Name" } }) });
    assert.equal(invalid.status, 422);
    const causes = (decodeProtobuf(invalid.bytes) as any).details.causes;
    assert.equal(causes[0].field, "metadata.name");
  } finally {
    await t.close();
  }
});

test("JSON clients still get JSON errors, and a failure to negotiate is written in JSON as a real server does", async () => {
  const t = await testServer();
  try {
    const plain = await fetchBytes(`${t.server.url}/api/v1/namespaces/default/pods/missing`, t.server.token, { accept: "application/json, application/vnd.kubernetes.protobuf" });
    assert.equal(plain.status, 404);
    assert.equal(plain.type, "application/json");
    // Custom resources have no protobuf form here: a protobuf-only client cannot be served, and that 406 is JSON.
    assert.equal((await request(t.server, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", { body: widgetCrd })).status, 201);
    const custom = await fetchBytes(`${t.server.url}/apis/example.com/v1/namespaces/default/widgets`, t.server.token, { accept: protobuf });
    assert.equal(custom.status, 406);
    assert.equal(custom.type, "application/json");
  } finally {
    await t.close();
  }
});

test("kubectl's protobuf path (create token) reads the protobuf NotFound and prints the server's message", async () => {
  const t = await testServer();
  try {
    const result = await kubectl(t, ["create", "token", "missing", "-v=8"]);
    assert.equal(result.code, 1);
    assert.match(result.stderr, /error: failed to create token: serviceaccounts "missing" not found/);
    // The request asked for protobuf first and the 404 came back in protobuf: the path the fix concerns.
    assert.match(result.stderr, /Accept: application\/vnd\.kubernetes\.protobuf,application\/json/);
    assert.match(result.stderr, /404 Not Found[^]*?Content-Type: application\/vnd\.kubernetes\.protobuf/);
  } finally {
    await t.close();
  }
});
