// The scheduler's core and the one place steps are executed: the ready list, every actor's life (start,
// pause, crash, exit, restart), what each actor waits for, watches, external state, garbage collection
// steps and the trace. Nothing outside this file writes its state; the client, watches, faults and the run
// loop call its methods.
import { assert } from "../api/assert.ts";
import type { ApiError } from "../api/errors.ts";
import { ProcessExit } from "../api/exit.ts";
import { cloneJson, deepFreeze } from "../api/json.ts";
import type { Store } from "../store/types.ts";
import { VirtualClock, type TimerEntry } from "./clock.ts";
import { initialLife, isAlive, stepLife, statusWord, type Life, type LifeInput } from "./lifecycle.ts";
import type { StepWaits } from "./host.ts";
import type { Rng } from "./rng.ts";
import { timerIndexBase, type ReadyStep, type StepKind, type StepOrigin } from "./strategy.ts";
import { TraceWriter, canonicalLine, type StepFacts, type TraceMode, type TraceRecord } from "./trace.ts";
import type { ActorContext, ActorDefinition, CrashContext, RunStatus } from "./types.ts";
/**
 * A watch as the kernel and the watch faults see it: the client's `SimWatch`, or a watch on a module's in-process
 * connection (src/module/watch.ts).
 */
export interface KernelWatch {
  readonly id: string;
  /** The actor incarnation that opened it. */
  readonly owner: ActorState;
  /** Neither ended by the server nor closed by the client. */
  readonly open: boolean;
  /** The kind of the collection it follows (absent where a watch cannot fail mid-stream). */
  readonly kind?: string;
  /** Fault: the server ends it normally. */
  end(): void;
  /** Fault: the server fails it with this error (the client relists instead of resuming). */
  error?(error: ApiError): void;
  /** Fault: its next delivery waits `ms` of virtual time. */
  delay(ms: number): void;
  /** Crash: everything vanishes at once. */
  kill(): void;
}

/** A ready step: what the strategy sees plus what runs. `run` returns the short result for the trace. */
export interface Step extends ReadyStep {
  seq: number;
  actor: string;
  kind: StepKind;
  label: string;
  ref?: string;
  write?: boolean;
  /** Typed facts copied into the step's trace record (verb, object, request number, ...). */
  facts?: StepFacts;
  /** The actor incarnation this step belongs to; crash removes it. Absent for sim, gc and restart steps. */
  owner?: ActorState;
  /** Set for a promoted timer. */
  timer?: TimerEntry;
  /** Where the step comes from: only when the kernel keeps origins. */
  origin?: StepOrigin;
  /** For a watch delivery: the collection its watch follows (see `ReadyStep.collection`). */
  collection?: StepFacts["object"];
  /**
   * The step runs only the simulator's and the store's code (a client request applied to the store, a garbage
   * collection): it settles no actor's promise. When the store runs no code of others either
   * (`Store.selfContained`), it leaves nothing to wait for, and the next step follows without a wait.
   */
  storeOnly?: boolean;
  run(): string;
}

/** What the running step (or, between steps, the set-up and faults) has made so far: for origins. */
interface Maker {
  readonly origin: StepOrigin | undefined;
  steps: number;
  timers: number;
}

/** Faults armed for an actor's next request or next `resourceVersion: "0"` read. */
export interface Armed {
  failCode?: number;
  loseResponse?: boolean;
  staleLagRevisions?: number;
  /** Serve the next cached read at this revision (time travel after a restart). */
  staleAtRevision?: number;
  /** Only a cached read of this kind takes `staleAtRevision` (per-kind time travel); other kinds read fresh. */
  staleKind?: string;
  /** With `staleKind`: how long the watch that follows the stale read delivers nothing (see `WatchHold`). */
  staleCatchUpMs?: number;
  /** The watch of a kind from a revision that a per-kind stale read served, and how long it is held. */
  watchHold?: WatchHold;
}

/**
 * A watch that follows a per-kind stale list from its revision is served by the same lagging watch cache: it
 * delivers nothing until that cache catches up, `ms` later.
 */
export interface WatchHold {
  kind: string;
  revision: number;
  ms: number;
}

export interface CrashOptions {
  /** Time travel: the restarted incarnation's first cached read is served at this older revision. */
  relistAtRevision?: number;
  /**
   * Per-kind time travel: only the first cached read of this kind is served at `relistAtRevision` (kube-apiserver
   * keeps one watch cache per resource, each at its own revision); the other kinds read fresh.
   */
  relistKind?: string;
  /** With `relistKind`: the watch from the stale list's revision delivers nothing for this long. Default 0. */
  relistCatchUpMs?: number;
}

/** What one incarnation holds in the simulation: a crash or exit drops it whole, and the next starts empty. */
interface Incarnation {
  /** Ready steps it owns (promoted timers excluded: they stay in `timers`). */
  readyCount: number;
  /** Its timers not yet fired or cancelled. */
  readonly timers: Set<TimerEntry>;
  /** Its watch iterations waiting for an event. */
  waiters: number;
  readonly watches: Set<KernelWatch>;
  /** Faults armed for its next request or next cached read. */
  armed: Armed;
}

function emptyIncarnation(): Incarnation {
  return { readyCount: 0, timers: new Set(), waiters: 0, watches: new Set(), armed: {} };
}

interface ActorRecord {
  readonly def: ActorDefinition;
  readonly name: string;
  life: Life;
  /** Numbers watches across incarnations, so a watch id is never reused. */
  watchCounter: number;
  /** What the current incarnation holds. */
  held: Incarnation;
  /**
   * How far the wall clock of the actor's machine is from the simulation's (ms, ahead when positive): set by clock
   * faults, kept across crashes and restarts (the clock is the machine's, not the process's).
   */
  clockOffsetMs: number;
}

/** An actor as the rest of the simulator sees it: read-only; the kernel's methods change it. */
export interface ActorState {
  readonly def: ActorDefinition;
  readonly name: string;
  readonly life: Life;
}

export interface Fatal {
  status: RunStatus;
  message: string;
  actor?: string;
  /** actor-error: what the actor threw, for reports to show where. */
  error?: unknown;
}

/** What the kernel needs from the simulation around it: the contexts it hands to actor code. */
export interface KernelHooks {
  context(state: ActorState): ActorContext;
  crashContext(state: ActorState): CrashContext;
}

export interface KernelOptions {
  clock: VirtualClock;
  store: Store;
  rng: Rng;
  traceMode: TraceMode;
  /** Events queued per watch before the server closes it. */
  watchQueueMax: number;
  /** Ready steps (all actors) beyond which the run fails. */
  readyStepsMax: number;
  /** The range a request's latency is drawn from (virtual ms between its request step and its response). */
  requestLatencyMs: readonly [number, number];
  hooks: KernelHooks;
  /** How a step waits for the microtasks and ticks it released (the simulation host's). */
  waits: StepWaits;
  /** Give every step its `origin` (for a strategy that orders by it). Default false. */
  origins?: boolean;
}

/** A timer as the kernel keeps it: what its firing is traced with, or the step it makes ready instead. */
interface KernelTimer extends TimerEntry {
  /** Typed facts of a timer whose firing is more than a timer (a delayed watch delivery, a restart). */
  facts?: StepFacts;
  /** The collection of a delayed watch delivery (see `ReadyStep.collection`). */
  collection?: StepFacts["object"];
  /** The step that becomes ready when the timer is due (a response after its request's latency). */
  deferredStep?: Omit<Step, "seq"> | undefined;
  /** The origin its step gets when promoted, fixed when the timer is set. */
  origin?: StepOrigin;
}

/** The callback of a deferred step's timer: promotion takes the step instead of firing the timer. */
function neverFired(): void {
  throw new Error("a deferred step's timer is promoted, never fired");
}

/** The step of a promoted timer: runs its callback. */
function fireTimer(timer: TimerEntry): string {
  timer.state = "fired";
  timer.fire();
  return "fired";
}

/** Default delay before a crashed or exited actor starts again. */
export const RESTART_DELAY_MS_DEFAULT = 1000;

/** The facts of every restart's start record (copied into the record, so one frozen object serves them all). */
const restartFacts: StepFacts = Object.freeze({ restart: true });

/** External writes the kernel remembers by name, for the property monitor's change feed. */
const EXTERNAL_LOG_MAX = 4096;

type StepRecord = Omit<TraceRecord, "step" | "timeMs">;

export class Kernel {
  readonly clock: VirtualClock;
  readonly store: Store;
  readonly rng: Rng;
  readonly trace: TraceWriter;
  readonly watchQueueMax: number;
  private readonly readyStepsMax: number;
  private readonly hooks: KernelHooks;
  private readonly waits: StepWaits;
  private readonly requestLatencyMs: readonly [number, number];
  /**
   * One latency stream per actor incarnation (`latency/<actor>/<incarnation>`), so latencies never shift the
   * draws of schedules, faults or actors, and one actor's requests never change another's latencies: requests of
   * different actors stay independent, as the bounded search's reduction needs.
   */
  private readonly latencyRngs = new Map<ActorState, { incarnation: number; rng: Rng }>();
  private readonly actorsByName = new Map<string, ActorRecord>();
  private readonly externals = new Map<string, unknown>();
  /** Names of the external cells written, in order, from write number `externalLogBase` on (bounded). */
  private externalLog: string[] = [];
  private externalLogBase = 0;
  /** Open watches by id, for watch faults. */
  private readonly openWatches = new Map<string, KernelWatch>();
  private readonly readySteps: Step[] = [];
  private readonly paused = new Set<ActorRecord>();
  /**
   * While some actor is paused: the ready steps of the others, in ready order, kept in step with `readySteps`
   * so that choosing costs no pass over every ready step. Undefined when no actor is paused or after a pause
   * begins or ends (rebuilt by `eligible`).
   */
  private eligibleSteps: Step[] | undefined;
  /** The ready step of each promoted timer, for withdrawing it when the timer is cancelled. */
  private readonly timerSteps = new Map<TimerEntry, Step>();
  /** Withdraws the ready step of a promoted timer that is cancelled: one function for every timer. */
  private readonly withdrawTimerFn = (entry: TimerEntry): void => this.withdrawTimer(entry);
  private stepNumber = 0;
  /** Actors whose wall clock is off the simulation's: while none is, a wall reading costs no lookup. */
  private skewedActors = 0;
  /** The actor whose step is running, "sim"/"gc" for others, undefined between steps. */
  private currentActor: string | undefined;
  private inRun = false;
  private fatalOutcome: Fatal | undefined;
  private gcQueued = false;
  private onRecord: ((record: TraceRecord) => void) | undefined;
  private sequence = 0;
  private requestCount = 0;
  private pendingLogs: StepRecord[] = [];
  private readonly origins: boolean;
  /** What is made outside any step: set-up, the steps of faults. */
  private readonly rootMaker: Maker = { origin: undefined, steps: 0, timers: 0 };
  private maker: Maker = this.rootMaker;

  constructor(options: KernelOptions) {
    assert(options.watchQueueMax > 0, "watchQueueMax is positive");
    assert(options.readyStepsMax > 0, "readyStepsMax is positive");
    this.clock = options.clock;
    this.store = options.store;
    this.rng = options.rng;
    this.trace = new TraceWriter(options.traceMode);
    this.watchQueueMax = options.watchQueueMax;
    this.readyStepsMax = options.readyStepsMax;
    this.hooks = options.hooks;
    this.waits = options.waits;
    const [min, max] = options.requestLatencyMs;
    assert(Number.isInteger(min) && min >= 0 && Number.isInteger(max) && max >= min, "requestLatencyMs is [min, max] in whole ms, 0 <= min <= max");
    this.requestLatencyMs = options.requestLatencyMs;
    this.origins = options.origins === true;
  }

  /** The latency of a request of `state`'s current incarnation, drawn when it is applied. */
  drawLatencyMs(state: ActorState): number {
    const [min, max] = this.requestLatencyMs;
    if (max === 0) return 0;
    const incarnation = state.life.incarnation;
    let stream = this.latencyRngs.get(state);
    if (stream === undefined || stream.incarnation !== incarnation) {
      stream = { incarnation, rng: this.rng.fork(`latency/${state.name}/${incarnation}`) };
      this.latencyRngs.set(state, stream);
    }
    return stream.rng.between(min, max);
  }

  // ---- Read-only views -------------------------------------------------------------------------------

  /** The scheduled step being executed (or about to be). */
  get stepIndex(): number {
    return this.stepNumber;
  }

  get fatal(): Fatal | undefined {
    return this.fatalOutcome;
  }

  get ready(): readonly Step[] {
    return this.readySteps;
  }

  actor(name: string): ActorState | undefined {
    return this.actorsByName.get(name);
  }

  actors(): IterableIterator<ActorState> {
    return this.actorsByName.values();
  }

  isPaused(state: ActorState): boolean {
    return this.paused.has(state as ActorRecord);
  }

  /** The open watch with this id, if any. */
  watch(id: string): KernelWatch | undefined {
    return this.openWatches.get(id);
  }

  watches(): IterableIterator<KernelWatch> {
    return this.openWatches.values();
  }

  /** True while code of `incarnation` may still act: the actor is alive and has not been restarted since. */
  isCurrent(state: ActorState, incarnation: number): boolean {
    return state.life.incarnation === incarnation && isAlive(state.life);
  }

  /** True while an actor incarnation has something in the simulation that can resume it. */
  busy(state: ActorState): boolean {
    const { held } = state as ActorRecord;
    return held.readyCount > 0 || held.timers.size > 0 || held.waiters > 0;
  }

  // ---- Actors ----------------------------------------------------------------------------------------

  addActor(def: ActorDefinition): void {
    assert(!this.actorsByName.has(def.name), `actor "${def.name}" is added once`);
    const state: ActorRecord = { def, name: def.name, life: initialLife, watchCounter: 0, held: emptyIncarnation(), clockOffsetMs: 0 };
    this.actorsByName.set(state.name, state);
    this.enqueue({ actor: state.name, kind: "start", label: `start ${state.name}`, run: () => this.start(state, { type: "start" }) });
  }

  private transition(state: ActorRecord, input: LifeInput): void {
    state.life = stepLife(state.life, input);
  }

  /** The start step of an incarnation: runs `start(ctx)` and watches how its promise settles. */
  private start(state: ActorRecord, input: LifeInput): string {
    this.transition(state, input);
    const incarnation = state.life.incarnation;
    const settle = (error?: unknown) => {
      if (!this.isCurrent(state, incarnation) || state.life.phase !== "running") return;
      if (error instanceof ProcessExit) return this.exit(state, error);
      this.transition(state, { type: "settled" });
      if (error !== undefined) {
        const message = error instanceof Error ? error.message : String(error);
        this.fail({ status: "actor-error", actor: state.name, message: `actor ${state.name} failed: ${message}`, error });
      }
    };
    try {
      Promise.resolve(state.def.start(this.hooks.context(state))).then(
        () => settle(),
        (error) => settle(error ?? "rejected"),
      );
    } catch (error) {
      settle(error ?? "threw");
    }
    return incarnation === 0 ? "started" : `restarted #${incarnation}`;
  }

  // ---- Wall clocks -----------------------------------------------------------------------------------

  /** The wall time `state`'s machine reads now: the simulation's time plus its clock's offset. */
  wallNow(state: ActorState): number {
    return this.clock.now() + (state as ActorRecord).clockOffsetMs;
  }

  /** The wall time the code running now reads: its actor's machine's, the simulation's outside actors' steps. */
  currentWallNow(): number {
    const now = this.clock.now();
    if (this.skewedActors === 0 || this.currentActor === undefined) return now;
    const state = this.actorsByName.get(this.currentActor);
    return state === undefined ? now : now + state.clockOffsetMs;
  }

  /** The offset of `state`'s wall clock from the simulation's (ms, ahead when positive). */
  clockOffsetOf(state: ActorState): number {
    return (state as ActorRecord).clockOffsetMs;
  }

  /**
   * Sets the offset of `state`'s wall clock (a skew, or a step added to the offset it had). Only wall readings move:
   * timers, sleeps, monotonic readings and the store's timestamps stay on the simulation's clock.
   */
  setClockOffset(state: ActorState, offsetMs: number): void {
    assert(Number.isSafeInteger(offsetMs), "a wall-clock offset is a whole number of ms");
    const record = state as ActorRecord;
    if (record.clockOffsetMs !== 0) this.skewedActors--;
    record.clockOffsetMs = offsetMs;
    if (offsetMs !== 0) this.skewedActors++;
    assert(this.skewedActors >= 0 && this.skewedActors <= this.actorsByName.size, "skewed actors are counted once each");
  }

  /** Why a fault cannot hit `state` now ("skipped: down"), or undefined when it can. */
  notFaultable(state: ActorState): string | undefined {
    return isAlive(state.life) ? undefined : `skipped: ${statusWord(state.life)}`;
  }

  /** SIGKILL: the incarnation's steps, timers and watches vanish; applied writes stay; a restart is scheduled. */
  crash(state: ActorState, options: CrashOptions = {}): string {
    const record = state as ActorRecord;
    const skipped = this.notFaultable(record);
    if (skipped !== undefined) return skipped;
    this.endIncarnation(record);
    record.def.onCrash?.(this.hooks.crashContext(record));
    const delayMs = this.scheduleRestart(record);
    if (options.relistAtRevision === undefined) return `crashed, restart in ${delayMs}ms`;
    // Armed faults survive the restart (a crash clears them first): the new incarnation's first cached read.
    record.held.armed.staleAtRevision = options.relistAtRevision;
    if (options.relistKind === undefined) return `crashed, restart in ${delayMs}ms, first cached read at revision ${options.relistAtRevision}`;
    record.held.armed.staleKind = options.relistKind;
    if ((options.relistCatchUpMs ?? 0) > 0) record.held.armed.staleCatchUpMs = options.relistCatchUpMs!;
    return `crashed, restart in ${delayMs}ms, first cached read of ${options.relistKind} at revision ${options.relistAtRevision}`;
  }

  /** The actor's code exited on purpose: everything of the incarnation vanishes as in a crash, then it restarts. */
  private exit(state: ActorRecord, exit: ProcessExit): void {
    this.endIncarnation(state);
    const delayMs = this.scheduleRestart(state);
    const revision = this.store.revision;
    const label = `exit ${state.name}: ${exit.message}`;
    this.log({ actor: state.name, kind: "log", label, revisionBefore: revision, revisionAfter: revision, result: `exit code ${exit.exitCode}, restart in ${delayMs}ms` });
  }

  private endIncarnation(state: ActorRecord): void {
    // What a crash withdraws is every ready step whose owner is the actor (promoted timers included), found by
    // one pass over the ready list: crashes are rare, while keeping a set of them cost a set update per step.
    // Removal order does not matter: each step leaves the ready list wherever it is.
    const { held } = state;
    for (const step of this.readySteps.filter((ready) => ready.owner === state)) this.remove(step);
    for (const entry of [...held.timers]) this.cancelTimer(state, entry);
    for (const watch of [...held.watches]) watch.kill();
    assert(held.readyCount === 0, "a crashed actor has no ready steps");
    assert(held.timers.size === 0, "a crashed actor has no timers");
    // Everything else the incarnation held (watch waiters, armed faults) goes with it.
    state.held = emptyIncarnation();
    if (this.paused.delete(state)) this.eligibleSteps = undefined;
    this.transition(state, { type: "crash" });
  }

  private scheduleRestart(state: ActorRecord): number {
    const delayMs = state.def.restartDelayMs ?? RESTART_DELAY_MS_DEFAULT;
    const entry: KernelTimer = this.clock.schedule(delayMs, () => void this.start(state, { type: "restart" }), state.name, `restart ${state.name}`, "start");
    entry.facts = restartFacts;
    this.stampTimer(entry);
    return delayMs;
  }

  /** A stall: the actor's steps are not eligible until `now + ms`. */
  pause(state: ActorState, ms: number): string {
    const record = state as ActorRecord;
    const skipped = this.notFaultable(record);
    if (skipped !== undefined) return skipped;
    this.transition(record, { type: "pause", untilMs: this.clock.now() + ms });
    this.paused.add(record);
    this.eligibleSteps = undefined;
    return `paused until +${ms}ms`;
  }

  /** Arms faults for the actor's next request (or next cached read). */
  arm(state: ActorState, armed: Armed): string {
    const record = state as ActorRecord;
    const skipped = this.notFaultable(record);
    if (skipped !== undefined) return skipped;
    Object.assign(record.held.armed, armed);
    return "armed";
  }

  /** Takes (disarms) the request faults armed for `state`: a failure code and a lost response. */
  takeRequestFaults(state: ActorState): { failCode?: number; loseResponse?: boolean } {
    const armed = (state as ActorRecord).held.armed;
    const taken: { failCode?: number; loseResponse?: boolean } = {};
    if (armed.failCode !== undefined) taken.failCode = armed.failCode;
    if (armed.loseResponse === true) taken.loseResponse = true;
    delete armed.failCode;
    delete armed.loseResponse;
    return taken;
  }

  /** Takes the failure code armed for `state`, leaving a lost response armed. */
  takeFailCode(state: ActorState): number | undefined {
    const armed = (state as ActorRecord).held.armed;
    const code = armed.failCode;
    // Every request asks, and nearly always nothing is armed: no delete then (it can change the object's shape).
    if (code !== undefined) delete armed.failCode;
    return code;
  }

  takeLoseResponse(state: ActorState): boolean {
    const armed = (state as ActorRecord).held.armed;
    if (armed.loseResponse === undefined) return false;
    const lose = armed.loseResponse === true;
    delete armed.loseResponse;
    return lose;
  }

  /**
   * Takes the staleness armed for `state`'s next cached read of `kind`: a lag behind the latest, or a revision. A
   * revision armed for another kind stays armed for that kind's first cached read.
   */
  takeStale(state: ActorState, kind: string): { lagRevisions?: number; atRevision?: number; catchUpMs?: number } {
    const armed = (state as ActorRecord).held.armed;
    const stale: { lagRevisions?: number; atRevision?: number; catchUpMs?: number } = {};
    if (armed.staleLagRevisions !== undefined) stale.lagRevisions = armed.staleLagRevisions;
    delete armed.staleLagRevisions;
    if (armed.staleKind !== undefined && armed.staleKind !== kind) return stale;
    if (armed.staleAtRevision !== undefined) stale.atRevision = armed.staleAtRevision;
    if (armed.staleCatchUpMs !== undefined) stale.catchUpMs = armed.staleCatchUpMs;
    delete armed.staleAtRevision;
    delete armed.staleKind;
    delete armed.staleCatchUpMs;
    return stale;
  }

  /** Holds `state`'s next watch of `hold.kind` from `hold.revision` (see `WatchHold`). */
  holdWatch(state: ActorState, hold: WatchHold): void {
    assert(hold.ms > 0, "a watch hold lasts a positive time");
    (state as ActorRecord).held.armed.watchHold = hold;
  }

  /** How long `state`'s watch of `kind` from `revision` is held (0: not held); a match takes the hold. */
  takeWatchHold(state: ActorState, kind: string, revision: number): number {
    const armed = (state as ActorRecord).held.armed;
    const hold = armed.watchHold;
    if (hold === undefined || hold.kind !== kind || hold.revision !== revision) return 0;
    delete armed.watchHold;
    return hold.ms;
  }

  // ---- Watches ---------------------------------------------------------------------------------------

  /** Registers a new watch of `owner`'s current incarnation; returns its id `actor/incarnation/wN`. */
  registerWatch(owner: ActorState, watch: KernelWatch): string {
    const record = owner as ActorRecord;
    const id = `${record.name}/${record.life.incarnation}/w${record.watchCounter++}`;
    assert(!this.openWatches.has(id), "watch ids are unique");
    record.held.watches.add(watch);
    this.openWatches.set(id, watch);
    return id;
  }

  /** The server ended the watch: faults can no longer target it. */
  unregisterWatch(id: string): void {
    this.openWatches.delete(id);
  }

  /** The actor has read the watch's end: it no longer belongs to the incarnation. */
  releaseWatch(owner: ActorState, watch: KernelWatch): void {
    (owner as ActorRecord).held.watches.delete(watch);
    this.openWatches.delete(watch.id);
  }

  /** One watch iteration of `owner` starts (+1) or stops (-1) waiting for an event. */
  waiting(owner: ActorState, delta: 1 | -1): void {
    const record = owner as ActorRecord;
    record.held.waiters += delta;
    assert(record.held.waiters >= 0, "an actor's watch waiters stay non-negative");
  }

  // ---- External state --------------------------------------------------------------------------------

  defineExternal(name: string, initial: unknown): void {
    assert(!this.externals.has(name), `external "${name}" is defined once`);
    this.externals.set(name, deepFreeze(cloneJson(initial)));
  }

  hasExternal(name: string): boolean {
    return this.externals.has(name);
  }

  getExternal(name: string): unknown {
    const value = this.externals.get(name);
    // On the hot path of every property check: build the message only when the assertion fails.
    if (value === undefined) assert(this.externals.has(name), `external "${name}" is defined`);
    return value;
  }

  setExternal(name: string, value: unknown): void {
    assert(this.externals.has(name), `external "${name}" is defined`);
    this.externals.set(name, deepFreeze(cloneJson(value)));
    this.logExternalWrite(name);
  }

  /** External writes so far: a cursor for `externalWritesSince`. */
  get externalWriteCount(): number {
    return this.externalLogBase + this.externalLog.length;
  }

  /** The names of the cells written since write number `count`; undefined when the log no longer reaches back. */
  externalWritesSince(count: number): readonly string[] | undefined {
    assert(count <= this.externalWriteCount, "an external write cursor is not ahead of the log");
    if (count < this.externalLogBase) return undefined;
    return this.externalLog.slice(count - this.externalLogBase);
  }

  private logExternalWrite(name: string): void {
    this.externalLog.push(name);
    // Readers look a step or two back; keeping the newest half bounds the log without losing them.
    if (this.externalLog.length <= EXTERNAL_LOG_MAX) return;
    const dropped = this.externalLog.length >> 1;
    this.externalLog = this.externalLog.slice(dropped);
    this.externalLogBase += dropped;
  }

  /** A fresh number for a request, carried by its request and response records to pair them. */
  nextRequestSeq(): number {
    return this.requestCount++;
  }

  // ---- Steps and timers ------------------------------------------------------------------------------

  enqueue(step: Omit<Step, "seq">): Step {
    assert(step.owner === undefined || isAlive(step.owner.life), "an owned step belongs to a live incarnation");
    const full = step as Step;
    full.seq = this.sequence++;
    if (this.origins && full.origin === undefined) full.origin = { readyMs: this.clock.now(), parent: this.maker.origin, index: this.maker.steps++ };
    this.readySteps.push(full);
    if (full.owner !== undefined && full.timer === undefined) (full.owner as ActorRecord).held.readyCount++;
    if (full.timer !== undefined) this.timerSteps.set(full.timer, full);
    if (this.eligibleSteps !== undefined && !this.pausedStep(full)) this.eligibleSteps.push(full);
    if (this.readySteps.length > this.readyStepsMax) {
      this.fail({ status: "sim-error", message: `more than ${this.readyStepsMax} ready steps` });
    }
    return full;
  }

  /** Takes a step out of the ready list (it ran, or it was withdrawn). */
  remove(step: Step, hint = -1): void {
    const ready = this.readySteps;
    const index = ready[hint] === step ? hint : ready.indexOf(step);
    if (index < 0) return;
    // shift() lets V8 trim the array's front in place; splice(0, 1) would move every element.
    if (index === 0) ready.shift();
    else ready.splice(index, 1);
    if (step.owner !== undefined && step.timer === undefined) {
      const owner = step.owner as ActorRecord;
      owner.held.readyCount--;
      assert(owner.held.readyCount >= 0, "actor ready count stays non-negative");
    }
    if (step.timer !== undefined) this.timerSteps.delete(step.timer);
    const eligible = this.eligibleSteps;
    if (eligible !== undefined) {
      const at = eligible[0] === step ? 0 : eligible.indexOf(step);
      if (at === 0) eligible.shift();
      else if (at > 0) eligible.splice(at, 1);
    }
  }

  /** Schedules a timer owned by an actor incarnation (cancelled by its crash). */
  scheduleFor(owner: ActorState, ms: number, fn: () => void, label: string, kind: StepKind = "timer", about?: Pick<Step, "facts" | "collection">): TimerEntry {
    const record = owner as ActorRecord;
    assert(isAlive(record.life), "only a live actor schedules timers");
    const entry = this.clock.schedule(
      ms,
      () => {
        record.held.timers.delete(entry);
        fn();
      },
      record.name,
      label,
      kind,
    );
    record.held.timers.add(entry);
    if (about?.facts !== undefined) (entry as KernelTimer).facts = about.facts;
    if (about?.collection !== undefined) (entry as KernelTimer).collection = about.collection;
    entry.onCancelPromoted = this.withdrawTimerFn;
    this.stampTimer(entry);
    return entry;
  }

  cancelTimer(owner: ActorState | undefined, entry: TimerEntry): void {
    (owner as ActorRecord | undefined)?.held.timers.delete(entry);
    this.clock.cancel(entry);
  }

  private withdrawTimer(entry: TimerEntry): void {
    const step = this.timerSteps.get(entry);
    if (step !== undefined) this.remove(step);
  }

  /**
   * Makes `step` ready `ms` from now (now when `ms` is 0): the step itself, not a timer firing, is what the
   * strategy then chooses and the trace records. It belongs to its owner's incarnation like a timer: a crash
   * before it is due removes it.
   */
  enqueueAfter(ms: number, step: Omit<Step, "seq"> & { owner: ActorState }): void {
    assert(ms >= 0, "a deferred step waits a non-negative time");
    if (ms === 0) {
      this.enqueue(step);
      return;
    }
    // A timer of the owner's incarnation like any other, but it never fires: `promoteDue` makes `step` ready
    // instead, so it needs none of `scheduleFor`'s firing wrapper.
    const owner = step.owner as ActorRecord;
    assert(isAlive(owner.life), "only a live actor schedules timers");
    const entry: KernelTimer = this.clock.schedule(ms, neverFired, owner.name, step.label, step.kind);
    owner.held.timers.add(entry);
    entry.onCancelPromoted = this.withdrawTimerFn;
    entry.deferredStep = step;
    this.stampTimer(entry);
  }

  /** Fixes the origin a timer's step will have: made by the running step, ready when the timer is due. */
  private stampTimer(entry: KernelTimer): void {
    if (this.origins) entry.origin = { readyMs: entry.dueAt, parent: this.maker.origin, index: timerIndexBase + this.maker.timers++ };
  }

  /** Moves every due timer into the ready list, in `(dueAt, sequence)` order. */
  promoteDue(): void {
    for (let entry = this.clock.takeDue(); entry !== undefined; entry = this.clock.takeDue()) {
      const timer: KernelTimer = entry;
      const owner = this.actorsByName.get(timer.owner);
      const step = timer.deferredStep;
      if (step !== undefined) {
        this.promoteDeferred(timer, step, owner);
        continue;
      }
      const fired: Omit<Step, "seq"> = { actor: timer.owner, kind: timer.kind as StepKind, label: timer.label, timer, run: () => fireTimer(timer) };
      if (owner !== undefined && owner.held.timers.has(timer)) fired.owner = owner;
      if (timer.facts !== undefined) fired.facts = timer.facts;
      if (timer.collection !== undefined) fired.collection = timer.collection;
      if (timer.origin !== undefined) fired.origin = timer.origin;
      this.enqueue(fired);
    }
  }

  private promoteDeferred(timer: KernelTimer, step: Omit<Step, "seq">, owner: ActorRecord | undefined): void {
    timer.deferredStep = undefined;
    assert(owner !== undefined && owner.held.timers.has(timer), "a deferred step is still its owner's when due");
    owner.held.timers.delete(timer);
    timer.state = "fired";
    if (timer.origin !== undefined) step.origin = timer.origin;
    this.enqueue(step);
  }

  /** The ready steps a strategy may choose: all of them unless some actor is paused. */
  eligible(): readonly Step[] {
    if (this.paused.size === 0) return this.readySteps;
    const now = this.clock.now();
    for (const state of this.paused) {
      if (state.life.pausedUntil > now) continue;
      this.paused.delete(state);
      this.eligibleSteps = undefined;
      this.transition(state, { type: "resume" });
    }
    if (this.paused.size === 0) return this.readySteps;
    // Rebuilt only when a pause begins or ends; `enqueue` and `remove` keep it current in between.
    this.eligibleSteps ??= this.readySteps.filter((step) => !this.pausedStep(step));
    return this.eligibleSteps;
  }

  /** A step of a paused actor: not eligible until the pause ends. */
  private pausedStep(step: Step): boolean {
    if (this.paused.size === 0) return false;
    const state = this.actorsByName.get(step.actor);
    return state !== undefined && this.paused.has(state);
  }

  /** When something next becomes runnable without a step: a timer or the end of a pause. */
  nextWakeAt(): number | undefined {
    let wake = this.clock.nextDueAt();
    for (const state of this.paused) {
      if (wake === undefined || state.life.pausedUntil < wake) wake = state.life.pausedUntil;
    }
    return wake;
  }

  // ---- Running ---------------------------------------------------------------------------------------

  /** Records the first fatal outcome; later ones are consequences and are dropped. */
  fail(fatal: Fatal): void {
    this.fatalOutcome ??= fatal;
  }

  /** Checks that code of `state`'s incarnation runs inside one of its own steps. */
  checkCaller(state: ActorState, incarnation: number): boolean {
    if (!this.isCurrent(state, incarnation)) return false;
    if (!this.inRun || this.currentActor !== state.name) {
      this.fail({
        status: "outside-await",
        actor: state.name,
        message: `actor ${state.name} awaited something outside the simulation at step ${this.stepNumber}`,
      });
      return false;
    }
    return true;
  }

  /** Who an unhandled rejection belongs to: the actor whose step is running, else the simulator. */
  blame(): string {
    return this.currentActor ?? "sim";
  }

  beginRun(onRecord: (record: TraceRecord) => void): void {
    assert(!this.inRun, "one run at a time");
    assert(this.currentActor === undefined, "no step is running between runs");
    this.inRun = true;
    this.onRecord = onRecord;
  }

  endRun(): void {
    this.inRun = false;
    this.onRecord = undefined;
    this.currentActor = undefined;
  }

  /** Runs one chosen step to completion: its code, every microtask it releases, its record and its logs. */
  async execute(step: Step, hint: number): Promise<void> {
    assert(this.inRun, "steps execute inside a run");
    assert(this.currentActor === undefined, "one step executes at a time");
    assert(step.owner === undefined || isAlive(step.owner.life), "a crashed incarnation's steps never execute");
    this.remove(step, hint);
    const revisionBefore = this.store.revision;
    this.currentActor = step.actor;
    if (this.origins) this.maker = { origin: step.origin, steps: 0, timers: 0 };
    // Asked before the step runs: only code the store runs (an admission plugin, a listener) could open a watch
    // that is not inert, and a self-contained store runs none. After such a step both queues are as empty as the
    // last wait left them, and no rejection was made, so a wait would end at once having run nothing: the trace
    // is the same without it. (Its actor awaits its response: it is never judged to await the outside here.)
    const waits = step.storeOnly !== true || this.store.selfContained?.() !== true;
    const result = step.run();
    if (waits) {
      await this.waits.released();
      // An actor that waits on nothing of ours may wait on real I/O or a real timer: it gets the event-loop turn
      // every step had before steps waited in the microtask queue, so it is judged as it was then.
      if (this.awaitsOutside(step) !== undefined) await this.waits.turn();
    }
    const revisionAfter = this.store.revision;
    this.checkActor(step);
    if (revisionAfter !== revisionBefore || step.kind === "gc") this.queueGc();
    // Built whole here rather than spread into a second object by `record`: one allocation on every step's path,
    // with the same keys in the same order.
    const record: TraceRecord = { step: this.stepNumber, timeMs: this.clock.now(), actor: step.actor, kind: step.kind, label: step.label, revisionBefore, revisionAfter, result };
    if (step.ref !== undefined) record.ref = step.ref;
    if (step.write !== undefined) record.write = step.write;
    // The canonical line leaves the facts out, so it is built before they are added: its field reads then meet
    // a few record shapes instead of one per combination of facts.
    const line = canonicalLine(record);
    if (step.facts !== undefined) Object.assign(record, step.facts);
    this.trace.addLine(record, line);
    this.onRecord?.(record);
    this.currentActor = undefined;
    this.maker = this.rootMaker;
    this.flushLogs();
    this.stepNumber++;
  }

  /** Applies a fault before the current step, as its own record. `apply` returns who it concerned, what came of it and the record's facts. */
  async executeFault(label: string, apply: () => { actor: string; result: string; facts: StepFacts }): Promise<void> {
    assert(this.inRun, "faults are applied inside a run");
    assert(this.currentActor === undefined, "a fault is applied between steps");
    const revisionBefore = this.store.revision;
    this.currentActor = "sim";
    // What a fault makes comes from the fault, itself made outside any step.
    if (this.origins) this.maker = { origin: { readyMs: this.clock.now(), parent: undefined, index: this.rootMaker.steps++ }, steps: 0, timers: 0 };
    const { actor, result, facts } = apply();
    await this.waits.released();
    // A scenario fault may write the store (delete an owner, say): the collector notices that as it does any write.
    if (this.store.revision !== revisionBefore) this.queueGc();
    this.record({ actor, kind: "fault", label, revisionBefore, revisionAfter: this.store.revision, result, ...facts });
    this.currentActor = undefined;
    this.maker = this.rootMaker;
    this.flushLogs();
  }

  /** The step's actor if its start is still pending but it waits on nothing of ours: it awaits the outside. */
  private awaitsOutside(step: Step): ActorRecord | undefined {
    const state = this.actorsByName.get(step.actor);
    if (state === undefined || state.life.phase !== "running" || this.busy(state)) return undefined;
    return state;
  }

  /** After the step's released work has run: an actor that still awaits the outside ends the run. */
  private checkActor(step: Step): void {
    const state = this.awaitsOutside(step);
    if (state === undefined) return;
    const why = state.def.explainOutsideAwait?.();
    this.fail({
      status: "outside-await",
      actor: state.name,
      message: `actor ${state.name} awaited something outside the simulation at step ${this.stepNumber}${why === undefined ? "" : `: ${why}`}`,
    });
  }

  /** A garbage-collection step, once the store has garbage and none is queued. */
  queueGc(): void {
    if (this.gcQueued || !this.store.hasGarbage()) return;
    this.gcQueued = true;
    this.enqueue({
      actor: "gc",
      kind: "gc",
      label: "collect garbage",
      storeOnly: true,
      run: () => {
        this.gcQueued = false;
        return this.store.collectGarbage() ?? "nothing";
      },
    });
  }

  record(record: StepRecord): TraceRecord {
    const full = { step: this.stepNumber, timeMs: this.clock.now(), ...record } as TraceRecord;
    this.trace.add(full);
    this.onRecord?.(full);
    return full;
  }

  /** A log line: written after the record of the step it happened in, so a step's effects read in order. */
  log(record: StepRecord): void {
    if (this.currentActor === undefined) this.record(record);
    else this.pendingLogs.push(record);
  }

  /** Writes the log lines of the step just recorded. */
  private flushLogs(): void {
    if (this.pendingLogs.length === 0) return;
    const logs = this.pendingLogs;
    this.pendingLogs = [];
    for (const log of logs) this.record(log);
  }
}
