// A webhook configuration as envtest installs it: its caBundle is the webhook server's own certificate, which a CA
// of envtest's signed (not an authority, not self-signed), and its URL is `https://host:port/` + a path that starts
// with a slash. kube-apiserver (Go's verifier) trusts a certificate found among the roots as it is, and joins the
// path as a path; settle does the same: the webhook is called at `/validate`. A caBundle holding another leaf, or a
// certificate not valid for the URL's host, still fails the call.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { request, testServer } from "../server/helpers.ts";

function openssl(cwd: string, ...args: string[]): void {
  const result = spawnSync("openssl", args, { cwd, encoding: "utf8" });
  assert.equal(result.status, 0, `openssl ${args.join(" ")}: ${result.error?.message ?? result.stderr}`);
}

/** A CA and two leaves it signs: `leaf` for 127.0.0.1 and localhost, `other` for localhost only. */
function certificates(): { dir: string; leaf: string; other: string } {
  const dir = mkdtempSync(join(tmpdir(), "settle-webhook-ca-"));
  openssl(dir, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "ca.key", "-out", "ca.crt", "-days", "2", "-subj", "/O=envtest/CN=envtest-environment");
  for (const [name, san] of [["leaf", "DNS:localhost,IP:127.0.0.1"], ["other", "DNS:localhost"]] as const) {
    openssl(dir, "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", `${name}.key`, "-out", `${name}.csr`, "-subj", "/O=envtest/CN=localhost");
    writeFileSync(join(dir, `${name}.ext`), `subjectAltName=${san}\nbasicConstraints=CA:FALSE\n`);
    openssl(dir, "x509", "-req", "-in", `${name}.csr`, "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial", "-out", `${name}.crt`, "-days", "2", "-extfile", `${name}.ext`);
  }
  return { dir, leaf: readFileSync(join(dir, "leaf.crt"), "utf8"), other: readFileSync(join(dir, "other.crt"), "utf8") };
}

test("a caBundle that is the webhook server's own CA-signed certificate is trusted, and a doubled slash is one", async () => {
  const certs = certificates();
  const paths: string[] = [];
  const serve = (name: string) =>
    createServer({ key: readFileSync(join(certs.dir, `${name}.key`)), cert: readFileSync(join(certs.dir, `${name}.crt`)) }, (req, res) => {
      let text = "";
      req.on("data", (chunk: Buffer) => (text += chunk.toString("utf8")));
      req.on("end", () => {
        paths.push((req.url ?? "").split("?")[0]!);
        const uid = JSON.parse(text).request.uid;
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview", response: { uid, allowed: false, status: { code: 403, message: "refused by the envtest-style webhook" } } }));
      });
    });
  const leafServer = serve("leaf");
  const otherServer = serve("other");
  await Promise.all([leafServer, otherServer].map((s) => new Promise<void>((resolve) => s.listen(0, "127.0.0.1", resolve))));
  const port = (s: typeof leafServer) => (s.address() as AddressInfo).port;
  const t = await testServer();
  const register = async (name: string, url: string, caBundle: string) => {
    const body = {
      apiVersion: "admissionregistration.k8s.io/v1",
      kind: "ValidatingWebhookConfiguration",
      metadata: { name },
      webhooks: [{
        name: `${name}.example.com`,
        clientConfig: { url, caBundle: Buffer.from(caBundle).toString("base64") },
        rules: [{ operations: ["CREATE"], apiGroups: [""], apiVersions: ["v1"], resources: ["configmaps"], scope: "Namespaced" }],
        objectSelector: { matchLabels: { hook: name } },
        sideEffects: "None",
        admissionReviewVersions: ["v1"],
      }],
    };
    const created = await request(t.server, "POST", "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations", { body });
    assert.equal(created.status, 201, created.text);
  };
  const create = (hook: string) => request(t.server, "POST", "/api/v1/namespaces/default/configmaps", { body: { apiVersion: "v1", kind: "ConfigMap", metadata: { name: hook, labels: { hook } } } });
  try {
    await register("pinned", `https://127.0.0.1:${port(leafServer)}//validate`, certs.leaf);
    const refused = await create("pinned");
    assert.equal(refused.status, 403, refused.text);
    assert.match(refused.json.message, /admission webhook "pinned.example.com" denied the request: refused by the envtest-style webhook/);
    assert.deepEqual(paths, ["/validate"]);

    await register("stranger", `https://127.0.0.1:${port(leafServer)}/validate`, certs.other);
    const untrusted = await create("stranger");
    assert.equal(untrusted.status, 500, untrusted.text);
    assert.match(untrusted.json.message, /failed calling webhook "stranger.example.com".*certificate signed by unknown authority/);

    await register("wronghost", `https://127.0.0.1:${port(otherServer)}/validate`, certs.other);
    const wrongHost = await create("wronghost");
    assert.equal(wrongHost.status, 500, wrongHost.text);
    assert.match(wrongHost.json.message, /failed calling webhook "wronghost.example.com".*not valid for 127\.0\.0\.1/);
    assert.deepEqual(paths, ["/validate"], "neither untrusted call reached a handler");
  } finally {
    await t.close();
    leafServer.close();
    otherServer.close();
  }
});
