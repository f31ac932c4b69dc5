// A custom resource's /scale, as its CRD declares it (`subresources.scale`): discovery lists it, GET reads the counts
// and the selector from the declared paths (absent counts as 0), kubectl scale writes the desired count there and
// keeps the rest; a CRD whose paths are not under .spec/.status is refused.
import { test } from "node:test";
import assert from "node:assert/strict";
import { kubectl, request, testServer } from "./helpers.ts";

function crd(scale: Record<string, string>) {
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: "pools.example.com" },
    spec: {
      group: "example.com",
      scope: "Namespaced",
      names: { plural: "pools", singular: "pool", kind: "Pool" },
      versions: [
        {
          name: "v1",
          served: true,
          storage: true,
          subresources: { status: {}, scale },
          schema: {
            openAPIV3Schema: {
              type: "object",
              properties: {
                spec: { type: "object", properties: { workers: { type: "object", properties: { count: { type: "integer" } } }, image: { type: "string" } } },
                status: { type: "object", properties: { ready: { type: "integer" }, selector: { type: "string" } } },
              },
            },
          },
        },
      ],
    },
  };
}

const crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const pools = "/apis/example.com/v1/namespaces/default/pools";

test("a custom resource's /scale reads and writes the paths its CRD names, and kubectl scale uses it", async () => {
  const t = await testServer();
  try {
    assert.equal((await request(t.server, "POST", crds, { body: crd({ specReplicasPath: ".spec.workers.count", statusReplicasPath: ".status.ready", labelSelectorPath: ".status.selector" }) })).status, 201);
    const resources = (await request(t.server, "GET", "/apis/example.com/v1")).json.resources as Array<{ name: string; kind: string; group?: string }>;
    assert.deepEqual(resources.find((r) => r.name === "pools/scale"), { name: "pools/scale", singularName: "", namespaced: true, group: "autoscaling", version: "v1", kind: "Scale", verbs: ["get", "patch", "update"] });
    assert.equal((await request(t.server, "POST", pools, { body: { apiVersion: "example.com/v1", kind: "Pool", metadata: { name: "p" }, spec: { image: "x" } } })).status, 201);
    const empty = (await request(t.server, "GET", `${pools}/p/scale`)).json;
    assert.deepEqual([empty.kind, empty.spec, empty.status], ["Scale", { replicas: 0 }, { replicas: 0 }], "absent counts read as 0");
    await request(t.server, "PATCH", `${pools}/p/status`, { body: { status: { ready: 2, selector: "app=p" } }, contentType: "application/merge-patch+json" });
    const scaled = await kubectl(t, ["scale", "pool/p", "--replicas=3"]);
    assert.equal(scaled.code, 0, scaled.stderr);
    const pool = (await request(t.server, "GET", `${pools}/p`)).json;
    assert.deepEqual(pool.spec, { image: "x", workers: { count: 3 } });
    assert.deepEqual(pool.status, { ready: 2, selector: "app=p" });
    const scale = (await request(t.server, "GET", `${pools}/p/scale`)).json;
    assert.deepEqual([scale.spec, scale.status], [{ replicas: 3 }, { replicas: 2, selector: "app=p" }]);
  } finally {
    await t.close();
  }
});

test("a CRD whose scale paths are not under .spec and .status is refused with the field named", async () => {
  const t = await testServer();
  try {
    const reply = await request(t.server, "POST", crds, { body: crd({ specReplicasPath: ".status.count", statusReplicasPath: "status.ready" }) });
    assert.equal(reply.status, 422, reply.text);
    const fields = (reply.json.details.causes as Array<{ field: string; message: string }>).map((c) => `${c.field}: ${c.message}`);
    assert.deepEqual(fields, [
      'spec.versions[0].subresources.scale.specReplicasPath: Invalid value: ".status.count": should be a json path under .spec',
      'spec.versions[0].subresources.scale.statusReplicasPath: Invalid value: "status.ready": should be a json path under .status',
    ]);
  } finally {
    await t.close();
  }
});
