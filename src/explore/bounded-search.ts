// The bounded search (issue 23): every schedule that differs from the FIFO order by at most K preemptions,
// crossed with every placement of at most F planned faults from the systematic points, depth-first. A
// preemption is a choice of any ready step but the least one (below); a schedule is its list of preemptions, so the
// search tree is: a node is a run, its children are the runs that add one preemption after its last one.
// Each node is one run replayed from the seed (the simulator is deterministic, so no state is saved).
// On worker threads (src/explore/bounded-parallel.ts) the tree is cut into tasks, a root's own run and the subtree
// of each of its children, folded back in search order; shards own roots and one-preemption subtrees by index
// modulo their count. Either way each schedule belongs to exactly one subtree, and the reduction below decides
// from a schedule's own path only (the sleeping step is carried along the path, never across siblings), so a
// subtree searched alone prunes exactly what it prunes inside the whole search.
//
// The ready list is taken in origin order (`compareOrigins` in src/sim/strategy.ts): by ready time, then by the
// order of the steps that made each one. Along the FIFO run that is the kernel's own order, so K=0 is the FIFO
// schedule; unlike the kernel's order (when each step happened to be enqueued), it gives every ready step the same
// place in every schedule that differs only by commuting steps, which the reduction below needs.
//
// Reduction (sleep sets, Godefroid 1996): after a node has run the least step t0 at step s (its default
// continuation, searched with the node's whole remaining budget), a child that runs another step t at s instead,
// with t and t0 commuting (src/sim/commute.ts), need not run t0 next: t·t0 is t0·t, which the node's own subtree
// covers. t0 sleeps until a step that does not commute with it runs, a fault is injected, or it stops being the
// least ready step; a schedule that would take the sleeping step is cut. Why that loses nothing under the bound
// (the gap Coons, Musuvathi and McKinley describe for DPOR with preemption bounding, OOPSLA 2013, is that the
// reordering may cost more preemptions than the schedule it stands for): take a cut schedule p·t·u1..um·t0·r of
// cost c <= K. While t0 slept it was the least ready step, so t and every ui cost a preemption and t0 cost none:
// the part from s costs 1 + m + cost(r). Its reordering p·t0·t·u1..um·r runs t0 free, then t and the ui at most
// one preemption each; after them both schedules have run the same steps, so the world, the ready steps and their
// origins are the same, the origin order is the same, and r costs the same. The reordering costs at most c, is
// equivalent, and takes the least step at s where the cut one did not. So of the schedules within the bound that
// are equivalent to one another, the first in search order (choice indexes compared from the first step) is never
// cut: if it were, its reordering would come before it. Only the least step ever sleeps, one at a time; that is
// less reduction than full sleep sets, never less coverage. `reduction: false` runs every schedule, and tests
// compare the two on generated programs.
//
// Every run of the search takes one constant request latency (see `boundedLatencyMs`), so that steps issued on one
// instant meet again on one instant and their order stays the search's choice; replay files record it.
import { assert } from "../api/assert.ts";
import { commute } from "../sim/commute.ts";
import { compareOrigins, type ReadyStep, type Strategy } from "../sim/strategy.ts";
import type { PlannedFault } from "../sim/types.ts";
import type { BoundedStats, ExploreOptions, SearchPosition } from "./types.ts";
import { SearchTally, type TallyData } from "./tally.ts";
import type { FaultPoint } from "./plan.ts";
import { runScenario, type RunOutcome } from "./run.ts";
import type { Scenario, Timing } from "./scenario.ts";

/** Thrown by the strategy when a schedule would take a sleeping step: the run is cut there. */
class PrunedRun extends Error {
  constructor(readonly step: number) {
    super(`pruned at step ${step}`);
  }
}

/** A step of a run where more than one step was ready: where its children preempt. */
interface Branch {
  step: number;
  width: number;
  /** For each index i >= 1, whether the least step would sleep in the child that runs index i here. */
  sleeps: boolean[];
}

/** Indexes into `ready` in origin order, or in the kernel's own. */
function readyOrder(ready: readonly ReadyStep[], byOrigin: boolean): number[] {
  const order = ready.map((_, i) => i);
  if (byOrigin && ready.length > 1) order.sort((a, b) => compareOrigins(ready[a]!.origin!, ready[b]!.origin!));
  return order;
}

/**
 * Follows a node's preemptions (index 0 elsewhere), keeps the sleeping step, and records the branches after the
 * node's last preemption. Indexes count in origin order; the kernel gets its own. A forced index past the ready list
 * means the scenario is not deterministic.
 */
class BoundedStrategy implements Strategy {
  readonly name = "bounded";
  readonly branches: Branch[] = [];
  private asleep: number | undefined;

  constructor(
    private readonly forced: ReadonlyMap<number, number>,
    private readonly lastForced: number,
    private readonly faultSteps: ReadonlySet<number>,
    private readonly reduce: boolean,
    private readonly record: boolean,
    readonly ordersByOrigin: boolean,
  ) {}

  next(ready: readonly ReadyStep[], _rng: unknown, step: number): number {
    const order = readyOrder(ready, this.ordersByOrigin);
    const least = ready[order[0]!]!;
    // A fault may disable or change the sleeping step; the step sleeps only while it is the least ready one.
    if (this.asleep !== undefined && (this.faultSteps.has(step) || least.seq !== this.asleep)) this.asleep = undefined;
    if (this.record && step > this.lastForced && ready.length > 1) this.branches.push(this.branch(ready, order, step));
    const index = this.forced.get(step) ?? 0;
    if (index >= ready.length) throw new Error(`bounded search: step ${step} has ${ready.length} ready steps but the schedule chose index ${index}; is the scenario deterministic?`);
    const chosen = ready[order[index]!]!;
    if (chosen.seq === this.asleep) throw new PrunedRun(step);
    if (index > 0) this.asleep = this.reduce && commute(least, chosen) ? least.seq : undefined;
    return order[index]!;
  }

  private branch(ready: readonly ReadyStep[], order: readonly number[], step: number): Branch {
    const least = ready[order[0]!]!;
    const sleeps = [false];
    for (let i = 1; i < ready.length; i++) sleeps.push(this.reduce && commute(least, ready[order[i]!]!));
    return { step, width: ready.length, sleeps };
  }
}

/** The number of placements of at most `f` of `count` points: none, each one, each pair. */
export function placementCount(count: number, f: number): number {
  return 1 + (f >= 1 ? count : 0) + (f >= 2 ? (count * (count - 1)) / 2 : 0);
}

/** Placement `index` as point indexes: 0 is none, then each point alone in order, then each pair (i < j). */
export function placementAt(count: number, index: number): number[] {
  assert(index >= 0, "placement index is non-negative");
  if (index === 0) return [];
  if (index <= count) return [index - 1];
  let rest = index - count - 1;
  for (let i = 0; i < count; i++) {
    const row = count - 1 - i;
    if (rest < row) return [i, i + 1 + rest];
    rest -= row;
  }
  throw new Error(`placement ${index} is past the last of ${count} points`);
}

/** A schedule to run: its preemptions, and whether this shard owns it (a shard runs every root for its children). */
export interface Node {
  choices: Array<[number, number]>;
  owned: boolean;
}

/** Search order of two schedules: by root, then by choices from the first, a schedule before those below it. */
export function comparePositions(a: SearchPosition, b: SearchPosition): number {
  if (a.root !== b.root) return a.root - b.root;
  for (let i = 0; i < Math.min(a.choices.length, b.choices.length); i++) {
    const [as, ai] = a.choices[i]!;
    const [bs, bi] = b.choices[i]!;
    if (as !== bs) return as - bs;
    if (ai !== bi) return ai - bi;
  }
  return a.choices.length - b.choices.length;
}

/**
 * What a search has done so far, as a checkpoint saves it: the tally's data, after where the search is (the root,
 * workload x placement in order, being searched, and the schedules of it still to run, in `stack`).
 */
export interface SearchState extends TallyData {
  root: number;
  stack: Node[];
}

/** A search state of `tally` at `root`, its fields in the order checkpoints have always had them. */
export function searchState(root: number, stack: Node[], tally: SearchTally): SearchState {
  return { root, stack, ...tally.data() };
}

interface Root {
  workload: string;
  points: FaultPoint[];
  /** Indexes into the search's `points`. */
  pointIndexes: number[];
}

/** What a worker thread needs to build a search's `Search` and run its tasks: plain data only. */
export interface BoundedJob {
  kind: "bounded";
  scenarioPath: string;
  variant: string;
  workload: string | undefined;
  params: ExploreOptions["params"];
  seed: number;
  shard: ExploreOptions["shard"];
  first: boolean;
  /** The bounds (figures zero or ignored). */
  stats: BoundedStats;
  byOrigin: boolean;
  workloads: Search["workloads"];
  points: FaultPoint[];
  latencyMs: number;
}

/** A worker thread's `Search` of `job`, over the scenario it loaded itself. */
export function jobSearch(loaded: Scenario, job: BoundedJob): Search {
  const scenario = withLatency(loaded, job.latencyMs);
  const options: ExploreOptions = { scenarioPath: job.scenarioPath, variant: job.variant, params: job.params, runs: Number.POSITIVE_INFINITY, seed: job.seed, workers: 1, strategy: "bounded", first: job.first };
  if (job.workload !== undefined) options.workload = job.workload;
  if (job.shard !== undefined) options.shard = job.shard;
  return { scenario, options, bounds: job.stats, preemptions: job.stats.preemptions, reduce: job.stats.reduction, byOrigin: job.byOrigin, workloads: job.workloads, points: job.points };
}

/** A search as every thread of it knows it: what it searches and within which bounds. Its figures are in a tally. */
export interface Search {
  scenario: Scenario;
  options: ExploreOptions;
  /** The bounds (figures ignored): what a task's tally starts from. */
  bounds: BoundedStats;
  preemptions: number;
  /** Sleep-set reduction on. */
  reduce: boolean;
  /** Preemptions counted in origin order (else in the kernel's). */
  byOrigin: boolean;
  /** Per workload, the points of that workload (indexes into `points`). */
  workloads: Array<{ workload: string; pointIndexes: number[] }>;
  points: FaultPoint[];
}

/** The root of ordinal `root`: its workload and fault points. */
export function rootAt(search: Search, root: number): Root | undefined {
  let rest = root;
  const f = search.bounds.faultPoints;
  for (const { workload, pointIndexes } of search.workloads) {
    const count = placementCount(pointIndexes.length, f);
    if (rest < count) {
      const chosen = placementAt(pointIndexes.length, rest).map((i) => pointIndexes[i]!);
      return { workload, points: chosen.map((i) => search.points[i]!), pointIndexes: chosen };
    }
    rest -= count;
  }
  return undefined;
}

/** Runs one schedule; a run cut by the reduction has no outcome. */
async function runNode(search: Search, tally: SearchTally, root: Root, node: Node): Promise<{ outcome?: RunOutcome; branches: Branch[] }> {
  const faults: PlannedFault[] = root.points.map((p) => ({ ...p.fault }));
  const lastForced = node.choices.length === 0 ? -1 : node.choices[node.choices.length - 1]![0];
  const record = node.choices.length < search.preemptions;
  const strategy = new BoundedStrategy(new Map(node.choices), lastForced, new Set(faults.map((f) => f.atStep)), search.reduce, record, search.byOrigin);
  const { variant, params, seed } = search.options;
  tally.runStarted();
  try {
    const outcome = await runScenario(search.scenario, { variant, workload: root.workload, params, seed, strategy, faults });
    return { outcome, branches: strategy.branches };
  } catch (error) {
    if (!(error instanceof PrunedRun)) throw error;
    return { branches: strategy.branches };
  }
}

/**
 * The children of a run, in search order: one preemption more at each branch after its last one. A child whose
 * first step after the preemption would be the sleeping least step, with no budget left to preempt it, is
 * pruned without running (unless a fault falls there, which wakes it).
 */
function childrenOf(search: Search, tally: SearchTally, root: Root, rootOrdinal: number, node: Node, branches: readonly Branch[]): Node[] {
  const children: Node[] = [];
  const depth = node.choices.length + 1;
  const faultSteps = new Set(root.points.map((p) => p.fault.atStep));
  const { index: shard, count: shards } = search.options.shard ?? { index: 0, count: 1 };
  let ordinal = 0;
  for (const { step, width, sleeps } of branches) {
    for (let i = 1; i < width; i++) {
      const owned = depth === 1 ? (rootOrdinal + 1 + ordinal++) % shards === shard : node.owned;
      if (!owned) continue;
      if (sleeps[i] === true && depth === search.preemptions && !faultSteps.has(step + 1)) {
        tally.schedulePruned();
        continue;
      }
      children.push({ choices: [...node.choices, [step, i]], owned });
    }
  }
  return children;
}

/** Keeps what a finished run adds to the tally; true when it is a finding. */
function keep(search: Search, tally: SearchTally, root: Root, rootOrdinal: number, node: Node, outcome: RunOutcome): boolean {
  const position = { root: rootOrdinal, choices: node.choices };
  return tally.scheduleRan(position, { workload: root.workload, seed: search.options.seed }, root.pointIndexes, outcome);
}

/** Where a search in one thread is: the root being searched, and the schedules of it still to run (last first). */
export interface Cursor {
  root: number;
  stack: Node[];
}

/** What stops a search in one thread besides the end of its space, and how often it saves its checkpoint. */
export interface DepthFirstLimits {
  runsMax: number;
  shouldStop: () => boolean;
  saveEveryRuns: number;
  save: () => void;
}

/**
 * Searches depth-first from `cursor` on, the cursor's only writer while it runs; returns what stopped it, or
 * undefined when the space is done.
 */
export async function searchRoots(search: Search, tally: SearchTally, cursor: Cursor, limits: DepthFirstLimits): Promise<BoundedStats["stoppedBy"]> {
  const { options } = search;
  const { index: shard, count: shards } = options.shard ?? { index: 0, count: 1 };
  for (let root = rootAt(search, cursor.root); root !== undefined; root = rootAt(search, ++cursor.root)) {
    if (cursor.stack.length === 0) {
      const owned = cursor.root % shards === shard;
      // A shard that owns neither the root nor (without preemptions) any child skips it.
      if (!owned && search.preemptions === 0) continue;
      if (owned) tally.placementSearched();
      cursor.stack.push({ choices: [], owned });
    }
    while (cursor.stack.length > 0) {
      if (tally.stats.runs >= limits.runsMax) return "runs";
      if (limits.shouldStop()) return "budget";
      const node = cursor.stack.pop()!;
      const { outcome, branches } = await runNode(search, tally, root, node);
      // Children first, so a search stopped at this finding resumes from its checkpoint with nothing skipped.
      const children = childrenOf(search, tally, root, cursor.root, node, branches);
      for (let i = children.length - 1; i >= 0; i--) cursor.stack.push(children[i]!);
      if (outcome === undefined) tally.schedulePruned();
      else if (node.owned && keep(search, tally, root, cursor.root, node, outcome) && options.first) return "first";
      options.onProgress?.({ done: tally.stats.runs, total: tally.stats.runs + cursor.stack.length, findings: tally.found.length });
      if (tally.stats.runs % limits.saveEveryRuns === 0) limits.save();
    }
  }
  return undefined;
}

/**
 * A unit of the search for a worker thread: a root's own run, whose children (one preemption each) come back to be
 * handed out as tasks of their own, or the whole subtree of one such child. A root's run and then its children's
 * subtrees in order is the depth-first order, so results folded in that order are the one-thread search's.
 */
export interface BoundedTask {
  root: number;
  child?: [number, number];
}

export interface TaskResult {
  /** A root's task: the children this shard owns and did not prune, in search order. */
  children?: Array<[number, number]>;
  /** The task's own figures (at its root, with nothing left to run); each finding's run index counts the task's schedules from 0. */
  state: SearchState;
  /** With `first`: the task stopped at its first finding. */
  stoppedAtFinding: boolean;
}

/** Runs one task (see `BoundedTask`) from scratch, with a tally of its own. */
export async function runTask(search: Search, task: BoundedTask): Promise<TaskResult> {
  const tally = SearchTally.empty(search.bounds);
  const root = rootAt(search, task.root);
  assert(root !== undefined, `task root ${task.root} is within the search`);
  const { index: shard, count: shards } = search.options.shard ?? { index: 0, count: 1 };
  const first = search.options.first;
  const result = (stoppedAtFinding: boolean, children?: Array<[number, number]>): TaskResult => {
    const state = searchState(task.root, [], tally);
    return children === undefined ? { state, stoppedAtFinding } : { children, state, stoppedAtFinding };
  };
  if (task.child === undefined) {
    const node: Node = { choices: [], owned: task.root % shards === shard };
    if (node.owned) tally.placementSearched();
    const { outcome, branches } = await runNode(search, tally, root, node);
    const children = childrenOf(search, tally, root, task.root, node, branches).map((child) => child.choices[0]!);
    if (outcome === undefined) tally.schedulePruned();
    else if (node.owned && keep(search, tally, root, task.root, node, outcome) && first) return result(true, []);
    return result(false, children);
  }
  const stack: Node[] = [{ choices: [task.child], owned: true }];
  while (stack.length > 0) {
    const node = stack.pop()!;
    const { outcome, branches } = await runNode(search, tally, root, node);
    const children = childrenOf(search, tally, root, task.root, node, branches);
    for (let i = children.length - 1; i >= 0; i--) stack.push(children[i]!);
    if (outcome === undefined) tally.schedulePruned();
    else if (keep(search, tally, root, task.root, node, outcome) && first) return result(true);
  }
  return result(false);
}

/**
 * The constant request latency of a bounded search (see `BoundedOptions.latencyMs`). A latency drawn per request
 * would give requests issued together different response times, so their responses would never meet on one instant
 * and their order would be the seed's, not the scheduler's: the bounded space would be nearly one schedule.
 */
export function boundedLatencyMs(timing: Pick<Timing, "requestLatencyMs">, latencyMs?: number): number {
  if (latencyMs !== undefined) {
    assert(Number.isInteger(latencyMs) && latencyMs >= 0, "bounded latency is a non-negative whole number of ms");
    return latencyMs;
  }
  const [min, max] = timing.requestLatencyMs;
  if (min === max) return min;
  return Math.max(Math.floor((min + max) / 2), Math.min(1, max));
}

/** `scenario` with every request taking `latencyMs`; the scenario itself when it already pins that latency. */
export function withLatency(scenario: Scenario, latencyMs: number): Scenario {
  const [min, max] = scenario.timing.requestLatencyMs;
  if (min === latencyMs && max === latencyMs) return scenario;
  return { ...scenario, timing: { ...scenario.timing, requestLatencyMs: [latencyMs, latencyMs] } };
}
