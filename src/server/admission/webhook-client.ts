// The HTTPS call kube-apiserver makes to a webhook, shared by admission webhooks (webhooks.ts) and CRD conversion
// webhooks (../crd-conversion.ts): a JSON review POSTed to `clientConfig.url` with `?timeout=Ns`, the server's
// certificate checked against `clientConfig.caBundle` (or the system's roots), the answer read as JSON.
//
// What settle leaves out: webhooks named by `service`. Nothing routes to a Service's pods here, so such a call fails
// with a message saying to give `clientConfig.url`, as envtest does.
import { request as httpsRequest } from "node:https";
import { X509Certificate } from "node:crypto";
import { isIP } from "node:net";
import type { TLSSocket } from "node:tls";

/** A webhook's answer may be this large; a larger one is a failed call. */
const responseBytesMax = 3 * 1024 * 1024;

/** Where a webhook is called, as admission and conversion webhooks both name it. */
export interface WebhookClientConfig {
  url?: string;
  caBundle?: string;
  service?: { namespace?: string; name?: string; path?: string; port?: number };
}

/**
 * POSTs `body` to the webhook and returns what `parse` makes of the answer's JSON. Every failure is an Error whose
 * message reads as the error of kube-apiserver's client (`Post "URL": reason`); `noun` names what the answer should
 * have been when `parse` refuses it.
 */
export function postReview<T>(clientConfig: WebhookClientConfig | undefined, timeoutSeconds: number, body: Record<string, unknown>, noun: string, parse: (body: unknown) => T): Promise<T> {
  const url = clientConfig?.url;
  if (url === undefined) {
    const service = clientConfig?.service;
    const target = `https://${service?.name ?? ""}.${service?.namespace ?? ""}.svc:${service?.port ?? 443}${service?.path ?? ""}?timeout=${timeoutSeconds}s`;
    return Promise.reject(new Error(`Post "${target}": settle serve does not route to Services; name the webhook by clientConfig.url`));
  }
  const address = `${url}${url.includes("?") ? "&" : "?"}timeout=${timeoutSeconds}s`;
  const text = JSON.stringify(body);
  const ca = clientConfig?.caBundle === undefined || clientConfig.caBundle === "" ? undefined : Buffer.from(clientConfig.caBundle, "base64").toString("utf8");
  return new Promise((resolve, reject) => {
    const fail = (reason: string) => reject(new Error(`Post "${address}": ${reason}`));
    let parsed: URL;
    try {
      parsed = new URL(address);
    } catch {
      return fail("the URL is not valid");
    }
    if (parsed.protocol !== "https:") return fail("webhooks are called over https only");
    // kube-apiserver's client joins the URL's path as a path, so `https://host:port//validate` (envtest writes the
    // path after a slash of its own) is posted to `/validate`.
    parsed.pathname = parsed.pathname.replace(/\/{2,}/g, "/");
    const pinned = ca === undefined ? [] : pinnedCertificates(ca);
    const tlsOptions = ca === undefined ? {} : { ca, ...(pinned.length === 0 ? {} : { rejectUnauthorized: false }) };
    const req = httpsRequest(parsed, { method: "POST", headers: { "content-type": "application/json", accept: "application/json", "content-length": Buffer.byteLength(text) }, ...tlsOptions, timeout: timeoutSeconds * 1000 }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on("data", (chunk: Buffer) => {
        size += chunk.length;
        if (size > responseBytesMax) req.destroy(new Error("the response is too large"));
        else chunks.push(chunk);
      });
      res.on("end", () => {
        if ((res.statusCode ?? 0) >= 300) return fail(`the server responded with the status code ${res.statusCode}`);
        try {
          resolve(parse(JSON.parse(Buffer.concat(chunks).toString("utf8"))));
        } catch (error) {
          fail(`the response is not an ${noun}: ${error instanceof Error ? error.message : String(error)}`);
        }
      });
    });
    if (pinned.length > 0) req.on("socket", (socket) => socket.once("secureConnect", () => verifyPinned(socket as TLSSocket, pinned, parsed.hostname, req)));
    req.on("timeout", () => req.destroy(new Error(`context deadline exceeded (timeout ${timeoutSeconds}s)`)));
    req.on("error", (error) => fail(error.message));
    req.end(text);
  });
}

/**
 * The certificates of a caBundle that are no authority (envtest's caBundle is the webhook server's own certificate).
 * Go's verifier, kube-apiserver's, trusts a certificate found among the roots as it is; OpenSSL, Node's, looks for
 * its issuer and fails. With such a bundle the handshake is checked here: the chain as OpenSSL judges it, or the
 * server's certificate being one of these, and in both cases the host name.
 */
function pinnedCertificates(pem: string): X509Certificate[] {
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  const certificates: X509Certificate[] = [];
  for (const block of blocks) {
    try {
      const certificate = new X509Certificate(block);
      if (!certificate.ca) certificates.push(certificate);
    } catch {
      // A block that does not parse cannot verify anything; OpenSSL ignores it as well.
    }
  }
  return certificates;
}

function verifyPinned(socket: TLSSocket, pinned: readonly X509Certificate[], hostname: string, req: { destroy(error: Error): void }): void {
  const peer = socket.getPeerX509Certificate();
  const trusted = socket.authorized || (peer !== undefined && pinned.some((certificate) => certificate.raw.equals(peer.raw)));
  if (!trusted) return void req.destroy(new Error(`x509: certificate signed by unknown authority (${String(socket.authorizationError ?? "not in the caBundle")})`));
  const host = hostname.replace(/^\[(.*)\]$/, "$1");
  const matches = peer !== undefined && (isIP(host) === 0 ? peer.checkHost(host) !== undefined : peer.checkIP(host) !== undefined);
  if (!matches) req.destroy(new Error(`x509: certificate is not valid for ${host}`));
}
