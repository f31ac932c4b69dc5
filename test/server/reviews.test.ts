// Create-only resources: access reviews and whoami for the token holder, pod eviction that honours a
// PodDisruptionBudget (and `kubectl drain` through it), and service account tokens.
import { test } from "node:test";
import assert from "node:assert/strict";
import { kubectl, kubectl133Path, request, testServer } from "./helpers.ts";
import type { TestServer } from "./helpers.ts";

for (const [version, binary] of [["1.35", undefined], ["1.33", kubectl133Path]] as const) {
  test(`kubectl ${version} auth can-i, can-i --list and whoami are answered for the token holder`, async () => {
    const t = await testServer();
    const options = binary === undefined ? {} : { binary };
    try {
      const canI = await kubectl(t, ["auth", "can-i", "create", "deployments"], options);
      assert.equal(canI.code, 0, canI.stderr);
      assert.equal(canI.stdout.trim(), "yes");
      const list = await kubectl(t, ["auth", "can-i", "--list"], options);
      assert.equal(list.code, 0, list.stderr);
      assert.match(list.stdout, /\*\.\*/);
      const whoami = await kubectl(t, ["auth", "whoami"], options);
      assert.equal(whoami.code, 0, whoami.stderr);
      assert.match(whoami.stdout, /Username\s+settle-admin/);
    } finally {
      await t.close();
    }
  });
}

test("reviews are create-only, listed in discovery, and a TokenReview knows the server's token", async () => {
  const t = await testServer();
  try {
    const resources = (await request(t.server, "GET", "/apis/authorization.k8s.io/v1")).json.resources;
    assert.deepEqual(resources.find((r: any) => r.name === "selfsubjectaccessreviews").verbs, ["create"]);
    const core = (await request(t.server, "GET", "/api/v1")).json.resources;
    assert.deepEqual(core.find((r: any) => r.name === "pods/eviction"), { name: "pods/eviction", singularName: "", namespaced: true, group: "policy", version: "v1", kind: "Eviction", verbs: ["create"] });
    assert.equal((await request(t.server, "GET", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews")).status, 405);
    const review = (token: string) => request(t.server, "POST", "/apis/authentication.k8s.io/v1/tokenreviews", { body: { apiVersion: "authentication.k8s.io/v1", kind: "TokenReview", spec: { token } } });
    assert.equal((await review(t.server.token)).json.status.authenticated, true);
    assert.equal((await review("wrong")).json.status.authenticated, false);
  } finally {
    await t.close();
  }
});

async function readyPod(t: TestServer, name: string, node: string): Promise<void> {
  const created = await request(t.server, "POST", "/api/v1/namespaces/default/pods", { body: { metadata: { name, labels: { app: "web" } }, spec: { nodeName: node, containers: [{ name: "c", image: "nginx:1" }] } } });
  assert.equal(created.status, 201, created.text);
  const status = { phase: "Running", conditions: [{ type: "Ready", status: "True" }] };
  const updated = await request(t.server, "PATCH", `/api/v1/namespaces/default/pods/${name}/status`, { body: { status }, contentType: "application/merge-patch+json" });
  assert.equal(updated.status, 200, updated.text);
}

const evict = (t: TestServer, name: string) =>
  request(t.server, "POST", `/api/v1/namespaces/default/pods/${name}/eviction`, { body: { apiVersion: "policy/v1", kind: "Eviction", metadata: { name }, deleteOptions: { gracePeriodSeconds: 0 } } });

test("an eviction the disruption budget allows deletes the pod; one it does not is a 429 with the budget's cause", async () => {
  const t = await testServer();
  try {
    await readyPod(t, "a", "n1");
    await readyPod(t, "b", "n1");
    const pdb = await request(t.server, "POST", "/apis/policy/v1/namespaces/default/poddisruptionbudgets", { body: { metadata: { name: "web" }, spec: { minAvailable: 1, selector: { matchLabels: { app: "web" } } } } });
    assert.equal(pdb.status, 201, pdb.text);
    const first = await evict(t, "a");
    assert.equal(first.status, 201, first.text);
    assert.equal((await request(t.server, "GET", "/api/v1/namespaces/default/pods/a")).status, 404);
    const second = await evict(t, "b");
    assert.equal(second.status, 429, second.text);
    assert.equal(second.json.reason, "TooManyRequests");
    assert.deepEqual(second.json.details.causes, [{ reason: "DisruptionBudget", message: "The disruption budget web needs 1 healthy pods and has 1 currently" }]);
    assert.equal((await request(t.server, "GET", "/api/v1/namespaces/default/pods/b")).status, 200);
    assert.equal((await evict(t, "missing")).status, 404);
  } finally {
    await t.close();
  }
});

test("kubectl drain evicts through the eviction subresource and honours a budget that allows it", async () => {
  const t = await testServer();
  try {
    assert.equal((await request(t.server, "POST", "/api/v1/nodes", { body: { metadata: { name: "n1" } } })).status, 201);
    await readyPod(t, "a", "n1");
    await readyPod(t, "b", "n1");
    await request(t.server, "POST", "/apis/policy/v1/namespaces/default/poddisruptionbudgets", { body: { metadata: { name: "web" }, spec: { maxUnavailable: 1, selector: { matchLabels: { app: "web" } } } } });
    const drained = await kubectl(t, ["drain", "n1", "--force", "--grace-period=0", "--timeout=20s"], { timeoutMs: 30_000 });
    assert.equal(drained.code, 0, drained.stderr);
    assert.match(drained.stdout, /evicting pod default\/a/);
    assert.equal(t.server.store.list({ apiVersion: "v1", kind: "Pod", namespace: "default" }).items.length, 0);
  } finally {
    await t.close();
  }
});

test("kubectl create token answers a token for an existing service account; a missing one is NotFound", async () => {
  const t = await testServer();
  try {
    assert.equal((await kubectl(t, ["create", "serviceaccount", "bot"])).code, 0);
    const token = await kubectl(t, ["create", "token", "bot", "--duration=1h"]);
    assert.equal(token.code, 0, token.stderr);
    const claims = JSON.parse(Buffer.from(token.stdout.trim().split(".")[1]!, "base64url").toString());
    assert.equal(claims.sub, "system:serviceaccount:default:bot");
    assert.equal(claims.exp - claims.iat, 3600);
    const missing = await kubectl(t, ["create", "token", "nobody"]);
    assert.notEqual(missing.code, 0);
    assert.match(missing.stderr, /not found/);
    const short = await request(t.server, "POST", "/api/v1/namespaces/default/serviceaccounts/bot/token", { body: { spec: { expirationSeconds: 60 } } });
    assert.equal(short.status, 422);
  } finally {
    await t.close();
  }
});
