// Server benchmark: get and merge-patch requests/s over loopback (keep-alive, 16 in flight), watch events/s fanned
// out to 100 watchers, the time from spawning `settle serve` to the first successful `kubectl get`, server-side
// apply of a 50-object manifest (objects applied per second, each apply a PATCH with application/apply-patch+yaml,
// 16 in flight, objects changing every round), and the wall time of `helm install` (helm 4.1) of the test chart.
// The load generator shares the process (and its one event loop) with the server, so the request figures are a
// floor. Run alone with `node --import tsx bench/server.ts`, or through `npm run bench`.
import { execFile, spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { Agent, get, request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { pathToFileURL } from "node:url";
import { startServer } from "../src/server/index.ts";
import type { SettleServer } from "../src/server/index.ts";

const kubectlPath = new URL("../node_modules/.cache/settle-tools/v35/kubectl/kubectl", import.meta.url).pathname;
const helmPath = new URL("../node_modules/.cache/settle-tools/v35/helm/helm", import.meta.url).pathname;
const chartPath = new URL("../test/fixtures/chart", import.meta.url).pathname;
const bin = new URL("../bin/settle.js", import.meta.url).pathname;

function call(server: SettleServer, agent: Agent, method: string, path: string, body?: string, contentType?: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { authorization: `Bearer ${server.token}` };
    if (body !== undefined) {
      headers["content-type"] = contentType ?? "application/json";
      headers["content-length"] = String(Buffer.byteLength(body));
    }
    const req = request(`${server.url}${path}`, { method, headers, agent }, (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode ?? 0));
    });
    req.on("error", reject);
    req.end(body);
  });
}

/** Requests per second with `inFlight` concurrent loops, for about `ms` after a warm-up. */
async function throughput(server: SettleServer, make: (i: number) => Promise<number>, ms = 1500, inFlight = 16): Promise<number> {
  let counter = 0;
  const loop = async (until: number) => {
    while (performance.now() < until) {
      const status = await make(counter++);
      if (status >= 300) throw new Error(`status ${status}`);
    }
  };
  const warm = performance.now() + 300;
  await Promise.all(Array.from({ length: inFlight }, () => loop(warm)));
  const start = performance.now();
  const before = counter;
  await Promise.all(Array.from({ length: inFlight }, () => loop(start + ms)));
  return Math.round(((counter - before) * 1000) / (performance.now() - start));
}

async function watchFanOut(server: SettleServer, watchers: number, events: number): Promise<number> {
  const base = "/api/v1/namespaces/default/configmaps";
  const counts: number[] = new Array(watchers).fill(0);
  const agent = new Agent({ keepAlive: true, maxSockets: watchers + 1 });
  let done: () => void = () => {};
  const all = new Promise<void>((resolve) => (done = resolve));
  let finished = 0;
  const opened = Array.from({ length: watchers }, (_, w) =>
    new Promise<void>((resolve) => {
      get(`${server.url}${base}?watch=true&resourceVersion=${server.store.revision}`, { agent, headers: { authorization: `Bearer ${server.token}` } }, (res) => {
        resolve();
        res.on("data", (chunk: Buffer) => {
          for (const byte of chunk) if (byte === 10) counts[w]!++;
          if (counts[w] === events && ++finished === watchers) done();
        });
      });
    }),
  );
  await Promise.all(opened);
  while (server.watches < watchers) await new Promise((resolve) => setImmediate(resolve));
  const start = performance.now();
  for (let i = 0; i < events; i++) {
    server.store.create({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: `w-${i}`, namespace: "default" }, data: { i: String(i) } });
    if (i % 50 === 49) await new Promise((resolve) => setImmediate(resolve));
  }
  await all;
  const elapsed = performance.now() - start;
  server.closeWatches();
  agent.destroy();
  return Math.round((watchers * events * 1000) / elapsed);
}

function kubectlGet(kubeconfig: string, dir: string): Promise<boolean> {
  return new Promise((resolve) => {
    const env = { PATH: process.env.PATH ?? "", HOME: dir, KUBECONFIG: kubeconfig, KUBECACHEDIR: join(dir, "cache") };
    execFile(kubectlPath, ["get", "namespaces", "-o", "name"], { env }, (error) => resolve(error === null));
  });
}

/** Milliseconds from spawning `settle serve` to the first `kubectl get` that succeeds. */
async function timeToFirstGet(): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), "settle-bench-"));
  const kubeconfig = join(dir, "kubeconfig");
  const start = performance.now();
  const child = spawn(process.execPath, [bin, "serve", "--port", "0", "--kubeconfig-out", kubeconfig], { stdio: "ignore" });
  try {
    for (;;) {
      if (existsSync(kubeconfig) && (await kubectlGet(kubeconfig, dir))) return Math.round(performance.now() - start);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  } finally {
    child.kill("SIGTERM");
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The 50 objects of the manifest: 25 ConfigMaps and 25 Deployments, with a field that changes each round. */
function manifestObject(i: number, round: number): { path: string; body: string } {
  const name = `app-${i}`;
  if (i % 2 === 0) {
    return { path: `/api/v1/namespaces/default/configmaps/${name}`, body: `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ${name}, labels: {app: ${name}}}\ndata: {round: "${round}", mode: fast}\n` };
  }
  const body = `apiVersion: apps/v1
kind: Deployment
metadata: {name: ${name}, labels: {app: ${name}}}
spec:
  replicas: ${1 + (round % 3)}
  selector: {matchLabels: {app: ${name}}}
  template:
    metadata: {labels: {app: ${name}}}
    spec:
      containers:
      - name: web
        image: nginx:1.${round % 10}
        ports: [{containerPort: 80}]
        env: [{name: ROUND, value: "${round}"}, {name: MODE, value: fast}]
      - {name: side, image: busybox}
`;
  return { path: `/apis/apps/v1/namespaces/default/deployments/${name}`, body };
}

/** Objects server-side applied per second: rounds of the 50-object manifest, each object changed every round. */
async function applyThroughput(server: SettleServer, agent: Agent): Promise<number> {
  let round = 0;
  return throughput(server, (i) => {
    const index = i % 50;
    if (index === 0) round++;
    const { path, body } = manifestObject(index, round);
    return call(server, agent, "PATCH", `${path}?fieldManager=bench`, body, "application/apply-patch+yaml");
  });
}

/** Wall time of `helm install` (helm 4.1, server-side apply) of the test chart, median of 3 fresh servers. */
async function helmInstallMs(): Promise<number> {
  const times: number[] = [];
  for (let run = 0; run < 3; run++) {
    const server = await startServer({ log: () => {} });
    const dir = mkdtempSync(join(tmpdir(), "settle-bench-helm-"));
    try {
      const kubeconfig = join(dir, "kubeconfig");
      server.writeKubeconfig(kubeconfig);
      const env = { PATH: process.env.PATH ?? "", HOME: dir, KUBECONFIG: kubeconfig, HELM_CACHE_HOME: join(dir, "c"), HELM_CONFIG_HOME: join(dir, "g"), HELM_DATA_HOME: join(dir, "d") };
      const start = performance.now();
      await new Promise<void>((resolve, reject) => execFile(helmPath, ["install", "demo", chartPath], { env }, (error) => (error === null ? resolve() : reject(error))));
      times.push(performance.now() - start);
    } finally {
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }
  return Math.round(times.sort((a, b) => a - b)[1]!);
}

export async function benchServer(): Promise<Record<string, string | number>> {
  const server = await startServer({ log: () => {} });
  const agent = new Agent({ keepAlive: true, maxSockets: 16 });
  const path = "/api/v1/namespaces/default/configmaps/bench";
  await call(server, agent, "POST", "/api/v1/namespaces/default/configmaps", JSON.stringify({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "bench" }, data: { n: "0" } }));
  const gets = await throughput(server, () => call(server, agent, "GET", path));
  const patches = await throughput(server, (i) => call(server, agent, "PATCH", path, JSON.stringify({ data: { n: String(i) } }), "application/merge-patch+json"));
  const applies = await applyThroughput(server, agent);
  agent.destroy();
  const watchEvents = await watchFanOut(server, 100, 2000);
  await server.close();
  const firstGet = await timeToFirstGet();
  const helmInstall = await helmInstallMs();
  return {
    "get requests/s (loopback, 16 in flight)": gets,
    "merge-patch requests/s (loopback, 16 in flight)": patches,
    "watch events/s delivered (100 watchers x 2000 writes)": watchEvents,
    "ms from settle serve spawn to first kubectl get": firstGet,
    "server-side applies/s (50-object manifest, 16 in flight)": applies,
    "ms for helm 4.1 install of the test chart (median of 3)": helmInstall,
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  for (const [key, value] of Object.entries(await benchServer())) process.stdout.write(`${key}: ${value}\n`);
}
