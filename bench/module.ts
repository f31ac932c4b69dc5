// Module benchmark: an unmodified client-node operator in the simulator against the same operator written on
// settle's runtime (steps per CPU-second, in one run), the cost of one incarnation's fresh load, and the time to
// the first finding of the operator's delta-style variant under the default fault budget. Benchmarks may read
// real time. Runnable alone: `node --conditions=settle-source --import tsx bench/index.ts module`.
import { fileURLToPath } from "node:url";
import { performance } from "node:perf_hooks";
import { Action, defineController, isNotFound, runController, type KubeObject } from "../src/runtime/index.ts";
import { createSimulation, defineActor, randomStrategy, type ActorDefinition } from "../src/sim/index.ts";
import { defaultFaultBudget } from "../src/explore/scenario.ts";
import { runScenario } from "../src/explore/run.ts";
import { moduleActor } from "../src/module/actor.ts";
import { compileModule } from "../src/module/loader.ts";
import { makeBindings } from "../src/module/env.ts";
import { loadYamlExplore } from "../src/explore/yaml.ts";
import { loadYamlScenario } from "../src/scenario-yaml/load.ts";

const operator = fileURLToPath(new URL("../test/module/fixtures/client-node-operator.mjs", import.meta.url));
const scenarioYaml = fileURLToPath(new URL("../test/module/fixtures/yaml/scenario.yaml", import.meta.url));
const configMapKind = { apiVersion: "v1", kind: "ConfigMap" };

/** The fixture operator's level variant, on settle's runtime: each parent ConfigMap gets its child. */
function runtimeOperator(): ActorDefinition {
  const controller = defineController<KubeObject>({
    name: "children",
    for: configMapKind,
    resyncMs: 30_000,
    async reconcile(parent, ctx) {
      if (parent.metadata.labels?.role !== "parent") return Action.awaitChange();
      const name = `${parent.metadata.name!}-child`;
      try {
        await ctx.client.get({ ...configMapKind, namespace: "default", name });
        return Action.awaitChange();
      } catch (error) {
        if (!isNotFound(error)) throw error;
      }
      await ctx.client.create({ object: { ...configMapKind, metadata: { name, namespace: "default" }, data: (parent as { data?: Record<string, string> }).data ?? {} } });
      return Action.awaitChange();
    },
  });
  return defineActor({ name: "op", async start(ctx) {
    await runController(controller, { client: ctx.client, clock: ctx.clock, log: ctx.log }).done;
  } });
}

/** Steps per CPU-second of `runs` runs: a user creates five parents a second apart; one simulated minute each. */
async function stepsPerCpuSecond(actor: () => ActorDefinition, runs: number): Promise<{ rate: number; msPerRun: number }> {
  let steps = 0;
  const cpu = process.cpuUsage();
  const started = performance.now();
  for (let seed = 1; seed <= runs; seed++) {
    const sim = createSimulation({ seed, traceMode: "hash-only", requestLatencyMs: [1, 20] });
    sim.addActor(actor());
    sim.addActor(defineActor({ name: "user", faultable: false, crashable: false, async start(ctx) {
      for (let i = 0; i < 5; i++) {
        await ctx.clock.sleep(1000);
        await ctx.client.create({ object: { ...configMapKind, metadata: { name: `p${i}`, namespace: "default", labels: { role: "parent" } }, data: { i: String(i) } } });
      }
    } }));
    const result = await sim.run({ strategy: randomStrategy(), maxSteps: 5000, untilMs: sim.clock.now() + 60_000, faultBudget: defaultFaultBudget });
    steps += result.steps;
  }
  const used = process.cpuUsage(cpu);
  return { rate: steps / ((used.user + used.system) / 1e6), msPerRun: (performance.now() - started) / runs };
}

/** Milliseconds to evaluate the operator fresh (one incarnation's load), median of `count`. */
async function loadMs(count: number): Promise<number> {
  const compiled = compileModule(operator);
  const times: number[] = [];
  for (let i = 0; i < count; i++) {
    const sim = createSimulation({ seed: i, traceMode: "hash-only" });
    let measured = 0;
    sim.addActor(defineActor({ name: "probe", start(ctx) {
      const bindings = makeBindings({ ctx, modulePath: operator, args: ["--mode=level"], env: { KUBECONFIG: "/nonexistent" }, schedule: () => undefined, cancel: () => {}, exit: () => { throw new Error("exit"); }, connect: () => { throw new Error("no connection in the load benchmark"); } });
      const started = performance.now();
      // The top level throws at loadFromDefault (no kubeconfig): everything before it, the imports, is the load.
      return compiled.instantiate(bindings).then(
        () => undefined,
        () => undefined,
      ).finally(() => void (measured = performance.now() - started));
    } }));
    await sim.run({ maxSteps: 1 });
    times.push(measured);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)]!;
}

/** Real ms from the first run to the first failing verdict of the delta variant, for each of `count` seed ranges. */
async function firstFindingMs(count: number): Promise<{ medianMs: number; medianRuns: number }> {
  const scenario = await loadYamlExplore(loadYamlScenario(scenarioYaml));
  const times: number[] = [];
  const runsTaken: number[] = [];
  for (let start = 0; start < count; start++) {
    const started = performance.now();
    for (let run = 0; run < 500; run++) {
      const outcome = await runScenario(scenario, { variant: "delta", workload: "steps", params: {}, seed: start * 1000 + run, drawFaults: true });
      if (outcome.verdict.kind !== "ok") {
        times.push(performance.now() - started);
        runsTaken.push(run + 1);
        break;
      }
    }
  }
  times.sort((a, b) => a - b);
  runsTaken.sort((a, b) => a - b);
  return { medianMs: times[Math.floor(times.length / 2)] ?? Number.NaN, medianRuns: runsTaken[Math.floor(runsTaken.length / 2)] ?? Number.NaN };
}

export async function benchModule(): Promise<Record<string, string | number>> {
  const compileStarted = performance.now();
  compileModule(operator);
  const compileMs = performance.now() - compileStarted;
  // Warm both paths, then measure them in the same run.
  await stepsPerCpuSecond(runtimeOperator, 5);
  await stepsPerCpuSecond(() => moduleActor({ name: "op", module: operator, args: ["--mode=level"] }), 5);
  const runtime = await stepsPerCpuSecond(runtimeOperator, 100);
  const module = await stepsPerCpuSecond(() => moduleActor({ name: "op", module: operator, args: ["--mode=level"] }), 100);
  const load = await loadMs(21);
  const first = await firstFindingMs(10);
  return {
    "client-node operator: bundle + compile, once per process (ms)": compileMs.toFixed(0),
    "client-node operator: fresh load per incarnation, median (ms)": load.toFixed(1),
    "steps/CPU-s, client-node operator in the simulator": module.rate.toFixed(0),
    "steps/CPU-s, same operator on settle's runtime": runtime.rate.toFixed(0),
    "ratio (target >= 0.3)": (module.rate / runtime.rate).toFixed(3),
    "ms per run (1 simulated minute, default faults): module / runtime": `${module.msPerRun.toFixed(1)} / ${runtime.msPerRun.toFixed(1)}`,
    "time to first finding, delta variant, median of 10 seed ranges (ms)": first.medianMs.toFixed(0),
    "runs to first finding, median": first.medianRuns,
  };
}
