// What a bounded search has counted (bounded-search.ts): its figures, the steps and property counters of the
// schedules that ran, the first run of each finding and where it is in the tree, the fault points covered, and the
// schedules per unit of the tree. `SearchTally` is the only writer of these counts: the search, a worker thread's
// task and the folding of tasks each change them through one method per way they change, and each method asserts
// what must hold. As plain data (`TallyData`) a tally is what a checkpoint and a worker thread's answer carry.
//
// Invariants, asserted by name:
// - `tally-figures-only-grow`: runs, schedules, pruned schedules and placements only grow; a schedule ran as one of
//   the runs (schedules <= runs) and placements stay within the placements of the bounds.
// - `tally-finding-once`: each finding key is kept once, with its first run (later ones add to its occurrences).
// - `tally-units-in-search-order`: units are met in search order, each after the last (a later part folded in
//   starts after the whole so far).
// - `tally-same-bounds`: a part folded in was searched within the same bounds.
import { assert } from "../api/assert.ts";
import type { PropertyCounter } from "../check/properties.ts";
import { findingKey, isFinding } from "../check/verdict.ts";
import type { RunOutcome } from "./run.ts";
import { runSummary } from "./runs.ts";
import type { BoundedStats, RunSummary, SearchPosition, Unit } from "./types.ts";

/** The first run of a finding key in a search, where it is in the search tree, and how many runs had it. */
export interface FoundRun {
  key: string;
  run: RunSummary;
  position: SearchPosition;
  occurrences: number;
}

/** A tally as plain data: the JSON a checkpoint saves and a worker thread sends (fields in this order). */
export interface TallyData {
  stats: BoundedStats;
  steps: number;
  counters: PropertyCounter[];
  /** The first run of each finding key, in the order met. */
  found: FoundRun[];
  /** Indexes of the fault points some schedule that ran had placed. */
  pointsCovered: number[];
  /** Schedules per unit of the tree, in search order (see `Unit`). */
  units: Unit[];
}

/** Who ran a schedule: what its finding's run summary names besides the outcome. */
export interface ScheduleRun {
  workload: string;
  seed: number;
}

export class SearchTally {
  readonly #stats: BoundedStats;
  #steps: number;
  readonly #counters: PropertyCounter[];
  readonly #found: FoundRun[];
  readonly #pointsCovered: number[];
  readonly #units: Unit[];

  /** Takes over `data` (a checkpoint's, or `SearchTally.empty`'s): from now on only this tally changes it. */
  constructor(data: TallyData) {
    checkData(data);
    this.#stats = { ...data.stats };
    this.#steps = data.steps;
    this.#counters = data.counters.map((c) => ({ ...c }));
    this.#found = data.found.map((f) => ({ ...f }));
    this.#pointsCovered = [...data.pointsCovered];
    this.#units = data.units.map((u) => [...u]);
  }

  /** A tally with no run yet, within the bounds of `bounds` (its figures are not read). */
  static empty(bounds: BoundedStats): SearchTally {
    const zero = { schedules: 0, pruned: 0, placements: 0, runs: 0, complete: false };
    const stats: BoundedStats = { ...bounds, ...zero };
    delete stats.stoppedBy;
    return new SearchTally({ stats, steps: 0, counters: [], found: [], pointsCovered: [], units: [] });
  }

  /** The figures, read-only (a copy is the caller's to keep). */
  get stats(): Readonly<BoundedStats> {
    return this.#stats;
  }

  get steps(): number {
    return this.#steps;
  }

  get counters(): readonly PropertyCounter[] {
    return this.#counters;
  }

  get found(): readonly Readonly<FoundRun>[] {
    return this.#found;
  }

  get pointsCovered(): number {
    return this.#pointsCovered.length;
  }

  get units(): readonly Unit[] {
    return this.#units;
  }

  /** The tally as plain data (its own objects: to serialize or send at once, not to change). */
  data(): TallyData {
    return { stats: this.#stats, steps: this.#steps, counters: this.#counters, found: this.#found, pointsCovered: this.#pointsCovered, units: this.#units };
  }

  /** A simulation of a schedule starts (one that the reduction cuts short included). */
  runStarted(): void {
    assert(!this.#stats.complete, "tally-figures-only-grow: a complete search starts no run");
    this.#stats.runs++;
  }

  /** A root's own schedule is this shard's: its fault placement is searched. */
  placementSearched(): void {
    this.#stats.placements++;
    assert(this.#stats.placements <= this.#stats.placementsTotal, "tally-figures-only-grow: placements within the bounds");
  }

  /** The reduction cut a schedule: a run cut short, or a child pruned without running. */
  schedulePruned(): void {
    assert(!this.#stats.complete, "tally-figures-only-grow: a complete search prunes no schedule");
    this.#stats.pruned++;
  }

  /**
   * A schedule at `position` ran to its verdict, with the faults at `pointIndexes` placed: counted in its unit,
   * its steps and counters added, and, when it is a finding, kept as the key's first run or one more occurrence.
   * True when it is a finding.
   */
  scheduleRan(position: SearchPosition, run: ScheduleRun, pointIndexes: readonly number[], outcome: RunOutcome): boolean {
    this.#stats.schedules++;
    assert(this.#stats.schedules <= this.#stats.runs, "tally-figures-only-grow: a schedule ran as one of the runs");
    this.#countInUnit(position);
    this.#steps += outcome.steps;
    addCounters(this.#counters, outcome.counters);
    for (const i of pointIndexes) if (!this.#pointsCovered.includes(i)) this.#pointsCovered.push(i);
    if (!isFinding(outcome.verdict)) return false;
    const key = findingKey(outcome.verdict);
    const seen = this.#found.find((f) => f.key === key);
    if (seen !== undefined) {
      seen.occurrences++;
      return true;
    }
    const summary = runSummary({ index: this.#stats.schedules - 1, strategy: "bounded", workload: run.workload, seed: run.seed }, outcome);
    this.#found.push({ key, run: summary, position, occurrences: 1 });
    return true;
  }

  /**
   * Adds a later part of the search, in search order (a worker thread's task): its figures, and its findings with
   * run indexes that follow this tally's.
   */
  fold(part: TallyData): void {
    checkData(part);
    assert(sameBounds(this.#stats, part.stats), "tally-same-bounds");
    const first = part.units[0];
    const last = this.#units[this.#units.length - 1];
    assert(first === undefined || last === undefined || compareUnits(last, first) < 0, "tally-units-in-search-order: a part folded in comes after");
    const base = this.#stats.schedules;
    this.#stats.schedules += part.stats.schedules;
    this.#stats.pruned += part.stats.pruned;
    this.#stats.placements += part.stats.placements;
    this.#stats.runs += part.stats.runs;
    assert(this.#stats.placements <= this.#stats.placementsTotal, "tally-figures-only-grow: placements within the bounds");
    this.#steps += part.steps;
    addCounters(this.#counters, part.counters);
    for (const i of part.pointsCovered) if (!this.#pointsCovered.includes(i)) this.#pointsCovered.push(i);
    for (const unit of part.units) this.#units.push([...unit]);
    for (const found of part.found) {
      const seen = this.#found.find((f) => f.key === found.key);
      if (seen !== undefined) seen.occurrences += found.occurrences;
      else this.#found.push({ ...found, run: { ...found.run, index: base + found.run.index } });
    }
  }

  /** The search ended: complete when nothing stopped it, else incomplete with what stopped it. */
  finish(stoppedBy: BoundedStats["stoppedBy"]): void {
    assert(!this.#stats.complete, "a search finishes once");
    this.#stats.complete = stoppedBy === undefined;
    if (stoppedBy !== undefined) this.#stats.stoppedBy = stoppedBy;
    else delete this.#stats.stoppedBy;
  }

  /** Counts a schedule at `position` in its unit: the last one, or a new one after it. */
  #countInUnit(position: SearchPosition): void {
    const [step, index] = position.choices[0] ?? [-1, -1];
    const last = this.#units[this.#units.length - 1];
    if (last !== undefined && last[0] === position.root && last[1] === step && last[2] === index) {
      last[3]++;
      return;
    }
    const unit: Unit = [position.root, step, index, 1];
    assert(last === undefined || compareUnits(last, unit) < 0, "tally-units-in-search-order");
    this.#units.push(unit);
  }
}

/** What any tally's data holds, whoever made it: figures that add up, each finding key once, units in order. */
function checkData(data: TallyData): void {
  const { runs, schedules, pruned, placements } = data.stats;
  assert(Math.min(schedules, pruned, placements) >= 0, "tally-figures-only-grow: figures are counts");
  assert(schedules <= runs, "tally-figures-only-grow: a schedule ran as one of the runs");
  assert(new Set(data.found.map((f) => f.key)).size === data.found.length, "tally-finding-once");
  for (let i = 1; i < data.units.length; i++) assert(compareUnits(data.units[i - 1]!, data.units[i]!) < 0, "tally-units-in-search-order");
}

/** Search order of two units: by root, then the root's own run before its children's subtrees, by step and index. */
function compareUnits(a: Unit, b: Unit): number {
  return a[0] - b[0] || a[1] - b[1] || a[2] - b[2];
}

function sameBounds(a: BoundedStats, b: BoundedStats): boolean {
  return a.preemptions === b.preemptions && a.faultPoints === b.faultPoints && a.reduction === b.reduction && a.latencyMs === b.latencyMs && a.placementsTotal === b.placementsTotal;
}

function addCounters(total: PropertyCounter[], counters: readonly PropertyCounter[]): void {
  for (const c of counters) {
    const sum = total.find((t) => t.name === c.name);
    if (sum === undefined) total.push({ ...c });
    else {
      sum.evaluations += c.evaluations;
      sum.failures += c.failures;
      sum.everHeld ||= c.everHeld;
    }
  }
}
