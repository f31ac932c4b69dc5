// The kubeconfig file carries the administrator's token: it is written through a new file of an unpredictable name
// beside its path, created exclusively (no planted file or symlink is ever opened), mode 600, then renamed.
import { test } from "node:test";
import assert from "node:assert/strict";
import { lstatSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { writeKubeconfig } from "../../src/server/index.ts";

test("a symlink planted where the temporary file used to be is never followed; the kubeconfig is a private file of ours", () => {
  const dir = mkdtempSync(join(tmpdir(), "settle-kubeconfig-"));
  try {
    const victim = join(dir, "victim");
    writeFileSync(victim, "precious\n", { mode: 0o644 });
    // The name the temporary file had before: `.kc.<pid>.tmp`, predictable by anyone on the machine.
    symlinkSync(victim, join(dir, `.kc.${process.pid}.tmp`));
    const path = join(dir, "kc");
    writeKubeconfig(path, "https://127.0.0.1:1", "secret-token");
    assert.equal(readFileSync(victim, "utf8"), "precious\n", "the link's target is untouched");
    assert.equal(lstatSync(victim).mode & 0o777, 0o644, "and keeps its mode");
    const written = lstatSync(path);
    assert.ok(written.isFile(), "the kubeconfig is a regular file, not a link");
    assert.equal(written.mode & 0o777, 0o600);
    assert.equal(written.uid, process.getuid!());
    assert.match(readFileSync(path, "utf8"), /token: secret-token/);
    assert.deepEqual(readdirSync(dir).sort(), [`.kc.${process.pid}.tmp`, "kc", "victim"], "no temporary file is left behind");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a symlink at the kubeconfig's own path is replaced, not written through", () => {
  const dir = mkdtempSync(join(tmpdir(), "settle-kubeconfig-"));
  try {
    const victim = join(dir, "victim");
    writeFileSync(victim, "precious\n");
    const path = join(dir, "kc");
    symlinkSync(victim, path);
    writeKubeconfig(path, "https://127.0.0.1:1", "secret-token");
    assert.equal(readFileSync(victim, "utf8"), "precious\n");
    assert.ok(lstatSync(path).isFile());
    assert.equal(lstatSync(path).mode & 0o777, 0o600);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
