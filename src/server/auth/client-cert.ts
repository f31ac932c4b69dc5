// Client-certificate authentication, as kube-apiserver does it with `--client-ca-file`: a TLS client that presents a
// certificate signed by one of the file's authorities is the user its subject names, the common name (CN) being the
// user name and each organization (O) a group. controller-runtime's envtest authenticates every user it makes
// (`AddUser`, its admin in `system:masters`) this way. Node verifies the chain during the handshake when the server
// asks for a certificate with `ca` set to these authorities; a certificate that fails is not refused there (a client
// without one may still send a token) but leaves the socket unauthorized, and then it names nobody.
import type { IncomingMessage } from "node:http";
import type { TLSSocket } from "node:tls";
import type { UserInfo } from "./rbac.ts";

/** The TLS a server presents: its certificate and key (PEM), and the client authorities it trusts, if any. */
export interface ServingTls {
  cert: string;
  key: string;
  /** PEM authorities whose client certificates authenticate users (`--client-ca-file`). */
  clientCa?: string;
}

/** Options for `https.createServer` that ask for and verify client certificates when `tls` trusts authorities. */
export function tlsServerOptions(tls: ServingTls): { cert: string; key: string; ca?: string; requestCert: boolean; rejectUnauthorized: boolean } {
  if (tls.clientCa === undefined) return { cert: tls.cert, key: tls.key, requestCert: false, rejectUnauthorized: false };
  return { cert: tls.cert, key: tls.key, ca: tls.clientCa, requestCert: true, rejectUnauthorized: false };
}

/** The user a verified client certificate names, or undefined (no TLS, no certificate, or one no authority signed). */
export function clientCertificateUser(req: IncomingMessage): UserInfo | undefined {
  const socket = req.socket as Partial<TLSSocket>;
  if (socket.encrypted !== true || socket.authorized !== true || socket.getPeerCertificate === undefined) return undefined;
  const subject = socket.getPeerCertificate().subject as Record<string, string | string[] | undefined> | undefined;
  const common = subject?.CN;
  const username = Array.isArray(common) ? common[0] : common;
  if (username === undefined || username === "") return undefined;
  const organizations = subject?.O;
  const groups = organizations === undefined ? [] : Array.isArray(organizations) ? organizations : [organizations];
  return { username, groups: [...groups, "system:authenticated"] };
}
