// `settle serve --cluster`: the cluster library's actors run in real time against the server, so real kubectl's
// `rollout status` and `wait --for=condition=Available` and helm's `install --wait` finish, on fake nodes.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { realClock } from "../../src/api/clock.ts";
import { startClusterMode } from "../../src/cli/cluster-mode.ts";
import { createServerStore } from "../../src/server/index.ts";
import { kubectl, kubectlPath, testServer } from "./helpers.ts";
import type { TestServer } from "./helpers.ts";

const helmPath = new URL("../../node_modules/.cache/settle-tools/v35/helm/helm", import.meta.url).pathname;
const bin = new URL("../../bin/settle.js", import.meta.url).pathname;

/** A server with the defaulting store `settle serve` makes, and a cluster of `nodes` fake nodes running on it. */
async function clusterServer(nodes: number): Promise<TestServer & { lines: string[] }> {
  const t = await testServer({ store: createServerStore({ now: () => realClock.now() }) });
  const lines: string[] = [];
  const cluster = startClusterMode({ kubeconfig: t.server.kubeconfig(), nodes, clock: realClock, log: (line) => lines.push(line) });
  return {
    ...t,
    lines,
    close: async () => {
      cluster.stop();
      await t.close();
    },
  };
}

function pods(t: TestServer, selector: string): any[] {
  return t.server.store.list({ apiVersion: "v1", kind: "Pod", namespace: "default", labelSelector: selector }).items as any[];
}

test("kubectl rollout status and wait --for=condition=Available finish for a Deployment on two fake nodes", async () => {
  const t = await clusterServer(2);
  try {
    assert.equal((await kubectl(t, ["create", "deployment", "web", "--image=nginx", "--replicas=2"])).code, 0);
    const rollout = await kubectl(t, ["rollout", "status", "deployment/web", "--timeout=60s"], { timeoutMs: 70_000 });
    assert.equal(rollout.code, 0, rollout.stderr);
    assert.match(rollout.stdout, /deployment "web" successfully rolled out/);
    const available = await kubectl(t, ["wait", "--for=condition=Available", "deployment/web", "--timeout=30s"], { timeoutMs: 40_000 });
    assert.equal(available.code, 0, available.stderr);
    const nodes = await kubectl(t, ["get", "nodes", "-o", "jsonpath={range .items[*]}{.metadata.name}={.status.conditions[?(@.type==\"Ready\")].status} {end}"]);
    assert.equal(nodes.stdout.trim(), "n1=True n2=True");
    const running = pods(t, "app=web");
    assert.equal(running.length, 2);
    for (const pod of running) {
      assert.equal(pod.status.phase, "Running");
      assert.ok(["n1", "n2"].includes(pod.spec.nodeName), `bound to a fake node, not ${pod.spec.nodeName}`);
    }
    // The scheduler spreads by pod count, so two replicas land on two nodes.
    assert.deepEqual(running.map((pod) => pod.spec.nodeName).sort(), ["n1", "n2"]);
    // Scaling down goes through the same controllers: the ReplicaSet deletes a pod and the kubelet removes it.
    assert.equal((await kubectl(t, ["scale", "deployment/web", "--replicas=1"])).code, 0);
    const scaled = await kubectl(t, ["rollout", "status", "deployment/web", "--timeout=60s"], { timeoutMs: 70_000 });
    assert.equal(scaled.code, 0, scaled.stderr);
    assert.deepEqual(t.lines, [], "no actor failed or restarted");
  } finally {
    await t.close();
  }
});

test("helm 4.1 install --wait of the stock chart (helm create) finishes with its pod Running", async () => {
  const t = await clusterServer(1);
  try {
    const env = { PATH: process.env.PATH ?? "", HOME: t.dir, KUBECONFIG: t.kubeconfig, HELM_CACHE_HOME: join(t.dir, "helm-cache"), HELM_CONFIG_HOME: join(t.dir, "helm-config"), HELM_DATA_HOME: join(t.dir, "helm-data") };
    const helm = (args: string[]) =>
      new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
        execFile(helmPath, args, { env, timeout: 90_000 }, (error, stdout, stderr) => resolve({ code: error === null ? 0 : 1, stdout, stderr }));
      });
    const chart = join(t.dir, "demo");
    assert.equal((await helm(["create", chart])).code, 0);
    const install = await helm(["install", "demo", chart, "--wait", "--timeout", "60s"]);
    assert.equal(install.code, 0, install.stderr);
    assert.match(install.stdout, /STATUS: deployed/);
    const [pod, ...more] = pods(t, "app.kubernetes.io/instance=demo");
    assert.equal(more.length, 0);
    assert.equal(pod.status.phase, "Running");
    assert.equal(pod.spec.nodeName, "n1");
  } finally {
    await t.close();
  }
});

test("settle serve --cluster --nodes 2 registers two Ready nodes and stops on SIGTERM; --nodes alone is a usage error", async () => {
  const dir = mkdtempSync(join(tmpdir(), "settle-serve-cluster-"));
  try {
    const kubeconfig = join(dir, "kubeconfig");
    const child = spawn(process.execPath, [bin, "serve", "--cluster", "--nodes", "2", "--kubeconfig-out", kubeconfig], { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    child.stdout.on("data", (chunk) => (stdout += chunk.toString()));
    const exited = new Promise<number>((resolve) => child.on("exit", (code) => resolve(code ?? -1)));
    const env = { PATH: process.env.PATH ?? "", HOME: dir, KUBECONFIG: kubeconfig, KUBECACHEDIR: join(dir, "cache") };
    const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
    for (let attempt = 0; attempt < 100 && !/with a cluster of 2 nodes/.test(stdout); attempt++) await sleep(100);
    assert.match(stdout, /listening on http:\/\/127\.0\.0\.1:\d+ \(kubeconfig: .*\) with a cluster of 2 nodes/);
    // The kubelets register their Nodes just after the server listens; until then `kubectl wait` fails at once.
    let ready = spawnSync(kubectlPath, ["version"], { env });
    for (let attempt = 0; attempt < 20; attempt++) {
      ready = spawnSync(kubectlPath, ["wait", "--for=condition=Ready", "node/n1", "node/n2", "--timeout=20s"], { env, timeout: 30_000 });
      if (ready.status === 0) break;
      await sleep(250);
    }
    assert.equal(ready.status, 0, ready.stderr.toString());
    child.kill("SIGTERM");
    assert.equal(await exited, 0);
    const usage = spawnSync(process.execPath, [bin, "serve", "--nodes", "2"]);
    assert.equal(usage.status, 2);
    assert.match(usage.stderr.toString(), /--nodes needs --cluster/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
