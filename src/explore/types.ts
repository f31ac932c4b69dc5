// What the explorer's engines share with their dispatcher (explore.ts) and with its callers: the options of an
// exploration, a run's summary, a finding, the result, and the bounded search's own options, figures and places in its
// tree that these carry. A file of types alone, below explore.ts, runs.ts and the bounded search's files, so that no
// engine imports the file that dispatches to it.
import type { PropertyCounter } from "../check/properties.ts";
import type { Verdict } from "../check/verdict.ts";
import type { PlannedFault } from "../sim/types.ts";
import type { FaultPoint, StrategyName } from "./plan.ts";
import type { RunOutcome } from "./run.ts";
import type { Params } from "./scenario.ts";

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

export interface BoundedOptions {
  /** K: preemptions (choices of a ready step other than the least) per schedule. Default 2. */
  preemptions?: number;
  /** F: planned faults per run, 0 to 2, placed at the systematic points. Default 1. */
  faultPoints?: number;
  /** Sleep-set reduction. Default true. */
  reduction?: boolean;
  /**
   * The order preemptions are counted in: "origin" (the default; see the top of this file), or "enqueued", the
   * kernel's ready order, in which the reduction can lose schedules within the bound. Not on the command line:
   * it is kept so that a test shows the gap the origin order closes.
   */
  readyOrder?: "origin" | "enqueued";
  /** A JSON file the search saves its state to (every `checkpointEveryRuns` runs and at the end) and resumes from. */
  checkpoint?: string;
  /** Default 200. */
  checkpointEveryRuns?: number;
  /** Asked before each run: true stops the search there, incomplete (a wall-time budget for benchmarks). */
  shouldStop?: () => boolean;
  /**
   * On worker threads: whether this thread runs tasks too (default true: `--workers N` is this thread and N - 1
   * worker threads; false: N worker threads). Not on the command line: tests turn it off so that a search smaller
   * than a worker's start-up still runs on the worker threads.
   */
  ownThreadTasks?: boolean;
  /** On worker threads: called as each task ends, with the thread that ran it (0: this one, 1..: the workers) and its schedules. For benchmarks. */
  onTask?: (thread: number, schedules: number) => void;
  /**
   * The constant latency (whole ms) every request takes in every run of the search. Default: the scenario's when
   * it pins one (`timing.requestLatencyMs: [L, L]`), else the middle of its range, rounded down (10 ms for the
   * default 1-20 ms), and at least 1 ms when the range allows it, so retry loops still move the clock.
   */
  latencyMs?: number;
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
  /** Schedules per unit of the tree, in search order (see `Unit`). */
  units: Unit[];
  /** Per finding key: its first schedule's place in the tree and run index, and how many schedules had it. */
  found: Array<{ key: string; position: SearchPosition; occurrences: number; run: number }>;
}

export interface BoundedStats {
  /** Every schedule and placement within the bounds was run or pruned (not stopped by `--runs` or `--first`). */
  complete: boolean;
  preemptions: number;
  faultPoints: number;
  reduction: boolean;
  /** Runs that reached a verdict. */
  schedules: number;
  /**
   * Schedules cut by the reduction, each an equivalent of one that ran (each as one; a cut schedule also takes the
   * preemptions it would have added).
   */
  pruned: number;
  /** Fault placements (the fault-free one included) searched, of `placementsTotal`. */
  placements: number;
  placementsTotal: number;
  /** Simulations started, runs cut short by the reduction included. */
  runs: number;
  /** Why an incomplete search stopped. */
  stoppedBy?: "runs" | "first" | "budget";
  /** The constant request latency (ms) of every run; replay files of the search's findings record it. */
  latencyMs: number;
}

/**
 * Where a schedule is in the search: its root (workload x placement ordinal) and its preemptions. Search order is
 * root order, then preorder of the tree: `comparePositions`. Shards and worker threads compare their findings by it.
 */
export interface SearchPosition {
  root: number;
  choices: Array<[number, number]>;
}

/**
 * The schedules of one unit of the search tree, in search order: a root's own run (`[root, -1, -1, n]`) or the
 * subtree of one of its children (`[root, step, index, n]`). With each shard's units, `settle merge` turns a shard's
 * run indexes into the unsharded search's.
 */
export type Unit = [root: number, step: number, index: number, schedules: number];
