// `settle serve` as a user runs it: preloaded manifests, a kubeconfig written once listening (mode 600), real
// kubectl against it, a clean exit on SIGTERM, and exit code 2 for bad input.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { execFileSync, spawnSync } from "node:child_process";
import { kubectlPath } from "./helpers.ts";

const bin = new URL("../../bin/settle.js", import.meta.url).pathname;

function run(args: string[]) {
  const child = spawn(process.execPath, [bin, "serve", ...args], { stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk) => (stdout += chunk.toString()));
  child.stderr.on("data", (chunk) => (stderr += chunk.toString()));
  const exited = new Promise<number>((resolve) => child.on("exit", (code) => resolve(code ?? -1)));
  const listening = new Promise<string>((resolve, reject) => {
    child.stdout.on("data", () => {
      const match = /listening on https:\/\/\S+, also plain (http:\/\/[^\s,)]+)/.exec(stdout);
      if (match !== null) resolve(match[1]!);
    });
    void exited.then((code) => reject(new Error(`exited ${code}: ${stderr}`)));
  });
  listening.catch(() => {});
  return { child, exited, listening, output: () => ({ stdout, stderr }) };
}

test("settle serve preloads --setup manifests, writes a private kubeconfig, serves kubectl, and stops on SIGTERM", async () => {
  const dir = mkdtempSync(join(tmpdir(), "settle-serve-"));
  try {
    const setup = join(dir, "setup.yaml");
    writeFileSync(setup, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: preloaded}\ndata: {a: b}\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: team}\n");
    const kubeconfig = join(dir, "kubeconfig");
    const faults = join(dir, "faults.yaml");
    // One armed fault: the first `get` of a configmap fails with 500 (kubectl then gives up on it).
    writeFileSync(faults, "- {kind: fail-request, code: 500, verb: get, resource: configmaps, name: preloaded}\n");
    // A directory is its .yaml, .yml and .json files in name order (a.yaml, then b.json); other files and
    // subdirectories are not read.
    const folder = join(dir, "more");
    mkdirSync(join(folder, "nested"), { recursive: true });
    writeFileSync(join(folder, "b.json"), JSON.stringify({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "from-json", namespace: "team" } }));
    writeFileSync(join(folder, "a.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: from-dir}\n");
    writeFileSync(join(folder, "notes.txt"), "not a manifest");
    writeFileSync(join(folder, "nested", "c.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: nested}\n");
    const serve = run(["--port", "0", "--kubeconfig-out", kubeconfig, "--setup", setup, "--setup", folder, "--faults", faults]);
    const url = await serve.listening;
    assert.match(url, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.equal(statSync(kubeconfig).mode & 0o777, 0o600);
    // The start-up line names first what the kubeconfig names: the same port over TLS.
    const server = /^\s*server: (\S+)$/m.exec(readFileSync(kubeconfig, "utf8"))?.[1];
    assert.equal(server, url.replace("http:", "https:"));
    assert.match(serve.output().stdout, new RegExp(`listening on ${server!.replace(/[.:/]/g, "\\$&")}, also plain ${url.replace(/[.:/]/g, "\\$&")} \\(kubeconfig: `));
    const env = { PATH: process.env.PATH ?? "", HOME: dir, KUBECONFIG: kubeconfig, KUBECACHEDIR: join(dir, "cache") };
    const names = execFileSync(kubectlPath, ["get", "configmaps,namespaces", "-A", "-o", "name"], { env }).toString();
    assert.match(names, /configmap\/preloaded/);
    assert.match(names, /namespace\/team/);
    assert.match(names, /configmap\/from-dir/);
    assert.match(names, /configmap\/from-json/);
    assert.doesNotMatch(names, /configmap\/nested/);
    const failed = spawnSync(kubectlPath, ["get", "configmap", "preloaded", "-o", "name"], { env });
    assert.notEqual(failed.status, 0);
    assert.match(failed.stderr.toString(), /injected fault/);
    assert.equal(execFileSync(kubectlPath, ["get", "configmap", "preloaded", "-o", "name"], { env }).toString(), "configmap/preloaded\n");
    serve.child.kill("SIGTERM");
    assert.equal(await serve.exited, 0);
    assert.match(serve.output().stdout, /shutting down/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("settle serve exits 2 for a setup file that does not load, a bad port or timeout, and a kubeconfig it cannot write", async () => {
  const dir = mkdtempSync(join(tmpdir(), "settle-serve-"));
  try {
    const setup = join(dir, "bad.yaml");
    writeFileSync(setup, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: BAD_NAME}\n");
    const bad = run(["--setup", setup]);
    assert.equal(await bad.exited, 2);
    assert.match(bad.output().stderr, /bad\.yaml: ConfigMap BAD_NAME/);
    mkdirSync(join(dir, "empty"));
    const empty = run(["--setup", join(dir, "empty")]);
    assert.equal(await empty.exited, 2);
    assert.match(empty.output().stderr, /empty: a directory with no \.yaml, \.yml or \.json file/);
    const port = run(["--port", "70000"]);
    assert.equal(await port.exited, 2);
    const faults = join(dir, "faults.yaml");
    writeFileSync(faults, "- {kind: fail-request, code: 418}\n");
    const badFaults = run(["--faults", faults]);
    assert.equal(await badFaults.exited, 2);
    assert.match(badFaults.output().stderr, /faults\.yaml: .*faults\[0\]\.code/);
    const timeout = run(["--header-timeout-ms", "0"]);
    assert.equal(await timeout.exited, 2);
    assert.match(timeout.output().stderr, /--header-timeout-ms expects an integer >= 1, got "0"/);
    const idle = run(["--idle-timeout-ms", "9999999999"]);
    assert.equal(await idle.exited, 2);
    assert.match(idle.output().stderr, /--idle-timeout-ms expects an integer from 1 to 2147483647/);
    const nowhere = run(["--kubeconfig-out", join(dir, "missing", "kc")]);
    assert.equal(await nowhere.exited, 2);
    assert.match(nowhere.output().stderr, /settle serve: --kubeconfig-out .*missing\/kc: ENOENT/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
