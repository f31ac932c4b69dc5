// Admission webhooks through settle serve: a real HTTPS webhook server (its CA given as caBundle) sees AdmissionReviews
// for the writes its rules match; a mutating webhook's JSONPatch is stored, a validating webhook's denial is the
// client's error and nothing is stored; selectors, failurePolicy, dry runs and warnings as kube-apiserver has them;
// and kubectl meets the denial in the real server's words.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:https";
import type { Server } from "node:https";
import type { AddressInfo } from "node:net";
import { selfSignedCertificate } from "../../src/server/auth/tls.ts";
import { kubectl, request, testServer } from "./helpers.ts";
import type { TestServer } from "./helpers.ts";

interface Seen {
  operation: string;
  resource: string;
  name: string;
  object: any;
  oldObject: any;
  dryRun: boolean;
}

/** An HTTPS webhook server: `/mutate` adds a label, `/deny` refuses objects labelled `deny=yes`, `/warn` allows with a warning. */
async function webhookServer(): Promise<{ url: string; caBundle: string; seen: Seen[]; close: () => Promise<void> }> {
  const { key, cert } = selfSignedCertificate(Date.now());
  const seen: Seen[] = [];
  const server: Server = createServer({ key, cert }, (req, res) => {
    let text = "";
    req.on("data", (chunk: Buffer) => (text += chunk.toString("utf8")));
    req.on("end", () => {
      const review = JSON.parse(text);
      const r = review.request;
      seen.push({ operation: r.operation, resource: r.resource.resource, name: r.name, object: r.object, oldObject: r.oldObject, dryRun: r.dryRun });
      const path = (req.url ?? "").split("?")[0];
      let response: Record<string, unknown> = { uid: r.uid, allowed: true };
      if (path === "/mutate" && r.object !== null) {
        const patch = r.object.metadata.labels === undefined ? [{ op: "add", path: "/metadata/labels", value: { mutated: "yes" } }] : [{ op: "add", path: "/metadata/labels/mutated", value: "yes" }];
        response = { ...response, patchType: "JSONPatch", patch: Buffer.from(JSON.stringify(patch)).toString("base64") };
      } else if (path === "/deny" && (r.object ?? r.oldObject)?.metadata.labels?.deny === "yes") {
        response = { uid: r.uid, allowed: false, status: { code: 403, message: "objects labelled deny=yes are refused" } };
      } else if (path === "/warn") response = { ...response, warnings: ["this kind of write is discouraged"] };
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview", response }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, caBundle: Buffer.from(cert).toString("base64"), seen, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

const configMapRule = [{ operations: ["CREATE", "UPDATE", "DELETE"], apiGroups: [""], apiVersions: ["v1"], resources: ["configmaps"], scope: "Namespaced" }];

async function register(t: TestServer, kind: "Mutating" | "Validating", name: string, url: string, caBundle: string, extra: Record<string, unknown> = {}): Promise<void> {
  const body = {
    apiVersion: "admissionregistration.k8s.io/v1",
    kind: `${kind}WebhookConfiguration`,
    metadata: { name },
    webhooks: [{ name: `${name}.example.com`, clientConfig: { url, caBundle }, rules: configMapRule, sideEffects: "None", admissionReviewVersions: ["v1"], ...extra }],
  };
  const created = await request(t.server, "POST", `/apis/admissionregistration.k8s.io/v1/${kind.toLowerCase()}webhookconfigurations`, { body });
  assert.equal(created.status, 201, created.text);
}

const cms = "/api/v1/namespaces/default/configmaps";
const cm = (name: string, labels: Record<string, string> = {}) => ({ apiVersion: "v1", kind: "ConfigMap", metadata: { name, labels }, data: { a: "1" } });

test("a mutating webhook's patch is stored; a validating webhook's denial is the client's error and stores nothing", async () => {
  const hooks = await webhookServer();
  const t = await testServer();
  try {
    await register(t, "Mutating", "add-label", `${hooks.url}/mutate`, hooks.caBundle);
    await register(t, "Validating", "refuse", `${hooks.url}/deny`, hooks.caBundle);
    const created = await request(t.server, "POST", cms, { body: cm("plain", { app: "x" }) });
    assert.equal(created.status, 201, created.text);
    assert.deepEqual(created.json.metadata.labels, { app: "x", mutated: "yes" });
    assert.equal(t.server.store.get({ apiVersion: "v1", kind: "ConfigMap", namespace: "default", name: "plain" }).metadata.labels?.mutated, "yes");
    const reviewed = hooks.seen.filter((s) => s.name === "plain");
    assert.deepEqual(reviewed.map((s) => s.operation), ["CREATE", "CREATE"], "the mutating webhook, then the validating one");
    assert.equal(reviewed[1]!.object.metadata.labels.mutated, "yes", "the validating webhook sees the mutated object");

    const denied = await request(t.server, "POST", cms, { body: cm("bad", { deny: "yes" }) });
    assert.equal(denied.status, 403);
    assert.equal(denied.json.message, 'admission webhook "refuse.example.com" denied the request: objects labelled deny=yes are refused');
    assert.equal((await request(t.server, "GET", `${cms}/bad`)).status, 404, "nothing stored");

    const patched = await request(t.server, "PATCH", `${cms}/plain`, { body: { metadata: { labels: { deny: "yes" } } }, contentType: "application/merge-patch+json" });
    assert.equal(patched.status, 403, "an update is reviewed too");
    assert.equal(t.server.store.get({ apiVersion: "v1", kind: "ConfigMap", namespace: "default", name: "plain" }).metadata.labels?.deny, undefined);
    const update = hooks.seen.filter((s) => s.operation === "UPDATE").at(-1)!;
    assert.equal(update.oldObject.metadata.name, "plain");

    // Other kinds are not the webhooks' business.
    const secret = await request(t.server, "POST", "/api/v1/namespaces/default/secrets", { body: { apiVersion: "v1", kind: "Secret", metadata: { name: "s", labels: { deny: "yes" } } } });
    assert.equal(secret.status, 201);
  } finally {
    await t.close();
    await hooks.close();
  }
});

test("objectSelector and namespaceSelector choose the writes; a DELETE is reviewed with the old object", async () => {
  const hooks = await webhookServer();
  const t = await testServer();
  try {
    await register(t, "Validating", "refuse", `${hooks.url}/deny`, hooks.caBundle, { objectSelector: { matchLabels: { checked: "yes" } }, namespaceSelector: { matchExpressions: [{ key: "team", operator: "In", values: ["a"] }] } });
    assert.equal((await request(t.server, "POST", "/api/v1/namespaces", { body: { apiVersion: "v1", kind: "Namespace", metadata: { name: "team-a", labels: { team: "a" } } } })).status, 201);
    assert.equal((await request(t.server, "POST", cms, { body: cm("elsewhere", { checked: "yes", deny: "yes" }) })).status, 201, "default is not selected by namespace");
    const teamCms = "/api/v1/namespaces/team-a/configmaps";
    assert.equal((await request(t.server, "POST", teamCms, { body: cm("unchecked", { deny: "yes" }) })).status, 201, "not selected by object labels");
    assert.equal((await request(t.server, "POST", teamCms, { body: cm("checked", { checked: "yes", deny: "yes" }) })).status, 403);
    assert.equal((await request(t.server, "POST", teamCms, { body: cm("fine", { checked: "yes" }) })).status, 201);
    assert.equal((await request(t.server, "PATCH", `${teamCms}/fine`, { body: { metadata: { labels: { deny: "yes" } } }, contentType: "application/merge-patch+json" })).status, 403);
    const deleted = await request(t.server, "DELETE", `${teamCms}/fine`);
    assert.equal(deleted.status, 200);
    const review = hooks.seen.at(-1)!;
    assert.deepEqual([review.operation, review.object, review.oldObject.metadata.name], ["DELETE", null, "fine"]);
    // A deletecollection reviews each item as its own DELETE: a refused one stops it.
    // (made beside the server: through it, the webhook would refuse it).
    t.server.store.create({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "guarded", namespace: "team-a", labels: { checked: "yes", deny: "yes" } } });
    const all = await request(t.server, "DELETE", `${teamCms}?labelSelector=checked`);
    assert.equal(all.status, 403);
    assert.deepEqual([hooks.seen.at(-1)!.operation, hooks.seen.at(-1)!.oldObject.metadata.name], ["DELETE", "guarded"]);
    assert.ok(t.server.store.list({ apiVersion: "v1", kind: "ConfigMap", namespace: "team-a" }).items.some((c) => c.metadata.name === "guarded"));
  } finally {
    await t.close();
    await hooks.close();
  }
});

test("an unreachable webhook fails the write unless failurePolicy is Ignore; dry runs need sideEffects None; warnings reach the client", async () => {
  const hooks = await webhookServer();
  const t = await testServer();
  try {
    await register(t, "Validating", "gone", "https://127.0.0.1:1/nothing", hooks.caBundle);
    const failed = await request(t.server, "POST", cms, { body: cm("one") });
    assert.equal(failed.status, 500);
    assert.match(failed.json.message, /^Internal error occurred: failed calling webhook "gone\.example\.com": failed to call webhook: Post "https:\/\/127\.0\.0\.1:1\/nothing\?timeout=10s": /);
    assert.equal((await request(t.server, "DELETE", "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/gone")).status, 200);
    await register(t, "Validating", "gone", "https://127.0.0.1:1/nothing", hooks.caBundle, { failurePolicy: "Ignore" });
    assert.equal((await request(t.server, "POST", cms, { body: cm("two") })).status, 201);

    await register(t, "Validating", "warn", `${hooks.url}/warn`, hooks.caBundle, { sideEffects: "Some" });
    const warned = await request(t.server, "POST", cms, { body: cm("three") });
    assert.equal(warned.status, 201);
    assert.equal(warned.headers.get("warning"), '299 - "this kind of write is discouraged"');
    const dry = await request(t.server, "POST", `${cms}?dryRun=All`, { body: cm("four") });
    assert.equal(dry.status, 400);
    assert.equal(dry.json.message, 'admission webhook "warn.example.com" does not support dry run');
  } finally {
    await t.close();
    await hooks.close();
  }
});

test("kubectl 1.35 meets a denial in the real server's words", async () => {
  const hooks = await webhookServer();
  const t = await testServer();
  try {
    await register(t, "Validating", "refuse", `${hooks.url}/deny`, hooks.caBundle);
    const result = await kubectl(t, ["create", "configmap", "x", "--from-literal=a=b"], {});
    assert.equal(result.code, 0, result.stderr);
    const labelled = await kubectl(t, ["label", "configmap", "x", "deny=yes"], {});
    assert.equal(labelled.code, 1);
    assert.match(labelled.stderr, /admission webhook "refuse\.example\.com" denied the request: objects labelled deny=yes are refused/);
  } finally {
    await t.close();
    await hooks.close();
  }
});
