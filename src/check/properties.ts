// Properties over a read-only view of the world: API objects and external state, never an actor's
// internals, so the same properties run in the simulator and against a live `settle serve`.
import type { WorldView } from "../sim/types.ts";
import type { TraceRecord } from "../sim/trace.ts";
import type { KubeObject } from "../api/object.ts";
import type { Store, StoreEventType } from "../store/types.ts";
import { assert } from "../api/assert.ts";
import { changeFeedOf, kindKey, objectKey, type ChangeCursor, type ChangeFeed, type WorldChanges } from "../sim/changes.ts";

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
  return new RecordedStep(store, record);
}

/** A step of a simulation, its writes read on first use (a class: one allocation per step, no closures). */
class RecordedStep implements LastStep {
  readonly step: number;
  readonly actor: string;
  #writes: readonly StepWrite[] | undefined;

  constructor(
    private readonly store: Store,
    private readonly record: TraceRecord,
  ) {
    this.step = record.step;
    this.actor = record.actor;
    if (record.revisionAfter === record.revisionBefore) this.#writes = unknownStep.writes;
  }

  get writes(): readonly StepWrite[] {
    this.#writes ??= readWrites(this.store, this.record.revisionBefore, this.record.revisionAfter);
    return this.#writes;
  }
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

/**
 * How often a property was evaluated and failed: fixed names and counts only, never object contents.
 *
 * In the simulator a predicate is called again only when something it read through the `WorldView` last time
 * (an object, a kind's list, an external cell) was written since; otherwise its last value stands and the check
 * counts in neither number. `evaluations` is how often the predicate ran, `failures` how many of those returned
 * false (or threw). A predicate that reads `now()`, `revision` or its `last` argument, that reads nothing or that
 * throws is called at every check. Predicates must therefore give the same answer for the same reads (state they
 * keep between calls may only record what they read).
 */
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

/** What one evaluation of a predicate read through the view: the keys a later write is compared with. */
class Reads {
  readonly kinds = new Set<string>();
  readonly objects = new Set<string>();
  readonly externals = new Set<string>();
  /** Read the time, the revision or the step: the value may change without a write. */
  volatile = false;
  /** Read anything at all (a predicate that reads nothing may depend on state of its own). */
  any = false;

  clear(): void {
    if (this.kinds.size > 0) this.kinds.clear();
    if (this.objects.size > 0) this.objects.clear();
    if (this.externals.size > 0) this.externals.clear();
    this.volatile = false;
    this.any = false;
  }

  /** True when the predicate must run again after `changes`. */
  touchedBy(changes: WorldChanges): boolean {
    if (this.volatile || !this.any || changes.everything) return true;
    // Indexed loops: this runs for every property after every step, and an array iterator per loop showed up
    // among the simulator's largest allocations.
    return anyIn(changes.kinds, this.kinds) || anyIn(changes.objects, this.objects) || anyIn(changes.externals, this.externals);
  }
}

function anyIn(keys: readonly string[], set: ReadonlySet<string>): boolean {
  if (set.size === 0) return false;
  for (let i = 0; i < keys.length; i++) if (set.has(keys[i]!)) return true;
  return false;
}

/** What the check in progress looks at: the world and the last step. The monitor writes it; tracking objects read it. */
class CheckState {
  world: WorldView | undefined = undefined;
  last: LastStep = unknownStep;

  currentWorld(): WorldView {
    assert(this.world !== undefined, "a property reads the world only while it is checked");
    return this.world;
  }
}

/**
 * A view that forwards to the world of the current check and records every read into `reads`.
 *
 * This and `TrackingStep` are made for every property of every run, and neither holds a closure. Objects that had
 * a getter beside closures of their own (as the object literals here had) were measured surviving young-generation
 * collections whole, world included, until a full collection: every run's world was copied and promoted. Methods
 * live on the prototype; the own copies are bound methods (which did not have that effect), so that a predicate may
 * still detach one (`const { get } = view`).
 */
class TrackingView implements WorldView {
  readonly now: WorldView["now"];
  readonly get: WorldView["get"];
  readonly list: WorldView["list"];
  readonly external: WorldView["external"];

  constructor(
    private readonly reads: Reads,
    private readonly state: CheckState,
  ) {
    this.now = TrackingView.prototype.trackedNow.bind(this);
    this.get = TrackingView.prototype.trackedGet.bind(this);
    this.list = TrackingView.prototype.trackedList.bind(this);
    this.external = TrackingView.prototype.trackedExternal.bind(this) as WorldView["external"];
  }

  get revision(): number {
    this.reads.volatile = this.reads.any = true;
    return this.state.currentWorld().revision;
  }

  private trackedNow(): number {
    this.reads.volatile = this.reads.any = true;
    return this.state.currentWorld().now();
  }

  // Once a predicate is volatile it runs at every check, so what else it reads need not be recorded.
  private trackedGet(ref: Parameters<WorldView["get"]>[0]): KubeObject | undefined {
    const reads = this.reads;
    reads.any = true;
    if (!reads.volatile) reads.objects.add(objectKey(ref.apiVersion, ref.kind, ref.name));
    return this.state.currentWorld().get(ref);
  }

  private trackedList(options: Parameters<WorldView["list"]>[0]): readonly KubeObject[] {
    const reads = this.reads;
    reads.any = true;
    if (!reads.volatile) reads.kinds.add(kindKey(options.apiVersion, options.kind));
    return this.state.currentWorld().list(options);
  }

  private trackedExternal(name: string): unknown {
    const reads = this.reads;
    reads.any = true;
    if (!reads.volatile) reads.externals.add(name);
    return this.state.currentWorld().external(name);
  }
}

/** The step a predicate sees, marking its reads volatile when it looks (a value that depends on the step). */
class TrackingStep implements LastStep {
  constructor(
    private readonly reads: Reads,
    private readonly state: CheckState,
  ) {}

  get step(): number {
    this.touch();
    return this.state.last.step;
  }

  get actor(): string {
    this.touch();
    return this.state.last.actor;
  }

  get writes(): readonly StepWrite[] {
    this.touch();
    return this.state.last.writes;
  }

  private touch(): void {
    this.reads.volatile = this.reads.any = true;
  }
}

/** Per property: what it read last time, its last value, and whether a write since touched its reads. */
interface Tracked {
  readonly reads: Reads;
  readonly view: WorldView;
  readonly step: LastStep;
  value: boolean;
  /** Must run at the next check: never ran, or something it read was written since. */
  stale: boolean;
}

/**
 * Evaluates properties and keeps their counters. A predicate that throws counts as false, and the first error is
 * kept (`thrown`): a run that meets one ends in a scenario error rather than a finding about the controller.
 */
export class PropertyMonitor {
  readonly properties: readonly Property[];
  /** The first exception a predicate threw, and the property's name. */
  thrown: { property: string; error: unknown } | undefined;
  private readonly counters: PropertyCounter[];
  private readonly tracked: Tracked[];
  /** The world and the step of the check in progress, for the tracking views and steps. */
  private readonly state = new CheckState();
  /** The change feed and where it stood at the last check; undefined while no feed is known. */
  private feed: ChangeFeed | undefined;
  private cursor: ChangeCursor | undefined;
  private readonly marks = new Map<string, number>();
  /** Deadlines counted from marks made and not yet judged, earliest first. */
  private pending: MarkedDeadline[] = [];

  constructor(properties: readonly Property[]) {
    const names = new Set<string>();
    for (const property of properties) {
      assert(!names.has(property.name), "property names are unique");
      names.add(property.name);
    }
    this.properties = properties;
    this.counters = properties.map((p) => ({ name: p.name, kind: p.kind, evaluations: 0, failures: 0, everHeld: false }));
    this.tracked = properties.map(() => {
      const reads = new Reads();
      return { reads, view: new TrackingView(reads, this.state), step: new TrackingStep(reads, this.state), value: false, stale: true };
    });
  }

  /** Checks every `always` property after step `last`; returns the first that fails. */
  checkSafety(world: WorldView, last: LastStep = unknownStep): AlwaysProperty | undefined {
    this.state.last = last;
    this.sync(world);
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
    this.sync(world);
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
  checkMarkedDeadlines(world: WorldView, timeMs: number, last: LastStep = this.state.last): MissedDeadline | undefined {
    this.state.last = last;
    if (this.pending.length === 0) return undefined;
    this.sync(world);
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
    this.sync(world);
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

  /**
   * Brings every property's `stale` flag up to `world`: the writes since the last check are compared with what
   * each property read. A world without a change feed (or a different one) makes every property stale.
   */
  private sync(world: WorldView): void {
    this.state.world = world;
    const feed = changeFeedOf(world);
    const changes = feed !== undefined && feed === this.feed && this.cursor !== undefined ? feed.since(this.cursor) : undefined;
    for (const tracked of this.tracked) {
      if (!tracked.stale && (changes === undefined || tracked.reads.touchedBy(changes))) tracked.stale = true;
    }
    this.feed = feed;
    this.cursor = feed?.cursor();
  }

  private evaluate(index: number, world: WorldView): boolean {
    const tracked = this.tracked[index]!;
    assert(this.state.world === world, "a property is evaluated on the world its check synchronised");
    if (!tracked.stale) return tracked.value;
    const counter = this.counters[index]!;
    const reads = tracked.reads;
    reads.clear();
    let holds: boolean;
    try {
      holds = this.properties[index]!.predicate(tracked.view, tracked.step) === true;
    } catch (error) {
      holds = false;
      this.thrown ??= { property: this.properties[index]!.name, error };
      // What a throwing predicate read before it threw says little about what it depends on.
      reads.volatile = true;
    }
    tracked.value = holds;
    tracked.stale = false;
    counter.evaluations++;
    if (holds) counter.everHeld = true;
    else counter.failures++;
    return holds;
  }
}
