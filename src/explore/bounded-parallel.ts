// The bounded search on worker threads (issue 36). The tree is cut into tasks (src/explore/bounded.ts,
// `BoundedTask`): each root's own run, then the subtree under each of its children, one preemption each. Idle
// workers take the first task not yet handed out, in search order; a root's run hands back its children as new
// tasks. Results are folded into the search's state in search order, root by root, so the state (figures, the
// first run of each finding and its index) is the one-thread search's whatever finished first. No schedule runs
// twice: a task is handed out once, and each schedule is in exactly one subtree. With `first`, a task stops at its
// first finding and no task after it is handed out; the ones before still run, and the ones after that were
// already running are dropped, so the search stops where the one-thread search does.
import { pathToFileURL } from "node:url";
import { parentPort, Worker } from "node:worker_threads";
import { assert } from "../api/assert.ts";
import { foldState, jobSearch, rootAt, runTask, type BoundedJob, type BoundedStats, type BoundedTask, type RootWork, type Search, type TaskResult } from "./bounded.ts";
import { workerEntry, workerYoungGenerationMb } from "./runs.ts";
import { workerBundle } from "./load.ts";
import { moduleBundles as loadedModuleBundles } from "../module/loader.ts";
import type { Scenario } from "./scenario.ts";

export interface ParallelOptions {
  job: BoundedJob;
  workers: number;
  /** Roots under way, from a checkpoint. */
  frontier: RootWork[];
  save: (frontier: RootWork[]) => void;
  saveEveryRuns: number;
  shouldStop: () => boolean;
  youngGenerationMb: number | undefined;
}

/** A task's place: its root's work, and -1 for the root's own run or the index of the child whose subtree it is. */
interface Place {
  work: RootWork;
  child: number;
}

/** Searches from `search.state.root` on with `options.workers` threads; returns what stopped it, or undefined when done. */
export async function searchOnWorkers(search: Search, options: ParallelOptions): Promise<BoundedStats["stoppedBy"]> {
  const { state } = search;
  const frontier = options.frontier;
  const { index: shard, count: shards } = search.options.shard ?? { index: 0, count: 1 };
  let nextRoot = frontier.length > 0 ? frontier[frontier.length - 1]!.root + 1 : state.root;
  const handedOut = new Set<string>();
  const name = (place: Place) => `${place.work.root}/${place.child}`;
  /** The earliest task that stopped at a finding (with `first`): nothing after it is handed out or kept. */
  let firstAt: Place | undefined;
  let stopping = false;
  let runsAtSave = state.stats.runs;
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
      foldState(state, rootResult.state);
      for (let child = 0; child <= last; child++) foldState(state, work.childResults[child]!.state);
      frontier.shift();
      state.root = work.root + 1;
      if (firstAt?.work === work) return;
    }
  };

  const progress = () => {
    const partRuns = (r: TaskResult | undefined) => r?.state.stats.runs ?? 0;
    const done = state.stats.runs + frontier.reduce((sum, w) => sum + partRuns(w.rootResult) + w.childResults.reduce((s, r) => s + partRuns(r), 0), 0);
    const pending = frontier.reduce((sum, w) => sum + (w.rootResult === undefined ? 1 : (w.rootResult.children ?? []).filter((_, i) => w.childResults[i] === undefined).length), 0);
    search.options.onProgress?.({ done, total: done + pending, findings: state.found.length });
  };

  const entry = await workerBundle(options.job.scenarioPath);
  const workers: Worker[] = [];
  /** Each worker's tasks, in the order it runs them: the one under way and the next, queued in the worker. */
  const under = new Map<Worker, Place[]>();
  const inFlight = () => [...under.values()].reduce((n, places) => n + places.length, 0);
  try {
    await new Promise<void>((resolve, reject) => {
      const fill = () => {
        // Two tasks per worker, so that a worker never waits for this thread to hand it the next one.
        for (let depth = 1; depth <= tasksPerWorker; depth++) {
          for (const worker of workers) {
            const queue = under.get(worker)!;
            if (queue.length >= depth) continue;
            if (!stopping && options.shouldStop()) stopping = true;
            const place = nextTask();
            if (place === undefined) break;
            handedOut.add(name(place));
            queue.push(place);
            const children = place.work.rootResult?.children;
            worker.postMessage(place.child < 0 ? { root: place.work.root } : { root: place.work.root, child: children![place.child]! });
          }
        }
        if (inFlight() === 0) resolve();
      };
      const onReply = (worker: Worker, reply: { result?: TaskResult; error?: string }) => {
        const place = under.get(worker)!.shift();
        assert(place !== undefined, "a worker answers only the tasks it holds");
        handedOut.delete(name(place));
        if (reply.error !== undefined) return reject(new Error(reply.error));
        const result = reply.result!;
        if (place.child < 0) place.work.rootResult = result;
        else place.work.childResults[place.child] = result;
        if (result.stoppedAtFinding && (firstAt === undefined || before(place, firstAt))) firstAt = place;
        fold();
        // Not once a task stopped at a finding: the roots it folded dropped the tasks after it.
        if (firstAt === undefined && state.stats.runs - runsAtSave >= options.saveEveryRuns) {
          runsAtSave = state.stats.runs;
          options.save(frontier);
        }
        progress();
        fill();
      };
      for (let w = 0; w < options.workers; w++) {
        const worker = new Worker(entry === undefined ? workerEntry() : pathToFileURL(entry), {
          workerData: { ...options.job, moduleBundles: loadedModuleBundles() },
          execArgv: workerExecArgv(),
          resourceLimits: { maxYoungGenerationSizeMb: options.youngGenerationMb ?? workerYoungGenerationMb({ runsPerWorker: 2 }) },
        });
        workers.push(worker);
        under.set(worker, []);
        worker.on("message", (reply: { result?: TaskResult; error?: string }) => onReply(worker, reply));
        worker.on("error", reject);
        worker.on("exit", (code) => ((under.get(worker)?.length ?? 0) > 0 ? reject(new Error(`a bounded search worker exited (code ${code}) with a task under way`)) : undefined));
      }
      fill();
    });
  } finally {
    await Promise.all(workers.map((w) => w.terminate()));
  }
  // Stopped at a finding, the checkpoint keeps its last save: the roots folded since dropped the tasks after it.
  if (firstAt !== undefined) return "first";
  if (stopping) {
    options.save(frontier);
    return "budget";
  }
  assert(frontier.length === 0, "a finished search has folded every root");
  return undefined;
}

const tasksPerWorker = 2;

/**
 * The worker's node options: this process's, less `--import` when settle runs from its sources. The source worker
 * registers tsx itself (worker-entry.mjs), and an inherited `--import tsx` resolves from the working directory,
 * which fails when a test or a user runs the sources from a directory without node_modules.
 */
function workerExecArgv(): string[] {
  if (!import.meta.url.endsWith(".ts")) return process.execArgv;
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
