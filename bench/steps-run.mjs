// Simulator steps per second of the compiled package (dist/, what `npx settle` runs), in a process of its own with no
// TypeScript loader for settle's code (only the example's scenario file goes through tsx, as a user's does):
// bench/steps.ts runs this and reads the one JSON line it prints. The same measurement as its in-process figures,
// which run settle from source through tsx, whose per-closure naming helper makes a step about twice as costly.
// Usage: `node bench/steps-run.mjs` after `npm run build`. Benchmarks may read real time.
import { fileURLToPath } from "node:url";
import { loadScenario } from "../dist/explore/load.js";
import { runScenario } from "../dist/explore/run.js";
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

const figures = { floor: await rate(immediateLoop), examples: [] };
for (const [example, variant, runs] of [["ensemble", "level", 600], ["image-refresh", "fixed", 20], ["bootc-rollout", "fixed", 40]]) {
  figures.examples.push({ example, variant, runs, ...(await exampleSteps(example, variant, runs)) });
}
process.stdout.write(`${JSON.stringify(figures)}\n`);
