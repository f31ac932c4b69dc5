// CRD conversion webhooks, served as kube-apiserver serves them: a Widget stored at v1 (`spec.fullName`) is read,
// listed, watched, created, updated and patched at v2 (`spec.first`, `spec.last`) through a real HTTPS webhook that
// answers `apiextensions.k8s.io/v1` ConversionReviews (its certificate trusted through `caBundle`, as envtest installs
// it); a list's objects go in one review; labels and annotations the webhook sets are kept, other metadata is the
// stored object's; a failing webhook gives the client kube-apiserver's 500 ("conversion webhook for ... failed: ...").
// Strategy None serves every version as the stored object with its apiVersion rewritten. On the old code a CRD with
// strategy Webhook was refused with 422.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:https";
import type { Server } from "node:https";
import type { AddressInfo } from "node:net";
import { selfSignedCertificate } from "../../src/server/auth/tls.ts";
import { readEvents, request, testServer, watchRequest } from "../server/helpers.ts";

interface Review {
  apiVersion: string;
  kind: string;
  request: { uid: string; desiredAPIVersion: string; objects: any[] };
}

/** Converts one Widget: v1 holds `fullName`, v2 `first` and `last`. The label `converted-by` marks the webhook's work. */
function convertWidget(object: any, desired: string): any {
  const spec = object.spec ?? {};
  const converted = { ...object, apiVersion: desired, metadata: { ...object.metadata, labels: { ...object.metadata.labels, "converted-by": "webhook" } } };
  if (desired === "example.com/v2") {
    const [first, ...rest] = String(spec.fullName ?? "").split(" ");
    converted.spec = { first, last: rest.join(" ") };
  } else converted.spec = { fullName: [spec.first, spec.last].filter((part) => part !== undefined && part !== "").join(" ") };
  return converted;
}

/**
 * An HTTPS conversion webhook: answers every review it gets (kept in `reviews`), or fails as `mode` says. At
 * `/validate` it is a validating admission webhook allowing everything (its reviews kept in `admissions`).
 */
async function conversionWebhook(): Promise<{ url: string; caBundle: string; reviews: Review[]; admissions: any[]; mode: { fail?: "status" | "http" | "uid" }; close: () => Promise<void> }> {
  const { key, cert } = selfSignedCertificate(Date.now());
  const reviews: Review[] = [];
  const admissions: any[] = [];
  const mode: { fail?: "status" | "http" | "uid" } = {};
  const server: Server = createServer({ key, cert }, (req, res) => {
    let text = "";
    req.on("data", (chunk: Buffer) => (text += chunk.toString("utf8")));
    req.on("end", () => {
      if ((req.url ?? "").startsWith("/validate")) {
        const admission = JSON.parse(text);
        admissions.push(admission.request);
        res.writeHead(200, { "content-type": "application/json" });
        return void res.end(JSON.stringify({ apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview", response: { uid: admission.request.uid, allowed: true } }));
      }
      const review = JSON.parse(text) as Review;
      reviews.push(review);
      if (mode.fail === "http") {
        res.writeHead(503);
        return void res.end();
      }
      const { uid, desiredAPIVersion, objects } = review.request;
      const response =
        mode.fail === "status"
          ? { uid, result: { status: "Failure", message: "widgets cannot be converted today" } }
          : { uid: mode.fail === "uid" ? "another" : uid, convertedObjects: objects.map((o) => convertWidget(o, desiredAPIVersion)), result: { status: "Success" } };
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ apiVersion: review.apiVersion, kind: "ConversionReview", response }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}/convert`;
  return { url, caBundle: Buffer.from(cert).toString("base64"), reviews, admissions, mode, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

function widgetCrd(conversion: Record<string, unknown> | undefined) {
  const version = (name: string, storage: boolean, spec: Record<string, unknown>) => ({
    name,
    served: true,
    storage,
    schema: { openAPIV3Schema: { type: "object", properties: { spec: { type: "object", properties: spec } } } },
  });
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: "widgets.example.com" },
    spec: {
      group: "example.com",
      scope: "Namespaced",
      names: { plural: "widgets", singular: "widget", kind: "Widget" },
      versions: [version("v1", true, { fullName: { type: "string" } }), version("v2", false, { first: { type: "string" }, last: { type: "string" }, mood: { type: "string", default: "calm" } })],
      ...(conversion === undefined ? {} : { conversion }),
    },
  };
}

const crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const v1 = "/apis/example.com/v1/namespaces/default/widgets";
const v2 = "/apis/example.com/v2/namespaces/default/widgets";

test("a CRD whose conversion calls a webhook serves its other version through the webhook: reads, lists, watches, writes", async () => {
  const hook = await conversionWebhook();
  const t = await testServer();
  try {
    const conversion = { strategy: "Webhook", webhook: { conversionReviewVersions: ["v1"], clientConfig: { url: hook.url, caBundle: hook.caBundle } } };
    const created = await request(t.server, "POST", crds, { body: widgetCrd(conversion) });
    assert.equal(created.status, 201, created.text);

    // A create at v2: the webhook turns the body into v1 (stored), and the answer back into v2.
    const ada = await request(t.server, "POST", v2, { body: { apiVersion: "example.com/v2", kind: "Widget", metadata: { name: "ada" }, spec: { first: "Ada", last: "Lovelace" } } });
    assert.equal(ada.status, 201, ada.text);
    assert.equal(ada.json.apiVersion, "example.com/v2");
    assert.deepEqual(ada.json.spec, { first: "Ada", last: "Lovelace", mood: "calm" });
    const first = hook.reviews[0]!;
    assert.equal(first.apiVersion, "apiextensions.k8s.io/v1");
    assert.equal(first.kind, "ConversionReview");
    assert.equal(first.request.desiredAPIVersion, "example.com/v1");
    assert.equal(first.request.objects[0].apiVersion, "example.com/v2");
    // The body was decoded at v2 first: its schema's default is in what the webhook saw.
    assert.equal(first.request.objects[0].spec.mood, "calm");
    const stored = await request(t.server, "GET", `${v1}/ada`);
    assert.equal(stored.status, 200, stored.text);
    assert.equal(stored.json.apiVersion, "example.com/v1");
    assert.deepEqual(stored.json.spec, { fullName: "Ada Lovelace" });
    assert.equal(stored.json.metadata.labels["converted-by"], "webhook", "labels the webhook sets are kept");
    assert.equal(ada.json.metadata.uid, stored.json.metadata.uid);
    assert.equal(ada.json.metadata.resourceVersion, stored.json.metadata.resourceVersion, "the answer is the stored object, converted");

    // A body at v2 is validated against v2's schema before it is converted: the error names v2's fields.
    const reviewsBeforeInvalid = hook.reviews.length;
    const wrong = await request(t.server, "POST", v2, { body: { apiVersion: "example.com/v2", kind: "Widget", metadata: { name: "wrong" }, spec: { first: 7 } } });
    assert.equal(wrong.status, 422, wrong.text);
    assert.match(wrong.json.message, /^Widget\.example\.com "wrong" is invalid: spec\.first: Invalid value: 7: spec\.first in body must be of type string/);
    assert.equal(hook.reviews.length, reviewsBeforeInvalid, "an invalid body is not sent to the webhook");

    // A write at the storage version calls no webhook; a read at v2 converts it.
    const before = hook.reviews.length;
    const grace = await request(t.server, "POST", v1, { body: { apiVersion: "example.com/v1", kind: "Widget", metadata: { name: "grace" }, spec: { fullName: "Grace Brewster Hopper" } } });
    assert.equal(grace.status, 201, grace.text);
    assert.equal(hook.reviews.length, before);
    const read = await request(t.server, "GET", `${v2}/grace`);
    assert.equal(read.status, 200, read.text);
    assert.deepEqual(read.json.spec, { first: "Grace", last: "Brewster Hopper", mood: "calm" }, "converted, then defaulted with v2's schema");
    assert.equal(read.json.metadata.resourceVersion, grace.json.metadata.resourceVersion);

    // A list at v2 sends its objects in one review (those converted already are not sent again).
    const reviewsBefore = hook.reviews.length;
    const dot = await request(t.server, "POST", v1, { body: { apiVersion: "example.com/v1", kind: "Widget", metadata: { name: "dot" }, spec: { fullName: "Dorothy Vaughan" } } });
    assert.equal(dot.status, 201, dot.text);
    const alan = await request(t.server, "POST", v1, { body: { apiVersion: "example.com/v1", kind: "Widget", metadata: { name: "alan" }, spec: { fullName: "Alan Turing" } } });
    assert.equal(alan.status, 201, alan.text);
    const list = await request(t.server, "GET", v2);
    assert.equal(list.status, 200, list.text);
    assert.equal(list.json.apiVersion, "example.com/v2");
    assert.deepEqual(list.json.items.map((w: any) => `${w.apiVersion} ${w.spec.first}`).sort(), ["example.com/v2 Ada", "example.com/v2 Alan", "example.com/v2 Dorothy", "example.com/v2 Grace"]);
    assert.equal(hook.reviews.length, reviewsBefore + 1, "one review for the list");
    assert.deepEqual(hook.reviews.at(-1)!.request.objects.map((o: any) => o.metadata.name).sort(), ["alan", "dot"]);

    // A merge patch at v2 applies to the v2 form of the stored object.
    const patched = await request(t.server, "PATCH", `${v2}/alan`, { body: { spec: { first: "Alonzo" } }, contentType: "application/merge-patch+json" });
    assert.equal(patched.status, 200, patched.text);
    assert.deepEqual(patched.json.spec, { first: "Alonzo", last: "Turing", mood: "calm" });
    assert.deepEqual((await request(t.server, "GET", `${v1}/alan`)).json.spec, { fullName: "Alonzo Turing" });

    // An update at v2, with the resourceVersion read at v2.
    const update = { ...patched.json, spec: { first: "Alan", last: "Turing" } };
    const updated = await request(t.server, "PUT", `${v2}/alan`, { body: update });
    assert.equal(updated.status, 200, updated.text);
    assert.deepEqual((await request(t.server, "GET", `${v1}/alan`)).json.spec, { fullName: "Alan Turing" });

    // A server-side apply at v2 merges into the v2 form of the stored object.
    const applied = await request(t.server, "PATCH", `${v2}/alan?fieldManager=applier`, { raw: JSON.stringify({ apiVersion: "example.com/v2", kind: "Widget", metadata: { name: "alan" }, spec: { last: "Turing-Newman" } }), contentType: "application/apply-patch+yaml" });
    assert.equal(applied.status, 200, applied.text);
    assert.deepEqual(applied.json.spec, { first: "Alan", last: "Turing-Newman", mood: "calm" });
    assert.deepEqual((await request(t.server, "GET", `${v1}/alan`)).json.spec, { fullName: "Alan Turing-Newman" });

    // A watch at v2 sees the stored objects and later writes at v1 converted, in order.
    const abort = new AbortController();
    const watch = await watchRequest(t.server, `${v2}?watch=true`, abort.signal);
    assert.equal(watch.status, 200);
    const events = readEvents(watch, (seen) => seen.length >= 5);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const renamed = await request(t.server, "PATCH", `${v1}/dot`, { body: { spec: { fullName: "Dorothy Johnson Vaughan" } }, contentType: "application/merge-patch+json" });
    assert.equal(renamed.status, 200, renamed.text);
    const seen = await events;
    abort.abort();
    assert.deepEqual(seen.slice(0, 4).map((e) => e.type), ["ADDED", "ADDED", "ADDED", "ADDED"]);
    assert.equal(seen[4].type, "MODIFIED");
    assert.equal(seen[4].object.apiVersion, "example.com/v2");
    assert.deepEqual(seen[4].object.spec, { first: "Dorothy", last: "Johnson Vaughan", mood: "calm" });
    assert.equal(seen[4].object.metadata.resourceVersion, renamed.json.metadata.resourceVersion);

    // Deleting at v2 answers the last state at v2.
    const deleted = await request(t.server, "DELETE", `${v2}/grace`);
    assert.equal(deleted.status, 200, deleted.text);
    assert.equal(deleted.json.apiVersion, "example.com/v2");
    assert.deepEqual(deleted.json.spec, { first: "Grace", last: "Brewster Hopper", mood: "calm" });
    assert.equal((await request(t.server, "GET", `${v1}/grace`)).status, 404);
  } finally {
    await t.close();
    await hook.close();
  }
});

test("a conversion webhook that fails gives the client kube-apiserver's 500, naming the stored version and kind", async () => {
  const hook = await conversionWebhook();
  const t = await testServer();
  try {
    const conversion = { strategy: "Webhook", webhook: { conversionReviewVersions: ["v1"], clientConfig: { url: hook.url, caBundle: hook.caBundle } } };
    assert.equal((await request(t.server, "POST", crds, { body: widgetCrd(conversion) })).status, 201);
    assert.equal((await request(t.server, "POST", v1, { body: { apiVersion: "example.com/v1", kind: "Widget", metadata: { name: "ada" }, spec: { fullName: "Ada Lovelace" } } })).status, 201);

    hook.mode.fail = "status";
    const refused = await request(t.server, "GET", `${v2}/ada`);
    assert.equal(refused.status, 500, refused.text);
    assert.equal(refused.json.kind, "Status");
    assert.equal(refused.json.message, "conversion webhook for example.com/v1, Kind=Widget failed: widgets cannot be converted today");
    const listed = await request(t.server, "GET", v2);
    assert.equal(listed.status, 500, listed.text);
    const write = await request(t.server, "POST", v2, { body: { apiVersion: "example.com/v2", kind: "Widget", metadata: { name: "bob" }, spec: { first: "Bob" } } });
    assert.equal(write.status, 500, write.text);
    assert.equal(write.json.message, "conversion webhook for example.com/v2, Kind=Widget failed: widgets cannot be converted today");
    assert.equal((await request(t.server, "GET", `${v1}/bob`)).status, 404, "nothing was stored");

    hook.mode.fail = "uid";
    const wrongUid = await request(t.server, "GET", `${v2}/ada`);
    assert.equal(wrongUid.status, 500, wrongUid.text);
    assert.match(wrongUid.json.message, /^conversion webhook for example\.com\/v1, Kind=Widget failed: expected response\.uid="[0-9a-f-]+", got "another"$/);

    hook.mode.fail = "http";
    const down = await request(t.server, "GET", `${v2}/ada`);
    assert.equal(down.status, 500, down.text);
    assert.match(down.json.message, /^conversion webhook for example\.com\/v1, Kind=Widget failed: Post "https:\/\/127\.0\.0\.1:\d+\/convert\?timeout=30s": the server responded with the status code 503$/);

    // The storage version needs no webhook.
    assert.equal((await request(t.server, "GET", `${v1}/ada`)).status, 200);
    hook.mode.fail = undefined;
    assert.equal((await request(t.server, "GET", `${v2}/ada`)).status, 200);

    // A watch at v2 whose next event cannot be converted ends with an ERROR event carrying the Status.
    const watch = await watchRequest(t.server, `${v2}?watch=true`);
    const events = readEvents(watch, (seen) => seen.length >= 2);
    await new Promise((resolve) => setTimeout(resolve, 50));
    hook.mode.fail = "status";
    assert.equal((await request(t.server, "PATCH", `${v1}/ada`, { body: { spec: { fullName: "Ada King" } }, contentType: "application/merge-patch+json" })).status, 200);
    const seen = await events;
    assert.deepEqual(seen.map((e) => e.type), ["ADDED", "ERROR"]);
    assert.equal(seen[1].object.code, 500);
    assert.equal(seen[1].object.message, "conversion webhook for example.com/v1, Kind=Widget failed: widgets cannot be converted today");
  } finally {
    await t.close();
    await hook.close();
  }
});

test("conversionReviewVersions is honoured: a webhook that speaks only v1beta1 gets a v1beta1 review", async () => {
  const hook = await conversionWebhook();
  const t = await testServer();
  try {
    const conversion = { strategy: "Webhook", webhook: { conversionReviewVersions: ["v1beta2", "v1beta1"], clientConfig: { url: hook.url, caBundle: hook.caBundle } } };
    assert.equal((await request(t.server, "POST", crds, { body: widgetCrd(conversion) })).status, 201);
    assert.equal((await request(t.server, "POST", v1, { body: { apiVersion: "example.com/v1", kind: "Widget", metadata: { name: "ada" }, spec: { fullName: "Ada Lovelace" } } })).status, 201);
    const read = await request(t.server, "GET", `${v2}/ada`);
    assert.equal(read.status, 200, read.text);
    assert.equal(hook.reviews[0]!.apiVersion, "apiextensions.k8s.io/v1beta1");
  } finally {
    await t.close();
    await hook.close();
  }
});

test("spec.conversion is checked as kube-apiserver checks it; strategy None serves each version with its apiVersion rewritten", async () => {
  const t = await testServer();
  try {
    const refusals: Array<[Record<string, unknown>, RegExp]> = [
      [{ strategy: "Magic" }, /spec\.conversion\.strategy: Unsupported value: "Magic": supported values: "None", "Webhook"/],
      [{ strategy: "Webhook" }, /spec\.conversion\.webhook: Required value: required when strategy is set to Webhook/],
      [{ strategy: "Webhook", webhook: { conversionReviewVersions: ["v2"], clientConfig: { url: "https://127.0.0.1:9443/convert" } } }, /spec\.conversion\.webhook\.conversionReviewVersions: Required value: must include at least one of v1, v1beta1/],
      [{ strategy: "Webhook", webhook: { conversionReviewVersions: ["v1"], clientConfig: {} } }, /spec\.conversion\.webhook\.clientConfig: Required value: exactly one of url or service is required/],
      [{ strategy: "Webhook", webhook: { conversionReviewVersions: ["v1"], clientConfig: { url: "http://127.0.0.1:9443/convert" } } }, /'https' is the only allowed URL scheme/],
      [{ strategy: "None", webhook: { conversionReviewVersions: ["v1"] } }, /spec\.conversion\.webhook: Forbidden: should not be set when strategy is not set to Webhook/],
    ];
    for (const [conversion, message] of refusals) {
      const refused = await request(t.server, "POST", crds, { body: widgetCrd(conversion) });
      assert.equal(refused.status, 422, `${JSON.stringify(conversion)}: ${refused.text}`);
      assert.match(refused.json.message, message);
    }
    const taken = await request(t.server, "POST", crds, { body: widgetCrd({ strategy: "None" }) });
    assert.equal(taken.status, 201, taken.text);
    const created = await request(t.server, "POST", v2, { body: { apiVersion: "example.com/v2", kind: "Widget", metadata: { name: "plain" }, spec: { first: "Plain" } } });
    assert.equal(created.status, 201, created.text);
    const read = await request(t.server, "GET", `${v1}/plain`);
    assert.equal(read.json.apiVersion, "example.com/v1");
    const list = await request(t.server, "GET", v2);
    assert.deepEqual(list.json.items.map((w: any) => w.apiVersion), ["example.com/v2"]);
  } finally {
    await t.close();
  }
});

test("an admission webhook whose rules name the storage version sees a write at the other version converted to it", async () => {
  const hook = await conversionWebhook();
  const t = await testServer();
  try {
    const conversion = { strategy: "Webhook", webhook: { conversionReviewVersions: ["v1"], clientConfig: { url: hook.url, caBundle: hook.caBundle } } };
    assert.equal((await request(t.server, "POST", crds, { body: widgetCrd(conversion) })).status, 201);
    const validating = {
      apiVersion: "admissionregistration.k8s.io/v1",
      kind: "ValidatingWebhookConfiguration",
      metadata: { name: "widgets" },
      webhooks: [{
        name: "vwidget-v1.example.com",
        clientConfig: { url: hook.url.replace("/convert", "/validate"), caBundle: hook.caBundle },
        rules: [{ operations: ["CREATE"], apiGroups: ["example.com"], apiVersions: ["v1"], resources: ["widgets"] }],
        sideEffects: "None",
        admissionReviewVersions: ["v1"],
      }],
    };
    assert.equal((await request(t.server, "POST", "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations", { body: validating })).status, 201);
    const created = await request(t.server, "POST", v2, { body: { apiVersion: "example.com/v2", kind: "Widget", metadata: { name: "ada" }, spec: { first: "Ada", last: "Lovelace" } } });
    assert.equal(created.status, 201, created.text);
    assert.equal(hook.admissions.length, 1);
    const seen = hook.admissions[0];
    assert.equal(seen.object.apiVersion, "example.com/v1");
    assert.deepEqual(seen.object.spec, { fullName: "Ada Lovelace" });
    assert.deepEqual(seen.kind, { group: "example.com", version: "v1", kind: "Widget" });
    assert.deepEqual(seen.requestKind, { group: "example.com", version: "v2", kind: "Widget" });
    assert.deepEqual(seen.requestResource, { group: "example.com", version: "v2", resource: "widgets" });
  } finally {
    await t.close();
    await hook.close();
  }
});

test("a conversion webhook named by a Service is taken, and a conversion through it fails saying settle does not route to Services", async () => {
  const t = await testServer();
  try {
    const conversion = { strategy: "Webhook", webhook: { conversionReviewVersions: ["v1"], clientConfig: { service: { namespace: "system", name: "webhook-service", path: "/convert", port: 443 } } } };
    const created = await request(t.server, "POST", crds, { body: widgetCrd(conversion) });
    assert.equal(created.status, 201, created.text);
    assert.equal((await request(t.server, "POST", v1, { body: { apiVersion: "example.com/v1", kind: "Widget", metadata: { name: "ada" }, spec: { fullName: "Ada Lovelace" } } })).status, 201);
    const read = await request(t.server, "GET", `${v2}/ada`);
    assert.equal(read.status, 500, read.text);
    assert.equal(read.json.message, 'conversion webhook for example.com/v1, Kind=Widget failed: Post "https://webhook-service.system.svc:443/convert?timeout=30s": settle serve does not route to Services; name the webhook by clientConfig.url');
  } finally {
    await t.close();
  }
});
