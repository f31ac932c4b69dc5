// One fault-free rollout v0 -> v1 of a bootc pool of N nodes on the compiled package (dist/, what `npx settle` runs),
// in a process of its own so that its peak RSS and its garbage collection are its own: bench/scale.ts runs this once
// per fleet size and reads the one JSON line it prints. Plain JavaScript, so that no TypeScript loader runs in it.
// By default the rollout runs on the main thread with V8's default heap, as `settle explore --runs 1` runs a single
// run. With a young generation size in MB, it runs on a worker thread with that `maxYoungGenerationSizeMb`, as an
// exploration's runs do (workerYoungGenerationMb in src/explore/explore.ts), to compare sizes side by side.
// CPU time (of the rollout, loading excluded) and peak RSS are the whole process's; GC pauses are those of the
// thread that runs the rollout.
// Usage: `node bench/scale-run.mjs <nodes> [youngGenerationMb]` after `npm run build`. Benchmarks may read real time.
import { PerformanceObserver } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { Worker, isMainThread, parentPort, workerData } from "node:worker_threads";
import { loadScenario } from "../dist/explore/load.js";
import { runScenario } from "../dist/explore/run.js";

if (isMainThread) await main();
else parentPort.postMessage(await rollout(workerData.nodes));

async function main() {
  const nodes = Number(process.argv[2]);
  const youngGenerationMb = process.argv[3] === undefined ? undefined : Number(process.argv[3]);
  if (!Number.isInteger(nodes) || nodes < 1 || (youngGenerationMb !== undefined && !(Number.isInteger(youngGenerationMb) && youngGenerationMb > 0))) {
    process.stderr.write("usage: node bench/scale-run.mjs <nodes> [youngGenerationMb]\n");
    process.exit(2);
  }
  // Peak RSS is sampled every 250 ms of real time and at the end.
  let rssMax = process.memoryUsage().rss;
  const sampler = setInterval(() => (rssMax = Math.max(rssMax, process.memoryUsage().rss)), 250);
  const figures = youngGenerationMb === undefined ? await rollout(nodes) : await onWorker(nodes, youngGenerationMb);
  clearInterval(sampler);
  rssMax = Math.max(rssMax, process.memoryUsage().rss);
  const thread = youngGenerationMb === undefined ? "main" : `worker, young generation ${youngGenerationMb} MB`;
  process.stdout.write(`${JSON.stringify({ ...figures, rssMb: rssMax / 1e6, thread })}\n`);
}

/** The rollout on a worker thread with the given young generation (this file, started again). */
async function onWorker(nodes, youngGenerationMb) {
  const worker = new Worker(new URL(import.meta.url), { workerData: { nodes }, resourceLimits: { maxYoungGenerationSizeMb: youngGenerationMb } });
  const figures = await new Promise((resolve, reject) => {
    worker.once("message", resolve);
    worker.once("error", reject);
  });
  await worker.terminate();
  return figures;
}

/** The rollout itself: its wall and CPU time (the whole process's), steps and the GC pauses of this thread's heap. */
async function rollout(nodes) {
  const scenario = await loadScenario(fileURLToPath(new URL("../examples/bootc-rollout/scenario.ts", import.meta.url)));
  // The scenario's step bound is one for exploration runs: raised so that fleets beyond 5,000 nodes run to the end.
  const fleet = { ...scenario, timing: { ...scenario.timing, stepsMax: 20_000_000 } };
  const params = { ...scenario.params, nodes, maxUnavailable: "10%", safetyChecks: "per-second" };
  let gcMs = 0;
  const gcObserver = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) gcMs += entry.duration;
  });
  gcObserver.observe({ entryTypes: ["gc"] });
  const start = performance.now();
  const cpu = process.cpuUsage();
  const outcome = await runScenario(fleet, { variant: "fixed", workload: "rollout", params, seed: 1 });
  const seconds = (performance.now() - start) / 1000;
  const { user, system } = process.cpuUsage(cpu);
  gcObserver.disconnect();
  return { seconds, cpuSeconds: (user + system) / 1e6, steps: outcome.steps, gcSeconds: gcMs / 1000, verdict: outcome.verdict.kind, traceHash: outcome.traceHash };
}
