// Every stable built-in kind from the generated wire table: discovery, CRUD on kinds the scenarios never used,
// field dropping by the wire definition's top-level fields, and the `/scale` subresource.
import { test } from "node:test";
import assert from "node:assert/strict";
import { wireKinds } from "../../src/api/generated/k8s-api.ts";
import { decodeProtobuf } from "../../src/server/encoding/protobuf.ts";
import { childOf, schemaOf } from "../../src/server/schema.ts";
import { applyStrategicPatch } from "../../src/server/strategic.ts";
import { kubectl, request, testServer } from "./helpers.ts";

test("discovery lists every stored kind of the wire table that a 1.35 server serves, with categories and subresources", async () => {
  const t = await testServer();
  try {
    const served = new Set<string>();
    const groups = (await request(t.server, "GET", "/apis")).json.groups as Array<{ name: string; versions: Array<{ groupVersion: string }> }>;
    const paths = ["/api/v1", ...groups.flatMap((g) => g.versions.map((v) => `/apis/${v.groupVersion}`))];
    const byName = new Map<string, any>();
    for (const path of paths) {
      const list = (await request(t.server, "GET", path)).json;
      for (const r of list.resources) {
        if (!r.name.includes("/")) served.add(`${list.groupVersion}/${r.kind}`);
        byName.set(`${list.groupVersion}/${r.name}`, r);
      }
    }
    // Kinds whose v1 types exist in the definitions but that a 1.35 server does not serve as v1 yet, and review and
    // subresource kinds (answered, not stored). autoscaling/v1 is served, as a conversion of the stored v2.
    const notStored = new Set(["MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding", "ClusterTrustBundle", "PodCertificateRequest", "RangeAllocation"]);
    const missing = wireKinds
      .filter((k) => k.list && !notStored.has(k.kind))
      .map((k) => `${k.group === "" ? "" : `${k.group}/`}${k.version}/${k.kind}`)
      .filter((id) => !served.has(id));
    assert.deepEqual(missing, []);
    assert.deepEqual(byName.get("v1/services").shortNames, ["svc"]);
    assert.deepEqual(byName.get("v1/services").categories, ["all"]);
    assert.deepEqual(byName.get("apps/v1/deployments").categories, ["all"]);
    assert.equal(byName.get("apps/v1/deployments/scale").kind, "Scale");
    assert.equal(byName.get("apps/v1/deployments/scale").group, "autoscaling");
    assert.ok(byName.has("v1/services/status"));
    assert.ok(!byName.has("v1/configmaps/status"));
    assert.deepEqual(byName.get("v1/componentstatuses").verbs, ["get", "list"]);
    assert.ok(!byName.get("v1/namespaces").verbs.includes("deletecollection"));
    assert.equal(byName.get("rbac.authorization.k8s.io/v1/clusterroles").namespaced, false);
  } finally {
    await t.close();
  }
});

test("kinds the scenarios never used keep their top-level fields: a Role, a RoleBinding with a colon, an Endpoints", async () => {
  const t = await testServer();
  try {
    const role = { apiVersion: "rbac.authorization.k8s.io/v1", kind: "Role", metadata: { name: "reader" }, rules: [{ apiGroups: [""], resources: ["pods"], verbs: ["get"] }], bogus: 1 };
    const created = await request(t.server, "POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles", { body: role });
    assert.equal(created.status, 201, created.text);
    assert.deepEqual(created.json.rules, role.rules);
    assert.equal(created.json.bogus, undefined);
    const binding = { apiVersion: "rbac.authorization.k8s.io/v1", kind: "RoleBinding", metadata: { name: "system:reader" }, subjects: [{ kind: "User", name: "me" }], roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "reader" } };
    assert.equal((await request(t.server, "POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings", { body: binding })).status, 201);
    const got = await request(t.server, "GET", "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings/system:reader");
    assert.deepEqual(got.json.roleRef, binding.roleRef);
    const endpoints = { metadata: { name: "web" }, subsets: [{ addresses: [{ ip: "10.0.0.1" }], ports: [{ port: 80 }] }] };
    const ep = await request(t.server, "POST", "/api/v1/namespaces/default/endpoints", { body: endpoints });
    assert.equal(ep.status, 201, ep.text);
    // Endpoint ports get the protocol's default, as on a real server.
    assert.deepEqual(ep.json.subsets, [{ addresses: [{ ip: "10.0.0.1" }], ports: [{ port: 80, protocol: "TCP" }] }]);
    const svc = { metadata: { name: "web" }, spec: { ports: [{ port: 80 }] } };
    assert.equal((await request(t.server, "POST", "/api/v1/namespaces/default/services", { body: svc })).status, 201);
    const list = await request(t.server, "GET", "/api/v1/services");
    assert.deepEqual(list.json.items.map((s: any) => s.metadata.name), ["kubernetes", "web"], "beside the API server's own");
  } finally {
    await t.close();
  }
});

test("the scale subresource reads and writes spec.replicas of a Deployment and checks its resourceVersion", async () => {
  const t = await testServer();
  try {
    const deployment = {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: "web" },
      spec: { replicas: 2, selector: { matchLabels: { app: "web" } }, template: { metadata: { labels: { app: "web" } }, spec: { containers: [{ name: "web", image: "nginx" }] } } },
    };
    assert.equal((await request(t.server, "POST", "/apis/apps/v1/namespaces/default/deployments", { body: deployment })).status, 201);
    const path = "/apis/apps/v1/namespaces/default/deployments/web/scale";
    const scale = await request(t.server, "GET", path);
    assert.equal(scale.json.kind, "Scale");
    assert.equal(scale.json.apiVersion, "autoscaling/v1");
    assert.equal(scale.json.spec.replicas, 2);
    assert.equal(scale.json.status.selector, "app=web");
    const patched = await request(t.server, "PATCH", path, { body: { spec: { replicas: 5 } }, contentType: "application/merge-patch+json" });
    assert.equal(patched.status, 200, patched.text);
    assert.equal(patched.json.spec.replicas, 5);
    assert.equal((await request(t.server, "GET", "/apis/apps/v1/namespaces/default/deployments/web")).json.spec.replicas, 5);
    const stale = await request(t.server, "PUT", path, { body: { ...scale.json, spec: { replicas: 1 } } });
    assert.equal(stale.status, 409);
    const put = await request(t.server, "PUT", path, { body: { kind: "Scale", apiVersion: "autoscaling/v1", metadata: { name: "web" }, spec: { replicas: 0 } } });
    assert.equal(put.status, 200, put.text);
    assert.equal(put.json.spec.replicas, 0);
    assert.equal((await request(t.server, "GET", "/apis/batch/v1/namespaces/default/jobs/x/scale")).status, 404);
  } finally {
    await t.close();
  }
});

test("a client that asks for protobuf first gets objects, lists and watch streams in protobuf, and JSON for custom resources", async () => {
  const t = await testServer();
  try {
    const accept = "application/vnd.kubernetes.protobuf, application/json";
    const service = { metadata: { name: "web" }, spec: { ports: [{ port: 80, targetPort: "http" }] } };
    const created = await fetch(`${t.server.url}/api/v1/namespaces/default/services`, {
      method: "POST",
      headers: { authorization: `Bearer ${t.server.token}`, accept, "content-type": "application/json" },
      body: JSON.stringify(service),
    });
    assert.equal(created.status, 201);
    assert.equal(created.headers.get("content-type"), "application/vnd.kubernetes.protobuf");
    const decoded = decodeProtobuf(new Uint8Array(await created.arrayBuffer()));
    const json = (await request(t.server, "GET", "/api/v1/namespaces/default/services/web")).json;
    assert.deepEqual(decoded, json);
    const list = await fetch(`${t.server.url}/api/v1/services`, { headers: { authorization: `Bearer ${t.server.token}`, accept } });
    const items = decodeProtobuf(new Uint8Array(await list.arrayBuffer()));
    assert.equal(items.kind, "ServiceList");
    assert.deepEqual((items.items as any[]).map((s) => s.spec.ports[0].targetPort), [t.server.port, "http"], "the kubernetes Service's, then ours");
    const onlyProtobuf = { authorization: `Bearer ${t.server.token}`, accept: "application/vnd.kubernetes.protobuf" };
    const watch = await fetch(`${t.server.url}/api/v1/services?watch=true`, { headers: onlyProtobuf });
    assert.equal(watch.status, 200);
    assert.equal(watch.headers.get("content-type"), "application/vnd.kubernetes.protobuf;stream=watch");
    await watch.body?.cancel();
    const configMaps = await fetch(`${t.server.url}/api/v1/configmaps`, { headers: onlyProtobuf });
    assert.equal(configMaps.headers.get("content-type"), "application/vnd.kubernetes.protobuf");
  } finally {
    await t.close();
  }
});

test("strategic merge and apply metadata come from the markers: Service ports by port, Role rules atomic, ClusterRole too", () => {
  const service = schemaOf({ group: "", version: "v1", kind: "Service" });
  const ports = childOf(childOf(service, "spec"), "ports");
  assert.equal(ports.t, "list");
  assert.equal(ports.t === "list" ? ports.mergeKey : "", "port");
  assert.deepEqual(ports.t === "list" ? ports.keys : [], ["port", "protocol"]);
  const live = { metadata: { name: "web" }, spec: { ports: [{ name: "http", port: 80 }, { name: "https", port: 443 }] } };
  const patched = applyStrategicPatch(live, { spec: { ports: [{ port: 443, targetPort: 8443 }] } }, service) as any;
  assert.deepEqual(patched.spec.ports, [{ name: "http", port: 80 }, { name: "https", port: 443, targetPort: 8443 }]);
  const role = schemaOf({ group: "rbac.authorization.k8s.io", version: "v1", kind: "Role" });
  const rules = childOf(role, "rules");
  assert.ok(rules.t === "list" && rules.listType === "atomic" && rules.strategy === "replace");
  const replaced = applyStrategicPatch({ metadata: {}, rules: [{ verbs: ["get"] }] }, { rules: [{ verbs: ["list"] }] }, role) as any;
  assert.deepEqual(replaced.rules, [{ verbs: ["list"] }]);
  // LabelSelector is `+structType=atomic`: apply replaces it whole.
  const selector = childOf(childOf(schemaOf({ group: "apps", version: "v1", kind: "Deployment" }), "spec"), "selector");
  assert.ok(selector.t === "struct" && selector.atomic === true);
  const finalizers = childOf(childOf(service, "metadata"), "finalizers");
  assert.ok(finalizers.t === "list" && finalizers.listType === "set" && finalizers.strategy === "merge");
});

test("a CRD's categories reach discovery and acceptedNames, so its resources show in kubectl get all", async () => {
  const t = await testServer();
  try {
    const crd = {
      apiVersion: "apiextensions.k8s.io/v1",
      kind: "CustomResourceDefinition",
      metadata: { name: "gadgets.example.com" },
      spec: { group: "example.com", scope: "Namespaced", names: { plural: "gadgets", singular: "gadget", kind: "Gadget", categories: ["all"] }, versions: [{ name: "v1", served: true, storage: true, schema: { openAPIV3Schema: { type: "object", "x-kubernetes-preserve-unknown-fields": true } } }] },
    };
    const created = await request(t.server, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", { body: crd });
    assert.equal(created.status, 201, created.text);
    assert.deepEqual(created.json.status.acceptedNames.categories, ["all"]);
    const resources = (await request(t.server, "GET", "/apis/example.com/v1")).json.resources;
    assert.deepEqual(resources.find((r: any) => r.name === "gadgets").categories, ["all"]);
    assert.equal((await request(t.server, "POST", "/apis/example.com/v1/namespaces/default/gadgets", { body: { apiVersion: "example.com/v1", kind: "Gadget", metadata: { name: "g1" } } })).status, 201);
    const all = await kubectl(t, ["get", "all"]);
    assert.equal(all.code, 0, all.stderr);
    assert.match(all.stdout, /gadget\.example\.com\/g1/);
  } finally {
    await t.close();
  }
});
