// The assets directory `settle envtest-assets` prints, and its kube-apiserver and etcd driven as envtest drives them:
// `--help` for flag discovery, envtest's default command line, health checks on the secure port, users by client
// certificate (system:masters may do anything, others what RBAC grants), a clear exit 1 for what settle cannot
// honour, SIGTERM. The certificates are made with openssl as envtest makes its own: a CA for serving, one for clients.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync, existsSync, rmSync } from "node:fs";
import { request } from "node:https";
import { request as httpRequest } from "node:http";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { stampName } from "../../src/envtest/assets.ts";

const repo = fileURLToPath(new URL("../../", import.meta.url));
const settleBin = join(repo, "bin", "settle.js");

function assetsDir(): string {
  const dir = join(mkdtempSync(join(tmpdir(), "settle-envtest-")), "assets");
  const result = spawnSync(process.execPath, [settleBin, "envtest-assets"], { env: { ...process.env, SETTLE_ENVTEST_ASSETS_DIR: dir }, encoding: "utf8" });
  assert.equal(result.status, 0, result.stderr);
  assert.equal(result.stdout, `${dir}\n`);
  return dir;
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer();
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

function openssl(cwd: string, ...args: string[]): void {
  const result = spawnSync("openssl", args, { cwd, encoding: "utf8" });
  assert.equal(result.status, 0, `openssl ${args.join(" ")}: ${result.error?.message ?? result.stderr}`);
}

/** envtest's certificate directory: apiserver.crt/key from a serving CA, a client CA, and client certificates. */
function certDir(users: Record<string, { cn: string; o: string[] }>): string {
  const dir = mkdtempSync(join(tmpdir(), "settle-envtest-certs-"));
  openssl(dir, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "serving-ca.key", "-out", "serving-ca.crt", "-days", "2", "-subj", "/CN=serving-ca");
  openssl(dir, "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "apiserver.key", "-out", "apiserver.csr", "-subj", "/CN=localhost");
  writeFileSync(join(dir, "san.ext"), "subjectAltName=DNS:localhost,IP:127.0.0.1\n");
  openssl(dir, "x509", "-req", "-in", "apiserver.csr", "-CA", "serving-ca.crt", "-CAkey", "serving-ca.key", "-CAcreateserial", "-out", "apiserver.crt", "-days", "2", "-extfile", "san.ext");
  openssl(dir, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "client-cert-auth-ca.key", "-out", "client-cert-auth-ca.crt", "-days", "2", "-subj", "/CN=client-ca");
  for (const [file, user] of Object.entries(users)) {
    const subject = `/CN=${user.cn}${user.o.map((o) => `/O=${o}`).join("")}`;
    openssl(dir, "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", `${file}.key`, "-out", `${file}.csr`, "-subj", subject);
    openssl(dir, "x509", "-req", "-in", `${file}.csr`, "-CA", "client-cert-auth-ca.crt", "-CAkey", "client-cert-auth-ca.key", "-CAcreateserial", "-out", `${file}.crt`, "-days", "2");
  }
  return dir;
}

interface Reply {
  status: number;
  body: string;
}

function get(port: number, path: string, certs: string, user?: string, method = "GET", body?: string): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request({
      host: "127.0.0.1", port, path, method,
      ca: readFileSync(join(certs, "serving-ca.crt")),
      ...(user === undefined ? {} : { cert: readFileSync(join(certs, `${user}.crt`)), key: readFileSync(join(certs, `${user}.key`)) }),
      headers: body === undefined ? {} : { "Content-Type": "application/json" },
    }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (text += chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

function exited(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => child.once("exit", (code) => resolve(code)));
}

async function untilHealthy(check: () => Promise<number>): Promise<void> {
  for (let attempt = 0; attempt < 200; attempt++) {
    try {
      if ((await check()) === 200) return;
    } catch {
      // Not listening yet.
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.fail("never became healthy");
}

test("settle envtest-assets makes executables kube-apiserver and etcd, and makes them again for another settle", () => {
  const dir = assetsDir();
  for (const binary of ["kube-apiserver", "etcd"]) {
    const script = readFileSync(join(dir, binary), "utf8");
    assert.match(script, /^#!\/bin\/sh\n/);
    assert.match(script, new RegExp(`dist/envtest/main\\.js' ${binary} "\\$@"`));
  }
  const stamp = join(dir, stampName);
  writeFileSync(stamp, "settle 0.0.0-older\n");
  rmSync(join(dir, "etcd"));
  const again = spawnSync(process.execPath, [settleBin, "envtest-assets"], { env: { ...process.env, SETTLE_ENVTEST_ASSETS_DIR: dir }, encoding: "utf8" });
  assert.equal(again.status, 0, again.stderr);
  assert.match(readFileSync(stamp, "utf8"), /^settle \d+\.\d+\.\d+/);
  assert.doesNotMatch(readFileSync(stamp, "utf8"), /older/);
  assert.ok(existsSync(join(dir, "etcd")));
});

test("--help lists the flags envtest looks for, in kube-apiserver's layout: no --insecure-port, etcd's --unsafe-no-fsync", () => {
  const dir = assetsDir();
  const api = spawnSync(join(dir, "kube-apiserver"), ["--help"], { encoding: "utf8" });
  assert.equal(api.status, 0, api.stderr);
  for (const flag of ["advertise-address", "allow-privileged", "authorization-mode", "bind-address", "secure-port", "cert-dir", "client-ca-file", "disable-admission-plugins", "service-account-issuer", "service-account-key-file", "service-account-signing-key-file", "service-cluster-ip-range", "etcd-servers", "feature-gates"]) {
    assert.match(api.stdout, new RegExp(`^\\s*--${flag}\\b`, "m"), flag);
  }
  assert.doesNotMatch(api.stdout, /^\s*--insecure-port\b/m);
  const etcd = spawnSync(join(dir, "etcd"), ["--help"], { encoding: "utf8" });
  assert.equal(etcd.status, 0, etcd.stderr);
  assert.match(etcd.stdout, /^\s*--unsafe-no-fsync\b/m);
});

test("a flag settle cannot honour ends the start with exit 1 naming it", () => {
  const dir = assetsDir();
  const certs = certDir({});
  for (const [args, named] of [
    [["--token-auth-file=/tmp/tokens.csv"], /--token-auth-file/],
    [[`--cert-dir=${certs}`, "--secure-port=1", "--authorization-mode=Node,Webhook"], /--authorization-mode: .*"Webhook"/],
    [["--secure-port=1"], /--cert-dir/],
    [[`--cert-dir=${certs}`, "--secure-port=1", "--client-ca-file=/nonexistent/ca.crt"], /--client-ca-file: \/nonexistent\/ca\.crt does not exist/],
  ] as const) {
    const result = spawnSync(join(dir, "kube-apiserver"), args, { encoding: "utf8", timeout: 30_000 });
    assert.equal(result.status, 1, `${args.join(" ")}: ${result.stderr}`);
    assert.match(result.stderr, named);
  }
  const faults = join(certs, "faults.yaml");
  writeFileSync(faults, "- kind: no-such-fault\n");
  const bad = spawnSync(join(dir, "kube-apiserver"), [`--cert-dir=${certs}`, "--secure-port=1"], { encoding: "utf8", env: { ...process.env, SETTLE_FAULTS: faults }, timeout: 30_000 });
  assert.equal(bad.status, 1, bad.stderr);
  assert.match(bad.stderr, /SETTLE_FAULTS=.*faults\.yaml/);
});

test("kube-apiserver on envtest's command line: health on the secure port, users by client certificate under RBAC, SIGTERM", async () => {
  const dir = assetsDir();
  const certs = certDir({ admin: { cn: "admin", o: ["system:masters"] }, reader: { cn: "reader", o: ["readers"] } });
  const [etcdPort, port] = [await freePort(), await freePort()];
  const etcd = spawn(join(dir, "etcd"), ["--listen-peer-urls=http://localhost:0", `--advertise-client-urls=http://127.0.0.1:${etcdPort}`, `--listen-client-urls=http://127.0.0.1:${etcdPort}`, `--data-dir=${certs}/etcd`, "--unsafe-no-fsync=true"], { stdio: "ignore" });
  const etcdExit = exited(etcd);
  await untilHealthy(() => new Promise((resolve, reject) => httpRequest({ host: "127.0.0.1", port: etcdPort, path: "/health" }, (res) => { res.resume(); resolve(res.statusCode ?? 0); }).on("error", reject).end()));
  // envtest's defaults (controlplane/apiserver.go), as its template renders them.
  const args = [
    "--advertise-address=127.0.0.1", `--etcd-servers=http://127.0.0.1:${etcdPort}`, `--cert-dir=${certs}`, `--secure-port=${port}`,
    "--disable-admission-plugins=ServiceAccount", "--service-cluster-ip-range=10.0.0.0/24", "--allow-privileged=true",
    "--authorization-mode=RBAC", "--bind-address=127.0.0.1", `--service-account-issuer=https://127.0.0.1:${port}/`,
    `--service-account-key-file=${certs}/sa-signer.crt`, `--service-account-signing-key-file=${certs}/sa-signer.key`,
    `--client-ca-file=${certs}/client-cert-auth-ca.crt`,
  ];
  const api = spawn(join(dir, "kube-apiserver"), args, { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  api.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const apiExit = exited(api);
  try {
    await untilHealthy(async () => (await get(port, "/healthz", certs)).status);
    for (const path of ["/readyz", "/livez"]) assert.equal((await get(port, path, certs)).status, 200, path);
    assert.equal((await get(port, "/api/v1/namespaces", certs)).status, 401, "no certificate, no token: nobody");
    const admin = await get(port, "/api/v1/namespaces/default", certs, "admin");
    assert.equal(admin.status, 200, admin.body);
    const denied = await get(port, "/api/v1/namespaces/default/configmaps", certs, "reader");
    assert.equal(denied.status, 403, denied.body);
    assert.match(JSON.parse(denied.body).message, /User "reader" cannot list resource "configmaps"/);
    const role = { apiVersion: "rbac.authorization.k8s.io/v1", kind: "Role", metadata: { name: "read-cm", namespace: "default" }, rules: [{ apiGroups: [""], resources: ["configmaps"], verbs: ["list"] }] };
    const binding = { apiVersion: "rbac.authorization.k8s.io/v1", kind: "RoleBinding", metadata: { name: "read-cm", namespace: "default" }, roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "read-cm" }, subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "Group", name: "readers" }] };
    assert.equal((await get(port, "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles", certs, "admin", "POST", JSON.stringify(role))).status, 201);
    assert.equal((await get(port, "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings", certs, "admin", "POST", JSON.stringify(binding))).status, 201);
    const granted = await get(port, "/api/v1/namespaces/default/configmaps", certs, "reader");
    assert.equal(granted.status, 200, granted.body);
  } finally {
    api.kill("SIGTERM");
    etcd.kill("SIGTERM");
  }
  assert.equal(await apiExit, 0, stderr);
  assert.equal(await etcdExit, 0);
});

test("kube-apiserver writes audit events to --audit-log-path under --audit-policy-file, and says it records none without a policy", async () => {
  const dir = assetsDir();
  const certs = certDir({ admin: { cn: "admin", o: ["system:masters"] } });
  writeFileSync(join(certs, "policy.yaml"), "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: None\n  nonResourceURLs: ['/healthz*']\n- level: Metadata\n");
  const run = async (extra: string[]): Promise<string> => {
    const port = await freePort();
    const args = [`--cert-dir=${certs}`, `--secure-port=${port}`, "--bind-address=127.0.0.1", `--client-ca-file=${certs}/client-cert-auth-ca.crt`, ...extra];
    const api = spawn(join(dir, "kube-apiserver"), args, { stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    api.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const apiExit = exited(api);
    try {
      await untilHealthy(async () => (await get(port, "/healthz", certs)).status);
      assert.equal((await get(port, "/api/v1/namespaces/default/configmaps", certs, "admin", "POST", JSON.stringify({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "audited" } }))).status, 201);
    } finally {
      api.kill("SIGTERM");
    }
    assert.equal(await apiExit, 0, stderr);
    return stderr;
  };
  const log = join(certs, "audit.log");
  const stderr = await run([`--audit-log-path=${log}`, `--audit-policy-file=${certs}/policy.yaml`, "--audit-log-maxage=7"]);
  assert.match(stderr, /writing audit events to /);
  const events = readFileSync(log, "utf8").trim().split("\n").map((line) => JSON.parse(line));
  assert.deepEqual(events.map((e) => `${e.stage} ${e.verb} ${e.user.username} ${e.objectRef?.resource} ${e.responseStatus.code}`), ["ResponseComplete create admin configmaps 201"]);

  const unwritten = join(certs, "unwritten.log");
  const note = await run([`--audit-log-path=${unwritten}`]);
  assert.match(note, /--audit-log-path without --audit-policy-file: no audit events are recorded/);
  assert.equal(existsSync(unwritten), false);

  writeFileSync(join(certs, "bad-policy.yaml"), "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Loud\n");
  const bad = spawnSync(join(dir, "kube-apiserver"), [`--cert-dir=${certs}`, `--audit-policy-file=${certs}/bad-policy.yaml`, `--audit-log-path=${log}`], { encoding: "utf8", timeout: 30_000 });
  assert.equal(bad.status, 1, bad.stderr);
  assert.match(bad.stderr, /--audit-policy-file: .*bad-policy\.yaml: rules\[0\]\.level: expected one of None, Metadata, Request, RequestResponse/);
});
