// Exploration: many seeded runs of one scenario variant (on worker threads when asked), findings
// deduplicated by verdict and property, each shrunk to a minimal run.
import { pathToFileURL } from "node:url";
import { Worker } from "node:worker_threads";
import { availableParallelism, totalmem } from "node:os";
import { fifoStrategy } from "../sim/strategy.ts";
import { findingKey, isFinding, isScenarioError, type Verdict } from "../check/verdict.ts";
import type { PropertyCounter } from "../check/properties.ts";
import type { FaultKind, PlannedFault, WorldView } from "../sim/types.ts";
import { crashableActors, faultableActors, faultPointsOf, systematicKinds, planRun, plannedRunCount, type DeclaredPlace, type FaultPoint, type PlanContext, type PlannedRun, type StrategyName } from "./plan.ts";
import type { TraceRecord } from "../sim/trace.ts";
import { runScenario, type RunOutcome } from "./run.ts";
import { faultBudgetOf, type Params, type Scenario } from "./scenario.ts";
import { shrink } from "./shrink.ts";
import { workerBundle } from "./load.ts";
import { assert } from "../api/assert.ts";
import { exploreBounded, type BoundedOptions, type BoundedStats, type SearchPosition, type Unit } from "./bounded.ts";

export interface ExploreOptions {
  /** Absolute path of the scenario file (worker threads load it again). */
  scenarioPath: string;
  variant: string;
  workload?: string;
  params: Params;
  runs: number;
  seed: number;
  workers: number;
  strategy: StrategyName;
  /** Run only the indexes `i` with `i % count === index`. */
  shard?: { index: number; count: number };
  /** Stop at the first finding. */
  first: boolean;
  /** The bounded strategy's bounds, reduction and checkpoint (src/explore/bounded.ts). */
  bounded?: BoundedOptions;
  /** Each worker thread's young generation in MB (see workerYoungGenerationMb); default: workerYoungGenerationMb() of the worker's runs. */
  youngGenerationMb?: number;
  onProgress?(progress: { done: number; total: number; findings: number }): void;
}

/** One run as the explorer keeps it: enough to replay and to report, no trace. */
export interface RunSummary {
  index: number;
  strategy: string;
  workload: string;
  seed: number;
  verdict: Verdict;
  steps: number;
  choices: Array<[number, number]>;
  faults: PlannedFault[];
  traceHash: string;
  counters: PropertyCounter[];
  point?: number;
}

export interface Finding {
  key: string;
  /** The first run that found it. */
  run: RunSummary;
  /** Runs with the same verdict and property. */
  occurrences: number;
  minimal: { choices: Array<[number, number]>; faults: PlannedFault[]; outcome: RunOutcome; attempts: number };
}

export interface ExploreResult {
  runs: number;
  findings: Finding[];
  points: FaultPoint[];
  pointsCovered: number;
  steps: number;
  wallMs: number;
  /** Of `wallMs`: planning (reference runs) and the runs themselves, up to the findings. */
  detectMs: number;
  /** Of `wallMs`: shrinking the findings to minimal runs. */
  shrinkMs: number;
  /** Counters summed over every run: how often each property was evaluated and failed (fixed names and counts only). */
  counters: PropertyCounter[];
  /** The bounded strategy's figures: whether its space was covered completely, schedules run and pruned. */
  bounded?: BoundedStats;
  /** The bounded strategy's shard and where in its tree each finding came first: for its search record. */
  search?: SearchPart;
}

/** What a bounded search adds to its search record besides its figures (see `SearchRecord` in findings.ts). */
export interface SearchPart {
  workload: string | null;
  seed: number;
  shard: { index: number; count: number };
  steps: number;
  /** Schedules per unit of the tree, in search order (see `SearchState.units` in bounded.ts). */
  units: Unit[];
  /** Per finding key: its first schedule's place in the tree and run index, and how many schedules had it. */
  found: Array<{ key: string; position: SearchPosition; occurrences: number; run: number }>;
}

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

export async function explore(scenario: Scenario, options: ExploreOptions, clockMs: () => number): Promise<ExploreResult> {
  if (options.strategy === "bounded") return exploreBounded(scenario, options, clockMs);
  const startedMs = clockMs();
  // The worker bundle builds (in esbuild's own process) while the reference runs go on here.
  if (options.workers > 1) void workerBundle(options.scenarioPath);
  const plan = options.strategy === "random" || options.strategy === "pct" ? { points: [], references: [] } : await referencePlan(scenario, options);
  const points = plan.points;
  // Reference findings belong to shard 0 alone, so shards stay disjoint.
  const allReferences = (options.shard?.index ?? 0) === 0 ? plan.references : [];
  const references = options.first ? allReferences.slice(0, 1) : allReferences;
  const ctx: PlanContext = {
    scenario,
    variant: options.variant,
    workload: options.workload,
    params: options.params,
    seed: options.seed,
    strategy: options.strategy,
    points,
  };
  // A failing reference run is one of the runs asked for (`--runs 20` reports 20 runs, not 21). Every shard takes
  // away the same number (the reference plan is the same in each), so the shards still split one list of indexes.
  const planned = options.first && plan.references.length > 0 ? options.runs : Math.max(0, options.runs - plan.references.length);
  const total = plannedRunCount(ctx, planned);
  const shard = options.shard ?? { index: 0, count: 1 };
  const indexes: number[] = [];
  for (let i = shard.index; i < total; i += shard.count) indexes.push(i);
  const skipRuns = (options.first && references.length > 0) || references.some((r) => isScenarioError(r.verdict));
  // A single run stays on this thread: a worker would add its start (0.25 s and 25 MB on Ensemble) and, measured on
  // a 5,000-node rollout, save no CPU time against the main thread (see workerYoungGenerationMb).
  const runs = skipRuns ? [] : options.workers > 1 && indexes.length > 1 ? await runOnWorkers(options, points, indexes) : await runHere(scenario, ctx, options, indexes);
  const summaries = [...references, ...runs].sort((a, b) => a.index - b.index);
  const detectedMs = clockMs();
  const findings = await collectFindings(scenario, options, summaries);
  const covered = new Set(summaries.filter((s) => s.point !== undefined).map((s) => s.point)).size;
  return {
    runs: summaries.length,
    findings,
    points,
    pointsCovered: covered,
    steps: summaries.reduce((sum, s) => sum + s.steps, 0),
    wallMs: clockMs() - startedMs,
    detectMs: detectedMs - startedMs,
    shrinkMs: clockMs() - detectedMs,
    counters: sumCounters(summaries),
  };
}

/** Per property over every run: evaluations and failures summed; `everHeld` if it held in any run. */
function sumCounters(summaries: readonly RunSummary[]): PropertyCounter[] {
  const byName = new Map<string, PropertyCounter>();
  for (const summary of summaries) {
    for (const c of summary.counters) {
      const total = byName.get(c.name);
      if (total === undefined) byName.set(c.name, { ...c });
      else {
        total.evaluations += c.evaluations;
        total.failures += c.failures;
        total.everHeld ||= c.everHeld;
      }
    }
  }
  return [...byName.values()];
}

/** A run's summary: what was planned for run `index` and what came of it. */
function summarize(index: number, planned: PlannedRun, outcome: RunOutcome): RunSummary {
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
 * The lowest run index with a finding so far, shared by every thread of an exploration with `--first`: a thread
 * skips the runs above it (they cannot be the first finding) and still runs every one below it, so the first
 * finding is the lowest-index one whatever the number of workers.
 */
export class FirstFindingBound {
  readonly buffer: SharedArrayBuffer;
  private readonly cell: Int32Array;

  /** A new bound (no finding yet), or the view of a worker on its creator's `buffer`. */
  constructor(shared?: SharedArrayBuffer) {
    this.buffer = shared ?? new SharedArrayBuffer(4);
    this.cell = new Int32Array(this.buffer);
    if (shared === undefined) Atomics.store(this.cell, 0, 0x7fffffff);
  }

  get value(): number {
    return Atomics.load(this.cell, 0);
  }

  /** Lowers the bound to `index` when it is below it. */
  lower(index: number): void {
    for (let current = this.value; index < current; current = this.value) {
      if (Atomics.compareExchange(this.cell, 0, current, index) === current) return;
    }
  }
}

/** Runs the given indexes of a plan (ascending) in this thread. Shared by the main thread and every worker. */
export async function runIndexes(
  ctx: PlanContext,
  indexes: readonly number[],
  first: FirstFindingBound | undefined,
  onRun: (summary: RunSummary) => void,
): Promise<void> {
  for (const index of indexes) {
    if (first !== undefined && index > first.value) return;
    const planned = planRun(ctx, index);
    const outcome = await runScenario(ctx.scenario, planned.spec);
    const summary = summarize(index, planned, outcome);
    onRun(summary);
    if (first !== undefined && isFinding(outcome.verdict)) first.lower(index);
    // The scenario's own error: further runs would only meet it again (or hide it behind findings it causes).
    if (isScenarioError(outcome.verdict)) return;
  }
}

/** With `--first`: the runs up to and including the lowest-index finding, which every thread count agrees on. */
function upToFirstFinding(summaries: RunSummary[]): RunSummary[] {
  const found = summaries.filter((s) => isFinding(s.verdict)).map((s) => s.index);
  if (found.length === 0) return summaries;
  const earliest = Math.min(...found);
  return summaries.filter((s) => s.index <= earliest);
}

async function runHere(scenario: Scenario, ctx: PlanContext, options: ExploreOptions, indexes: number[]): Promise<RunSummary[]> {
  const summaries: RunSummary[] = [];
  let findings = 0;
  await runIndexes(ctx, indexes, options.first ? new FirstFindingBound() : undefined, (summary) => {
    summaries.push(summary);
    if (isFinding(summary.verdict)) findings++;
    options.onProgress?.({ done: summaries.length, total: indexes.length, findings });
  });
  return summaries;
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

async function runOnWorkers(options: ExploreOptions, points: FaultPoint[], indexes: number[]): Promise<RunSummary[]> {
  const count = Math.min(options.workers, indexes.length);
  const summaries: RunSummary[] = [];
  let findings = 0;
  const workers: Worker[] = [];
  // The worker with the scenario bundled once here, so each worker starts from one plain JavaScript file.
  const bundle = await workerBundle(options.scenarioPath);
  const bound = options.first ? new FirstFindingBound() : undefined;
  const jobs = Array.from({ length: count }, (_, w) => {
    const mine = indexes.filter((_, i) => i % count === w);
    const worker = new Worker(bundle === undefined ? workerEntry() : pathToFileURL(bundle), {
      workerData: {
        scenarioPath: options.scenarioPath,
        variant: options.variant,
        workload: options.workload,
        params: options.params,
        seed: options.seed,
        strategy: options.strategy,
        points,
        indexes: mine,
        firstBound: bound?.buffer,
      },
      resourceLimits: { maxYoungGenerationSizeMb: options.youngGenerationMb ?? workerYoungGenerationMb({ runsPerWorker: mine.length }) },
    });
    workers.push(worker);
    return new Promise<void>((resolve, reject) => {
      worker.on("message", (summary: RunSummary) => {
        summaries.push(summary);
        if (isFinding(summary.verdict)) findings++;
        options.onProgress?.({ done: summaries.length, total: indexes.length, findings });
      });
      worker.on("error", reject);
      worker.on("exit", () => resolve());
    });
  });
  await Promise.all(jobs);
  return options.first ? upToFirstFinding(summaries) : summaries;
}

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
