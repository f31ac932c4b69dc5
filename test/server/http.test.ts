// The HTTP API over raw requests: authentication, discovery, OpenAPI, CRUD, patches, selectors, paging, limits,
// status codes of everything part 1 refuses, garbage collection and finalizers in real time.
import { test } from "node:test";
import assert from "node:assert/strict";
import { realClock } from "../../src/api/clock.ts";
import { configMap, readEvents, request, testServer, watchRequest, widgetCrd } from "./helpers.ts";

test("a request without the token gets a 401 Status, and the token works as header or as path prefix", async () => {
  const t = await testServer();
  try {
    const denied = await request(t.server, "GET", "/api/v1/namespaces", { auth: false });
    assert.equal(denied.status, 401);
    assert.equal(denied.json.kind, "Status");
    assert.equal(denied.json.reason, "Unauthorized");
    const wrong = await request(t.server, "GET", "/api/v1/namespaces", { auth: false, headers: { authorization: "Bearer nope" } });
    assert.equal(wrong.status, 401);
    const prefixed = await request(t.server, "GET", `/token/${t.server.token}/api/v1/namespaces`, { auth: false });
    assert.equal(prefixed.status, 200);
    const badPrefix = await request(t.server, "GET", "/token/nope/api/v1/namespaces", { auth: false });
    assert.equal(badPrefix.status, 401);
    const list = await request(t.server, "GET", "/api/v1/namespaces");
    assert.deepEqual(list.json.items.map((n: any) => n.metadata.name).sort(), ["default", "kube-node-lease", "kube-public", "kube-system"]);
  } finally {
    await t.close();
  }
});

test("discovery lists the built-in groups and follows a CRD's creation and deletion", async () => {
  const t = await testServer();
  try {
    assert.equal((await request(t.server, "GET", "/version")).json.major, "1");
    assert.deepEqual((await request(t.server, "GET", "/api")).json.versions, ["v1"]);
    const core = (await request(t.server, "GET", "/api/v1")).json;
    assert.equal(core.kind, "APIResourceList");
    assert.ok(core.resources.some((r: any) => r.name === "pods/status"));
    assert.ok(core.resources.some((r: any) => r.name === "configmaps" && r.namespaced && r.shortNames.includes("cm")));
    const groups = () => request(t.server, "GET", "/apis").then((r) => r.json.groups.map((g: any) => g.name));
    assert.ok((await groups()).includes("apps"));
    assert.ok(!(await groups()).includes("example.com"));
    assert.equal((await request(t.server, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", { body: widgetCrd })).status, 201);
    assert.ok((await groups()).includes("example.com"));
    const widgets = (await request(t.server, "GET", "/apis/example.com/v1")).json;
    assert.deepEqual(widgets.resources.map((r: any) => r.name), ["widgets", "widgets/status"]);
    assert.equal((await request(t.server, "DELETE", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com")).status, 200);
    await eventually(async () => !(await groups()).includes("example.com"));
    assert.equal((await request(t.server, "GET", "/apis/example.com/v1")).status, 404);
  } finally {
    await t.close();
  }
});

test("OpenAPI v3 lists built-in group-versions whose PATCH operations take fieldValidation; v2 is a 404", async () => {
  const t = await testServer();
  try {
    const index = (await request(t.server, "GET", "/openapi/v3")).json;
    const url: string = index.paths["apis/apps/v1"].serverRelativeURL;
    assert.match(url, /^\/openapi\/v3\/apis\/apps\/v1\?hash=/);
    const doc = (await request(t.server, "GET", url)).json;
    const patch = doc.paths["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"].patch;
    assert.deepEqual(patch["x-kubernetes-group-version-kind"], { group: "apps", version: "v1", kind: "Deployment" });
    assert.ok(patch.parameters.some((p: any) => p.name === "fieldValidation" && p.in === "query"));
    assert.ok(!Object.keys(patch.requestBody.content).includes("application/strategic-merge-patch+json"));
    const v2 = await request(t.server, "GET", "/openapi/v2", { headers: { accept: "application/com.github.proto-openapi.spec.v2@v1.0+protobuf" } });
    assert.equal(v2.status, 404);
    assert.equal(v2.json.kind, "Status");
  } finally {
    await t.close();
  }
});

test("create, get, update, merge and JSON patch, status, and delete round-trip through the store", async () => {
  const t = await testServer();
  try {
    const base = "/api/v1/namespaces/default/configmaps";
    const created = await request(t.server, "POST", base, { body: configMap("a", { x: "1" }) });
    assert.equal(created.status, 201);
    assert.equal(created.json.metadata.namespace, "default");
    assert.equal((await request(t.server, "POST", base, { body: configMap("a") })).json.reason, "AlreadyExists");
    const got = await request(t.server, "GET", `${base}/a`);
    assert.deepEqual(got.json.data, { x: "1" });
    const put = await request(t.server, "PUT", `${base}/a`, { body: { ...got.json, data: { x: "2" } } });
    assert.equal(put.status, 200);
    const stale = await request(t.server, "PUT", `${base}/a`, { body: { ...got.json, data: { x: "3" } } });
    assert.equal(stale.status, 409);
    assert.equal(stale.json.reason, "Conflict");
    const merged = await request(t.server, "PATCH", `${base}/a`, { body: { data: { y: "1" } }, contentType: "application/merge-patch+json" });
    assert.deepEqual(merged.json.data, { x: "2", y: "1" });
    const jsonPatched = await request(t.server, "PATCH", `${base}/a`, { body: [{ op: "remove", path: "/data/x" }], contentType: "application/json-patch+json" });
    assert.deepEqual(jsonPatched.json.data, { y: "1" });
    const failed = await request(t.server, "PATCH", `${base}/a`, { body: [{ op: "test", path: "/data/y", value: "2" }], contentType: "application/json-patch+json" });
    assert.equal(failed.status, 422);
    const deleted = await request(t.server, "DELETE", `${base}/a`);
    assert.equal(deleted.status, 200);
    assert.equal((await request(t.server, "GET", `${base}/a`)).status, 404);
  } finally {
    await t.close();
  }
});

test("the status subresource writes only status, and main writes keep it", async () => {
  const t = await testServer();
  try {
    await request(t.server, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", { body: widgetCrd });
    const base = "/apis/example.com/v1/namespaces/default/widgets";
    const w = { apiVersion: "example.com/v1", kind: "Widget", metadata: { name: "w" }, spec: { size: 1 }, status: { ready: true } };
    const created = (await request(t.server, "POST", base, { body: w })).json;
    assert.equal(created.status, undefined);
    const status = await request(t.server, "PATCH", `${base}/w/status`, { body: { status: { ready: true }, spec: { size: 9 } }, contentType: "application/merge-patch+json" });
    assert.equal(status.status, 200);
    assert.deepEqual(status.json.status, { ready: true });
    assert.equal(status.json.spec.size, 1);
    const main = await request(t.server, "PATCH", `${base}/w`, { body: { spec: { size: 2 }, status: null }, contentType: "application/merge-patch+json" });
    assert.deepEqual(main.json.status, { ready: true });
    assert.equal(main.json.metadata.generation, 2);
    const smp = await request(t.server, "PATCH", `${base}/w`, { body: { spec: { size: 3 } }, contentType: "application/strategic-merge-patch+json" });
    assert.equal(smp.status, 415);
    const kindless = await request(t.server, "PATCH", `${base}/w?fieldManager=me`, { raw: "spec: {size: 3}", contentType: "application/apply-patch+yaml" });
    assert.equal(kindless.status, 400);
    // The merge patches above made their manager (the User-Agent's program) own spec.size: taking it needs force.
    const contested = await request(t.server, "PATCH", `${base}/w?fieldManager=me`, { raw: "{apiVersion: example.com/v1, kind: Widget, spec: {size: 3}}", contentType: "application/apply-patch+yaml" });
    assert.equal(contested.status, 409);
    assert.equal(contested.json.details.causes[0].field, ".spec.size");
    const apply = await request(t.server, "PATCH", `${base}/w?fieldManager=me&force=true`, { raw: "{apiVersion: example.com/v1, kind: Widget, spec: {size: 3}}", contentType: "application/apply-patch+yaml" });
    assert.equal(apply.status, 200);
    assert.equal(apply.json.spec.size, 3);
    assert.deepEqual(apply.json.status, { ready: true });
  } finally {
    await t.close();
  }
});

test("a strategic merge patch on a built-in merges containers by name and keeps the others", async () => {
  const t = await testServer();
  try {
    const base = "/apis/apps/v1/namespaces/default/deployments";
    const deployment = {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: "d", finalizers: ["a"] },
      spec: {
        selector: { matchLabels: { app: "d" } },
        template: { metadata: { labels: { app: "d" } }, spec: { containers: [{ name: "web", image: "nginx:1" }, { name: "side", image: "busybox" }] } },
      },
    };
    assert.equal((await request(t.server, "POST", base, { body: deployment })).status, 201);
    const patch = {
      metadata: { finalizers: ["b"] },
      spec: { template: { spec: { $setElementOrder: undefined, containers: [{ name: "web", image: "nginx:2" }], "$setElementOrder/containers": [{ name: "side" }, { name: "web" }] } } },
    };
    const patched = await request(t.server, "PATCH", `${base}/d`, { body: patch, contentType: "application/strategic-merge-patch+json" });
    assert.equal(patched.status, 200);
    assert.deepEqual(
      patched.json.spec.template.spec.containers.map((c: any) => ({ name: c.name, image: c.image })),
      [{ name: "side", image: "busybox" }, { name: "web", image: "nginx:2" }],
    );
    assert.deepEqual(patched.json.metadata.finalizers, ["a", "b"]);
    const removal = { spec: { template: { spec: { containers: [{ name: "side", $patch: "delete" }] } } }, metadata: { "$deleteFromPrimitiveList/finalizers": ["a", "b"] } };
    const removed = await request(t.server, "PATCH", `${base}/d`, { body: removal, contentType: "application/strategic-merge-patch+json" });
    assert.deepEqual(removed.json.spec.template.spec.containers.map((c: any) => c.name), ["web"]);
    assert.equal(removed.json.metadata.finalizers?.length ?? 0, 0);
  } finally {
    await t.close();
  }
});

test("label and field selectors, limit and continue page through a list", async () => {
  const t = await testServer();
  try {
    const base = "/api/v1/namespaces/default/configmaps";
    for (let i = 0; i < 5; i++) await request(t.server, "POST", base, { body: configMap(`c${i}`, {}, { parity: i % 2 === 0 ? "even" : "odd" }) });
    const even = await request(t.server, "GET", `${base}?labelSelector=${encodeURIComponent("parity=even")}`);
    assert.deepEqual(even.json.items.map((c: any) => c.metadata.name), ["c0", "c2", "c4"]);
    const named = await request(t.server, "GET", `/api/v1/configmaps?fieldSelector=metadata.name%3Dc3`);
    assert.deepEqual(named.json.items.map((c: any) => c.metadata.name), ["c3"]);
    const bad = await request(t.server, "GET", `${base}?labelSelector=${encodeURIComponent("a in (")}`);
    assert.equal(bad.status, 400);
    assert.equal(bad.json.kind, "Status");
    const names: string[] = [];
    let token = "";
    for (let pages = 0; pages < 10; pages++) {
      const page = await request(t.server, "GET", `${base}?limit=2${token === "" ? "" : `&continue=${encodeURIComponent(token)}`}`);
      names.push(...page.json.items.map((c: any) => c.metadata.name));
      token = page.json.metadata.continue ?? "";
      if (token === "") break;
    }
    assert.deepEqual(names, ["c0", "c1", "c2", "c3", "c4"]);
  } finally {
    await t.close();
  }
});

test("bodies over the limit get 413, unknown media types 415, unservable Accept 406, bad paths 404, all as Status", async () => {
  const t = await testServer({ bodyBytesMax: 1024 });
  try {
    const base = "/api/v1/namespaces/default/configmaps";
    const big = await request(t.server, "POST", base, { body: configMap("big", { x: "y".repeat(2000) }) });
    assert.equal(big.status, 413);
    assert.equal(big.json.reason, "RequestEntityTooLarge");
    const xml = await request(t.server, "POST", base, { raw: "<cm/>", contentType: "application/xml" });
    assert.equal(xml.status, 415);
    const table = await request(t.server, "GET", base, { headers: { accept: "application/json;as=Table;v=v1;g=meta.k8s.io" } });
    assert.equal(table.status, 200);
    assert.equal(table.json.kind, "Table");
    const partial = await request(t.server, "GET", base, { headers: { accept: "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io" } });
    assert.equal(partial.status, 406);
    const fallback = await request(t.server, "GET", base, { headers: { accept: "application/json;as=Table;v=v1;g=meta.k8s.io,application/json" } });
    assert.equal(fallback.status, 200);
    for (const path of ["/nope", "/api/v1/nopes", "/apis/x/v1/things", "/api/v1/namespaces/default/configmaps/a/b/c"]) {
      const reply = await request(t.server, "GET", path);
      assert.equal(reply.status, 404, path);
      assert.equal(reply.json.kind, "Status", path);
    }
    const badJson = await request(t.server, "POST", base, { raw: "{", contentType: "application/json" });
    assert.equal(badJson.status, 400);
    const wrongNs = await request(t.server, "POST", base, { body: { ...configMap("x"), metadata: { name: "x", namespace: "kube-system" } } });
    assert.equal(wrongNs.status, 400);
  } finally {
    await t.close();
  }
});

test("deleting an owner collects its dependents in real time, and finalizers hold an object until removed", async () => {
  const t = await testServer({ clock: realClock });
  try {
    const base = "/api/v1/namespaces/default/configmaps";
    const owner = (await request(t.server, "POST", base, { body: configMap("owner") })).json;
    const ownerRef = { apiVersion: "v1", kind: "ConfigMap", name: "owner", uid: owner.metadata.uid };
    await request(t.server, "POST", base, { body: { ...configMap("child"), metadata: { name: "child", ownerReferences: [ownerRef] } } });
    await request(t.server, "DELETE", `${base}/owner`);
    await eventually(async () => (await request(t.server, "GET", `${base}/child`)).status === 404);
    assert.ok(t.server.gcActions >= 1);
    await request(t.server, "POST", base, { body: { ...configMap("held"), metadata: { name: "held", finalizers: ["example.com/hold"] } } });
    const terminating = await request(t.server, "DELETE", `${base}/held`);
    assert.equal(terminating.status, 200);
    assert.ok(terminating.json.metadata.deletionTimestamp);
    assert.equal((await request(t.server, "GET", `${base}/held`)).status, 200);
    await request(t.server, "PATCH", `${base}/held`, { body: { metadata: { finalizers: null } }, contentType: "application/merge-patch+json" });
    assert.equal((await request(t.server, "GET", `${base}/held`)).status, 404);
  } finally {
    await t.close();
  }
});

async function eventually(check: () => Promise<boolean>, attempts = 200): Promise<void> {
  for (let i = 0; i < attempts; i++) {
    if (await check()) return;
    await realClock.sleep(10);
  }
  assert.fail("the condition never held");
}

test("aggregated discovery answers /api and /apis in one request each when asked first, with subresources nested", async () => {
  const t = await testServer();
  try {
    const accept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json";
    const apis = await request(t.server, "GET", "/apis", { headers: { accept } });
    assert.equal(apis.headers.get("content-type"), "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList");
    const apps = apis.json.items.find((g: any) => g.metadata.name === "apps");
    const deployments = apps.versions[0].resources.find((r: any) => r.resource === "deployments");
    assert.deepEqual(deployments.responseKind, { group: "apps", version: "v1", kind: "Deployment" });
    assert.equal(deployments.scope, "Namespaced");
    assert.deepEqual(deployments.subresources.map((s: any) => s.subresource).sort(), ["scale", "status"]);
    assert.ok(!apis.json.items.some((g: any) => g.metadata.name === ""), "the legacy group is under /api");
    const core = await request(t.server, "GET", "/api", { headers: { accept } });
    const pods = core.json.items[0].versions[0].resources.find((r: any) => r.resource === "pods");
    assert.ok(pods.subresources.some((s: any) => s.subresource === "eviction" && s.responseKind.group === "policy"));
    // A client that asks for plain JSON first still gets the legacy documents.
    assert.equal((await request(t.server, "GET", "/apis")).json.kind, "APIGroupList");
  } finally {
    await t.close();
  }
});

test("close() ends an idle plain-HTTP keep-alive connection instead of waiting out its keep-alive timeout", async () => {
  const { Agent, get } = await import("node:http");
  const t = await testServer();
  const agent = new Agent({ keepAlive: true });
  try {
    // Wrapped in an object: resolving with the bare promise would wait for it.
    const { socketClosed } = await new Promise<{ socketClosed: Promise<void> }>((resolve, reject) => {
      const req = get(`${t.server.url}/api/v1/namespaces`, { agent, headers: { authorization: `Bearer ${t.server.token}` } }, (res) => {
        assert.equal(res.statusCode, 200);
        res.resume();
        res.on("end", () => resolve({ socketClosed: new Promise<void>((closed) => req.socket!.once("close", () => closed())) }));
      });
      req.on("error", reject);
    });
    // Give the server a moment to see the answer written, so the connection is idle on its side too.
    await new Promise((resolve) => setTimeout(resolve, 100));
    // The connection now idles in the agent's pool. Node's keep-alive timeout is 5 s: a close() that waited for
    // it would lose this race, one that ends idle connections wins it by seconds.
    const outcome = await Promise.race([
      Promise.all([t.close(), socketClosed]).then(() => "closed"),
      new Promise((resolve) => setTimeout(resolve, 4_000)).then(() => "still open"),
    ]);
    assert.equal(outcome, "closed");
  } finally {
    agent.destroy();
    await t.close().catch(() => {});
  }
});

test("a path asked for again is answered by its own method and query each time, though its parsed route is shared", async () => {
  const t = await testServer();
  try {
    const base = "/api/v1/namespaces/default/configmaps";
    for (const [name, tier] of [["a", "1"], ["b", "2"]] as const) {
      assert.equal((await request(t.server, "POST", base, { body: configMap(name, { n: "0" }, { tier }) })).status, 201);
    }
    const names = async (query: string) => (await request(t.server, "GET", `${base}${query}`)).json.items.map((i: any) => i.metadata.name);
    assert.deepEqual(await names("?labelSelector=tier%3D1"), ["a"]);
    assert.deepEqual(await names("?labelSelector=tier%3D2"), ["b"]);
    // A watch on an item adds a name selector to its own query: the next list of the collection is not narrowed by it.
    const controller = new AbortController();
    const events = await readEvents(await watchRequest(t.server, `${base}/a?watch=true`, controller.signal), (e) => e.length >= 1);
    controller.abort();
    assert.deepEqual(events.map((e) => [e.type, e.object.metadata.name]), [["ADDED", "a"]]);
    assert.deepEqual(await names(""), ["a", "b"]);
    const patched = await request(t.server, "PATCH", `${base}/a`, { raw: JSON.stringify({ data: { n: "1" } }), contentType: "application/merge-patch+json" });
    assert.equal(patched.status, 200);
    // The write's answer is the object a read then shows, managed fields last in metadata, byte for byte, and it is
    // plain JSON.stringify output (no text spliced in differently from what serializing the object writes).
    const read = await request(t.server, "GET", `${base}/a`);
    assert.equal(read.text, patched.text);
    assert.equal(patched.text, JSON.stringify(read.json));
    assert.equal(Object.keys(read.json.metadata).at(-1), "managedFields");
    assert.equal(read.json.data.n, "1");
  } finally {
    await t.close();
  }
});
