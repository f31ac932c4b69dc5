// What the seeded search (explore.ts) and the bounded search (bounded.ts, bounded-parallel.ts) share: the reference
// runs and the fault points planned from them, a run's summary, the findings shrunk from the failing runs, and how a
// worker thread starts. Kept apart from explore.ts so that the bounded search needs nothing from the file that
// dispatches to it.

import { availableParallelism, totalmem } from "node:os";
import { assert } from "../api/assert.ts";
import { clockFaultKinds } from "../api/faults.ts";
import { findingKey, isFinding, isScenarioError } from "../check/verdict.ts";
import { fifoStrategy } from "../sim/strategy.ts";
import type { TraceRecord } from "../sim/trace.ts";
import type { FaultKind, WorldView } from "../sim/types.ts";
import type { ExploreOptions, Finding, RunSummary } from "./types.ts";
import { crashableActors, faultableActors, faultPointsOf, systematicKinds, type DeclaredPlace, type FaultPoint, type PlannedRun } from "./plan.ts";
import { runScenario, type RunOutcome } from "./run.ts";
import { faultBudgetOf, type Scenario } from "./scenario.ts";
import { shrink } from "./shrink.ts";

export async function faultPoints(scenario: Scenario, options: Pick<ExploreOptions, "variant" | "workload" | "params" | "seed">): Promise<FaultPoint[]> {
  return (await referencePlan(scenario, { ...options, first: false })).points;
}

/**
 * The fault-free FIFO reference run of each workload, and the systematic points planned from them. A reference
 * run that already fails is a finding of its own (the bug needs no fault at all), reported with a negative run
 * index (`workloadIndex - workloads`), so it comes before every planned run, in workload order.
 */
export async function referencePlan(
  scenario: Scenario,
  options: Pick<ExploreOptions, "variant" | "workload" | "params" | "seed"> & { first?: boolean },
): Promise<{ points: FaultPoint[]; references: RunSummary[] }> {
  const workloads = options.workload !== undefined ? [options.workload] : Object.keys(scenario.workloads);
  const perWorkload: FaultPoint[][] = [];
  const references: RunSummary[] = [];
  for (const [i, workload] of workloads.entries()) {
    const spec = { variant: options.variant, workload, params: options.params, seed: options.seed };
    const budget = faultBudgetOf(scenario, spec);
    const kinds = new Set(Object.entries(budget?.counts ?? {}).filter(([, count]) => count > 0).map(([kind]) => kind));
    // A budget that lets runs draw a clock skew plans the clock points too (skews from the start, steps at a write).
    if ((budget?.clockSkewMs ?? 0) > 0) for (const kind of clockFaultKinds) kinds.add(kind);
    const declaredKinds = (scenario.faultKinds ?? []).filter((kind) => kinds.has(kind.name));
    // A reference run costs a whole run with a full trace: only worth it when the budget allows a kind to plan.
    if (!systematicKinds.some((kind) => kinds.has(kind)) && declaredKinds.length === 0) continue;
    const faultable = faultableActors(scenario, spec);
    const declared = new DeclaredPlaces(declaredKinds, faultable, scenario.timing.faultPhaseMs);
    const observe = declaredKinds.length === 0 ? {} : { observe: (record: TraceRecord, view: WorldView) => declared.observe(record, view) };
    const reference = await runScenario(scenario, { ...spec, strategy: fifoStrategy(), traceMode: "full", ...observe });
    const planned: PlannedRun = { index: i - workloads.length, strategy: "reference", spec: { ...spec, strategy: fifoStrategy() } };
    if (isFinding(reference.verdict)) {
      references.push(summarize(planned.index, planned, reference));
      // With --first, the first failing reference is the answer: the other workloads need not be planned. A
      // scenario error is the answer too: runs of a scenario that throws say nothing about the controller.
      if (options.first === true || isScenarioError(reference.verdict)) break;
    }
    const faultPhaseEndMs = (reference.trace[0]?.timeMs ?? 0) + scenario.timing.faultPhaseMs;
    perWorkload.push(faultPointsOf({ workload, trace: reference.trace, crashable: crashableActors(scenario, spec), faultable, kinds, declared: declared.places, faultPhaseEndMs }));
  }
  return { points: declaredFirst(perWorkload), references };
}

/** Collects the places of a reference run where its scenario's declared fault kinds can act (see `DeclaredPlace`). */
class DeclaredPlaces {
  readonly places: DeclaredPlace[] = [];
  /** `actor cell` pairs already touched. */
  private readonly touched = new Set<string>();
  /** When the run's fault phase ends: a touch after it is no place (no fault is injected then). */
  private faultPhaseEndMs: number | undefined;

  constructor(
    private readonly kinds: readonly FaultKind[],
    private readonly faultable: ReadonlySet<string>,
    private readonly faultPhaseMs: number,
  ) {}

  observe(record: TraceRecord, view: WorldView): void {
    this.faultPhaseEndMs ??= record.timeMs + this.faultPhaseMs;
    if (record.kind !== "external" || record.external === undefined || !this.faultable.has(record.actor)) return;
    if (record.timeMs >= this.faultPhaseEndMs) return;
    const key = `${record.actor} ${record.external}`;
    if (this.touched.has(key)) return;
    this.touched.add(key);
    const label = `${record.actor} ${record.access ?? "touch"} ${record.external}`;
    for (const kind of this.kinds) {
      for (const target of [...kind.targets(view)].sort()) this.places.push({ atStep: record.step + 1, kind: kind.name, target, label });
    }
  }
}

/**
 * One plan from the points of each workload: the declared-kind points of every workload first, taken in turn (the
 * first of each workload, then the second of each, ...) so that no workload's waits for all of another's, then
 * every other point in workload order, as planned.
 */
function declaredFirst(perWorkload: readonly FaultPoint[][]): FaultPoint[] {
  const declared = perWorkload.map((points) => points.filter((p) => p.pointClass === "declared"));
  const points: FaultPoint[] = [];
  for (let i = 0; declared.some((d) => i < d.length); i++) for (const d of declared) if (i < d.length) points.push(d[i]!);
  for (const own of perWorkload) points.push(...own.filter((p) => p.pointClass !== "declared"));
  return points;
}

/** A run's summary: what was planned for run `index` and what came of it. */
export function summarize(index: number, planned: PlannedRun, outcome: RunOutcome): RunSummary {
  const run = { index, strategy: planned.strategy, workload: planned.spec.workload, seed: planned.spec.seed };
  return runSummary(planned.point === undefined ? run : { ...run, point: planned.point }, outcome);
}

/** What the explorer keeps of a run (no trace): who it was and what came of it. */
export function runSummary(run: Pick<RunSummary, "index" | "strategy" | "workload" | "seed" | "point">, outcome: RunOutcome): RunSummary {
  const summary: RunSummary = {
    index: run.index,
    strategy: run.strategy,
    workload: run.workload,
    seed: run.seed,
    verdict: outcome.verdict,
    steps: outcome.steps,
    choices: outcome.choices,
    faults: outcome.faults,
    traceHash: outcome.traceHash,
    counters: outcome.counters,
  };
  if (run.point !== undefined) summary.point = run.point;
  return summary;
}

/**
 * The script a worker thread starts. Compiled, it is `worker.js` beside this file: plain JavaScript that
 * loads the scenario through the same scoped loader as the CLI. From the sources (the repository's tests),
 * it is `worker-entry.mjs`, which registers tsx for the worker before it imports `worker.ts`.
 */
export function workerEntry(): URL {
  return import.meta.url.endsWith(".ts") ? new URL("./worker-entry.mjs", import.meta.url) : new URL("./worker.js", import.meta.url);
}

/**
 * The young generation of a simulation worker thread, in MB (Node's `resourceLimits.maxYoungGenerationSizeMb`,
 * which V8 splits into two semi-spaces and a large-object space of a third each). A simulation step allocates many
 * objects that live for a few steps (events, snapshots, queued keys). On a worker with V8's default (48 MB: 16 MB
 * semi-spaces), a 5,000-node rollout takes 32-35 CPU seconds, with 192 MB 26-27 (GC pauses halved), while the
 * main thread with its default does as well as a worker with 192 MB (figures in examples/bootc-rollout/README.md;
 * the main thread's size is fixed at process start, V8 ignores a later `--max-semi-space-size`). A worker with one
 * run gets the size measured best for large runs; a worker with many runs (small ones, typically) a middle size,
 * which costs 10-15 MB of RSS per worker on Ensemble and image-refresh where 192 MB costs 20-50. Machines with little memory
 * per core get less: at most 1/16 of it per worker, and never less than V8's default.
 */
export function workerYoungGenerationMb(options: { runsPerWorker: number; memoryBytes?: number; cores?: number }): number {
  assert(options.runsPerWorker >= 1, "a worker has a run");
  const wantedMb = options.runsPerWorker === 1 ? workerYoungGenerationMbLarge : workerYoungGenerationMbSmall;
  const perCoreMb = (options.memoryBytes ?? totalmem()) / (options.cores ?? availableParallelism()) / 2 ** 20;
  return Math.max(v8DefaultYoungGenerationMb, Math.min(wantedMb, Math.floor(perCoreMb / 16)));
}

/** V8's default young generation on 64-bit machines (16 MB semi-spaces), the floor of workerYoungGenerationMb. */
const v8DefaultYoungGenerationMb = 48;
/** For a worker with one run (64 MB semi-spaces): a 5,000-node rollout takes about a fifth less CPU than with 48. */
const workerYoungGenerationMbLarge = 192;
/** For a worker with many runs (32 MB semi-spaces): 10-15 MB more RSS per worker than 48, runs/s unchanged. */
const workerYoungGenerationMbSmall = 96;

export async function collectFindings(scenario: Scenario, options: ExploreOptions, summaries: RunSummary[]): Promise<Finding[]> {
  const byKey = new Map<string, { run: RunSummary; occurrences: number }>();
  for (const summary of summaries) {
    if (!isFinding(summary.verdict)) continue;
    const key = findingKey(summary.verdict);
    const seen = byKey.get(key);
    if (seen === undefined) byKey.set(key, { run: summary, occurrences: 1 });
    else seen.occurrences++;
  }
  const findings: Finding[] = [];
  for (const [key, { run, occurrences }] of byKey) {
    const spec = { variant: options.variant, workload: run.workload, params: options.params, seed: run.seed };
    const outcome = await runScenario(scenario, { ...spec, choices: run.choices, faults: run.faults });
    // A scenario error is reported as first met: shrinking would hunt a smaller run of the scenario's own bug.
    const minimal = isScenarioError(run.verdict) ? { choices: run.choices, faults: run.faults, outcome, attempts: 0 } : await shrink(scenario, { spec, choices: run.choices, faults: run.faults, outcome });
    const full = await runScenario(scenario, { ...spec, choices: minimal.choices, faults: minimal.faults, traceMode: "full" });
    findings.push({ key, run, occurrences, minimal: { ...minimal, outcome: full } });
  }
  return findings;
}
