// The subresources a real server lists beyond status and scale: discovery names them as kube-apiserver's does, and
// each answers as the real one would (binding, log, finalize, approval), or with the real server's error when the
// backend it needs (a kubelet, a service's endpoints) does not exist, never 404.
import { test } from "node:test";
import assert from "node:assert/strict";
import type { TestServer } from "./helpers.ts";
import { kubectl, request, testServer } from "./helpers.ts";

const pods = "/api/v1/namespaces/default/pods";
const pod = (name: string, containers = ["web"]) => ({ metadata: { name }, spec: { containers: containers.map((c) => ({ name: c, image: "nginx" })) } });

async function created(t: TestServer, path: string, body: object): Promise<any> {
  const reply = await request(t.server, "POST", path, { body });
  assert.equal(reply.status, 201, `${path}: ${reply.text}`);
  return reply.json;
}

test("discovery lists the core/v1 subresources, the bindings resource and CSR approval with the real server's kinds and verbs", async () => {
  const t = await testServer();
  try {
    const core = (await request(t.server, "GET", "/api/v1")).json.resources as any[];
    const byName = new Map(core.map((r) => [r.name, r]));
    assert.deepEqual(byName.get("bindings"), { name: "bindings", singularName: "binding", namespaced: true, kind: "Binding", verbs: ["create"] });
    assert.deepEqual(byName.get("pods/log"), { name: "pods/log", singularName: "", namespaced: true, kind: "Pod", verbs: ["get"] });
    assert.deepEqual(byName.get("pods/exec")?.verbs, ["create", "get"]);
    assert.equal(byName.get("pods/binding")?.kind, "Binding");
    assert.deepEqual(byName.get("nodes/proxy"), { name: "nodes/proxy", singularName: "", namespaced: false, kind: "NodeProxyOptions", verbs: ["create", "delete", "get", "patch", "update"] });
    assert.deepEqual(byName.get("namespaces/finalize")?.verbs, ["update"]);
    for (const name of ["pods/attach", "pods/portforward", "pods/proxy", "services/proxy"]) assert.ok(byName.has(name), name);
    const certificates = (await request(t.server, "GET", "/apis/certificates.k8s.io/v1")).json.resources as any[];
    assert.deepEqual(certificates.find((r) => r.name === "certificatesigningrequests/approval")?.verbs, ["get", "patch", "update"]);
    // kubectl still reads the document (aggregated discovery nests the subresources under their parents).
    const result = await kubectl(t, ["api-resources", "--api-group="]);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /\nbindings\s+v1\s+true\s+Binding\n/);
  } finally {
    await t.close();
  }
});

test("pods/binding and bindings assign a node once, mark the pod scheduled, and refuse a second assignment with 409", async () => {
  const t = await testServer();
  try {
    await created(t, pods, pod("web"));
    const bound = await created(t, `${pods}/web/binding`, { apiVersion: "v1", kind: "Binding", metadata: { name: "web", annotations: { "example.com/by": "test" } }, target: { kind: "Node", name: "n1" } });
    assert.equal(bound.status, "Success");
    const web = (await request(t.server, "GET", `${pods}/web`)).json;
    assert.equal(web.spec.nodeName, "n1");
    assert.equal(web.metadata.annotations["example.com/by"], "test");
    assert.equal(web.status.conditions.find((c: any) => c.type === "PodScheduled").status, "True");
    const again = await request(t.server, "POST", `${pods}/web/binding`, { body: { metadata: { name: "web" }, target: { name: "n2" } } });
    assert.equal(again.status, 409);
    assert.equal(again.json.message, 'Operation cannot be fulfilled on pods/binding "web": pod web is already assigned to node "n1"');
    const mismatch = await request(t.server, "POST", `${pods}/web/binding`, { body: { metadata: { name: "other" }, target: { name: "n2" } } });
    assert.equal(mismatch.status, 400);
    await created(t, pods, pod("batch"));
    const noTarget = await request(t.server, "POST", "/api/v1/namespaces/default/bindings", { body: { metadata: { name: "batch" }, target: { kind: "Pod", name: "" } } });
    assert.equal(noTarget.status, 422);
    assert.match(noTarget.json.message, /target\.name: Required value.*target\.kind: Unsupported value: "Pod": must be empty or 'Node'/);
    await created(t, "/api/v1/namespaces/default/bindings", { metadata: { name: "batch" }, target: { name: "n2" } });
    assert.equal((await request(t.server, "GET", `${pods}/batch`)).json.spec.nodeName, "n2");
  } finally {
    await t.close();
  }
});

test("pods/log checks the container as the real server does and answers an empty log; kubectl logs prints nothing", async () => {
  const t = await testServer();
  try {
    await created(t, pods, pod("web"));
    await created(t, pods, pod("two", ["app", "sidecar"]));
    const log = await request(t.server, "GET", `${pods}/web/log`);
    assert.equal(log.status, 200);
    assert.equal(log.headers.get("content-type"), "text/plain");
    assert.equal(log.text, "");
    const unnamed = await request(t.server, "GET", `${pods}/two/log`);
    assert.equal(unnamed.status, 400);
    assert.equal(unnamed.json.message, "a container name must be specified for pod two, choose one of: [app sidecar]");
    const wrong = await request(t.server, "GET", `${pods}/two/log?container=db`);
    assert.equal(wrong.json.message, "container db is not valid for pod two");
    assert.equal((await request(t.server, "GET", `${pods}/two/log?container=sidecar`)).status, 200);
    const result = await kubectl(t, ["logs", "web"]);
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stdout, "");
  } finally {
    await t.close();
  }
});

test("exec, attach, port-forward and proxy get the real server's errors for a pod without a host, a node without a kubelet and a service without endpoints", async () => {
  const t = await testServer();
  try {
    await created(t, pods, pod("web"));
    const exec = await request(t.server, "POST", `${pods}/web/exec?command=ls&container=web&stdout=true`);
    assert.equal(exec.status, 400);
    assert.equal(exec.json.message, "pod web does not have a host assigned");
    assert.equal((await request(t.server, "POST", `${pods}/web/exec?command=ls&container=db`)).json.message, "container db is not valid for pod web");
    const result = await kubectl(t, ["exec", "web", "--", "ls"]);
    assert.notEqual(result.code, 0);
    assert.match(result.stderr, /pod web does not have a host assigned/);
    await created(t, `${pods}/web/binding`, { metadata: { name: "web" }, target: { name: "n1" } });
    for (const sub of ["exec", "attach", "portforward", "proxy"]) {
      const reply = await request(t.server, sub === "proxy" ? "GET" : "POST", `${pods}/web/${sub}`);
      assert.equal(reply.status, 500, sub);
      assert.match(reply.json.message, /^error dialing backend: settle serve runs no kubelet on node "n1"/);
    }
    await created(t, "/api/v1/namespaces/default/services", { metadata: { name: "web" }, spec: { ports: [{ port: 80 }] } });
    const proxy = await request(t.server, "GET", "/api/v1/namespaces/default/services/web:80/proxy");
    assert.equal(proxy.status, 503);
    assert.equal(proxy.json.reason, "ServiceUnavailable");
    assert.equal(proxy.json.message, 'no endpoints available for service "web"');
    assert.equal((await request(t.server, "GET", "/api/v1/namespaces/default/services/none/proxy")).status, 404);
    await created(t, "/api/v1/nodes", { metadata: { name: "n1" } });
    assert.equal((await request(t.server, "GET", "/api/v1/nodes/n1/proxy")).status, 503);
  } finally {
    await t.close();
  }
});

test("namespaces/finalize sets spec.finalizers, which a plain update keeps as it was", async () => {
  const t = await testServer();
  try {
    await created(t, "/api/v1/namespaces", { metadata: { name: "team" } });
    const plain = await request(t.server, "PUT", "/api/v1/namespaces/team", { body: { metadata: { name: "team" }, spec: { finalizers: ["example.com/x"] } } });
    assert.deepEqual(plain.json.spec.finalizers, ["kubernetes"]);
    const finalized = await request(t.server, "PUT", "/api/v1/namespaces/team/finalize", { body: { metadata: { name: "team" }, spec: { finalizers: ["kubernetes", "example.com/x"] }, status: { phase: "Terminating" } } });
    assert.equal(finalized.status, 200, finalized.text);
    assert.deepEqual(finalized.json.spec.finalizers, ["kubernetes", "example.com/x"]);
    assert.equal(finalized.json.status.phase, "Active");
    const stale = await request(t.server, "PUT", "/api/v1/namespaces/team/finalize", { body: { metadata: { name: "team", resourceVersion: plain.json.metadata.resourceVersion }, spec: { finalizers: [] } } });
    assert.equal(stale.status, 409);
    assert.equal((await request(t.server, "POST", "/api/v1/namespaces/team/finalize", { body: {} })).status, 405);
  } finally {
    await t.close();
  }
});

test("kubectl certificate approve and deny go through the approval subresource, and get csr shows the condition and the requestor", async () => {
  const t = await testServer();
  try {
    const csr = (name: string) => ({ metadata: { name }, spec: { request: Buffer.from("-----BEGIN CERTIFICATE REQUEST-----\n-----END CERTIFICATE REQUEST-----\n").toString("base64"), signerName: "example.com/signer", usages: ["client auth"], username: "alice" } });
    await created(t, "/apis/certificates.k8s.io/v1/certificatesigningrequests", csr("yes"));
    await created(t, "/apis/certificates.k8s.io/v1/certificatesigningrequests", csr("no"));
    for (const [verb, name] of [["approve", "yes"], ["deny", "no"]]) {
      const result = await kubectl(t, ["certificate", verb!, name!]);
      assert.equal(result.code, 0, result.stderr);
    }
    const get = await kubectl(t, ["get", "csr"]);
    assert.equal(get.code, 0, get.stderr);
    // The requestor is the user who created it (settle's one user), whatever the body said, as on a real server.
    assert.match(get.stdout, /^NAME\s+AGE\s+SIGNERNAME\s+REQUESTOR\s+REQUESTEDDURATION\s+CONDITION\nno\s+\d+s\s+example\.com\/signer\s+settle-admin\s+<none>\s+Denied\nyes\s+\d+s\s+example\.com\/signer\s+settle-admin\s+<none>\s+Approved\n$/);
    const both = { metadata: { name: "yes" }, status: { conditions: [{ type: "Approved", status: "True" }, { type: "Denied", status: "True" }] } };
    assert.equal((await request(t.server, "PUT", "/apis/certificates.k8s.io/v1/certificatesigningrequests/yes/approval", { body: both })).status, 422);
  } finally {
    await t.close();
  }
});
