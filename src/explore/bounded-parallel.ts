// The bounded search on several threads (issue 36): this one and `workers - 1` worker threads. The tree is cut into
// tasks (src/explore/bounded-search.ts, `BoundedTask`): each root's own run, then the subtree under each of its children,
// one preemption each. Idle threads take the first task not yet handed out, in search order; a root's run hands
// back its children as new tasks. Results are folded into the search's state in search order, root by root, so the state (figures, the
// first run of each finding and its index) is the one-thread search's whatever finished first. No schedule runs
// twice: a task is handed out once, and each schedule is in exactly one subtree. With `first`, a task stops at its
// first finding and no task after it is handed out; the ones before still run, and the ones after that were
// already running are dropped, so the search stops where the one-thread search does.
import { pathToFileURL } from "node:url";
import { parentPort, Worker } from "node:worker_threads";
import { assert } from "../api/assert.ts";
import { jobSearch, rootAt, runTask, searchState, type BoundedJob, type BoundedTask, type Search, type SearchState, type TaskResult } from "./bounded-search.ts";
import type { SearchTally } from "./tally.ts";
import type { BoundedStats } from "./types.ts";
import { workerEntry, workerYoungGenerationMb } from "./runs.ts";
import { workerBundle } from "./load.ts";
import { moduleBundles as loadedModuleBundles, preflightedModules } from "../module/loader.ts";
import type { Scenario } from "./scenario.ts";

/** A root of a search on worker threads that is not yet folded into its state: its task results so far. */
export interface RootWork {
  root: number;
  /** The root's task: its children (the tasks of its subtrees), whether it stopped at a finding, its figures. */
  rootResult?: TaskResult;
  childResults: Array<TaskResult | undefined>;
}

export interface ParallelOptions {
  job: BoundedJob;
  /** Threads that run tasks, this one included when `ownThreadTasks`. */
  workers: number;
  ownThreadTasks: boolean;
  onTask: ((thread: number, schedules: number) => void) | undefined;
  /** Roots under way, from a checkpoint. */
  frontier: RootWork[];
  save: (saved: { state: SearchState; frontier: RootWork[] }) => void;
  saveEveryRuns: number;
  shouldStop: () => boolean;
  youngGenerationMb: number | undefined;
}

/** A task's place: its root's work, and -1 for the root's own run or the index of the child whose subtree it is. */
interface Place {
  work: RootWork;
  child: number;
}

/**
 * Searches from `root` on (the roots of `options.frontier` under way) with `options.workers` threads, folding into
 * `tally`; returns what stopped it (undefined when done) and the root after the last one folded.
 */
export async function searchOnWorkers(search: Search, tally: SearchTally, root: number, options: ParallelOptions): Promise<{ stoppedBy: BoundedStats["stoppedBy"]; root: number }> {
  let foldedRoot = root;
  const frontier = options.frontier;
  const { index: shard, count: shards } = search.options.shard ?? { index: 0, count: 1 };
  let nextRoot = frontier.length > 0 ? frontier[frontier.length - 1]!.root + 1 : root;
  const handedOut = new Set<string>();
  const name = (place: Place) => `${place.work.root}/${place.child}`;
  /** The earliest task that stopped at a finding (with `first`): nothing after it is handed out or kept. */
  let firstAt: Place | undefined;
  let stopping = false;
  let runsAtSave = tally.stats.runs;
  const before = (a: Place, b: Place) => (a.work.root !== b.work.root ? a.work.root < b.work.root : a.child < b.child);

  const resultAt = (place: Place) => (place.child < 0 ? place.work.rootResult : place.work.childResults[place.child]);
  const nextTask = (): Place | undefined => {
    for (const work of frontier) {
      const places: Place[] = [{ work, child: -1 }];
      const children = work.rootResult?.children ?? [];
      for (let child = 0; child < children.length; child++) places.push({ work, child });
      for (const place of places) {
        if (firstAt !== undefined && !before(place, firstAt)) return undefined;
        if (resultAt(place) === undefined && !handedOut.has(name(place))) return place;
      }
    }
    if (firstAt !== undefined || stopping) return undefined;
    for (let root = rootAt(search, nextRoot); root !== undefined; root = rootAt(search, ++nextRoot)) {
      // A shard that owns neither the root nor (without preemptions) any child skips it, as in one thread.
      if (nextRoot % shards !== shard && search.preemptions === 0) continue;
      const work: RootWork = { root: nextRoot++, childResults: [] };
      frontier.push(work);
      return { work, child: -1 };
    }
    return undefined;
  };

  /** Folds the leading roots whose tasks are all done (up to `firstAt`) into the state. */
  const fold = () => {
    while (frontier.length > 0) {
      const work = frontier[0]!;
      const rootResult = work.rootResult;
      if (rootResult === undefined) return;
      const children = rootResult.children ?? [];
      const last = firstAt !== undefined && firstAt.work === work ? firstAt.child : children.length - 1;
      for (let child = 0; child <= last; child++) if (work.childResults[child] === undefined) return;
      tally.fold(rootResult.state);
      for (let child = 0; child <= last; child++) tally.fold(work.childResults[child]!.state);
      frontier.shift();
      foldedRoot = work.root + 1;
      if (firstAt?.work === work) return;
    }
  };

  const progress = () => {
    const partRuns = (r: TaskResult | undefined) => r?.state.stats.runs ?? 0;
    const done = tally.stats.runs + frontier.reduce((sum, w) => sum + partRuns(w.rootResult) + w.childResults.reduce((s, r) => s + partRuns(r), 0), 0);
    const pending = frontier.reduce((sum, w) => sum + (w.rootResult === undefined ? 1 : (w.rootResult.children ?? []).filter((_, i) => w.childResults[i] === undefined).length), 0);
    search.options.onProgress?.({ done, total: done + pending, findings: tally.found.length });
  };

  /**
   * This thread is one of the search's threads: it runs tasks too, from the start, with the code it has already
   * warmed up (the reference runs), while the worker threads start (the bundle is built, each loads it and warms up
   * its own code). So `--workers N` is this thread and N - 1 worker threads, and no core waits for the others' set-up.
   */
  const runners: Runner[] = [];
  const inFlight = () => runners.reduce((n, runner) => n + runner.queue.length, 0);
  const workers: Worker[] = [];
  try {
    await new Promise<void>((resolve, reject) => {
      let failed = false;
      let failure: unknown;
      const own = options.ownThreadTasks ? ownThread(search, options.job, (reply) => onReply(own!, reply)) : undefined;
      if (own !== undefined) runners.push(own);
      const threads = options.workers - (own === undefined ? 0 : 1);
      /** With no task in this thread, the search waits for its worker threads. */
      let threadsStarting = own === undefined;
      // Rejected only once this thread's task under way has ended: a search that failed leaves no run behind.
      const fail = (error: unknown) => {
        if (!failed) failure = error;
        failed = true;
        if ((own?.queue.length ?? 0) === 0) reject(failure);
      };
      const fill = () => {
        if (failed) return;
        // Two tasks per worker thread, so that it never waits for this thread to hand it the next one; this thread
        // takes one at a time (it hands tasks out between its own steps).
        for (let depth = 1; depth <= tasksPerWorker; depth++) {
          for (const runner of runners) {
            if (runner.queue.length >= Math.min(depth, runner.depth)) continue;
            if (!stopping && options.shouldStop()) stopping = true;
            const place = nextTask();
            if (place === undefined) break;
            handedOut.add(name(place));
            runner.queue.push(place);
            const children = place.work.rootResult?.children;
            runner.send(place.child < 0 ? { root: place.work.root } : { root: place.work.root, child: children![place.child]! });
          }
        }
        if (inFlight() === 0 && !threadsStarting) resolve();
      };
      const onReply = (runner: Runner, reply: TaskReply) => {
        const place = runner.queue.shift();
        assert(place !== undefined, "a worker answers only the tasks it holds");
        if (failed) return runner === own ? reject(failure) : undefined;
        handedOut.delete(name(place));
        if (reply.error !== undefined) return fail(new Error(reply.error));
        const result = reply.result!;
        options.onTask?.(runners.indexOf(runner) + (own === undefined ? 1 : 0), result.state.stats.schedules);
        if (place.child < 0) place.work.rootResult = result;
        else place.work.childResults[place.child] = result;
        if (result.stoppedAtFinding && (firstAt === undefined || before(place, firstAt))) firstAt = place;
        fold();
        // Not once a task stopped at a finding: the roots it folded dropped the tasks after it.
        if (firstAt === undefined && tally.stats.runs - runsAtSave >= options.saveEveryRuns) {
          runsAtSave = tally.stats.runs;
          options.save({ state: searchState(foldedRoot, [], tally), frontier });
        }
        progress();
        fill();
      };
      fill();
      if (threads > 0) {
        workerBundle(options.job.scenarioPath).then((entry) => {
          // Done already (a small search), or failed: no thread to start.
          if (failed || (own !== undefined && inFlight() === 0)) return;
          const execArgv = workerExecArgv();
          for (let w = 0; w < threads; w++) {
            const worker = new Worker(entry === undefined ? workerEntry() : pathToFileURL(entry), {
              workerData: { ...options.job, moduleBundles: loadedModuleBundles(), preflightedModules: preflightedModules() },
              ...(execArgv === undefined ? {} : { execArgv }),
              resourceLimits: { maxYoungGenerationSizeMb: options.youngGenerationMb ?? workerYoungGenerationMb({ runsPerWorker: 2 }) },
            });
            workers.push(worker);
            const runner: Runner = { queue: [], depth: tasksPerWorker, send: (task) => worker.postMessage(task) };
            runners.push(runner);
            worker.on("message", (reply: TaskReply) => onReply(runner, reply));
            worker.on("error", fail);
            worker.on("exit", (code) => (runner.queue.length > 0 ? fail(new Error(`a bounded search worker exited (code ${code}) with a task under way`)) : undefined));
          }
          threadsStarting = false;
          fill();
        }, fail);
      }
    });
  } finally {
    await Promise.all(workers.map((w) => w.terminate()));
  }
  // Stopped at a finding, the checkpoint keeps its last save: the roots folded since dropped the tasks after it.
  if (firstAt !== undefined) return { stoppedBy: "first", root: foldedRoot };
  if (stopping) {
    options.save({ state: searchState(foldedRoot, [], tally), frontier });
    return { stoppedBy: "budget", root: foldedRoot };
  }
  assert(frontier.length === 0, "a finished search has folded every root");
  return { stoppedBy: undefined, root: foldedRoot };
}

const tasksPerWorker = 2;

interface TaskReply {
  result?: TaskResult;
  error?: string;
}

/** A thread that runs tasks: the tasks it holds, in the order it runs them, and how to hand it one more. */
interface Runner {
  queue: Place[];
  /** How many tasks it may hold. */
  depth: number;
  send: (task: BoundedTask) => void;
}

/**
 * This thread as a runner: one task at a time, over its own `Search` of the job (as a worker thread builds one), so
 * the search's state is only ever changed by folding results. Answers asynchronously, as a worker thread does.
 */
function ownThread(whole: Search, job: BoundedJob, reply: (reply: TaskReply) => void): Runner {
  const search = jobSearch(whole.scenario, job);
  return {
    queue: [],
    depth: 1,
    send: (task) => {
      runTask(search, task).then(
        (result) => reply({ result }),
        (error: unknown) => reply({ error: error instanceof Error ? error.message : String(error) }),
      );
    },
  };
}

/**
 * The worker's node options: this process's (inherited: passed explicitly, V8 options such as
 * `--max-semi-space-size` are refused by the Worker constructor, though they hold for the whole process), less
 * `--import` when settle runs from its sources. The source worker registers tsx itself (worker-entry.mjs), and an
 * inherited `--import tsx` resolves from the working directory, which fails when a test or a user runs the sources
 * from a directory without node_modules.
 */
function workerExecArgv(): string[] | undefined {
  if (!import.meta.url.endsWith(".ts")) return undefined;
  const kept: string[] = [];
  for (let i = 0; i < process.execArgv.length; i++) {
    const arg = process.execArgv[i]!;
    if (arg === "--import") i++;
    else if (!arg.startsWith("--import=")) kept.push(arg);
  }
  return kept;
}

/** A worker thread's side: runs the tasks it is sent one after another, in order, and answers each with its result. */
export function serveTasks(scenario: Scenario, job: BoundedJob): void {
  const search = jobSearch(scenario, job);
  const queue: BoundedTask[] = [];
  let running = false;
  const drain = async () => {
    running = true;
    for (let task = queue.shift(); task !== undefined; task = queue.shift()) {
      try {
        parentPort!.postMessage({ result: await runTask(search, task) });
      } catch (error) {
        parentPort!.postMessage({ error: error instanceof Error ? error.message : String(error) });
      }
    }
    running = false;
  };
  parentPort!.on("message", (task: BoundedTask) => {
    queue.push(task);
    if (!running) void drain();
  });
}
