// What `settle serve` loads before it listens: start-up time is what a test suite pays per server (issue 19's
// target is 300 ms from spawn to the first kubectl answer), so the packages only some requests or options need
// (CEL, ajv, yaml, the Kubernetes client of --cluster) are loaded on first use. Spawns the compiled CLI (npm test
// builds it) with a module-resolution hook that reports every module it resolves.
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const bin = fileURLToPath(new URL("../../bin/settle.js", import.meta.url));

const hook = `import { writeSync } from "node:fs";
export async function resolve(specifier, context, next) {
  const result = await next(specifier, context);
  writeSync(2, "resolved " + result.url + "\\n");
  return result;
}`;
const registerHook = `import { register } from "node:module"; register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(hook)}`)});`;

/** The packages (under node_modules) `settle serve <args>` resolved by the time it listened, and its output. */
function packagesAtListen(args: string[]): Promise<{ packages: Set<string>; stdout: string }> {
  const child = spawn(process.execPath, ["--import", `data:text/javascript,${encodeURIComponent(registerHook)}`, bin, "serve", "--port", "0", ...args], { stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  child.stdout.on("data", (chunk: Buffer) => {
    stdout += chunk.toString();
    if (stdout.includes("listening on")) child.kill("SIGTERM");
  });
  return new Promise((resolve) => {
    child.on("exit", () => {
      const packages = new Set<string>();
      for (const line of stderr.split("\n")) {
        const match = /^resolved file:.*\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(line);
        if (match !== null) packages.add(match[1]!);
      }
      resolve({ packages, stdout });
    });
  });
}

const lazy = ["@bufbuild/cel", "@bufbuild/protobuf", "ajv", "yaml", "@kubernetes/client-node"];

test("settle serve listens without loading CEL, ajv, yaml or the Kubernetes client", async () => {
  const { packages, stdout } = await packagesAtListen([]);
  assert.match(stdout, /settle serve: listening on https:\/\/127\.0\.0\.1:(\d+), also plain http:\/\/127\.0\.0\.1:\1\n/);
  assert.ok(packages.size > 0, "the hook reports the packages the server loads");
  for (const name of lazy) assert.equal(packages.has(name), false, `${name} is loaded at start: ${[...packages].join(", ")}`);
});

test("settle serve --setup with plain manifests does not load the scenario loader (CEL, ajv)", async () => {
  const dir = mkdtempSync(join(tmpdir(), "settle-startup-"));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const manifests = join(dir, "objects.yaml");
  writeFileSync(manifests, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: preloaded, namespace: default}\ndata: {a: b}\n");
  const { packages, stdout } = await packagesAtListen(["--setup", manifests]);
  assert.match(stdout, /settle serve: listening on/);
  for (const name of ["@bufbuild/cel", "ajv", "@kubernetes/client-node"]) assert.equal(packages.has(name), false, `${name} is loaded: ${[...packages].join(", ")}`);
});
