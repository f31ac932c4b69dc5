// Who a request is, as kube-apiserver decides it: `Authorization: bearer` in any case; impersonation allowed by RBAC
// (the `impersonate` verb on users, groups, service accounts, uids and user extras), with the 400 for a uid, group or
// extra without a user; and enforcement that agrees with a SelfSubjectAccessReview (a Namespace is in itself).
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

/** A token for a new service account `name` in `default`. */
async function token(t: TestServer, name: string): Promise<string> {
  await create(t, "/api/v1/namespaces/default/serviceaccounts", { metadata: { name } });
  const minted = await request(t.server, "POST", `/api/v1/namespaces/default/serviceaccounts/${name}/token`, { body: { spec: {} } });
  assert.equal(minted.status, 201, minted.text);
  return minted.json.status.token;
}

const whoami = (t: TestServer, headers: Record<string, string>) =>
  request(t.server, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", { auth: headers.authorization === undefined, headers, body: { spec: {} } });

test("a uid, group or extra impersonated without a user is a 400; an empty Impersonate-User alone impersonates nobody", async () => {
  const t = await testServer();
  try {
    const uid = await whoami(t, { "Impersonate-Uid": "1234" });
    assert.equal(uid.status, 400, uid.text);
    assert.equal(uid.json.message, "requested [{UID  1234  authentication.k8s.io/v1  }] without impersonating a user");
    const extra = await whoami(t, { "Impersonate-Extra-Scopes": "view" });
    assert.equal(extra.status, 400);
    assert.equal(extra.json.message, "requested [{UserExtra  view  authentication.k8s.io/v1  scopes}] without impersonating a user");
    const group = await whoami(t, { "Impersonate-User": "", "Impersonate-Group": "g" });
    assert.deepEqual([group.status, group.json.message], [400, "requested [{Group  g    }] without impersonating a user"]);
    const empty = await whoami(t, { "Impersonate-User": "" });
    assert.equal(empty.status, 201, empty.text);
    assert.equal(empty.json.status.userInfo.username, "settle-admin");
    const full = await whoami(t, { "Impersonate-User": "bob", "Impersonate-Uid": "u-1", "Impersonate-Extra-Reason%2fwhy": "test" });
    assert.deepEqual(full.json.status.userInfo, { username: "bob", uid: "u-1", groups: ["system:authenticated"], extra: { "reason/why": ["test"] } });
  } finally {
    await t.close();
  }
});

test("a service account allowed to impersonate does so, as its review says; each thing impersonated needs its own grant", async () => {
  const t = await testServer();
  try {
    const bot = { authorization: `Bearer ${await token(t, "bot")}` };
    await create(t, `${rbac}/clusterroles`, { metadata: { name: "imp" }, rules: [{ apiGroups: [""], resources: ["users"], verbs: ["impersonate"], resourceNames: ["bob"] }] });
    await create(t, `${rbac}/clusterrolebindings`, { metadata: { name: "imp" }, roleRef: ref("ClusterRole", "imp"), subjects: [{ kind: "ServiceAccount", name: "bot", namespace: "default" }] });
    const review = await request(t.server, "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", { auth: false, headers: bot, body: { spec: { resourceAttributes: { verb: "impersonate", resource: "users", name: "bob" } } } });
    assert.equal(review.json.status.allowed, true);
    const asBob = await whoami(t, { ...bot, "Impersonate-User": "bob" });
    assert.equal(asBob.status, 201, asBob.text);
    assert.equal(asBob.json.status.userInfo.username, "bob");
    const asAlice = await whoami(t, { ...bot, "Impersonate-User": "alice" });
    assert.equal(asAlice.json.message, 'users "alice" is forbidden: User "system:serviceaccount:default:bot" cannot impersonate resource "users" in API group "" at the cluster scope');
    const withGroup = await whoami(t, { ...bot, "Impersonate-User": "bob", "Impersonate-Group": "system:masters" });
    assert.equal(withGroup.status, 403, "a group needs impersonate on groups");
    assert.equal(withGroup.json.message, 'groups "system:masters" is forbidden: User "system:serviceaccount:default:bot" cannot impersonate resource "groups" in API group "" at the cluster scope');
    const withUid = await whoami(t, { ...bot, "Impersonate-User": "bob", "Impersonate-Uid": "1" });
    assert.equal(withUid.json.message, 'uids.authentication.k8s.io "1" is forbidden: User "system:serviceaccount:default:bot" cannot impersonate resource "uids" in API group "authentication.k8s.io" at the cluster scope');
    const account = await whoami(t, { ...bot, "Impersonate-User": "system:serviceaccount:kube-system:default" });
    assert.equal(account.json.message, 'serviceaccounts "default" is forbidden: User "system:serviceaccount:default:bot" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "kube-system"');
  } finally {
    await t.close();
  }
});

test("a service account with view in a namespace reads that Namespace object, as its review says; not another", async () => {
  const t = await testServer();
  try {
    await create(t, "/api/v1/namespaces", { metadata: { name: "team" } });
    await create(t, "/api/v1/namespaces/default/serviceaccounts", { metadata: { name: "viewer" } });
    await create(t, `${rbac}/namespaces/team/rolebindings`, { metadata: { name: "v" }, roleRef: ref("ClusterRole", "view"), subjects: [{ kind: "ServiceAccount", name: "viewer", namespace: "default" }] });
    const headers = { "Impersonate-User": "system:serviceaccount:default:viewer" };
    const review = await request(t.server, "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", { headers, body: { spec: { resourceAttributes: { namespace: "team", verb: "get", resource: "namespaces", name: "team" } } } });
    assert.equal(review.json.status.allowed, true);
    assert.equal((await request(t.server, "GET", "/api/v1/namespaces/team", { headers })).status, 200);
    const other = await request(t.server, "GET", "/api/v1/namespaces/default", { headers });
    assert.equal(other.json.message, 'namespaces "default" is forbidden: User "system:serviceaccount:default:viewer" cannot get resource "namespaces" in API group "" in the namespace "default"');
  } finally {
    await t.close();
  }
});

test("the bearer scheme is read in any case; another scheme or an empty token is a 401", async () => {
  const t = await testServer();
  try {
    const get = (authorization: string) => request(t.server, "GET", "/api/v1/namespaces", { auth: false, headers: { authorization } });
    assert.equal((await get(`bearer ${t.server.token}`)).status, 200);
    assert.equal((await get(`BEARER ${t.server.token}`)).status, 200);
    assert.equal((await get(`Basic ${t.server.token}`)).status, 401);
    assert.equal((await get("Bearer ")).status, 401);
  } finally {
    await t.close();
  }
});

test("a list or watch selecting one name by field is authorized for that name, as its review says", async () => {
  const t = await testServer();
  try {
    await create(t, "/api/v1/namespaces/default/configmaps", { metadata: { name: "x" } });
    await create(t, `${rbac}/namespaces/default/roles`, { metadata: { name: "one" }, rules: [{ apiGroups: [""], resources: ["configmaps"], verbs: ["list", "watch"], resourceNames: ["x"] }] });
    await create(t, `${rbac}/namespaces/default/rolebindings`, { metadata: { name: "one" }, roleRef: ref("Role", "one"), subjects: [{ kind: "User", name: "una" }] });
    const headers = { "Impersonate-User": "una" };
    const review = await request(t.server, "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", { headers, body: { spec: { resourceAttributes: { namespace: "default", verb: "list", resource: "configmaps", name: "x" } } } });
    assert.equal(review.json.status.allowed, true);
    const list = await request(t.server, "GET", "/api/v1/namespaces/default/configmaps?fieldSelector=metadata.name%3Dx", { headers });
    assert.equal(list.status, 200, list.text);
    assert.deepEqual(list.json.items.map((i: any) => i.metadata.name), ["x"]);
    assert.equal((await request(t.server, "GET", "/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=1&fieldSelector=metadata.name%3D%3Dx", { headers })).status, 200);
    const all = await request(t.server, "GET", "/api/v1/namespaces/default/configmaps", { headers });
    assert.equal(all.status, 403);
    const other = await request(t.server, "GET", "/api/v1/namespaces/default/configmaps?fieldSelector=metadata.name%3Dy", { headers });
    assert.equal(other.json.message, 'configmaps "y" is forbidden: User "una" cannot list resource "configmaps" in API group "" in the namespace "default"');
  } finally {
    await t.close();
  }
});
