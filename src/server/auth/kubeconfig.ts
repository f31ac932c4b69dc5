// The kubeconfig a client needs to reach a running server: `https://` on loopback with `insecure-skip-tls-verify`
// (the certificate is self-signed) and the bearer token as the user's. Over TLS kubectl sends the token as a header,
// so it never appears in a URL. The server also accepts the token as a path prefix (`/token/<token>`) for plain HTTP
// kubeconfigs, because kubectl never sends credentials over plain HTTP (kubernetes/kubectl#744).
import { chmodSync, renameSync, writeFileSync, unlinkSync } from "node:fs";
import { basename, dirname, join } from "node:path";

export function kubeconfigText(url: string, token: string): string {
  return [
    "apiVersion: v1",
    "kind: Config",
    "clusters:",
    "- name: settle",
    "  cluster:",
    `    server: ${url}`,
    "    insecure-skip-tls-verify: true",
    "users:",
    "- name: settle",
    "  user:",
    `    token: ${token}`,
    "contexts:",
    "- name: settle",
    "  context:",
    "    cluster: settle",
    "    user: settle",
    "    namespace: default",
    "current-context: settle",
    "",
  ].join("\n");
}

/** Writes the file atomically (a temporary file in the same directory, then rename), readable by the owner only. */
export function writeKubeconfig(path: string, url: string, token: string): void {
  const temporary = join(dirname(path), `.${basename(path)}.${process.pid}.tmp`);
  try {
    writeFileSync(temporary, kubeconfigText(url, token), { mode: 0o600 });
    chmodSync(temporary, 0o600);
    renameSync(temporary, path);
  } catch (error) {
    try {
      unlinkSync(temporary);
    } catch {
      // Nothing to clean up.
    }
    throw error;
  }
}
