// Start-up benchmark (issue 19): the compiled CLI's start (`settle --version`) against `node -e 0`, and one
// explore worker thread's start (the worker bundle the main thread builds once, with the ensemble scenario,
// loaded and ready to run) against a bare worker thread; the bundling, paid once per exploration, apart. Each pair is measured interleaved in this
// run, so the ratio holds on a loaded machine too. Needs dist/ (`npm run build`). Run alone with
// `node --conditions=settle-source --import tsx bench/startup.ts`, or through `npm run bench -- startup`.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { pathToFileURL } from "node:url";
import { Worker } from "node:worker_threads";
import { median } from "./lib.ts";

const bin = new URL("../bin/settle.js", import.meta.url).pathname;
const distWorker = new URL("../dist/explore/worker.js", import.meta.url);
const ensemble = new URL("../examples/ensemble/scenario.ts", import.meta.url).pathname;

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
  const node: number[] = [];
  const cli: number[] = [];
  const bare: number[] = [];
  const explore: number[] = [];
  const bundle = await prebuild();
  // One warm-up of each, so the first round does not pay for cold file caches (tsx's transform cache included).
  processMs(["-e", "0"]);
  processMs([bin, "--version"]);
  await workerMs(bareWorker, null);
  const bundleUrl = pathToFileURL(bundle.path);
  await workerMs(bundleUrl, emptyJob);
  for (let round = 0; round < rounds; round++) {
    node.push(processMs(["-e", "0"]));
    cli.push(processMs([bin, "--version"]));
    bare.push(await workerMs(bareWorker, null));
    explore.push(await workerMs(bundleUrl, emptyJob));
  }
  const ms = (value: number) => `${value.toFixed(0)} ms`;
  return {
    "node -e 0 (median)": ms(median(node)),
    "settle --version (median)": ms(median(cli)),
    "CLI start / node start": `${(median(cli) / median(node)).toFixed(2)}x (target < 3x)`,
    "bare worker thread (median)": ms(median(bare)),
    "explore worker, ensemble loaded (median)": ms(median(explore)),
    "explore worker / bare worker": `${(median(explore) / median(bare)).toFixed(2)}x (target < 5x)`,
    "bundling the worker with the scenario (once per exploration)": ms(bundle.ms),
    rounds,
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  for (const [key, value] of Object.entries(await benchStartup())) process.stdout.write(`${key}: ${value}\n`);
}
