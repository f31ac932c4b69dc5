// The kubeconfig a client needs to reach a running server: `https://` on loopback with `insecure-skip-tls-verify`
// (the certificate is self-signed) and the bearer token as the user's. Over TLS kubectl sends the token as a header,
// so it never appears in a URL. The server also accepts the token as a path prefix (`/token/<token>`) for plain HTTP
// kubeconfigs, because kubectl never sends credentials over plain HTTP (kubernetes/kubectl#744).
import { randomBytes } from "node:crypto";
import { closeSync, constants, fchmodSync, fsyncSync, openSync, renameSync, unlinkSync, writeSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { assert } from "../../api/assert.ts";

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

/**
 * Writes the file atomically and safely in a directory others may write (`/tmp`): the text goes to a new file of an
 * unpredictable name beside `path`, created exclusively (it fails rather than open a file or follow a symlink someone
 * planted there), owned by us and readable by the owner only, flushed, then renamed over `path` (a rename replaces a
 * symlink at `path` itself, never its target).
 */
export function writeKubeconfig(path: string, url: string, token: string): void {
  assert(basename(path) !== "", "kubeconfig: the path names a file");
  const temporary = join(dirname(path), `.${basename(path)}.${randomBytes(12).toString("hex")}.tmp`);
  const fd = openSync(temporary, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  try {
    try {
      // The umask may have taken bits away; the mode is set on the descriptor, not through the path.
      fchmodSync(fd, 0o600);
      const text = Buffer.from(kubeconfigText(url, token));
      for (let written = 0; written < text.length; ) written += writeSync(fd, text, written);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(temporary, path);
  } catch (error) {
    // The file is ours (created above): it must not be left behind with the token in it.
    try {
      unlinkSync(temporary);
    } catch {
      // Already gone; the write's own error is the one to report.
    }
    throw error;
  }
}
