// The task scheduler of the bounded search on several threads (bounded-parallel.ts): which task runs next, what came
// of each, and the folding of finished roots into the search's tally. It knows nothing of threads: the threads ask it
// for tasks and hand it their results, in whatever order they finish.
//
// The tree is cut into tasks (bounded-search.ts, `BoundedTask`): each root's own run, then the subtree under each of
// its children. A task is handed out once, the first not yet handed out in search order; a root's run hands back its
// children as new tasks. A root is folded into the tally when its own task and every child's are done, roots in
// order and each root's tasks in order, so the tally (figures, the first run of each finding and its index) is the
// one-thread search's whatever finished first. With `first`, a task that stops at a finding is the last one kept:
// no task after it is handed out, and results after it are dropped when its root folds.
//
// Invariants, asserted by name:
// - `scheduler-hands-out-once`: a task is handed out only while it has no result and is not out already.
// - `scheduler-result-once`: each task's result is kept once, for a task that was handed out.
// - `scheduler-folds-in-order`: the frontier (the roots under way) is in root order, and only its first root folds.
import { assert } from "../api/assert.ts";
import { rootAt, searchState, type BoundedTask, type Search, type SearchState, type TaskResult } from "./bounded-search.ts";
import type { SearchTally } from "./tally.ts";
import type { BoundedStats } from "./types.ts";

/** A root of a search on worker threads that is not yet folded into its tally: its task results so far. */
export interface RootWork {
  root: number;
  /** The root's task: its children (the tasks of its subtrees), whether it stopped at a finding, its figures. */
  rootResult?: TaskResult;
  childResults: Array<TaskResult | undefined>;
}

/** A task's place: its root's work, and -1 for the root's own run or the index of the child whose subtree it is. */
export interface Place {
  work: RootWork;
  child: number;
}

/** What the search's progress line shows: runs done (folded or not), runs known to be left at least, findings. */
export interface Progress {
  done: number;
  total: number;
  findings: number;
}

export class TaskScheduler {
  readonly #search: Search;
  readonly #tally: SearchTally;
  /** The roots under way, in root order: a checkpoint saves them. */
  readonly #frontier: RootWork[];
  /** The root after the last one folded: where a checkpoint's state is. */
  #root: number;
  /** The next root not yet in the frontier. */
  #nextRoot: number;
  /** The places (`root/child`) of the tasks out on a thread. */
  readonly #handedOut = new Set<string>();
  /** The earliest task that stopped at a finding (with `first`): nothing after it is handed out or kept. */
  #firstAt: Place | undefined;
  #stopping = false;
  /** The tally's runs at the last checkpoint. */
  #runsAtSave: number;

  /** Searches from `root` on, with the roots of `frontier` under way (from a checkpoint; this scheduler's from now on). */
  constructor(search: Search, tally: SearchTally, root: number, frontier: RootWork[]) {
    // A checkpoint saved while a child's task was out after one that had finished holds a gap there, which JSON
    // writes as null: the task is to run again, as one without a result.
    for (const work of frontier) work.childResults = Array.from(work.childResults, (r) => r ?? undefined);
    for (let i = 1; i < frontier.length; i++) assert(frontier[i - 1]!.root < frontier[i]!.root, "scheduler-folds-in-order: the frontier is in root order");
    assert(frontier.length === 0 || frontier[0]!.root >= root, "scheduler-folds-in-order: the frontier starts at or after the folded roots");
    this.#search = search;
    this.#tally = tally;
    this.#frontier = frontier;
    this.#root = root;
    this.#nextRoot = frontier.length > 0 ? frontier[frontier.length - 1]!.root + 1 : root;
    this.#runsAtSave = tally.stats.runs;
  }

  /** Hands no new root out from now on: the roots under way still finish. */
  stop(): void {
    this.#stopping = true;
  }

  get stopping(): boolean {
    return this.#stopping;
  }

  /** The next task in search order that is neither done nor out, now out; undefined when there is none to hand out. */
  handOut(): Place | undefined {
    const place = this.#nextTask();
    if (place === undefined) return undefined;
    assert(this.#resultAt(place) === undefined, "scheduler-hands-out-once: a task without a result");
    assert(!this.#handedOut.has(placeName(place)), "scheduler-hands-out-once: a task not out already");
    this.#handedOut.add(placeName(place));
    return place;
  }

  /** What a thread is sent to run the task at `place`. */
  task(place: Place): BoundedTask {
    if (place.child < 0) return { root: place.work.root };
    return { root: place.work.root, child: place.work.rootResult!.children![place.child]! };
  }

  /** The task at `place` came back without a result (its thread failed): it is no longer out. */
  failed(place: Place): void {
    assert(this.#handedOut.delete(placeName(place)), "scheduler-result-once: a failed task was out");
  }

  /** The result of the task at `place`: kept, then every leading root whose tasks are all done is folded. */
  done(place: Place, result: TaskResult): void {
    assert(this.#handedOut.delete(placeName(place)), "scheduler-result-once: a task's result comes from a thread it was handed to");
    assert(this.#resultAt(place) === undefined, "scheduler-result-once");
    if (place.child < 0) place.work.rootResult = result;
    else place.work.childResults[place.child] = result;
    if (result.stoppedAtFinding && (this.#firstAt === undefined || before(place, this.#firstAt))) this.#firstAt = place;
    this.#fold();
  }

  /** True, once per `everyRuns` runs folded, when a checkpoint is due (never after a task stopped at a finding). */
  dueForSave(everyRuns: number): boolean {
    // Not once a task stopped at a finding: the roots it folded dropped the tasks after it.
    if (this.#firstAt !== undefined || this.#tally.stats.runs - this.#runsAtSave < everyRuns) return false;
    this.#runsAtSave = this.#tally.stats.runs;
    return true;
  }

  /** The folded state and the roots under way: what a checkpoint saves. */
  saved(): { state: SearchState; frontier: RootWork[] } {
    return { state: searchState(this.#root, [], this.#tally), frontier: this.#frontier };
  }

  /** The root after the last one folded. */
  get root(): number {
    return this.#root;
  }

  progress(): Progress {
    const partRuns = (r: TaskResult | undefined) => r?.state.stats.runs ?? 0;
    const folded = this.#tally.stats.runs;
    const done = folded + this.#frontier.reduce((sum, w) => sum + partRuns(w.rootResult) + w.childResults.reduce((s, r) => s + partRuns(r), 0), 0);
    const pending = this.#frontier.reduce((sum, w) => sum + (w.rootResult === undefined ? 1 : (w.rootResult.children ?? []).filter((_, i) => w.childResults[i] === undefined).length), 0);
    return { done, total: done + pending, findings: this.#tally.found.length };
  }

  /** Once no task is out: what stopped the search, or undefined when every root was folded. */
  stoppedBy(): BoundedStats["stoppedBy"] {
    assert(this.#handedOut.size === 0, "a search ends with no task out");
    if (this.#firstAt !== undefined) return "first";
    if (this.#stopping) return "budget";
    assert(this.#frontier.length === 0, "a finished search has folded every root");
    return undefined;
  }

  #resultAt(place: Place): TaskResult | undefined {
    return place.child < 0 ? place.work.rootResult : place.work.childResults[place.child];
  }

  #nextTask(): Place | undefined {
    const firstAt = this.#firstAt;
    for (const work of this.#frontier) {
      const places: Place[] = [{ work, child: -1 }];
      const children = work.rootResult?.children ?? [];
      for (let child = 0; child < children.length; child++) places.push({ work, child });
      for (const place of places) {
        if (firstAt !== undefined && !before(place, firstAt)) return undefined;
        if (this.#resultAt(place) === undefined && !this.#handedOut.has(placeName(place))) return place;
      }
    }
    if (firstAt !== undefined || this.#stopping) return undefined;
    const { index: shard, count: shards } = this.#search.options.shard ?? { index: 0, count: 1 };
    for (let root = rootAt(this.#search, this.#nextRoot); root !== undefined; root = rootAt(this.#search, ++this.#nextRoot)) {
      // A shard that owns neither the root nor (without preemptions) any child skips it, as in one thread.
      if (this.#nextRoot % shards !== shard && this.#search.preemptions === 0) continue;
      const work: RootWork = { root: this.#nextRoot++, childResults: [] };
      this.#frontier.push(work);
      return { work, child: -1 };
    }
    return undefined;
  }

  /** Folds the leading roots whose tasks are all done (up to `firstAt`) into the tally. */
  #fold(): void {
    while (this.#frontier.length > 0) {
      const work = this.#frontier[0]!;
      // Past the root of the task that stopped at a finding, nothing is kept (a root's task that was out when it
      // stopped may still come back, and a root without children would otherwise fold whole).
      if (this.#firstAt !== undefined && work.root > this.#firstAt.work.root) return;
      const rootResult = work.rootResult;
      if (rootResult === undefined) return;
      const children = rootResult.children ?? [];
      const last = this.#firstAt !== undefined && this.#firstAt.work === work ? this.#firstAt.child : children.length - 1;
      for (let child = 0; child <= last; child++) if (work.childResults[child] === undefined) return;
      assert(work.root >= this.#root, "scheduler-folds-in-order");
      this.#tally.fold(rootResult.state);
      for (let child = 0; child <= last; child++) this.#tally.fold(work.childResults[child]!.state);
      this.#frontier.shift();
      this.#root = work.root + 1;
      if (this.#firstAt?.work === work) return;
    }
  }
}

function placeName(place: Place): string {
  return `${place.work.root}/${place.child}`;
}

/** Search order of two tasks: by root, then the root's own run before its children's subtrees, in order. */
function before(a: Place, b: Place): boolean {
  return a.work.root !== b.work.root ? a.work.root < b.work.root : a.child < b.child;
}
