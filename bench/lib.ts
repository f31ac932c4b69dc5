// What the exploration benchmarks share: the time to a scenario variant's first finding over many seeds
// (default budget and strategy, stopping at the first finding, reference runs and shrinking included), and
// the runs per second of a variant; the operator benchmarks' steps per CPU-second of an operator against another in
// one run; child processes and a CPU burner for the determinism checks. Benchmarks may read real time; tests never do.
import { spawn } from "node:child_process";
import { explore } from "../src/explore/explore.ts";
import { defaultFaultBudget, type Scenario } from "../src/explore/scenario.ts";
import { Action, defineController, isNotFound, runController, type KubeObject } from "../src/runtime/index.ts";
import { createSimulation, defineActor, randomStrategy, type ActorDefinition } from "../src/sim/index.ts";

export const nowMs = (): number => performance.now();

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

export interface FirstFinding {
  /** Wall ms to the first finding, median over the seeds. */
  msMedian: number;
  runsMedian: number;
  runsMax: number;
  /** Seeds whose `runs` found nothing. */
  missed: number;
  /** Wall ms to the detection (the run that found it ends; shrinking excluded), median over the seeds. */
  detectMsMedian: number;
  /** CPU ms of the whole exploration (this thread's process), median over the seeds: what a loaded machine hides in wall time. */
  cpuMsMedian: number;
}

/** Explores `variant` once per seed 1..`seeds` with `first: true`, one worker. */
export async function firstFinding(scenario: Scenario, scenarioPath: string, variant: string, options: { seeds?: number; runs?: number } = {}): Promise<FirstFinding> {
  const ms: number[] = [];
  const detect: number[] = [];
  const cpu: number[] = [];
  const runs: number[] = [];
  let missed = 0;
  for (let seed = 1; seed <= (options.seeds ?? 20); seed++) {
    const start = nowMs();
    const cpuStart = process.cpuUsage();
    const result = await explore(scenario, { scenarioPath, params: scenario.params, workers: 1, strategy: "mix", variant, runs: options.runs ?? 1000, seed, first: true }, nowMs);
    ms.push(nowMs() - start);
    const used = process.cpuUsage(cpuStart);
    cpu.push((used.user + used.system) / 1000);
    detect.push(result.detectMs);
    runs.push(result.runs);
    if (result.findings.length === 0) missed++;
  }
  return { msMedian: median(ms), runsMedian: median(runs), runsMax: Math.max(...runs), missed, detectMsMedian: median(detect), cpuMsMedian: median(cpu) };
}

/** Runs/s of `runs` runs of `variant` on `workers` worker threads (seed 1), with the findings and steps they had. */
export async function runsPerSecond(scenario: Scenario, scenarioPath: string, variant: string, runs: number, workers = 1): Promise<{ runsPerSec: number; findings: number; stepsPerRun: number; seconds: number }> {
  const start = nowMs();
  const result = await explore(scenario, { scenarioPath, params: scenario.params, workers, strategy: "mix", variant, runs, seed: 1, first: false }, nowMs);
  const seconds = (nowMs() - start) / 1000;
  return { runsPerSec: result.runs / seconds, findings: result.findings.length, stepsPerRun: result.steps / result.runs, seconds };
}

/**
 * A user creating `count` parent ConfigMaps over five seconds (by default five, a second apart): the workload the
 * operator benchmarks share.
 */
export function parentsUser(parent: (i: number) => KubeObject, count = 5): ActorDefinition {
  return defineActor({ name: "user", faultable: false, crashable: false, async start(ctx) {
    for (let i = 0; i < count; i++) {
      await ctx.clock.sleep(5000 / count);
      await ctx.client.create({ object: parent(i) });
    }
  } });
}

/** Steps and CPU µs of seeds `first`..`first + runs - 1` of `actor` beside `user`, one simulated minute each, default faults. */
export async function stepsAndCpu(actor: () => ActorDefinition, user: () => ActorDefinition, first: number, runs: number): Promise<{ steps: number; cpuUs: number }> {
  let steps = 0;
  const cpu = process.cpuUsage();
  for (let seed = first; seed < first + runs; seed++) {
    const sim = createSimulation({ seed, traceMode: "hash-only", requestLatencyMs: [1, 20] });
    sim.addActor(actor());
    sim.addActor(user());
    const result = await sim.run({ strategy: randomStrategy(), maxSteps: 5000, untilMs: sim.clock.now() + 60_000, faultBudget: defaultFaultBudget });
    steps += result.steps;
  }
  const used = process.cpuUsage(cpu);
  return { steps, cpuUs: used.user + used.system };
}

/**
 * Steps per CPU-second of each operator over seeds 1..runs, measured in alternating slices of `slice` runs so a
 * change of load on a shared machine weighs on all alike.
 */
export async function compareRates<K extends string>(operators: Record<K, () => ActorDefinition>, user: () => ActorDefinition, runs: number, slice: number): Promise<Record<K, { rate: number; cpuMsPerRun: number }>> {
  const names = Object.keys(operators) as K[];
  const totals = Object.fromEntries(names.map((name) => [name, { steps: 0, cpuUs: 0 }])) as Record<K, { steps: number; cpuUs: number }>;
  for (let first = 1; first <= runs; first += slice) {
    for (const name of names) {
      const part = await stepsAndCpu(operators[name], user, first, Math.min(slice, runs - first + 1));
      totals[name].steps += part.steps;
      totals[name].cpuUs += part.cpuUs;
    }
  }
  const figures = (t: { steps: number; cpuUs: number }) => ({ rate: t.steps / (t.cpuUs / 1e6), cpuMsPerRun: t.cpuUs / 1000 / runs });
  return Object.fromEntries(names.map((name) => [name, figures(totals[name])])) as Record<K, { rate: number; cpuMsPerRun: number }>;
}

/** The lines a child process (`node --conditions=settle-source --import tsx ENTRY ARGS`) printed, rejecting on a non-zero exit. */
export function childLines(entry: string, args: readonly string[]): Promise<string[]> {
  return new Promise<string[]>((resolve, reject) => {
    const child = spawn(process.execPath, ["--conditions=settle-source", "--import", "tsx", entry, ...args], { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString("utf8")));
    child.on("error", reject);
    child.on("close", (code) => (code === 0 ? resolve(out.trim().split("\n")) : reject(new Error(`${entry} exited ${code}`))));
  });
}

/** Runs `work` beside a process that keeps one core busy (a loaded machine), and stops it after. */
export async function besideBurner<T>(work: () => Promise<T>): Promise<T> {
  const burner = spawn(process.execPath, ["-e", "while (true) {}"]);
  try {
    return await work();
  } finally {
    burner.kill();
  }
}

/**
 * The benchmarks' reference operator on settle's runtime: each parent ConfigMap (label role=parent) gets its child
 * `<parent>-child`, made by `child` from the parent; `resyncMs` as the Go or Node operator it is measured against has.
 */
export function childrenOperator(child: (parent: KubeObject) => { metadata: KubeObject["metadata"]; data?: Record<string, string> }, resyncMs?: number): ActorDefinition {
  const configMapKind = { apiVersion: "v1", kind: "ConfigMap" };
  const controller = defineController<KubeObject>({
    name: "children",
    for: configMapKind,
    ...(resyncMs === undefined ? {} : { resyncMs }),
    async reconcile(parent, ctx) {
      if (parent.metadata.labels?.role !== "parent") return Action.awaitChange();
      const name = `${parent.metadata.name!}-child`;
      try {
        await ctx.client.get({ ...configMapKind, namespace: "default", name });
        return Action.awaitChange();
      } catch (error) {
        if (!isNotFound(error)) throw error;
      }
      const made = child(parent);
      await ctx.client.create({ object: { ...configMapKind, ...made, metadata: { name, namespace: "default", ...made.metadata } } });
      return Action.awaitChange();
    },
  });
  return defineActor({ name: "op", async start(ctx) {
    await runController(controller, { client: ctx.client, clock: ctx.clock, log: ctx.log }).done;
  } });
}
