// Simulator steps per second per core on whole scenario runs, against an empty `setImmediate` loop measured in the
// same process (a step drains microtasks with one `setImmediate`, so that loop is the floor). Per core means per
// second of this process's CPU time, so other load on the machine does not count against it; wall figures too.
// The in-process figures run settle from source through tsx; `compiled:` figures come from the compiled package in a
// process of its own (bench/steps-run.mjs), the code users run.
// Benchmarks may read real time; tests never do.
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { loadScenario } from "../src/explore/load.ts";
import { runScenario } from "../src/explore/run.ts";
import { randomStrategy } from "../src/sim/strategy.ts";
import { nowMs } from "./lib.ts";
import { stepFloor } from "./step-floor.ts";

export interface Rate {
  /** Per CPU second of this process. */
  perCpuSecond: number;
  perWallSecond: number;
}

function cpuMs(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
}

/** An empty `setImmediate` loop of `rounds` round trips. */
export async function immediateLoop(rounds = 300_000): Promise<Rate> {
  const cpu = cpuMs();
  const wall = nowMs();
  await new Promise<void>((resolve) => {
    let n = 0;
    const loop = (): void => {
      if (++n >= rounds) resolve();
      else setImmediate(loop);
    };
    loop();
  });
  return { perCpuSecond: (rounds * 1000) / (cpuMs() - cpu), perWallSecond: (rounds * 1000) / (nowMs() - wall) };
}

/** Steps of warm-up before measuring: V8 reaches its steady code for a whole run only after tens of thousands. */
const warmupSteps = 40_000;
const warmupRunsMax = 2_000;

/**
 * Steps/s over `runs` seeded runs of a bundled example's variant (random schedules, faults from its budget), in
 * the steady state an exploration of thousands of runs lives in: after `warmupSteps` steps of runs on other seeds.
 */
export async function exampleSteps(example: string, variant: string, runs: number): Promise<Rate & { stepsPerRun: number }> {
  const scenario = await loadScenario(fileURLToPath(new URL(`../examples/${example}/scenario.ts`, import.meta.url)));
  const workload = Object.keys(scenario.workloads)[0]!;
  const run = (seed: number) => runScenario(scenario, { variant, workload, params: scenario.params, seed, strategy: randomStrategy(), drawFaults: true });
  let warmed = 0;
  for (let seed = 1_000_001; warmed < warmupSteps && seed <= 1_000_000 + warmupRunsMax; seed++) warmed += (await run(seed)).steps;
  let steps = 0;
  const cpu = cpuMs();
  const wall = nowMs();
  for (let seed = 1; seed <= runs; seed++) steps += (await run(seed)).steps;
  return { perCpuSecond: (steps * 1000) / (cpuMs() - cpu), perWallSecond: (steps * 1000) / (nowMs() - wall), stepsPerRun: steps / runs };
}

/** The figures `npm run bench -- simulator` adds for whole runs. */
export async function benchSteps(): Promise<Record<string, string | number>> {
  const figures: Record<string, string | number> = {};
  const floor = await immediateLoop();
  figures["empty setImmediate loop: round trips per CPU s (same process)"] = Math.round(floor.perCpuSecond);
  // The simulator's own cost per step, under any scenario's: the ceiling a scenario's steps can reach.
  for (const [loop, rate] of Object.entries(await stepFloor())) {
    figures[`an actor that only ${loop === "sleep" ? "sleeps" : `does a ${loop}`}: steps per CPU s (share of the floor)`] = `${Math.round(rate.perCpuSecond)} (${((100 * rate.perCpuSecond) / floor.perCpuSecond).toFixed(1)}%)`;
  }
  for (const [example, variant, runs] of [["ensemble", "level", 300], ["image-refresh", "fixed", 10], ["bootc-rollout", "fixed", 20]] as const) {
    const rate = await exampleSteps(example, variant, runs);
    figures[`${example} ${variant}: steps per CPU s (${runs} runs, ${Math.round(rate.stepsPerRun)} steps each)`] = Math.round(rate.perCpuSecond);
    figures[`${example} ${variant}: steps per wall s`] = Math.round(rate.perWallSecond);
    figures[`${example} ${variant}: share of the setImmediate floor (goal >= 30% for ensemble, 20% for the others)`] = `${((100 * rate.perCpuSecond) / floor.perCpuSecond).toFixed(1)}%`;
  }
  return { ...figures, ...compiledSteps() };
}

interface CompiledFigures {
  loadBefore: number;
  loadAfter: number;
  floor: Rate;
  examples: Array<Rate & { example: string; variant: string; runs: number; stepsPerRun: number }>;
}

/**
 * The same figures on the compiled package (dist/, what `npx settle` runs), from a process of its own without a
 * TypeScript loader for settle's code (bench/steps-run.mjs), each against the setImmediate floor of that process.
 */
function compiledSteps(): Record<string, string | number> {
  const runner = fileURLToPath(new URL("./steps-run.mjs", import.meta.url));
  const output = execFileSync(process.execPath, [runner], { encoding: "utf8", maxBuffer: 1 << 20 });
  const compiled = JSON.parse(output) as CompiledFigures;
  const figures: Record<string, string | number> = {};
  figures["compiled: 1-minute load average before and after"] = `${compiled.loadBefore.toFixed(1)}, ${compiled.loadAfter.toFixed(1)}`;
  figures["compiled: empty setImmediate loop, round trips per CPU s (its own process)"] = Math.round(compiled.floor.perCpuSecond);
  for (const rate of compiled.examples) {
    const name = `compiled: ${rate.example} ${rate.variant}`;
    figures[`${name}: steps per CPU s (${rate.runs} runs, ${Math.round(rate.stepsPerRun)} steps each)`] = Math.round(rate.perCpuSecond);
    figures[`${name}: steps per wall s`] = Math.round(rate.perWallSecond);
    figures[`${name}: share of the setImmediate floor (goal >= 30% for ensemble, 20% for the others)`] = `${((100 * rate.perCpuSecond) / compiled.floor.perCpuSecond).toFixed(1)}%`;
  }
  return figures;
}

/** The pieces of a settle checkout a side-by-side comparison runs: its own loader, runner and strategy. */
interface Side {
  root: string;
  runBatch(firstSeed: number): Promise<number>;
}

async function sideAt(root: string, example: string, variant: string, runs: number): Promise<Side> {
  const load = (await import(`${root}/src/explore/load.ts`)) as typeof import("../src/explore/load.ts");
  const runner = (await import(`${root}/src/explore/run.ts`)) as typeof import("../src/explore/run.ts");
  const strategies = (await import(`${root}/src/sim/strategy.ts`)) as typeof import("../src/sim/strategy.ts");
  const scenario = await load.loadScenario(`${root}/examples/${example}/scenario.ts`);
  const workload = Object.keys(scenario.workloads)[0]!;
  const runBatch = async (firstSeed: number): Promise<number> => {
    let steps = 0;
    const cpu = cpuMs();
    for (let seed = firstSeed; seed < firstSeed + runs; seed++) {
      steps += (await runner.runScenario(scenario, { variant, workload, params: scenario.params, seed, strategy: strategies.randomStrategy(), drawFaults: true })).steps;
    }
    return (steps * 1000) / (cpuMs() - cpu);
  };
  return { root, runBatch };
}

function quantile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

/**
 * This checkout against another (`baseRoot`, e.g. a `git worktree` of an older commit) in one process: `pairs`
 * pairs of batches of `runs` runs on the same seeds, the order alternating, so machine load hits both alike.
 * Returns the median steps per CPU second of each side and the quartiles of the per-pair ratios new/base.
 */
export async function compareSteps(baseRoot: string, example: string, variant: string, runs: number, pairs: number): Promise<string> {
  const here = fileURLToPath(new URL("..", import.meta.url)).replace(/\/$/, "");
  const sides = [await sideAt(baseRoot, example, variant, runs), await sideAt(here, example, variant, runs)];
  for (const side of sides) await side.runBatch(1_000_000); // warm-up on seeds the pairs do not use
  const rates: number[][] = [[], []];
  const ratios: number[] = [];
  for (let pair = 0; pair < pairs; pair++) {
    const rate: number[] = [];
    for (const i of pair % 2 === 0 ? [0, 1] : [1, 0]) rate[i] = await sides[i]!.runBatch(1 + pair * runs);
    rates[0]!.push(rate[0]!);
    rates[1]!.push(rate[1]!);
    ratios.push(rate[1]! / rate[0]!);
  }
  const median = (values: readonly number[]) => quantile(values, 0.5);
  return `${example} ${variant}: base ${Math.round(median(rates[0]!))}, this ${Math.round(median(rates[1]!))} steps per CPU s (medians of ${pairs} batches of ${runs} runs); ratio this/base median ${median(ratios).toFixed(2)}, quartiles ${quantile(ratios, 0.25).toFixed(2)}-${quantile(ratios, 0.75).toFixed(2)}`;
}

// `node --conditions=settle-source --import tsx bench/steps.ts [--against DIR]`: the figures above, or with
// `--against` a side-by-side comparison of this checkout with the one in DIR on the same three examples.
if (import.meta.url === `file://${process.argv[1]}`) {
  const against = process.argv.indexOf("--against");
  if (against < 0) {
    for (const [key, value] of Object.entries(await benchSteps())) process.stdout.write(`${key}: ${value}\n`);
  } else {
    const baseRoot = process.argv[against + 1];
    if (baseRoot === undefined) throw new Error("--against needs the directory of the checkout to compare with");
    const floor = await immediateLoop();
    process.stdout.write(`empty setImmediate loop: ${Math.round(floor.perCpuSecond)} round trips per CPU s\n`);
    for (const [example, variant, runs, pairs] of [["ensemble", "level", 60, 16], ["image-refresh", "fixed", 1, 16], ["bootc-rollout", "fixed", 3, 16]] as const) {
      process.stdout.write(`${await compareSteps(baseRoot, example, variant, runs, pairs)}\n`);
    }
  }
}
