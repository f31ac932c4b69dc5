// Ten thousand malformed and hostile requests (fast-check, pinned seed): the server stays up, the store does not
// change, and every refusal is a `Status` whose code is the HTTP status.
import { test } from "node:test";
import assert from "node:assert/strict";
import { connect } from "node:net";
import fc from "fast-check";
import { decodeProtobuf } from "../../src/server/encoding/protobuf.ts";
import { configMap, envelope, request, testServer, widgetCrd } from "./helpers.ts";

const existing = ["/api/v1/namespaces/default/configmaps/keep", "/apis/apps/v1/namespaces/default/deployments/keep", "/apis/example.com/v1/namespaces/default/widgets/keep"];
const collections = ["/api/v1/namespaces/default/configmaps", "/api/v1/namespaces", "/apis/apps/v1/namespaces/default/deployments", "/apis/example.com/v1/namespaces/default/widgets", "/api/v1/nodes", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"];
const oddPaths = ["/", "/api/v1/namespaces/default/configmaps/%zz", "/api/v1/namespaces/%2e%2e/configmaps", "//api//v1", "/apis/a/b/c/d/e/f/g/h", "/api/v1/watch/namespaces/default/configmaps/keep/status", `/api/${"v".repeat(5000)}`, "/openapi/v3/apis/example.com/v1", "/token//api", "/api/v1/namespaces/default/configmaps/keep/status", "/api/v1/namespaces/ns/status", "/apis/apps", "/settle/faults", "/settle", "/settle/faults/x"];
const badQueries = ["", "?labelSelector=a%20in%20(", "?fieldSelector=spec.nope%3D1", "?limit=-1", "?limit=abc", "?continue=garbage", "?resourceVersion=abc", "?resourceVersion=999999999", "?resourceVersion=1&resourceVersionMatch=Exact", "?resourceVersionMatch=Sideways", "?watch=maybe", "?watch=true&resourceVersion=abc", "?watch=true&sendInitialEvents=true", "?watch=true&timeoutSeconds=-5", "?watch=true&labelSelector=!!", "?dryRun=Some", "?fieldValidation=Loose", "?propagationPolicy=Sometimes", "?gracePeriodSeconds=x", "?orphanDependents=perhaps", "?fieldManager=fuzz", "?fieldManager=fuzz&force=true", "?fieldManager=fuzz&force=maybe", `?fieldManager=${"m".repeat(200)}`, "?force=true", "?includeObject=Everything", "?watch=true&includeObject=Everything&labelSelector=a%20in"];
const contentTypes = ["application/json", "application/merge-patch+json", "application/json-patch+json", "application/strategic-merge-patch+json", "application/apply-patch+yaml", "application/vnd.kubernetes.protobuf", "application/yaml", "text/plain", "application/json; charset=utf-8"];

const deepArray = `${"[".repeat(5000)}${"]".repeat(5000)}`;
const deepObject = `${'{"a":'.repeat(3000)}1${"}".repeat(3000)}`;
const hostileBodies: Array<string | Uint8Array> = [
  "",
  "{",
  "null",
  "[]",
  '"text"',
  deepArray,
  deepObject,
  "x".repeat(70 * 1024),
  '{"metadata":"x"}',
  '{"metadata":{"name":5}}',
  '{"metadata":{"name":"UPPER_case"}}',
  '{"metadata":{"name":"__proto__"}}',
  '{"apiVersion":"v2","kind":"ConfigMap","metadata":{"name":"n"}}',
  '{"kind":"Secret","metadata":{"name":"n"}}',
  '{"metadata":{"name":"keep","resourceVersion":"abc"},"data":{"a":"b"}}',
  '{"metadata":{"name":"keep"}}',
  '{"metadata":{"name":"keep","namespace":"kube-system"}}',
  '[{"op":"add","path":"/__proto__/polluted","value":1}]',
  '[{"op":"replace","path":"/nope/deeper","value":1}]',
  '[{"op":"move","from":"/metadata","path":"/metadata/x"}]',
  '[{"op":"copy"}]',
  '[1,2,3]',
  '{"$patch":"explode"}',
  '{"spec":{"size":"huge"}}',
  '{"data":{"a":1}}',
  '{"gracePeriodSeconds":"soon"}',
  '{"propagationPolicy":"Sometimes"}',
  '{"preconditions":{"uid":"not-the-uid"}}',
  "a: [unclosed",
  "--- \n--- \n",
  "a: &x [*x]",
  new Uint8Array([0x6b, 0x38, 0x73, 0x00, 0xff, 0xff, 0xff]),
  new Uint8Array([0x6b, 0x38, 0x73]),
  envelope("v1", "Pod", []),
  envelope("v1", "ConfigMap", [0x0a, 0x05, 0x0a, 0x03, 0x41, 0x42]),
  envelope("v1", "ConfigMap", [0x12, 0x80]),
  // Strategic merge and server-side apply bodies that a server must refuse.
  '{"spec":{"template":{"spec":{"containers":[{"$patch":"delete"}]}}}}',
  '{"spec":{"template":{"spec":{"containers":["text"]}}}}',
  '{"metadata":{"$retainKeys":"x"}}',
  '{"metadata":{"$setElementOrder/finalizers":{}}}',
  '{"$deleteFromPrimitiveList/x":5}',
  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: keep}\ndata: {a: [1]}\n",
  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: keep, resourceVersion: '1'}\ndata: {a: c}\n",
  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other}\n",
  "apiVersion: v1\nkind: Secret\nmetadata: {name: keep}\n",
  "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: keep}\nspec: {replicas: many}\n",
  "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: keep}\nspec: {size: huge}\n",
  "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: keep, namespace: kube-system}\n",
  '{"kind":"fail-request","code":418}',
  '[{"kind":"stale-read","lagRevisions":-1}]',
];

const requestArb = fc.record({
  method: fc.constantFrom("GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "PROPFIND"),
  path: fc.oneof(fc.constantFrom(...existing), fc.constantFrom(...collections), fc.constantFrom(...oddPaths), fc.webPath()),
  query: fc.constantFrom(...badQueries),
  contentType: fc.constantFrom(...contentTypes),
  body: fc.oneof(fc.constantFrom(...hostileBodies), fc.string({ maxLength: 200 }), fc.uint8Array({ maxLength: 200 })),
  accept: fc.constantFrom(undefined, "application/json", "application/vnd.kubernetes.protobuf", "application/json;as=Table;v=v1;g=meta.k8s.io", "*/*", "text/html"),
});

/** Query parameters that make any DELETE fail before it touches the store. */
const failingDeleteQueries = new Set(["?dryRun=Some", "?propagationPolicy=Sometimes", "?gracePeriodSeconds=x", "?orphanDependents=perhaps"]);

/**
 * Leaves out requests a server must carry out: a DELETE of an existing object or collection is valid with almost
 * any body (DeleteOptions ignore unknown fields), so those are sent only with a query that must fail.
 */
function isHostile(r: { method: string; path: string; query: string }): boolean {
  // `%2e%2e` is normalized away by the client: `/api/v1/namespaces/%2e%2e/configmaps` is `/api/v1/configmaps`.
  const real = existing.includes(r.path) || collections.includes(r.path) || r.path.includes("%2e%2e");
  if (r.method === "DELETE" && real) return failingDeleteQueries.has(r.query);
  return true;
}

test("ten thousand malformed and hostile requests leave the server up and the store unchanged, each answered by a Status", async () => {
  // Reads ahead of the store (resourceVersion=999999999) answer their 504 at once instead of after 3 s.
  const t = await testServer({ bodyBytesMax: 64 * 1024, watchTimeoutSecondsMax: 1, revisionWaitMs: 0 });
  try {
    await request(t.server, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", { body: widgetCrd });
    await request(t.server, "POST", "/api/v1/namespaces/default/configmaps", { body: configMap("keep", { a: "b" }) });
    const deployment = { apiVersion: "apps/v1", kind: "Deployment", metadata: { name: "keep" }, spec: { selector: { matchLabels: { a: "b" } }, template: { metadata: { labels: { a: "b" } }, spec: { containers: [{ name: "c", image: "i" }] } } } };
    await request(t.server, "POST", "/apis/apps/v1/namespaces/default/deployments", { body: deployment });
    await request(t.server, "POST", "/apis/example.com/v1/namespaces/default/widgets", { body: { apiVersion: "example.com/v1", kind: "Widget", metadata: { name: "keep" }, spec: { size: 1 } } });
    // Every kind the fuzzer can create has an object named "keep", the only name its bodies use: creates conflict.
    await request(t.server, "POST", "/api/v1/nodes", { body: { apiVersion: "v1", kind: "Node", metadata: { name: "keep" } } });
    await request(t.server, "POST", "/api/v1/namespaces", { body: { apiVersion: "v1", kind: "Namespace", metadata: { name: "keep" } } });
    const revision = t.server.store.revision;
    let answered = 0;
    await fc.assert(
      fc.asyncProperty(requestArb, async (r) => {
        if (!isHostile(r)) return;
        await one(r);
      }),
      { seed: 42, numRuns: 10_000 },
    );
    async function one(r: { method: string; path: string; query: string; contentType: string; body: string | Uint8Array; accept: string | undefined }) {
      {
        const headers: Record<string, string> = { authorization: `Bearer ${t.server.token}`, "content-type": r.contentType };
        if (r.accept !== undefined) headers.accept = r.accept;
        const hasBody = r.method !== "GET" && r.method !== "OPTIONS";
        const response = await fetch(`${t.server.url}${r.path}${r.query}`, { method: r.method, headers, body: hasBody ? r.body : undefined, signal: AbortSignal.timeout(5000) });
        const bytes = new Uint8Array(await response.arrayBuffer());
        const text = Buffer.from(bytes).toString("utf8");
        answered++;
        assert.equal(t.server.store.revision, revision, `${r.method} ${r.path}${r.query} ${r.contentType} ${String(r.body).slice(0, 100)} changed the store: ${text.slice(0, 300)}`);
        if (response.status >= 200 && response.status < 300) return;
        // A client that asks for protobuf first gets its errors in protobuf, as from kube-apiserver.
        const status = response.headers.get("content-type") === "application/vnd.kubernetes.protobuf" ? decodeProtobuf(bytes) : JSON.parse(text);
        assert.equal(status.kind, "Status", `${r.method} ${r.path}${r.query}: ${text.slice(0, 200)}`);
        assert.equal(status.code, response.status);
      }
    }
    assert.ok(answered > 7000);
    assert.equal(t.server.faults.length, 0, "no hostile body armed a fault");
    assert.equal(t.server.store.revision, revision);
    assert.equal((await request(t.server, "GET", "/api/v1/namespaces/default/configmaps/keep")).json.data.a, "b");
  } finally {
    await t.close();
  }
});

test("bytes that are not HTTP get a Status over the raw socket, and the server keeps serving", async () => {
  const t = await testServer();
  try {
    for (const junk of ["GARBAGE\r\n\r\n", "GET / HTTP/9.9\r\n\r\n", `GET /${"a".repeat(100_000)} HTTP/1.1\r\nHost: x\r\n\r\n`, "\x00\x01\x02\r\n\r\n"]) {
      const reply = await new Promise<string>((resolve) => {
        const socket = connect(t.server.port, "127.0.0.1", () => socket.write(junk));
        let data = "";
        socket.on("data", (chunk) => (data += chunk.toString()));
        socket.on("close", () => resolve(data));
        socket.on("error", () => resolve(data));
      });
      const body = reply.slice(reply.indexOf("\r\n\r\n") + 4);
      assert.match(reply, /^HTTP\/1\.1 4\d\d /);
      assert.equal(JSON.parse(body).kind, "Status");
    }
    assert.equal((await request(t.server, "GET", "/api/v1/namespaces")).status, 200);
  } finally {
    await t.close();
  }
});
