// OpenAPI v3 schemas: built from the wire table for built-in kinds and from a CRD's openAPIV3Schema for custom
// kinds, so `kubectl explain` answers for both and kubectl can build strategic merge patches from them.
import { test } from "node:test";
import assert from "node:assert/strict";
import { kubectl, kubectl133Path, request, testServer } from "./helpers.ts";

const widgetCrd = {
  apiVersion: "apiextensions.k8s.io/v1",
  kind: "CustomResourceDefinition",
  metadata: { name: "widgets.example.com" },
  spec: {
    group: "example.com",
    scope: "Namespaced",
    names: { plural: "widgets", singular: "widget", kind: "Widget" },
    versions: [{ name: "v1", served: true, storage: true, schema: { openAPIV3Schema: { type: "object", properties: { spec: { type: "object", properties: { size: { type: "integer", description: "How big the widget is." } } } } } } }],
  },
};

test("a built-in group version's document holds its kinds' schemas with the markers as extensions", async () => {
  const t = await testServer();
  try {
    const doc = (await request(t.server, "GET", "/openapi/v3/apis/apps/v1")).json;
    const schemas = doc.components.schemas;
    const deployment = schemas["io.k8s.api.apps.v1.Deployment"];
    assert.deepEqual(deployment["x-kubernetes-group-version-kind"], [{ group: "apps", version: "v1", kind: "Deployment" }]);
    assert.deepEqual(deployment.properties.metadata, { allOf: [{ $ref: "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta" }] });
    const containers = schemas["io.k8s.api.core.v1.PodSpec"].properties.containers;
    assert.equal(containers["x-kubernetes-patch-merge-key"], "name");
    assert.equal(containers["x-kubernetes-patch-strategy"], "merge");
    assert.equal(containers["x-kubernetes-list-type"], "map");
    assert.equal(schemas["io.k8s.api.core.v1.ContainerPort"].properties.protocol.default, "TCP");
    // Go-inlined structs are flattened: a volume has `configMap` itself, not a `volumeSource`.
    assert.ok(schemas["io.k8s.api.core.v1.Volume"].properties.configMap !== undefined);
    assert.equal(schemas["io.k8s.api.core.v1.Volume"].properties.volumeSource, undefined);
    assert.equal(schemas["io.k8s.apimachinery.pkg.apis.meta.v1.Time"].format, "date-time");
    for (const schema of Object.values<any>(schemas)) assert.equal(schema.description, undefined, "no copied descriptions");
    const refs = JSON.stringify(doc).match(/#\/components\/schemas\/[\w.]+/g) ?? [];
    for (const target of new Set(refs)) assert.ok(schemas[target.slice("#/components/schemas/".length)] !== undefined, `dangling ${target}`);
  } finally {
    await t.close();
  }
});

test("schemas list the fields the definitions mark required, and none they mark optional or Go omits when empty", async () => {
  const t = await testServer();
  try {
    const core = (await request(t.server, "GET", "/openapi/v3/api/v1")).json.components.schemas;
    const apps = (await request(t.server, "GET", "/openapi/v3/apis/apps/v1")).json.components.schemas;
    // `+required` markers.
    assert.deepEqual(apps["io.k8s.api.apps.v1.DeploymentSpec"].required, ["selector", "template"]);
    // Unmarked fields without omitempty are required, in field order.
    assert.deepEqual(core["io.k8s.api.core.v1.Container"].required, ["name"]);
    assert.deepEqual(core["io.k8s.api.core.v1.ServicePort"].required, ["port"]);
    assert.deepEqual(core["io.k8s.api.core.v1.PodSpec"].required, ["containers"]);
    assert.deepEqual(apps["io.k8s.api.apps.v1.DaemonSetStatus"].required, ["currentNumberScheduled", "numberMisscheduled", "desiredNumberScheduled", "numberReady"]);
    assert.deepEqual(core["io.k8s.api.core.v1.ConfigMapList"].required, ["items"]);
    // Unmarked but omitempty in Go (the generator's hand list): not required.
    assert.equal(core["io.k8s.api.core.v1.ServiceSpec"].required, undefined);
    assert.deepEqual(apps["io.k8s.api.apps.v1.StatefulSetStatus"].required, ["replicas"]);
    // Inlined structs bring their required fields into the parent: a key selector's `key`; `+optional` name stays out.
    assert.deepEqual(core["io.k8s.api.core.v1.ConfigMapKeySelector"].required, ["key"]);
    assert.equal(core["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"].required, undefined);
    for (const schema of Object.values<any>(core)) {
      for (const name of schema.required ?? []) assert.ok(schema.properties[name] !== undefined, `required ${name} is a property`);
    }
  } finally {
    await t.close();
  }
});

for (const [version, binary] of [["1.35", undefined], ["1.33", kubectl133Path]] as const) {
  test(`kubectl ${version} explain answers for a built-in field and for a custom kind`, async () => {
    const t = await testServer();
    const options = binary === undefined ? {} : { binary };
    try {
      const spec = await kubectl(t, ["explain", "deployment.spec"], options);
      assert.equal(spec.code, 0, spec.stderr);
      assert.match(spec.stdout, /KIND:\s+Deployment/);
      assert.match(spec.stdout, /strategy\s+<DeploymentStrategy>/);
      assert.match(spec.stdout, /replicas\s+<integer>/);
      const probe = await kubectl(t, ["explain", "pod.spec.containers.livenessProbe.httpGet.path"], options);
      assert.equal(probe.code, 0, probe.stderr);
      assert.match(probe.stdout, /FIELD:\s+path <string>/);
      assert.equal((await request(t.server, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", { body: widgetCrd })).status, 201);
      const custom = await kubectl(t, ["explain", "widgets.spec"], options);
      assert.equal(custom.code, 0, custom.stderr);
      assert.match(custom.stdout, /KIND:\s+Widget/);
      assert.match(custom.stdout, /size\s+<integer>/);
      assert.match(custom.stdout, /How big the widget is\./);
    } finally {
      await t.close();
    }
  });
}
