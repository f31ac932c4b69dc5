// Server benchmark: GETs/s and merge-patches/s over loopback with 1 and 16 keep-alive connections, each also as a
// ratio to a trivial Node HTTP server that answers `{}` (measured in the same run by the same load generator, in
// alternating slices so that both see the same load, so the ratio says what settle's own work costs), and for merge
// patches the ratio of a server that does only what any server must (parse the patch, answer the object); watch
// events/s fanned out to 100 watchers; the time from spawning `settle serve` to the first successful `kubectl get`;
// server-side apply of a 50-object manifest (objects applied per second, 16 in flight); and the wall time of
// `helm install` (helm 4.1) of the stock `helm create` chart. The load generator shares the process (and its one
// event loop) with the servers. Run alone with
// `node --conditions=settle-source --import tsx bench/server.ts [--rates|--growth]`, or through `npm run bench -- server`,
// which ends with the growth figures of bench/server-growth.ts (`--growth` prints only those).
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { Agent, createServer, get, request } from "node:http";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { pathToFileURL } from "node:url";
import { startServer } from "../src/server/index.ts";
import { serveFirstGet } from "./startup.ts";
import { benchServerGrowth } from "./server-growth.ts";
import type { SettleServer } from "../src/server/index.ts";

const helmPath = new URL("../node_modules/.cache/settle-tools/v35/helm/helm", import.meta.url).pathname;

interface Target {
  url: string;
  token: string;
}

function call(server: Target, agent: Agent, method: string, path: string, body?: string, contentType?: string): Promise<number> {
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
async function throughput(make: (i: number) => Promise<number>, inFlight = 16, ms = 1500): Promise<number> {
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

/** Requests completed and milliseconds taken by `inFlight` concurrent loops running for about `ms`. */
async function run(make: (i: number) => Promise<number>, inFlight: number, ms: number): Promise<{ requests: number; ms: number }> {
  let counter = 0;
  const start = performance.now();
  const until = start + ms;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (performance.now() < until) {
        const status = await make(counter++);
        if (status >= 300) throw new Error(`status ${status}`);
      }
    }),
  );
  return { requests: counter, ms: performance.now() - start };
}

/**
 * Requests per second of each server side by side, measured in alternating slices (8 of 250 ms each, after a warm-up
 * of each) and summed: the machine's load drifts over seconds, and alternating makes every side see the same drift,
 * so the ratios stay meaningful on a shared machine where back-to-back runs would not.
 */
async function interleaved<Side extends string>(sides: Record<Side, (i: number) => Promise<number>>, inFlight: number): Promise<Record<Side, number>> {
  const slices = 8;
  const sliceMs = 250;
  const entries = Object.entries(sides) as Array<[Side, (i: number) => Promise<number>]>;
  for (const [, make] of entries) await run(make, inFlight, 300);
  const sum = new Map(entries.map(([side]) => [side, { requests: 0, ms: 0 }]));
  for (let i = 0; i < slices; i++) {
    for (const [side, make] of entries) {
      const slice = await run(make, inFlight, sliceMs);
      sum.get(side)!.requests += slice.requests;
      sum.get(side)!.ms += slice.ms;
    }
  }
  return Object.fromEntries(entries.map(([side]) => [side, Math.round((sum.get(side)!.requests * 1000) / sum.get(side)!.ms)])) as Record<Side, number>;
}

/** The baseline: a Node HTTP server that answers every request with `{}` and does nothing else. */
async function trivialServer(): Promise<{ target: Target; close: () => Promise<void> }> {
  return listening((req, res) => {
    req.resume();
    req.on("end", () => {
      res.writeHead(200, { "Content-Type": "application/json", "Content-Length": 2 });
      res.end("{}");
    });
  });
}

/**
 * The ceiling of any server that answers the object: it reads and parses the request's body, then answers the bytes
 * settle answers a GET of the object with, under settle's headers, and does nothing else (no routing, no write). A
 * merge-patch through settle can come no closer to the trivial server than this.
 */
async function answeringServer(answer: string): Promise<{ target: Target; close: () => Promise<void> }> {
  return listening((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      if (chunks.length > 0) JSON.parse(Buffer.concat(chunks).toString());
      res.writeHead(200, { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(answer), "Cache-Control": "no-cache, private" });
      res.end(answer);
    });
  });
}

async function listening(handle: (req: IncomingMessage, res: ServerResponse) => void): Promise<{ target: Target; close: () => Promise<void> }> {
  const server = createServer({ keepAlive: true }, handle);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const target = { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, token: "none" };
  return { target, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

/** The body settle answers a GET of `path` with. */
function answerOf(server: SettleServer, path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    get(`${server.url}${path}`, { headers: { authorization: `Bearer ${server.token}` } }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (text += chunk));
      res.on("end", () => resolve(text));
    }).on("error", reject);
  });
}

/**
 * GETs/s and merge-patches/s of settle and of the trivial server, with `connections` keep-alive connections; for
 * merge patches also the ceiling (answeringServer) as a ratio to the trivial server.
 */
async function requestRates(server: SettleServer, baseline: Target, connections: number): Promise<Record<string, string | number>> {
  const agent = new Agent({ keepAlive: true, maxSockets: connections });
  const path = "/api/v1/namespaces/default/configmaps/bench";
  const patch = (i: number) => JSON.stringify({ data: { n: String(i) } });
  const ceiling = await answeringServer(await answerOf(server, path));
  try {
    const gets = await interleaved({ baseline: () => call(baseline, agent, "GET", path), settle: () => call(server, agent, "GET", path) }, connections);
    const patches = await interleaved(
      {
        baseline: (i) => call(baseline, agent, "PATCH", path, patch(i), "application/merge-patch+json"),
        settle: (i) => call(server, agent, "PATCH", path, patch(i), "application/merge-patch+json"),
        ceiling: (i) => call(ceiling.target, agent, "PATCH", path, patch(i), "application/merge-patch+json"),
      },
      connections,
    );
    const label = `${connections} keep-alive connection${connections === 1 ? "" : "s"}`;
    return {
      [`get requests/s (${label})`]: gets.settle,
      [`get ratio to a trivial server (${label}; ${gets.baseline}/s)`]: (gets.settle / gets.baseline).toFixed(2),
      [`merge-patch requests/s (${label})`]: patches.settle,
      [`merge-patch ratio to a trivial server (${label}; ${patches.baseline}/s)`]: (patches.settle / patches.baseline).toFixed(2),
      [`merge-patch ratio of a server that only parses the patch and answers the object (${label})`]: (patches.ceiling / patches.baseline).toFixed(2),
    };
  } finally {
    agent.destroy();
    await ceiling.close();
  }
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
  return throughput((i) => {
    const index = i % 50;
    if (index === 0) round++;
    const { path, body } = manifestObject(index, round);
    return call(server, agent, "PATCH", `${path}?fieldManager=bench`, body, "application/apply-patch+yaml");
  });
}

function helmRun(args: string[], env: Record<string, string>): Promise<void> {
  return new Promise<void>((resolve, reject) => execFile(helmPath, args, { env }, (error) => (error === null ? resolve() : reject(error))));
}

/** Wall time of `helm install` (helm 4.1, server-side apply) of the stock `helm create` chart, median of 3 fresh servers. */
async function helmInstallMs(): Promise<number> {
  const times: number[] = [];
  const chartDir = mkdtempSync(join(tmpdir(), "settle-bench-chart-"));
  const chartEnv = { PATH: process.env.PATH ?? "", HOME: chartDir, HELM_CACHE_HOME: join(chartDir, "c"), HELM_CONFIG_HOME: join(chartDir, "g"), HELM_DATA_HOME: join(chartDir, "d") };
  const chartPath = join(chartDir, "demo");
  await helmRun(["create", chartPath], chartEnv);
  try {
    for (let run = 0; run < 3; run++) {
      const server = await startServer({ log: () => {} });
      const dir = mkdtempSync(join(tmpdir(), "settle-bench-helm-"));
      try {
        const kubeconfig = join(dir, "kubeconfig");
        server.writeKubeconfig(kubeconfig);
        const env = { PATH: process.env.PATH ?? "", HOME: dir, KUBECONFIG: kubeconfig, HELM_CACHE_HOME: join(dir, "c"), HELM_CONFIG_HOME: join(dir, "g"), HELM_DATA_HOME: join(dir, "d") };
        const start = performance.now();
        await helmRun(["install", "demo", chartPath], env);
        times.push(performance.now() - start);
      } finally {
        await server.close();
        rmSync(dir, { recursive: true, force: true });
      }
    }
  } finally {
    rmSync(chartDir, { recursive: true, force: true });
  }
  return Math.round(times.sort((a, b) => a - b)[1]!);
}

export async function benchServer(): Promise<Record<string, string | number>> {
  const server = await startServer({ log: () => {} });
  const baseline = await trivialServer();
  const setup = new Agent({ keepAlive: true, maxSockets: 16 });
  await call(server, setup, "POST", "/api/v1/namespaces/default/configmaps", JSON.stringify({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "bench" }, data: { n: "0" } }));
  const one = await requestRates(server, baseline.target, 1);
  const sixteen = await requestRates(server, baseline.target, 16);
  await baseline.close();
  const applies = await applyThroughput(server, setup);
  setup.destroy();
  const watchEvents = await watchFanOut(server, 100, 2000);
  await server.close();
  // The same measurement as `npm run bench -- startup`, which also gives its floor (node -e 0 + kubectl): one
  // unmeasured start first (the first spawn after a build reads every file from disk), then the median of three.
  await serveFirstGet();
  const spawns: number[] = [];
  for (let i = 0; i < 3; i++) spawns.push((await serveFirstGet()).firstGetMs);
  const firstGetMs = spawns.sort((a, b) => a - b)[1]!;
  const helmInstall = await helmInstallMs();
  const growth = await benchServerGrowth();
  return {
    ...one,
    ...sixteen,
    "watch events/s delivered (100 watchers x 2000 writes)": watchEvents,
    "ms from settle serve spawn to first kubectl get (median of 3, target < 300)": Math.round(firstGetMs),
    "server-side applies/s (50-object manifest, 16 in flight)": applies,
    "ms for helm 4.1 install of the stock helm create chart (median of 3)": helmInstall,
    ...growth,
  };
}

/** Only the request rates (`--rates`): the quick figure to compare while working on the request path. */
async function benchRates(): Promise<Record<string, string | number>> {
  const server = await startServer({ log: () => {} });
  const baseline = await trivialServer();
  const setup = new Agent({ keepAlive: true, maxSockets: 1 });
  try {
    await call(server, setup, "POST", "/api/v1/namespaces/default/configmaps", JSON.stringify({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "bench" }, data: { n: "0" } }));
    return { ...(await requestRates(server, baseline.target, 1)), ...(await requestRates(server, baseline.target, 16)) };
  } finally {
    setup.destroy();
    await baseline.close();
    await server.close();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const figures = process.argv.includes("--rates") ? await benchRates() : process.argv.includes("--growth") ? await benchServerGrowth() : await benchServer();
  for (const [key, value] of Object.entries(figures)) process.stdout.write(`${key}: ${value}\n`);
}
