// Simulator steps per second of the compiled package (dist/, what `npx settle` runs), in a process of its own with no
// TypeScript loader for settle's code (only the example's scenario file goes through tsx, as a user's does):
// bench/steps.ts runs this and reads the one JSON line it prints. The same measurement as its in-process figures,
// which run settle from source through tsx, whose per-closure naming helper makes a step about twice as costly.
// Usage: `node bench/steps-run.mjs` after `npm run build`. With `bounded ...` (below), the bounded search's schedules
// per second at 1 and 2 workers instead, which bench/bounded.ts reads. Benchmarks may read real time.
import { fileURLToPath } from "node:url";
import { loadScenario } from "../dist/explore/load.js";
import { runScenario } from "../dist/explore/run.js";
import { explore } from "../dist/explore/explore.js";
import { loadavg } from "node:os";
import { execFile, execFileSync } from "node:child_process";
import { randomStrategy } from "../dist/sim/strategy.js";

const warmupSteps = 40_000;

function cpuMs() {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
}

/** Steps (or round trips) per CPU second and per wall second of `work`, which returns how many it made. */
async function rate(work) {
  const cpu = cpuMs();
  const wall = performance.now();
  const count = await work();
  return { perCpuSecond: (count * 1000) / (cpuMs() - cpu), perWallSecond: (count * 1000) / (performance.now() - wall) };
}

function immediateLoop(rounds = 300_000) {
  return new Promise((resolve) => {
    let n = 0;
    const loop = () => (++n >= rounds ? resolve(n) : setImmediate(loop));
    loop();
  });
}

async function exampleSteps(example, variant, runs) {
  const scenario = await loadScenario(fileURLToPath(new URL(`../examples/${example}/scenario.ts`, import.meta.url)));
  const workload = Object.keys(scenario.workloads)[0];
  const run = (seed) => runScenario(scenario, { variant, workload, params: scenario.params, seed, strategy: randomStrategy(), drawFaults: true });
  for (let seed = 1_000_001, warmed = 0; warmed < warmupSteps && seed <= 1_002_000; seed++) warmed += (await run(seed)).steps;
  let steps = 0;
  const figures = await rate(async () => {
    for (let seed = 1; seed <= runs; seed++) steps += (await run(seed)).steps;
    return steps;
  });
  return { ...figures, stepsPerRun: steps / runs };
}

/**
 * Schedules per wall second of one complete bounded search, on `workers` threads (1: depth-first in this thread, as
 * `--workers 1` runs; more: worker threads). Wall time, since more threads are meant to finish sooner.
 */
async function boundedSearch(path, variant, preemptions, faultPoints, workers, shard) {
  const scenario = await loadScenario(path);
  // Schedules per thread (0: this one), as each task ends: how the search was shared.
  const byThread = [];
  const onTask = (thread, schedules) => (byThread[thread] = (byThread[thread] ?? 0) + schedules);
  const options = { scenarioPath: path, variant, params: scenario.params, runs: Number.POSITIVE_INFINITY, seed: 1, workers, strategy: "bounded", first: false, bounded: { preemptions, faultPoints, onTask } };
  if (shard !== undefined) options.shard = shard;
  const wall = performance.now();
  const cpu = cpuMs();
  const result = await explore(scenario, options, () => performance.now());
  const wallMs = result.detectMs;
  // The process's CPU time: every thread, V8's compiler and GC threads included (a search on one thread uses a
  // second core for them too), but not esbuild's process that bundles the scenario for the workers.
  const processCpuMs = cpuMs() - cpu;
  const { schedules } = result.bounded;
  return { workers, schedules, complete: result.bounded.complete, wallMs, processCpuMs, byThread, totalWallMs: performance.now() - wall, perWallSecond: (schedules * 1000) / wallMs, perCpuSecond: (schedules * 1000) / processCpuMs };
}

/** One `bounded-search` process of shard `index` of 2, started now; resolves to its figures. */
function shardProcess(example, variant, k, f, index) {
  const args = [fileURLToPath(import.meta.url), "bounded-search", example, variant, k, f, "1", `${index}/2`];
  return new Promise((resolve, reject) => {
    execFile(process.execPath, args, { encoding: "utf8", maxBuffer: 1 << 20 }, (error, stdout) => (error ? reject(error) : resolve(JSON.parse(stdout))));
  });
}

/**
 * The machine's own ceiling for 2 workers on this search: its two shards, each in a process of its own on one
 * thread, side by side, and then one after the other. Two processes share nothing but the machine (no heap, no
 * V8 platform, no messages), so their speed-up is the most any design of threads or processes could get here;
 * alone, each still pays its own start and warm-up, as each worker thread does.
 */
async function shardPair(example, variant, k, f) {
  const sideBySide = await Promise.all([shardProcess(example, variant, k, f, 0), shardProcess(example, variant, k, f, 1)]);
  const alone = [];
  for (const index of [0, 1]) alone.push(await shardProcess(example, variant, k, f, index));
  const schedules = sideBySide[0].schedules + sideBySide[1].schedules;
  const sideBySideWallMs = Math.max(sideBySide[0].wallMs, sideBySide[1].wallMs);
  return { schedules, sideBySideWallMs, aloneWallMs: alone.map((s) => s.wallMs), perWallSecond: (schedules * 1000) / sideBySideWallMs };
}

// `node bench/steps-run.mjs bounded <example> <variant> <K> <F> <rounds>`: the bounded search at 1 and 2 workers,
// alternating (1, 2, 1, 2, ...) so that load from elsewhere on the machine falls on both alike. Each search runs in
// a process of its own (`bounded-search`), as each `settle explore` does: in one process, every search after the
// first would find this thread's code already optimized by V8 (a second search of the workers case takes half the
// time of the first), while a worker thread always starts cold, so the rounds would compare warm with cold.
if (process.argv[2] === "bounded") {
  const [example, variant, k, f, rounds] = process.argv.slice(3);
  const figures = { floor: await rate(immediateLoop), loadBefore: loadavg()[0], searches: [], shardPairs: [] };
  for (let round = 0; round < Number(rounds ?? 2); round++) {
    for (const workers of [1, 2]) {
      const args = [fileURLToPath(import.meta.url), "bounded-search", example, variant, k, f, String(workers)];
      figures.searches.push(JSON.parse(execFileSync(process.execPath, args, { encoding: "utf8", maxBuffer: 1 << 20 })));
    }
    figures.shardPairs.push(await shardPair(example, variant, k, f));
  }
  figures.loadAfter = loadavg()[0];
  process.stdout.write(`${JSON.stringify(figures)}\n`);
} else if (process.argv[2] === "bounded-search") {
  const [example, variant, k, f, workers, shardText] = process.argv.slice(3);
  const path = fileURLToPath(new URL(`../examples/${example}/scenario.ts`, import.meta.url));
  const shard = shardText === undefined ? undefined : { index: Number(shardText.split("/")[0]), count: Number(shardText.split("/")[1]) };
  process.stdout.write(`${JSON.stringify(await boundedSearch(path, variant, Number(k), Number(f), Number(workers), shard))}\n`);
} else {
  // The machine is shared: the 1-minute load average before and after says how much the figures can be trusted.
  const figures = { loadBefore: loadavg()[0], floor: await rate(immediateLoop), examples: [] };
  for (const [example, variant, runs] of [["ensemble", "level", 600], ["image-refresh", "fixed", 20], ["bootc-rollout", "fixed", 40]]) {
    figures.examples.push({ example, variant, runs, ...(await exampleSteps(example, variant, runs)) });
  }
  figures.loadAfter = loadavg()[0];
  process.stdout.write(`${JSON.stringify(figures)}\n`);
}
