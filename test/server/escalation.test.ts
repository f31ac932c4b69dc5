// Escalation prevention on RBAC writes, as kube-apiserver's RBAC storage does it: a role's rules must be covered by
// its writer's own (aggregated roles included) unless the writer may `escalate`; a binding's role likewise unless the
// writer may `bind` it; an aggregationRule needs every permission. And an apply that creates needs `create`.
import { test } from "node:test";
import assert from "node:assert/strict";
import { request, testServer } from "./helpers.ts";
import type { TestServer } from "./helpers.ts";

const rbac = "/apis/rbac.authorization.k8s.io/v1";
const ref = (kind: string, name: string) => ({ apiGroup: "rbac.authorization.k8s.io", kind, name });

async function create(t: TestServer, path: string, body: unknown): Promise<void> {
  const created = await request(t.server, "POST", path, { body });
  assert.equal(created.status, 201, created.text);
}

/** A service account in `default` and a token for it, bound to a new ClusterRole with `rules` cluster-wide. */
async function account(t: TestServer, name: string, rules: unknown[]): Promise<Record<string, string>> {
  await create(t, "/api/v1/namespaces/default/serviceaccounts", { metadata: { name } });
  await create(t, `${rbac}/clusterroles`, { metadata: { name }, rules });
  await create(t, `${rbac}/clusterrolebindings`, { metadata: { name }, roleRef: ref("ClusterRole", name), subjects: [{ kind: "ServiceAccount", name, namespace: "default" }] });
  const minted = await request(t.server, "POST", `/api/v1/namespaces/default/serviceaccounts/${name}/token`, { body: { spec: {} } });
  assert.equal(minted.status, 201, minted.text);
  return { authorization: `Bearer ${minted.json.status.token}` };
}

const as = (user: string) => ({ "Impersonate-User": user });
const call = (t: TestServer, method: string, path: string, headers: Record<string, string>, body?: unknown, contentType?: string) =>
  request(t.server, method, path, { auth: headers.authorization === undefined, headers, ...(body === undefined ? {} : { body }), ...(contentType === undefined ? {} : { contentType }) });
const rbacWriter = [{ apiGroups: ["rbac.authorization.k8s.io"], resources: ["roles", "rolebindings", "clusterroles", "clusterrolebindings"], verbs: ["create", "update", "patch"] }];
const saGroups = '(groups=["system:serviceaccounts" "system:serviceaccounts:default" "system:authenticated"])';

test("a writer of roles and bindings cannot bind itself to cluster-admin, make a `*` role, or widen its own role", async () => {
  const t = await testServer();
  try {
    const writer = await account(t, "writer", rbacWriter);
    const user = "system:serviceaccount:default:writer";
    const self = [{ kind: "ServiceAccount", name: "writer", namespace: "default" }];
    const bound = await call(t, "POST", `${rbac}/clusterrolebindings`, writer, { metadata: { name: "mine" }, roleRef: ref("ClusterRole", "cluster-admin"), subjects: self });
    assert.equal(bound.status, 403, bound.text);
    assert.equal(bound.json.reason, "Forbidden");
    assert.equal(bound.json.message, `clusterrolebindings.rbac.authorization.k8s.io "mine" is forbidden: user "${user}" ${saGroups} is attempting to grant RBAC permissions not currently held:\n{APIGroups:["*"], Resources:["*"], Verbs:["*"]}\n{NonResourceURLs:["*"], Verbs:["*"]}`);
    assert.deepEqual(bound.json.details, { name: "mine", group: "rbac.authorization.k8s.io", kind: "clusterrolebindings" });
    assert.equal((await call(t, "GET", "/api/v1/namespaces/default/secrets", writer)).status, 403, "still no secrets");
    const star = await call(t, "POST", `${rbac}/clusterroles`, writer, { metadata: { name: "all" }, rules: [{ apiGroups: ["*"], resources: ["*"], verbs: ["*"] }] });
    assert.equal(star.status, 403);
    assert.equal(star.json.message, `clusterroles.rbac.authorization.k8s.io "all" is forbidden: user "${user}" ${saGroups} is attempting to grant RBAC permissions not currently held:\n{APIGroups:["*"], Resources:["*"], Verbs:["*"]}`);
    const widened = await call(t, "PATCH", `${rbac}/clusterroles/writer`, writer, { rules: [{ apiGroups: ["*"], resources: ["*"], verbs: ["*"] }] }, "application/merge-patch+json");
    assert.equal(widened.status, 403);
    // Missing permissions are listed one resource each, verbs merged, sorted.
    const secrets = await call(t, "POST", `${rbac}/namespaces/default/roles`, writer, { metadata: { name: "s" }, rules: [{ apiGroups: [""], resources: ["secrets", "pods"], verbs: ["get", "list"] }] });
    assert.match(secrets.json.message, /not currently held:\n\{APIGroups:\[""\], Resources:\["pods"\], Verbs:\["get" "list"\]\}\n\{APIGroups:\[""\], Resources:\["secrets"\], Verbs:\["get" "list"\]\}$/);
    // Within its own permissions it may write: a role granting part of its rules, and a binding to it.
    const part = await call(t, "POST", `${rbac}/clusterroles`, writer, { metadata: { name: "part" }, rules: [{ apiGroups: ["rbac.authorization.k8s.io"], resources: ["roles"], verbs: ["create"] }] });
    assert.equal(part.status, 201, part.text);
    assert.equal((await call(t, "POST", `${rbac}/clusterrolebindings`, writer, { metadata: { name: "part" }, roleRef: ref("ClusterRole", "part"), subjects: self })).status, 201);
    // Nor can it grant through an existing binding: adding itself to cluster-admin's is an update of it.
    const joined = await call(t, "PATCH", `${rbac}/clusterrolebindings/cluster-admin`, writer, { subjects: self }, "application/merge-patch+json");
    assert.equal(joined.status, 403);
    // An apply is judged as any write.
    const applied = await call(t, "PATCH", `${rbac}/clusterroles/applied?fieldManager=m`, writer, { apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRole", metadata: { name: "applied" }, rules: [{ apiGroups: [""], resources: ["secrets"], verbs: ["get"] }] }, "application/apply-patch+yaml");
    assert.equal(applied.status, 403, applied.text);
    const dry = await call(t, "POST", `${rbac}/clusterroles?dryRun=All`, writer, { metadata: { name: "all" }, rules: [{ apiGroups: ["*"], resources: ["*"], verbs: ["*"] }] });
    assert.equal(dry.status, 403, "a dry run is judged too");
  } finally {
    await t.close();
  }
});

test("an admin of one namespace binds there what it holds (aggregated rules included), not cluster-admin", async () => {
  const t = await testServer();
  try {
    await create(t, "/api/v1/namespaces", { metadata: { name: "team" } });
    await create(t, `${rbac}/namespaces/team/rolebindings`, { metadata: { name: "ada" }, roleRef: ref("ClusterRole", "admin"), subjects: [{ kind: "User", name: "ada" }] });
    const ada = as("ada");
    const binding = (name: string, role: string) => ({ metadata: { name }, roleRef: ref("ClusterRole", role), subjects: [{ kind: "User", name: "mallory" }] });
    const admin = await call(t, "POST", `${rbac}/namespaces/team/rolebindings`, ada, binding("root", "cluster-admin"));
    assert.equal(admin.status, 403);
    assert.match(admin.json.message, /^rolebindings\.rbac\.authorization\.k8s\.io "root" is forbidden: user "ada" \(groups=\["system:authenticated"\]\) is attempting to grant RBAC permissions not currently held:\n/);
    for (const role of ["admin", "edit", "view"]) assert.equal((await call(t, "POST", `${rbac}/namespaces/team/rolebindings`, ada, binding(role, role))).status, 201, role);
    // admin's rules come to it through aggregation: a Role with some of them is within them.
    const role = await call(t, "POST", `${rbac}/namespaces/team/roles`, ada, { metadata: { name: "deployer" }, rules: [{ apiGroups: ["apps"], resources: ["deployments", "deployments/scale"], verbs: ["create", "patch"] }, { apiGroups: [""], resources: ["secrets"], verbs: ["get"] }] });
    assert.equal(role.status, 201, role.text);
    const nodes = await call(t, "POST", `${rbac}/namespaces/team/roles`, ada, { metadata: { name: "nodes" }, rules: [{ apiGroups: [""], resources: ["nodes"], verbs: ["get"] }] });
    assert.equal(nodes.status, 403);
    assert.match(nodes.json.message, /\n\{APIGroups:\[""\], Resources:\["nodes"\], Verbs:\["get"\]\}$/);
    const missing = await call(t, "POST", `${rbac}/namespaces/team/rolebindings`, ada, { metadata: { name: "ghost" }, roleRef: ref("Role", "ghost"), subjects: [{ kind: "User", name: "x" }] });
    assert.equal(missing.status, 403);
    assert.equal(missing.json.message, 'rolebindings.rbac.authorization.k8s.io "ghost" is forbidden: roles.rbac.authorization.k8s.io "ghost" not found');
  } finally {
    await t.close();
  }
});

test("the escalate and bind verbs allow what the writer does not hold; an aggregationRule needs every permission", async () => {
  const t = await testServer();
  try {
    const bindOne = [{ apiGroups: ["rbac.authorization.k8s.io"], resources: ["clusterroles"], verbs: ["bind"], resourceNames: ["cluster-admin"] }];
    const binder = await account(t, "binder", [...rbacWriter, ...bindOne]);
    const subjects = [{ kind: "User", name: "someone" }];
    assert.equal((await call(t, "POST", `${rbac}/clusterrolebindings`, binder, { metadata: { name: "b1" }, roleRef: ref("ClusterRole", "cluster-admin"), subjects })).status, 201);
    assert.equal((await call(t, "POST", `${rbac}/clusterrolebindings`, binder, { metadata: { name: "b2" }, roleRef: ref("ClusterRole", "admin"), subjects })).status, 403, "bind names cluster-admin only");
    assert.equal((await call(t, "POST", `${rbac}/clusterroles`, binder, { metadata: { name: "r" }, rules: [{ apiGroups: [""], resources: ["secrets"], verbs: ["get"] }] })).status, 403, "bind is not escalate");
    const escalator = await account(t, "escalator", [...rbacWriter, { apiGroups: ["rbac.authorization.k8s.io"], resources: ["clusterroles"], verbs: ["escalate"] }]);
    assert.equal((await call(t, "POST", `${rbac}/clusterroles`, escalator, { metadata: { name: "all" }, rules: [{ apiGroups: ["*"], resources: ["*"], verbs: ["*"] }] })).status, 201);
    assert.equal((await call(t, "POST", `${rbac}/clusterrolebindings`, escalator, { metadata: { name: "all" }, roleRef: ref("ClusterRole", "all"), subjects })).status, 403, "escalate is not bind");
    const writer = await account(t, "writer", rbacWriter);
    const aggregated = await call(t, "POST", `${rbac}/clusterroles`, writer, { metadata: { name: "gather" }, aggregationRule: { clusterRoleSelectors: [{ matchLabels: { x: "y" } }] }, rules: [] });
    assert.equal(aggregated.status, 403);
    assert.equal(aggregated.json.message, 'clusterroles.rbac.authorization.k8s.io "gather" is forbidden: must have cluster-admin privileges to use the aggregationRule');
    assert.equal((await request(t.server, "POST", `${rbac}/clusterroles`, { body: { metadata: { name: "gather" }, aggregationRule: { clusterRoleSelectors: [{ matchLabels: { x: "y" } }] } } })).status, 201, "masters may");
  } finally {
    await t.close();
  }
});

test("an apply that creates needs create, not patch alone; on an existing object patch is enough", async () => {
  const t = await testServer();
  try {
    const patcher = await account(t, "patcher", [{ apiGroups: [""], resources: ["configmaps", "secrets"], verbs: ["get", "patch", "update"] }]);
    const user = "system:serviceaccount:default:patcher";
    assert.equal((await call(t, "POST", "/api/v1/namespaces/default/configmaps", patcher, { metadata: { name: "c" } })).status, 403);
    const apply = (plural: string, kind: string, name: string) =>
      call(t, "PATCH", `/api/v1/namespaces/default/${plural}/${name}?fieldManager=m`, patcher, { apiVersion: "v1", kind, metadata: { name }, data: { a: kind === "Secret" ? "YQ==" : "a" } }, "application/apply-patch+yaml");
    const configMap = await apply("configmaps", "ConfigMap", "c");
    assert.equal(configMap.status, 403);
    assert.equal(configMap.json.message, `configmaps "c" is forbidden: User "${user}" cannot create resource "configmaps" in API group "" in the namespace "default"`);
    assert.equal((await apply("secrets", "Secret", "s")).status, 403);
    assert.equal((await request(t.server, "GET", "/api/v1/namespaces/default/configmaps/c")).status, 404, "nothing was created");
    await create(t, "/api/v1/namespaces/default/configmaps", { metadata: { name: "c" } });
    assert.equal((await apply("configmaps", "ConfigMap", "c")).status, 200, "an apply that updates needs patch only");
    // A create rule naming the object allows its apply-create, as kube-apiserver asks with the name.
    const named = await account(t, "named", [{ apiGroups: [""], resources: ["configmaps"], verbs: ["patch"] }, { apiGroups: [""], resources: ["configmaps"], verbs: ["create"], resourceNames: ["n"] }]);
    const applyNamed = (name: string) => call(t, "PATCH", `/api/v1/namespaces/default/configmaps/${name}?fieldManager=m`, named, { apiVersion: "v1", kind: "ConfigMap", metadata: { name } }, "application/apply-patch+yaml");
    assert.deepEqual([(await applyNamed("n")).status, (await applyNamed("o")).status], [201, 403]);
  } finally {
    await t.close();
  }
});
