// RBAC through settle serve: the token holder is system:masters; an impersonated user (kubectl --as) or a service
// account token the server minted is held to its Roles, ClusterRoles and bindings, with the real matching rules and
// the real 403 words; reviews answer for the caller or the user they name; only masters impersonate; a token of a
// deleted account, or a tampered one, is a 401.
import { test } from "node:test";
import assert from "node:assert/strict";
import { kubectl, request, testServer } from "./helpers.ts";
import type { TestServer } from "./helpers.ts";

const rbac = "/apis/rbac.authorization.k8s.io/v1";

async function create(t: TestServer, path: string, body: unknown): Promise<any> {
  const created = await request(t.server, "POST", path, { body });
  assert.equal(created.status, 201, created.text);
  return created.json;
}

/** A Role `reader` in `default` (configmaps get/list/watch, one pod's log) bound to user bob and service account bot. */
async function readerPolicy(t: TestServer): Promise<void> {
  await create(t, `${rbac}/namespaces/default/roles`, {
    metadata: { name: "reader" },
    rules: [
      { apiGroups: [""], resources: ["configmaps"], verbs: ["get", "list", "watch"] },
      { apiGroups: [""], resources: ["pods/log"], resourceNames: ["web"], verbs: ["get"] },
    ],
  });
  await create(t, "/api/v1/namespaces/default/serviceaccounts", { metadata: { name: "bot" } });
  await create(t, `${rbac}/namespaces/default/rolebindings`, {
    metadata: { name: "reader" },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "reader" },
    subjects: [{ kind: "User", name: "bob" }, { kind: "ServiceAccount", name: "bot" }],
  });
}

const as = (user: string, groups: string[] = []) => ({ "Impersonate-User": user, ...(groups.length === 0 ? {} : { "Impersonate-Group": groups.join(",") }) });

test("an impersonated user may do what its bindings allow, and is refused the rest in the real server's words", async () => {
  const t = await testServer();
  try {
    await readerPolicy(t);
    const bob = as("bob");
    assert.equal((await request(t.server, "GET", "/api/v1/namespaces/default/configmaps", { headers: bob })).status, 200);
    assert.equal((await request(t.server, "GET", "/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=1", { headers: bob })).status, 200);
    const created = await request(t.server, "POST", "/api/v1/namespaces/default/configmaps", { headers: bob, body: { metadata: { name: "x" } } });
    assert.equal(created.status, 403);
    assert.equal(created.json.message, 'configmaps is forbidden: User "bob" cannot create resource "configmaps" in API group "" in the namespace "default"');
    assert.deepEqual([created.json.reason, created.json.details.kind], ["Forbidden", "configmaps"]);
    const item = await request(t.server, "DELETE", "/api/v1/namespaces/default/configmaps/x", { headers: bob });
    assert.equal(item.json.message, 'configmaps "x" is forbidden: User "bob" cannot delete resource "configmaps" in API group "" in the namespace "default"');
    const nodes = await request(t.server, "GET", "/api/v1/nodes", { headers: bob });
    assert.equal(nodes.json.message, 'nodes is forbidden: User "bob" cannot list resource "nodes" in API group "" at the cluster scope');
    const elsewhere = await request(t.server, "GET", "/api/v1/namespaces/kube-system/configmaps", { headers: bob });
    assert.equal(elsewhere.status, 403, "a Role holds in its namespace only");
    // Subresources and resource names: the log of pod web only.
    const log = await request(t.server, "GET", "/api/v1/namespaces/default/pods/other/log", { headers: bob });
    assert.equal(log.json.message, 'pods "other" is forbidden: User "bob" cannot get resource "pods/log" in API group "" in the namespace "default"');
    // Discovery and the review kinds are every authenticated user's (the bootstrap roles).
    for (const path of ["/api", "/apis", "/api/v1", "/version"]) assert.equal((await request(t.server, "GET", path, { headers: bob })).status, 200, path);
    const rules = await request(t.server, "POST", "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews", { headers: bob, body: { spec: { namespace: "default" } } });
    assert.deepEqual(rules.json.status.resourceRules.find((r: any) => r.resources.includes("configmaps")), { verbs: ["get", "list", "watch"], apiGroups: [""], resources: ["configmaps"] });
    const ask = (verb: string) => request(t.server, "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", { headers: bob, body: { spec: { resourceAttributes: { namespace: "default", verb, resource: "configmaps" } } } });
    assert.deepEqual([(await ask("list")).json.status.allowed, (await ask("update")).json.status.allowed], [true, false]);
    const someone = await request(t.server, "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", { body: { spec: { user: "bob", resourceAttributes: { namespace: "default", verb: "get", resource: "configmaps" } } } });
    assert.equal(someone.json.status.allowed, true, "the token holder asks about bob");
    // The token holder stays system:masters.
    assert.equal((await request(t.server, "POST", "/api/v1/namespaces/default/configmaps", { body: { metadata: { name: "y" } } })).status, 201);
  } finally {
    await t.close();
  }
});

test("the bootstrap view, edit and admin roles grant what they grant on a real cluster", async () => {
  const t = await testServer();
  try {
    for (const [user, role] of [["vera", "view"], ["ed", "edit"], ["ada", "admin"]] as const) {
      await create(t, `${rbac}/namespaces/default/rolebindings`, { metadata: { name: user }, roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: role }, subjects: [{ kind: "User", name: user }] });
    }
    const can = async (user: string, method: string, path: string, body?: unknown) => (await request(t.server, method, path, { headers: as(user), ...(body === undefined ? {} : { body }) })).status;
    const pods = "/api/v1/namespaces/default/pods";
    const secrets = "/api/v1/namespaces/default/secrets";
    const roles = `${rbac}/namespaces/default/roles`;
    assert.deepEqual([await can("vera", "GET", pods), await can("vera", "GET", secrets), await can("vera", "POST", "/api/v1/namespaces/default/configmaps", { metadata: { name: "v" } })], [200, 403, 403]);
    assert.deepEqual([await can("ed", "GET", secrets), await can("ed", "POST", "/api/v1/namespaces/default/configmaps", { metadata: { name: "e" } }), await can("ed", "GET", roles)], [200, 201, 403], "edit reads through view, writes, but not roles");
    assert.deepEqual([await can("ada", "GET", roles), await can("ada", "GET", pods)], [200, 200], "admin holds edit's and view's rules too");
    assert.equal(await can("ada", "GET", "/api/v1/nodes"), 403, "a RoleBinding grants nothing cluster-wide");
  } finally {
    await t.close();
  }
});

test("a group binding and an aggregated ClusterRole grant what their rules say", async () => {
  const t = await testServer();
  try {
    await create(t, `${rbac}/clusterroles`, { metadata: { name: "nodes-part", labels: { "example.com/aggregate-to-ops": "true" } }, rules: [{ apiGroups: [""], resources: ["nodes"], verbs: ["list"] }] });
    await create(t, `${rbac}/clusterroles`, { metadata: { name: "ops" }, aggregationRule: { clusterRoleSelectors: [{ matchLabels: { "example.com/aggregate-to-ops": "true" } }] }, rules: [] });
    await create(t, `${rbac}/clusterrolebindings`, { metadata: { name: "ops" }, roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "ops" }, subjects: [{ kind: "Group", name: "operators" }] });
    assert.equal((await request(t.server, "GET", "/api/v1/nodes", { headers: as("carol", ["operators"]) })).status, 200);
    assert.equal((await request(t.server, "GET", "/api/v1/nodes", { headers: as("carol") })).status, 403, "not without the group");
  } finally {
    await t.close();
  }
});

test("a minted service account token is that account while it exists; only masters impersonate; forged tokens are 401", async () => {
  const t = await testServer();
  try {
    await readerPolicy(t);
    const minted = await request(t.server, "POST", "/api/v1/namespaces/default/serviceaccounts/bot/token", { body: { spec: {} } });
    assert.equal(minted.status, 201);
    const token: string = minted.json.status.token;
    const bot = { authorization: `Bearer ${token}` };
    const call = (method: string, path: string, headers: Record<string, string>, body?: unknown) => request(t.server, method, path, { auth: false, headers, ...(body === undefined ? {} : { body }) });
    assert.equal((await call("GET", "/api/v1/namespaces/default/configmaps", bot)).status, 200);
    const refused = await call("GET", "/api/v1/namespaces/default/secrets", bot);
    assert.equal(refused.json.message, 'secrets is forbidden: User "system:serviceaccount:default:bot" cannot list resource "secrets" in API group "" in the namespace "default"');
    const whoami = await call("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", bot, { spec: {} });
    assert.deepEqual(whoami.json.status.userInfo.groups, ["system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"]);
    const impersonating = await call("GET", "/api/v1/namespaces/default/configmaps", { ...bot, "Impersonate-User": "settle-admin" });
    assert.equal(impersonating.status, 403);
    assert.equal(impersonating.json.message, 'users "settle-admin" is forbidden: User "system:serviceaccount:default:bot" cannot impersonate resource "users" in API group "" at the cluster scope');
    const [head, payload] = token.split(".");
    const forged = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(payload!, "base64url").toString()), sub: "system:serviceaccount:default:other" })).toString("base64url");
    assert.equal((await call("GET", "/api/v1/namespaces/default/configmaps", { authorization: `Bearer ${head}.${forged}.${token.split(".")[2]}` })).status, 401);
    assert.equal((await request(t.server, "DELETE", "/api/v1/namespaces/default/serviceaccounts/bot")).status, 200);
    assert.equal((await call("GET", "/api/v1/namespaces/default/configmaps", bot)).status, 401, "the account is gone");
  } finally {
    await t.close();
  }
});

test("kubectl 1.35 --as: auth can-i answers from the bindings, and a refused get prints the real error", async () => {
  const t = await testServer();
  try {
    await readerPolicy(t);
    assert.equal((await kubectl(t, ["auth", "can-i", "list", "configmaps", "--as=bob"])).stdout.trim(), "yes");
    const no = await kubectl(t, ["auth", "can-i", "create", "configmaps", "--as=bob"]);
    assert.deepEqual([no.code, no.stdout.trim()], [1, "no"]);
    const pods = await kubectl(t, ["get", "pods", "--as=bob"]);
    assert.equal(pods.code, 1);
    assert.match(pods.stderr, /Error from server \(Forbidden\): pods is forbidden: User "bob" cannot list resource "pods" in API group "" in the namespace "default"/);
  } finally {
    await t.close();
  }
});
