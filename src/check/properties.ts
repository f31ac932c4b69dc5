// Properties over a read-only view of the world: API objects and external state, never an actor's
// internals, so the same properties run in the simulator and against a live `settle serve`.
import type { WorldView } from "../sim/types.ts";
import type { TraceRecord } from "../sim/trace.ts";
import type { KubeObject } from "../api/object.ts";
import type { Store, StoreEventType } from "../store/types.ts";
import { assert } from "../api/assert.ts";

/** What a property may read: the simulator's view; a live server's view implements the same shape. */
export type { WorldView };

/** One write the API server applied in the last step. */
export interface StepWrite {
  /**
   * What the store recorded. A delete of an object that still has finalizers is an "updated" (it sets
   * `metadata.deletionTimestamp`); "deleted" is the object leaving the store.
   */
  readonly type: "created" | "updated" | "deleted";
  /** The object after the write; for "deleted", its last state. Frozen and shared: do not change it. */
  readonly object: KubeObject;
  /** The store revision of the write. */
  readonly revision: number;
}

/** The step a property is checked after, with the writes it applied (in revision order). */
export interface LastStep {
  /** The index of the step; -1 before the first step and where steps are not known (a drill). */
  readonly step: number;
  /**
   * Who made every write of the step: an actor's name (its request was applied in this step, including the
   * removal of an object whose last finalizer that request removed), "gc" for the garbage collector, "sim"
   * for a fault. Empty where not known.
   */
  readonly actor: string;
  readonly writes: readonly StepWrite[];
}

/**
 * A property's test. `last` is the step just taken and its writes, for properties about changes ("never delete a
 * child whose owner exists") that a snapshot of the world cannot tell; most predicates need only `world`.
 */
export type Predicate = (world: WorldView, last: LastStep) => boolean;

/** The last step where none is known (before the first step, in a drill against a live server). */
export const unknownStep: LastStep = Object.freeze({ step: -1, actor: "", writes: Object.freeze([]) });

const writeTypes: Readonly<Record<StoreEventType, StepWrite["type"]>> = { ADDED: "created", MODIFIED: "updated", DELETED: "deleted" };

/**
 * The last step of a simulation as properties see it. The writes are read from the store's history between the
 * step's revisions, and only when a predicate asks for them: properties run after every step, and most never do.
 */
export function lastStepOf(store: Store, record: TraceRecord): LastStep {
  const { step, actor, revisionBefore, revisionAfter } = record;
  if (revisionAfter === revisionBefore) return { step, actor, writes: unknownStep.writes };
  let writes: readonly StepWrite[] | undefined;
  return {
    step,
    actor,
    get writes(): readonly StepWrite[] {
      writes ??= readWrites(store, revisionBefore, revisionAfter);
      return writes;
    },
  };
}

function readWrites(store: Store, revisionBefore: number, revisionAfter: number): readonly StepWrite[] {
  // A step writes a handful of revisions and the history keeps 100,000 by default; only a scenario with a tiny
  // `historyRevisionsMax` could have compacted part of a step away, and then the writes still kept are given.
  const writes: StepWrite[] = [];
  for (const event of store.history(Math.max(revisionBefore, store.compactedRevision))) {
    if (event.revision > revisionAfter) break;
    writes.push(Object.freeze({ type: writeTypes[event.type], object: event.object, revision: event.revision }));
  }
  return Object.freeze(writes);
}

export interface AlwaysProperty {
  kind: "always";
  name: string;
  predicate: Predicate;
}

export interface EventuallyProperty {
  kind: "eventually";
  name: string;
  predicate: Predicate;
  /**
   * Must hold by this long after the healing phase starts (faults stop), or after the mark `from` when given.
   * Absent: only once settled.
   */
  withinMs?: number;
  /** The name of a mark a workload makes (`ctx.mark(name)`): `withinMs` counts from that moment. */
  from?: string;
}

export type Property = AlwaysProperty | EventuallyProperty;

const namePattern = /^\S[^\n\r\t]{0,119}$/;

function checkName(name: string): void {
  if (!namePattern.test(name)) {
    throw new TypeError(`property name ${JSON.stringify(name)}: one line of 1-120 characters, not starting with a space`);
  }
}

/** A safety property: checked after every step, in both phases. */
export function always(name: string, predicate: Predicate): AlwaysProperty {
  checkName(name);
  if (typeof predicate !== "function") throw new TypeError(`always("${name}"): the predicate must be a function`);
  return { kind: "always", name, predicate };
}

/** A liveness property: must hold once the world has settled after the faults stop (and by `withinMs`, if given). */
export function eventually(name: string, predicate: Predicate, options: { withinMs?: number; from?: string } = {}): EventuallyProperty {
  checkName(name);
  if (typeof predicate !== "function") throw new TypeError(`eventually("${name}"): the predicate must be a function`);
  const { withinMs, from } = options;
  if (withinMs !== undefined && !(Number.isInteger(withinMs) && withinMs > 0)) {
    throw new TypeError(`eventually("${name}"): withinMs must be a positive integer of milliseconds`);
  }
  if (from !== undefined && withinMs === undefined) {
    throw new TypeError(`eventually("${name}"): from names the mark a deadline counts from, so it needs withinMs`);
  }
  if (from !== undefined) checkMarkName(from);
  const property: EventuallyProperty = { kind: "eventually", name, predicate };
  if (withinMs !== undefined) property.withinMs = withinMs;
  if (from !== undefined) property.from = from;
  return property;
}

/** Checks the name of a mark (`ctx.mark(name)` in a workload, `from` of a deadline): as a property name. */
export function checkMarkName(name: string): void {
  if (typeof name !== "string" || !namePattern.test(name)) {
    throw new TypeError(`mark name ${JSON.stringify(name)}: one line of 1-120 characters, not starting with a space`);
  }
}

/** How often a property was evaluated and failed: fixed names and counts only, never object contents. */
export interface PropertyCounter {
  name: string;
  kind: Property["kind"];
  evaluations: number;
  failures: number;
  /** False when the property never held in the run. */
  everHeld: boolean;
}

/** A deadline counted from a mark that was not met. */
export interface MissedDeadline {
  property: EventuallyProperty;
  /** Virtual time of the deadline: the mark's time plus `withinMs`. */
  atMs: number;
}

interface MarkedDeadline {
  index: number;
  atMs: number;
  /** The property's value after the last step at or before the deadline; undefined before the first. */
  held: boolean | undefined;
}

/** Evaluates properties and keeps their counters. A predicate that throws counts as false. */
export class PropertyMonitor {
  readonly properties: readonly Property[];
  private readonly counters: PropertyCounter[];
  private readonly marks = new Map<string, number>();
  /** Deadlines counted from marks made and not yet judged, earliest first. */
  private pending: MarkedDeadline[] = [];
  private last: LastStep = unknownStep;

  constructor(properties: readonly Property[]) {
    const names = new Set<string>();
    for (const property of properties) {
      assert(!names.has(property.name), "property names are unique");
      names.add(property.name);
    }
    this.properties = properties;
    this.counters = properties.map((p) => ({ name: p.name, kind: p.kind, evaluations: 0, failures: 0, everHeld: false }));
  }

  /** Checks every `always` property after step `last`; returns the first that fails. */
  checkSafety(world: WorldView, last: LastStep = unknownStep): AlwaysProperty | undefined {
    this.last = last;
    let failed: AlwaysProperty | undefined;
    for (let i = 0; i < this.properties.length; i++) {
      const property = this.properties[i]!;
      if (property.kind !== "always") continue;
      if (!this.evaluate(i, world) && failed === undefined) failed = property;
    }
    return failed;
  }

  /** Checks the `eventually` properties chosen by `filter` (after the step last given to `checkSafety`); returns the first that fails. */
  checkLiveness(world: WorldView, filter: (p: EventuallyProperty) => boolean = () => true): EventuallyProperty | undefined {
    let failed: EventuallyProperty | undefined;
    for (let i = 0; i < this.properties.length; i++) {
      const property = this.properties[i]!;
      if (property.kind !== "eventually" || !filter(property)) continue;
      if (!this.evaluate(i, world) && failed === undefined) failed = property;
    }
    return failed;
  }

  /**
   * Records that a workload reached the moment `name` at `atMs`, arming every deadline counted from it. A name
   * is marked once: a second mark would leave "within 5 minutes of the label" ambiguous.
   */
  mark(name: string, atMs: number): void {
    checkMarkName(name);
    if (this.marks.has(name)) throw new TypeError(`mark "${name}" was already made (at ${this.marks.get(name)} ms); each mark is made once`);
    this.marks.set(name, atMs);
    this.properties.forEach((property, index) => {
      if (property.kind !== "eventually" || property.from !== name) return;
      this.pending.push({ index, atMs: atMs + (property.withinMs as number), held: undefined });
    });
    this.pending.sort((a, b) => a.atMs - b.atMs || this.properties[a.index]!.name.localeCompare(this.properties[b.index]!.name));
  }

  /** When the workload made the mark `name` (virtual ms), or undefined. */
  markedAt(name: string): number | undefined {
    return this.marks.get(name);
  }

  /**
   * After every step, at that step's virtual time: judges the marked deadlines the step went past on the world
   * as it was before the step (the value after the last step at or before the deadline), then evaluates the
   * deadlines still ahead on the world now. Returns the earliest deadline missed.
   */
  checkMarkedDeadlines(world: WorldView, timeMs: number, last: LastStep = this.last): MissedDeadline | undefined {
    this.last = last;
    if (this.pending.length === 0) return undefined;
    const missed = this.judgeMarkedDeadlines(world, (atMs) => timeMs > atMs);
    for (const deadline of this.pending) deadline.held = this.evaluate(deadline.index, world);
    return missed;
  }

  /**
   * Judges the marked deadlines before `untilMs` that no step went past: the world has not changed since
   * them, so it is as it was at the deadline. Called where the run stops to judge (another deadline, the end).
   * Deadlines at or after `untilMs` stay pending. Returns the earliest missed.
   */
  closeMarkedDeadlines(world: WorldView, untilMs: number): MissedDeadline | undefined {
    return this.judgeMarkedDeadlines(world, (atMs) => atMs < untilMs);
  }

  snapshot(): PropertyCounter[] {
    return this.counters.map((c) => ({ ...c }));
  }

  private judgeMarkedDeadlines(world: WorldView, due: (atMs: number) => boolean): MissedDeadline | undefined {
    let missed: MissedDeadline | undefined;
    const ahead: MarkedDeadline[] = [];
    for (const deadline of this.pending) {
      if (!due(deadline.atMs)) {
        ahead.push(deadline);
        continue;
      }
      const held = deadline.held ?? this.evaluate(deadline.index, world);
      const property = this.properties[deadline.index] as EventuallyProperty;
      if (!held && missed === undefined) missed = { property, atMs: deadline.atMs };
    }
    this.pending = ahead;
    return missed;
  }

  private evaluate(index: number, world: WorldView): boolean {
    const counter = this.counters[index]!;
    let holds: boolean;
    try {
      holds = this.properties[index]!.predicate(world, this.last) === true;
    } catch {
      holds = false;
    }
    counter.evaluations++;
    if (holds) counter.everHeld = true;
    else counter.failures++;
    return holds;
  }
}
