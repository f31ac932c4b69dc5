// Start-up benchmark (issues 19 and 21), three figures each beside its floor, measured interleaved in one run so a
// ratio holds on a loaded machine too:
// - the compiled CLI's start (`settle --version`) against `node -e 0` (target under 3x);
// - one explore worker thread's start (the worker bundle the main thread builds once, with the ensemble scenario,
//   loaded and ready to run) against a bare worker thread (target under 5x); the bundling, paid once per
//   exploration, apart;
// - `settle serve` spawned to the first successful `kubectl get namespaces` (target under 300 ms), against its floor:
//   `node -e 0` plus the same kubectl command (fresh discovery cache) against a server already running.
// Needs dist/ (`npm run build`); the serve figure needs kubectl 1.35 unpacked by the tests' set-up (it is skipped
// otherwise). Run alone with `node --conditions=settle-source --import tsx bench/startup.ts`, or through
// `npm run bench -- startup`.
import { execFile, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { pathToFileURL } from "node:url";
import { Worker } from "node:worker_threads";
import { median } from "./lib.ts";

const bin = new URL("../bin/settle.js", import.meta.url).pathname;
const distWorker = new URL("../dist/explore/worker.js", import.meta.url);
const ensemble = new URL("../examples/ensemble/scenario.ts", import.meta.url).pathname;
const kubectlPath = new URL("../node_modules/.cache/settle-tools/v35/kubectl/kubectl", import.meta.url).pathname;

/** Wall ms of one child process, from spawn to exit. */
function processMs(args: string[]): number {
  const start = performance.now();
  const result = spawnSync(process.execPath, args, { stdio: "ignore" });
  if (result.status !== 0) throw new Error(`node ${args.join(" ")} exited ${result.status}`);
  return performance.now() - start;
}

/**
 * Wall ms of one worker thread, from construction to exit. `execArgv: []` starts it as the CLI's workers
 * start (without this process's tsx and source condition).
 */
function workerMs(url: URL, workerData: unknown): Promise<number> {
  const start = performance.now();
  const worker = new Worker(url, { workerData, execArgv: [] });
  return new Promise((resolve, reject) => {
    worker.on("error", reject);
    worker.on("exit", (code) => (code === 0 ? resolve(performance.now() - start) : reject(new Error(`worker exited ${code}`))));
  });
}

/** Wall ms of `kubectl get namespaces` against the server of `kubeconfig`, with a discovery cache of its own. */
function kubectlGetMs(kubeconfig: string, dir: string): Promise<number | undefined> {
  const start = performance.now();
  return new Promise((resolve) => {
    const env = { PATH: process.env.PATH ?? "", HOME: dir, KUBECONFIG: kubeconfig, KUBECACHEDIR: mkdtempSync(join(dir, "cache-")) };
    execFile(kubectlPath, ["get", "namespaces", "-o", "name"], { env }, (error) => resolve(error === null ? performance.now() - start : undefined));
  });
}

/**
 * One `settle serve` start: the wall ms from spawning it to the first `kubectl get namespaces` that succeeds (the
 * kubeconfig is written once the server listens, so the first try normally succeeds), and then the same kubectl
 * command again against the running server: kubectl's own share, the floor's second half.
 */
export async function serveFirstGet(): Promise<{ firstGetMs: number; kubectlMs: number }> {
  const dir = mkdtempSync(join(tmpdir(), "settle-bench-serve-"));
  const kubeconfig = join(dir, "kubeconfig");
  const start = performance.now();
  const child = spawn(process.execPath, [bin, "serve", "--port", "0", "--kubeconfig-out", kubeconfig], { stdio: "ignore" });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  try {
    for (let tries = 0; ; tries++) {
      if (child.exitCode !== null) throw new Error(`settle serve exited ${child.exitCode} before answering`);
      if (tries > 10_000) throw new Error("settle serve did not answer within the polling budget");
      const answered = existsSync(kubeconfig) ? await kubectlGetMs(kubeconfig, dir) : undefined;
      if (answered !== undefined) break;
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    const firstGetMs = performance.now() - start;
    const kubectlMs = await kubectlGetMs(kubeconfig, dir);
    if (kubectlMs === undefined) throw new Error("kubectl get namespaces failed against a running settle serve");
    return { firstGetMs, kubectlMs };
  } finally {
    child.kill("SIGTERM");
    await exited;
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The explore worker's job with no indexes: it loads the scenario and exits, which is its whole start. */
const emptyJob = { scenarioPath: ensemble, variant: "level", workload: undefined, params: {}, seed: 1, strategy: "mix", points: [], indexes: [], firstBound: undefined };

/** The compiled package's worker bundle, as `explore` builds it once before starting workers. */
async function prebuild(): Promise<{ path: string; ms: number }> {
  const { workerBundle } = (await import(new URL("../dist/explore/load.js", import.meta.url).href)) as { workerBundle(path: string): Promise<string | undefined> };
  const start = performance.now();
  const path = await workerBundle(ensemble);
  if (path === undefined) throw new Error("the ensemble scenario could not be bundled for workers");
  return { path, ms: performance.now() - start };
}
const bareWorker = new URL(`data:text/javascript,${encodeURIComponent("export {};")}`);

export async function benchStartup(rounds = 7): Promise<Record<string, string | number>> {
  if (!existsSync(distWorker)) throw new Error("bench startup needs dist/: run npm run build first");
  const withServe = existsSync(kubectlPath);
  const times = { node: [] as number[], cli: [] as number[], bare: [] as number[], explore: [] as number[], serve: [] as number[], kubectl: [] as number[] };
  const bundle = await prebuild();
  // One warm-up of each, so the first round does not pay for cold file caches.
  processMs(["-e", "0"]);
  processMs([bin, "--version"]);
  await workerMs(bareWorker, null);
  const bundleUrl = pathToFileURL(bundle.path);
  await workerMs(bundleUrl, emptyJob);
  if (withServe) await serveFirstGet();
  for (let round = 0; round < rounds; round++) {
    times.node.push(processMs(["-e", "0"]));
    times.cli.push(processMs([bin, "--version"]));
    times.bare.push(await workerMs(bareWorker, null));
    times.explore.push(await workerMs(bundleUrl, emptyJob));
    if (!withServe) continue;
    const { firstGetMs, kubectlMs } = await serveFirstGet();
    times.serve.push(firstGetMs);
    times.kubectl.push(kubectlMs);
  }
  const ms = (value: number) => `${value.toFixed(0)} ms`;
  const m = (name: keyof typeof times) => median(times[name]);
  const serveFloor = m("node") + m("kubectl");
  const serveFigures: Record<string, string> = withServe
    ? {
        "settle serve spawn -> first kubectl get ns (median)": `${ms(m("serve"))} (target < 300 ms)`,
        "kubectl get ns against a running server (median)": ms(m("kubectl")),
        "serve first answer / (node -e 0 + kubectl)": `${(m("serve") / serveFloor).toFixed(2)}x (floor ${ms(serveFloor)})`,
      }
    : { "settle serve spawn -> first kubectl get ns": "skipped: kubectl 1.35 is not unpacked (npm test's set-up does it)" };
  return {
    "node -e 0 (median)": ms(m("node")),
    "settle --version (median)": ms(m("cli")),
    "CLI start / node start": `${(m("cli") / m("node")).toFixed(2)}x (target < 3x)`,
    "bare worker thread (median)": ms(m("bare")),
    "explore worker, ensemble loaded (median)": ms(m("explore")),
    "explore worker / bare worker": `${(m("explore") / m("bare")).toFixed(2)}x (target < 5x)`,
    ...serveFigures,
    "bundling the worker with the scenario (once per exploration)": ms(bundle.ms),
    rounds,
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  for (const [key, value] of Object.entries(await benchStartup())) process.stdout.write(`${key}: ${value}\n`);
}
