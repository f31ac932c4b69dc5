// One fault-free rollout v0 -> v1 of a bootc pool of N nodes on the compiled package (dist/, what `npx settle` runs),
// in a process of its own so that its peak RSS and its garbage collection are its own: bench/scale.ts runs this once
// per fleet size and reads the one JSON line it prints. Plain JavaScript, so that no TypeScript loader runs in it.
// Usage: `node bench/scale-run.mjs <nodes>` after `npm run build`. Benchmarks may read real time.
import { PerformanceObserver } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { loadScenario } from "../dist/explore/load.js";
import { runScenario } from "../dist/explore/run.js";

const nodes = Number(process.argv[2]);
if (!Number.isInteger(nodes) || nodes < 1) {
  process.stderr.write("usage: node bench/scale-run.mjs <nodes>\n");
  process.exit(2);
}
const scenario = await loadScenario(fileURLToPath(new URL("../examples/bootc-rollout/scenario.ts", import.meta.url)));
// A 5,000-node rollout takes more steps than the scenario's bound for exploration runs.
const fleet = { ...scenario, timing: { ...scenario.timing, stepsMax: 20_000_000 } };
const params = { ...scenario.params, nodes, maxUnavailable: "10%", safetyChecks: "per-second" };

// Peak RSS is sampled every 250 ms of real time and at the end; GC pauses are summed as V8 reports them.
let rssMax = process.memoryUsage().rss;
const sampler = setInterval(() => (rssMax = Math.max(rssMax, process.memoryUsage().rss)), 250);
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
clearInterval(sampler);
gcObserver.disconnect();
rssMax = Math.max(rssMax, process.memoryUsage().rss);
const figures = {
  seconds,
  cpuSeconds: (user + system) / 1e6,
  steps: outcome.steps,
  rssMb: rssMax / 1e6,
  gcSeconds: gcMs / 1000,
  verdict: outcome.verdict.kind,
  traceHash: outcome.traceHash,
};
process.stdout.write(`${JSON.stringify(figures)}\n`);
