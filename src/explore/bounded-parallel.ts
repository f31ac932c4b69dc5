// The bounded search on several threads (issue 36): this one and `workers - 1` worker threads. The tasks, which one
// runs next and the folding of their results into the search's tally in search order are the scheduler's
// (task-scheduler.ts); here are the threads that run them. Idle threads take the scheduler's next task; a worker
// thread holds two, so that it never waits for this thread to hand it the next one, and this thread runs one at a
// time between handing tasks out. No schedule runs twice: a task is handed out once, and each schedule is in exactly
// one subtree. With `first`, a task stops at its first finding and no task after it is handed out; the ones before
// still run, and the ones after that were already running are dropped, so the search stops where the one-thread
// search does.
import { pathToFileURL } from "node:url";
import { parentPort, Worker } from "node:worker_threads";
import { assert } from "../api/assert.ts";
import { jobSearch, runTask, type BoundedJob, type BoundedTask, type Search, type SearchState, type TaskResult } from "./bounded-search.ts";
import type { SearchTally } from "./tally.ts";
import { TaskScheduler, type Place, type RootWork } from "./task-scheduler.ts";
import type { BoundedStats } from "./types.ts";
import { workerEntry, workerYoungGenerationMb } from "./runs.ts";
import { workerBundle } from "./load.ts";
import { moduleBundles as loadedModuleBundles, preflightedModules } from "../module/loader.ts";
import { goPrograms } from "../go/build.ts";
import type { Scenario } from "./scenario.ts";

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

/**
 * Searches from `root` on (the roots of `options.frontier` under way) with `options.workers` threads, folding into
 * `tally`; returns what stopped it (undefined when done) and the root after the last one folded.
 */
export async function searchOnWorkers(search: Search, tally: SearchTally, root: number, options: ParallelOptions): Promise<{ stoppedBy: BoundedStats["stoppedBy"]; root: number }> {
  const scheduler = new TaskScheduler(search, tally, root, options.frontier);
  await new TaskThreads(search, scheduler, options).run();
  const stoppedBy = scheduler.stoppedBy();
  // Stopped at a finding, the checkpoint keeps its last save: the roots folded since dropped the tasks after it.
  if (stoppedBy === "budget") options.save(scheduler.saved());
  return { stoppedBy, root: scheduler.root };
}

/**
 * The threads of a search: this one (unless `ownThreadTasks` is off) and the worker threads, each handed the
 * scheduler's next tasks as it has room for them. `run` ends when no task is out and none is left to hand out, or
 * fails with the first error, once this thread's task under way has ended (a search that failed leaves no run
 * behind).
 *
 * This thread runs tasks from the start, with the code it has already warmed up (the reference runs), while the
 * worker threads start (the bundle is built, each loads it and warms up its own code). So `--workers N` is this
 * thread and N - 1 worker threads, and no core waits for the others' set-up.
 */
class TaskThreads {
  readonly #search: Search;
  readonly #scheduler: TaskScheduler;
  readonly #options: ParallelOptions;
  readonly #runners: Runner[] = [];
  readonly #workers: Worker[] = [];
  readonly #own: Runner | undefined;
  /** With no task in this thread, the search waits for its worker threads. */
  #threadsStarting: boolean;
  #failure: { error: unknown } | undefined;
  #resolve: () => void = () => {};
  #reject: (error: unknown) => void = () => {};

  constructor(search: Search, scheduler: TaskScheduler, options: ParallelOptions) {
    this.#search = search;
    this.#scheduler = scheduler;
    this.#options = options;
    const own = options.ownThreadTasks ? ownThread(search, options.job, (reply) => this.#onReply(own!, reply)) : undefined;
    this.#own = own;
    if (own !== undefined) this.#runners.push(own);
    this.#threadsStarting = own === undefined;
  }

  /** Runs the search's tasks to the end; the worker threads are ended whatever happens. */
  async run(): Promise<void> {
    try {
      await new Promise<void>((resolve, reject) => {
        this.#resolve = resolve;
        this.#reject = reject;
        this.#fill();
        const threads = this.#options.workers - (this.#own === undefined ? 0 : 1);
        if (threads > 0) workerBundle(this.#options.job.scenarioPath).then((entry) => this.#startWorkers(entry, threads), (error: unknown) => this.#fail(error));
      });
    } finally {
      await Promise.all(this.#workers.map((w) => w.terminate()));
    }
  }

  #inFlight(): number {
    return this.#runners.reduce((n, runner) => n + runner.queue.length, 0);
  }

  /** Rejects only once this thread's task under way has ended. */
  #fail(error: unknown): void {
    this.#failure ??= { error };
    if ((this.#own?.queue.length ?? 0) === 0) this.#reject(this.#failure.error);
  }

  /** Hands tasks out to every runner with room, then ends the run when nothing is out and the threads have started. */
  #fill(): void {
    if (this.#failure !== undefined) return;
    // Two tasks per worker thread, one at a time for this thread (it hands tasks out between its own steps).
    for (let depth = 1; depth <= tasksPerWorker; depth++) {
      for (const runner of this.#runners) {
        if (runner.queue.length >= Math.min(depth, runner.depth)) continue;
        if (!this.#scheduler.stopping && this.#options.shouldStop()) this.#scheduler.stop();
        const place = this.#scheduler.handOut();
        if (place === undefined) break;
        runner.queue.push(place);
        runner.send(this.#scheduler.task(place));
      }
    }
    if (this.#inFlight() === 0 && !this.#threadsStarting) this.#resolve();
  }

  #onReply(runner: Runner, reply: TaskReply): void {
    const place = runner.queue.shift();
    assert(place !== undefined, "a worker answers only the tasks it holds");
    if (this.#failure !== undefined) return runner === this.#own ? this.#reject(this.#failure.error) : undefined;
    if (reply.error !== undefined) {
      this.#scheduler.failed(place);
      return this.#fail(new Error(reply.error));
    }
    const result = reply.result!;
    this.#options.onTask?.(this.#runners.indexOf(runner) + (this.#own === undefined ? 1 : 0), result.state.stats.schedules);
    this.#scheduler.done(place, result);
    if (this.#scheduler.dueForSave(this.#options.saveEveryRuns)) this.#options.save(this.#scheduler.saved());
    if (this.#search.options.onProgress !== undefined) this.#search.options.onProgress(this.#scheduler.progress());
    this.#fill();
  }

  #startWorkers(entry: string | undefined, threads: number): void {
    // Done already (a small search), or failed: no thread to start.
    if (this.#failure !== undefined || (this.#own !== undefined && this.#inFlight() === 0)) return;
    const execArgv = workerExecArgv();
    const { job, youngGenerationMb } = this.#options;
    for (let w = 0; w < threads; w++) {
      const worker = new Worker(entry === undefined ? workerEntry() : pathToFileURL(entry), {
        workerData: { ...job, moduleBundles: loadedModuleBundles(), preflightedModules: preflightedModules(), goPrograms: goPrograms() },
        ...(execArgv === undefined ? {} : { execArgv }),
        resourceLimits: { maxYoungGenerationSizeMb: youngGenerationMb ?? workerYoungGenerationMb({ runsPerWorker: 2 }) },
      });
      this.#workers.push(worker);
      const runner: Runner = { queue: [], depth: tasksPerWorker, send: (task) => worker.postMessage(task) };
      this.#runners.push(runner);
      worker.on("message", (reply: TaskReply) => this.#onReply(runner, reply));
      worker.on("error", (error: unknown) => this.#fail(error));
      worker.on("exit", (code) => (runner.queue.length > 0 ? this.#fail(new Error(`a bounded search worker exited (code ${code}) with a task under way`)) : undefined));
    }
    this.#threadsStarting = false;
    this.#fill();
  }
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
