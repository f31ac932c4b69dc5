// What envtest may ask of settle that settle does not do fails where it is asked, with a message naming it: a CRD
// whose conversion calls a webhook (envtest points convertible CRDs at the webhook server it runs) is refused on
// create with 422 naming spec.conversion.strategy, so envtest's Start() returns that error instead of a suite
// reading unconverted objects later. A CRD with strategy None, or none, is taken as before.
import { test } from "node:test";
import assert from "node:assert/strict";
import { request, testServer } from "../server/helpers.ts";

function crd(conversion: Record<string, unknown> | undefined) {
  const version = (name: string, storage: boolean) => ({ name, served: true, storage, schema: { openAPIV3Schema: { type: "object", "x-kubernetes-preserve-unknown-fields": true } } });
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: "widgets.example.com" },
    spec: {
      group: "example.com",
      scope: "Namespaced",
      names: { plural: "widgets", singular: "widget", kind: "Widget" },
      versions: [version("v1", true), version("v2", false)],
      ...(conversion === undefined ? {} : { conversion }),
    },
  };
}

const crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";

test("a CRD with a conversion webhook is refused with 422 naming spec.conversion.strategy", async () => {
  const t = await testServer();
  try {
    const webhook = { strategy: "Webhook", webhook: { conversionReviewVersions: ["v1"], clientConfig: { url: "https://127.0.0.1:9443/convert", caBundle: "" } } };
    const refused = await request(t.server, "POST", crds, { body: crd(webhook) });
    assert.equal(refused.status, 422, refused.text);
    assert.equal(refused.json.reason, "Invalid");
    assert.equal(refused.json.details.causes[0].field, "spec.conversion.strategy");
    assert.match(refused.json.message, /settle calls no conversion webhooks/);
    const odd = await request(t.server, "POST", crds, { body: crd({ strategy: "Magic" }) });
    assert.equal(odd.status, 422, odd.text);
    assert.match(odd.json.message, /Unsupported value: "Magic": supported values: "None", "Webhook"/);
    for (const conversion of [{ strategy: "None" }, undefined]) {
      const taken = await request(t.server, "POST", crds, { body: crd(conversion) });
      assert.equal(taken.status, 201, taken.text);
      assert.equal((await request(t.server, "DELETE", `${crds}/widgets.example.com`)).status, 200);
      for (let attempt = 0; attempt < 100 && (await request(t.server, "GET", `${crds}/widgets.example.com`)).status !== 404; attempt++) await new Promise((resolve) => setTimeout(resolve, 20));
    }
  } finally {
    await t.close();
  }
});
