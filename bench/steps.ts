// Simulator steps per second per core on whole scenario runs, against an empty `setImmediate` loop measured in the
// same process (a step drains microtasks with one `setImmediate`, so that loop is the floor). Per core means per
// second of this process's CPU time, so other load on the machine does not count against it; wall figures too.
// Benchmarks may read real time; tests never do.
import { fileURLToPath } from "node:url";
import { loadScenario } from "../src/explore/load.ts";
import { runScenario } from "../src/explore/run.ts";
import { randomStrategy } from "../src/sim/strategy.ts";
import { nowMs } from "./lib.ts";

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

/** Steps/s over `runs` seeded runs of a bundled example's variant (random schedules, faults from its budget). */
export async function exampleSteps(example: string, variant: string, runs: number): Promise<Rate & { stepsPerRun: number }> {
  const scenario = await loadScenario(fileURLToPath(new URL(`../examples/${example}/scenario.ts`, import.meta.url)));
  const workload = Object.keys(scenario.workloads)[0]!;
  const run = (seed: number) => runScenario(scenario, { variant, workload, params: scenario.params, seed, strategy: randomStrategy(), drawFaults: true });
  for (let seed = 1; seed <= 2; seed++) await run(seed); // warm-up: compiled code, the worker's setup snapshot
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
  for (const [example, variant, runs] of [["ensemble", "level", 300], ["image-refresh", "fixed", 10], ["bootc-rollout", "fixed", 20]] as const) {
    const rate = await exampleSteps(example, variant, runs);
    figures[`${example} ${variant}: steps per CPU s (${runs} runs, ${Math.round(rate.stepsPerRun)} steps each)`] = Math.round(rate.perCpuSecond);
    figures[`${example} ${variant}: steps per wall s`] = Math.round(rate.perWallSecond);
    figures[`${example} ${variant}: share of the setImmediate floor (goal >= 30% for ensemble)`] = `${((100 * rate.perCpuSecond) / floor.perCpuSecond).toFixed(1)}%`;
  }
  return figures;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  for (const [key, value] of Object.entries(await benchSteps())) process.stdout.write(`${key}: ${value}\n`);
}
