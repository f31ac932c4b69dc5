// The simulator's own cost per step, under any scenario's: runs of one actor that does nothing but a simulated call
// in a loop (a sleep, a get, a merge patch), with no faults and one trivial property. What a step of a real scenario
// costs beyond these is the controller's work and what it sets off (watch deliveries, lists, properties, GC). Steps
// per CPU second of this process, so other load on the machine does not count against them.
import { fileURLToPath } from "node:url";
import type { ActorContext } from "../src/sim/types.ts";
import { defineActor } from "../src/sim/simulation.ts";
import { always } from "../src/check/properties.ts";
import { scenario } from "../src/explore/scenario.ts";
import type { Scenario } from "../src/explore/scenario.ts";
import { runScenario } from "../src/explore/run.ts";
import { randomStrategy } from "../src/sim/strategy.ts";

const callsPerRun = 5000;
const target = { apiVersion: "v1", kind: "ConfigMap", namespace: "default", name: "floor" } as const;

const loops: Record<string, (ctx: ActorContext, i: number) => Promise<unknown>> = {
  sleep: (ctx) => ctx.clock.sleep(1),
  get: (ctx) => ctx.client.get(target),
  "merge patch": (ctx, i) => ctx.client.patch({ ...target, patchType: "merge", patch: { data: { n: String(i) } } }),
};

function floorScenario(call: (ctx: ActorContext, i: number) => Promise<unknown>): Scenario {
  return scenario({
    name: "step-floor",
    description: "one actor that makes the same simulated call in a loop",
    variants: { loop: { expect: "ok", description: "the loop" } },
    setup(_ctx, world) {
      world.create({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: target.name, namespace: target.namespace }, data: { n: "0" } });
    },
    actors: () => [
      defineActor({
        name: "loop",
        async start(ctx) {
          for (let i = 0; i < callsPerRun; i++) await call(ctx, i);
          // Then idle until the run ends, as a controller waiting for work does.
          await ctx.clock.sleep(Number.MAX_SAFE_INTEGER);
        },
      }),
    ],
    workloads: { none: async () => {} },
    faults: "none",
    // Long enough that every run makes all its calls before it is judged.
    timing: { faultPhaseMs: 1000, horizonMs: 100_000_000, settleWindowMs: 50_000_000 },
    properties: () => [always("holds", () => true)],
  });
}

function cpuMs(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
}

/** Steps per CPU second of `runs` runs of each loop (after two unmeasured runs), with the steps each run took. */
export async function stepFloor(runs = 6): Promise<Record<string, { perCpuSecond: number; stepsPerRun: number }>> {
  const rates: Record<string, { perCpuSecond: number; stepsPerRun: number }> = {};
  for (const [name, call] of Object.entries(loops)) {
    const loop = floorScenario(call);
    const run = (seed: number) => runScenario(loop, { variant: "loop", workload: "none", params: {}, seed, strategy: randomStrategy(), drawFaults: false });
    for (let seed = 1; seed <= 2; seed++) await run(seed);
    let steps = 0;
    const cpu = cpuMs();
    for (let seed = 1; seed <= runs; seed++) steps += (await run(seed)).steps;
    rates[name] = { perCpuSecond: (steps * 1000) / (cpuMs() - cpu), stepsPerRun: steps / runs };
  }
  return rates;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const [name, rate] of Object.entries(await stepFloor())) {
    process.stdout.write(`${name}: ${Math.round(rate.perCpuSecond)} steps per CPU s (${Math.round(rate.stepsPerRun)} steps a run)\n`);
  }
}
