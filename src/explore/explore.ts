// Exploration: many seeded runs of one scenario variant (on worker threads when asked), findings
// deduplicated by verdict and property, each shrunk to a minimal run.
import { pathToFileURL } from "node:url";
import { Worker } from "node:worker_threads";
import { isFinding, isScenarioError } from "../check/verdict.ts";
import type { PropertyCounter } from "../check/properties.ts";
import { planRun, plannedRunCount, type FaultPoint, type PlanContext } from "./plan.ts";
import { runScenario } from "./run.ts";
import type { Scenario } from "./scenario.ts";
import { collectFindings, referencePlan, summarize, workerEntry, workerYoungGenerationMb } from "./runs.ts";
import { workerBundle } from "./load.ts";
import { moduleBundles as loadedModuleBundles, preflightedModules } from "../module/loader.ts";
import { goPrograms } from "../go/build.ts";
import { exploreBounded } from "./bounded.ts";
import type { ExploreOptions, ExploreResult, RunSummary } from "./types.ts";

export type { ExploreOptions, ExploreResult, Finding, RunSummary, SearchPart } from "./types.ts";

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

async function runOnWorkers(options: ExploreOptions, points: FaultPoint[], indexes: number[]): Promise<RunSummary[]> {
  const count = Math.min(options.workers, indexes.length);
  const summaries: RunSummary[] = [];
  let findings = 0;
  const workers: Worker[] = [];
  // The worker with the scenario bundled once here, so each worker starts from one plain JavaScript file.
  const bundle = await workerBundle(options.scenarioPath);
  // The scenario's modules as this thread bundled them (loading the scenario did): no worker bundles them again,
  // nor evaluates their variants again (preflightedModules).
  const moduleBundles = loadedModuleBundles();
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
        moduleBundles,
        preflightedModules: preflightedModules(),
        goPrograms: goPrograms(),
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
