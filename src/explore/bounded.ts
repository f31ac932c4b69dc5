// The bounded search's driver (issue 23; the search itself, its tree and its reduction, is bounded-search.ts): it
// sets the bounds and the constant latency, plans the fault points, loads and saves the checkpoint, runs the search
// in this thread depth-first or in tasks on worker threads (bounded-parallel.ts), and reports what it found.
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { assert } from "../api/assert.ts";
import type { BoundedStats, ExploreOptions, ExploreResult, Finding } from "./types.ts";
import { searchOnWorkers } from "./bounded-parallel.ts";
import { boundedLatencyMs, placementCount, searchRoots, searchState, withLatency, type BoundedJob, type Cursor, type Search, type SearchState } from "./bounded-search.ts";
import { SearchTally } from "./tally.ts";
import type { RootWork } from "./task-scheduler.ts";
import { collectFindings, faultPoints } from "./runs.ts";
import type { Scenario } from "./scenario.ts";

export type { BoundedOptions, BoundedStats, SearchPosition, Unit } from "./types.ts";
export { boundedLatencyMs, comparePositions, placementAt, placementCount } from "./bounded-search.ts";

// Version 3: choice indexes count in origin order. Version 4: findings keep their place in the search tree.
const checkpointVersion = 4;

function checkpointKey(scenario: Scenario, options: ExploreOptions, stats: BoundedStats): string {
  const { variant, workload, seed, params, shard } = options;
  const order = options.bounded?.readyOrder ?? "origin";
  return JSON.stringify({ scenario: scenario.name, variant, workload: workload ?? null, seed, params, shard: shard ?? null, preemptions: stats.preemptions, faultPoints: stats.faultPoints, reduction: stats.reduction, latencyMs: stats.latencyMs, order });
}

/** How a search runs: in this thread depth-first, or in tasks on worker threads (src/explore/bounded-parallel.ts). */
export type Engine = "depth-first" | "tasks";

/** All a checkpoint holds besides its key: the folded state and, on worker threads, the roots under way. */
export interface Saved {
  state: SearchState;
  frontier?: RootWork[];
}

const engineWords: Record<Engine, string> = { "depth-first": "in one thread (--workers 1, or --runs)", tasks: "on worker threads (--workers 2 or more, no --runs)" };

function loadCheckpoint(path: string, key: string, engine: Engine): Saved | undefined {
  if (!existsSync(path)) return undefined;
  const saved = JSON.parse(readFileSync(path, "utf8")) as { version: number; key: string; engine?: Engine } & Saved;
  if (saved.version !== checkpointVersion || saved.key !== key) {
    throw new Error(`checkpoint ${path} belongs to another search (${saved.key}); remove it or pass another file`);
  }
  if (saved.engine !== engine) throw new Error(`checkpoint ${path} was saved by a search ${engineWords[saved.engine ?? "depth-first"]}; resume it the same way, or remove it`);
  return saved.frontier === undefined ? { state: saved.state } : { state: saved.state, frontier: saved.frontier };
}

function saveCheckpoint(path: string, key: string, engine: Engine, saved: Saved): void {
  // Written beside and renamed over: a search killed mid-write leaves the previous checkpoint whole. Its directory
  // is made first (settle job's shards save theirs on a claim where no shard has written yet).
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(`${path}.tmp`, JSON.stringify({ version: checkpointVersion, key, engine, ...saved }));
  renameSync(`${path}.tmp`, path);
}

/** The bounded search of one scenario variant; `options.runs` bounds it only when finite. */
export async function exploreBounded(given: Scenario, options: ExploreOptions, clockMs: () => number): Promise<ExploreResult> {
  const startedMs = clockMs();
  const bounded = options.bounded ?? {};
  const { search, job } = await planSearch(given, options);
  const key = checkpointKey(search.scenario, options, search.bounds);
  // --runs counts runs in search order, which only one thread keeps.
  const engine: Engine = options.workers > 1 && !Number.isFinite(options.runs) ? "tasks" : "depth-first";
  const path = bounded.checkpoint;
  const saved = path === undefined ? undefined : loadCheckpoint(path, key, engine);
  const tally = saved === undefined ? SearchTally.empty(search.bounds) : new SearchTally(saved.state);
  const save = (state: Saved) => (path === undefined ? undefined : saveCheckpoint(path, key, engine, state));
  if (!tally.stats.complete) {
    const limits = { shouldStop: bounded.shouldStop ?? (() => false), saveEveryRuns: bounded.checkpointEveryRuns ?? 200, save };
    const end = engine === "tasks" ? await onWorkers(search, tally, saved, job, limits) : await inThisThread(search, tally, saved, limits);
    tally.finish(end.stoppedBy);
    if (engine === "depth-first" || end.stoppedBy === undefined) save({ state: end.state() });
  }
  const detectedMs = clockMs();
  const findings = await collectFindings(search.scenario, options, tally.found.map((f) => f.run));
  for (const finding of findings) finding.occurrences = tally.found.find((f) => f.key === finding.key)?.occurrences ?? finding.occurrences;
  return resultOf(search, tally, findings, { wallMs: clockMs() - startedMs, detectMs: detectedMs - startedMs, shrinkMs: clockMs() - detectedMs });
}

/**
 * The search of `given` as every thread of it knows it, and the job that worker threads build theirs from: the
 * bounds, the constant latency, the fault points planned from the reference runs, and the workloads' placements.
 */
async function planSearch(given: Scenario, options: ExploreOptions): Promise<{ search: Search; job: BoundedJob }> {
  const bounded = options.bounded ?? {};
  // Every run of the search (reference runs, schedules, shrinking) takes one constant latency, so that steps
  // issued on one instant meet again on one instant and their order is the search's choice.
  const latencyMs = boundedLatencyMs(given.timing, bounded.latencyMs);
  const scenario = withLatency(given, latencyMs);
  const stats: BoundedStats = {
    complete: false,
    preemptions: bounded.preemptions ?? 2,
    faultPoints: bounded.faultPoints ?? 1,
    reduction: bounded.reduction ?? true,
    schedules: 0,
    pruned: 0,
    placements: 0,
    placementsTotal: 0,
    runs: 0,
    latencyMs,
  };
  assert(Number.isInteger(stats.preemptions) && stats.preemptions >= 0, "bounded preemptions is a non-negative integer");
  assert(Number.isInteger(stats.faultPoints) && stats.faultPoints >= 0 && stats.faultPoints <= 2, "bounded fault points is 0, 1 or 2");
  const points = stats.faultPoints === 0 ? [] : await faultPoints(scenario, options);
  const names = options.workload !== undefined ? [options.workload] : Object.keys(scenario.workloads);
  const workloads = names.map((workload) => ({ workload, pointIndexes: points.flatMap((p, i) => (p.workload === workload ? [i] : [])) }));
  stats.placementsTotal = workloads.reduce((sum, w) => sum + placementCount(w.pointIndexes.length, stats.faultPoints), 0);
  const byOrigin = (bounded.readyOrder ?? "origin") === "origin";
  const search: Search = { scenario, options, bounds: stats, preemptions: stats.preemptions, reduce: stats.reduction, byOrigin, workloads, points };
  const job: BoundedJob = { kind: "bounded", scenarioPath: options.scenarioPath, variant: options.variant, workload: options.workload, params: options.params, seed: options.seed, shard: options.shard, first: options.first, stats, byOrigin, workloads, points, latencyMs };
  return { search, job };
}

/** What stops a search besides its end and `--runs`, and how it saves its checkpoint. */
interface Limits {
  shouldStop: () => boolean;
  saveEveryRuns: number;
  save: (saved: Saved) => void;
}

/** How a search's engine ended: what stopped it (undefined: done), and its state as of then. */
interface EngineEnd {
  stoppedBy: BoundedStats["stoppedBy"];
  state: () => SearchState;
}

/** The search in this thread, depth-first from where the checkpoint left it. */
async function inThisThread(search: Search, tally: SearchTally, saved: Saved | undefined, limits: Limits): Promise<EngineEnd> {
  const { options } = search;
  const cursor: Cursor = { root: saved?.state.root ?? 0, stack: saved?.state.stack ?? [] };
  const state = () => searchState(cursor.root, cursor.stack, tally);
  const runsMax = Number.isFinite(options.runs) ? options.runs : Number.POSITIVE_INFINITY;
  const stoppedBy = await searchRoots(search, tally, cursor, { runsMax, shouldStop: limits.shouldStop, saveEveryRuns: limits.saveEveryRuns, save: () => limits.save({ state: state() }) });
  return { stoppedBy, state };
}

/** The search on worker threads, from where the checkpoint left it (the roots under way included). */
async function onWorkers(search: Search, tally: SearchTally, saved: Saved | undefined, job: BoundedJob, limits: Limits): Promise<EngineEnd> {
  const { options } = search;
  const { ownThreadTasks = true, onTask } = options.bounded ?? {};
  const frontier = saved?.frontier ?? [];
  const parallel = { job, workers: options.workers, ownThreadTasks, onTask, frontier, save: limits.save, saveEveryRuns: limits.saveEveryRuns, shouldStop: limits.shouldStop, youngGenerationMb: options.youngGenerationMb };
  const { stoppedBy, root } = await searchOnWorkers(search, tally, saved?.state.root ?? 0, parallel);
  return { stoppedBy, state: () => searchState(root, [], tally) };
}

/** The result: the tally's figures and search record, the findings and the times. */
function resultOf(search: Search, tally: SearchTally, findings: Finding[], times: Pick<ExploreResult, "wallMs" | "detectMs" | "shrinkMs">): ExploreResult {
  const { options } = search;
  return {
    runs: tally.stats.schedules,
    findings,
    points: search.points,
    pointsCovered: tally.pointsCovered,
    steps: tally.steps,
    ...times,
    counters: [...tally.counters],
    bounded: { ...tally.stats },
    search: {
      workload: options.workload ?? null,
      seed: options.seed,
      shard: options.shard ?? { index: 0, count: 1 },
      steps: tally.steps,
      units: [...tally.units],
      found: tally.found.map(({ key, position, occurrences, run }) => ({ key, position, occurrences, run: run.index })),
    },
  };
}

/** `K=2, F=0 (latency 5 ms)`, with `, no reduction` when it was off. */
export function boundsText(stats: Pick<BoundedStats, "preemptions" | "faultPoints" | "reduction" | "latencyMs">): string {
  return `K=${stats.preemptions}, F=${stats.faultPoints}${stats.reduction ? "" : ", no reduction"} (latency ${stats.latencyMs} ms)`;
}

/**
 * `<name> --variant <v>: complete for K=2, F=0 (latency 5 ms): 116 schedules over 1 of 1 fault
 * placements (55 pruned), no finding, 0.7 s`. "Complete" alone means every schedule within the bounds ran.
 */
export function boundedLine(name: string, variant: string, stats: BoundedStats, findings: number, wallMs: number): string {
  const n = (x: number) => x.toLocaleString("en-US");
  const bounds = boundsText(stats);
  const stopper = { first: "--first", runs: "--runs", budget: "its time budget" }[stats.stoppedBy ?? "runs"];
  const how = stats.complete ? `complete for ${bounds}` : `incomplete for ${bounds} (stopped by ${stopper})`;
  const verdict = findings === 0 ? "no finding" : `${findings} finding(s)`;
  const placements = `${n(stats.placements)} of ${n(stats.placementsTotal)} fault placements`;
  return `${name} --variant ${variant}: ${how}: ${n(stats.schedules)} schedules over ${placements} (${n(stats.pruned)} pruned), ${verdict}, ${(wallMs / 1000).toFixed(1)} s`;
}
