// The scheduler's core: the ready list, actor bookkeeping (what each actor is waiting for), the trace, and
// the one place steps are executed. The client, faults and the run loop are built on it.
import { assert } from "../api/assert.ts";
import type { Store } from "../store/types.ts";
import { VirtualClock, type TimerEntry } from "./clock.ts";
import type { Rng } from "./rng.ts";
import type { ReadyStep, StepKind } from "./strategy.ts";
import { TraceWriter, type TraceMode, type TraceRecord } from "./trace.ts";
import type { ActorDefinition, RunStatus } from "./types.ts";
import type { SimWatch } from "./watch.ts";

/** A ready step: what the strategy sees plus what runs. `run` returns the short result for the trace. */
export interface Step extends ReadyStep {
  seq: number;
  actor: string;
  kind: StepKind;
  label: string;
  ref?: string;
  write?: boolean;
  /** The actor incarnation this step belongs to; crash removes it. Absent for sim, gc and restart steps. */
  owner?: ActorState;
  /** Set for a promoted timer. */
  timer?: TimerEntry;
  run(): string;
}

export interface ActorState {
  readonly def: ActorDefinition;
  readonly name: string;
  /** 0 for the first start; bumped by each restart. */
  incarnation: number;
  /** "waiting": not started yet (or restarting after a crash). */
  status: "waiting" | "running" | "down";
  /** The promise `start` returned has not settled (for the current incarnation). */
  startPending: boolean;
  /** Ready steps owned by this incarnation (promoted timers excluded: they stay in `timers`). */
  readyCount: number;
  /** Timers of this incarnation not yet fired or cancelled. */
  readonly timers: Set<TimerEntry>;
  /** Watch iterations waiting for an event. */
  waiters: number;
  readonly watches: Set<SimWatch>;
  watchCounter: number;
  pausedUntil: number;
  /** Faults armed for the next request / "0" read of this actor. */
  armed: { failCode?: number; loseResponse?: boolean; staleLagRevisions?: number };
}

export interface Fatal {
  status: RunStatus;
  message: string;
  actor?: string;
}

export class Kernel {
  readonly clock: VirtualClock;
  readonly store: Store;
  readonly rng: Rng;
  readonly trace: TraceWriter;
  readonly actors = new Map<string, ActorState>();
  readonly externals = new Map<string, unknown>();
  /** Open watches by id, for watch faults. */
  readonly watches = new Map<string, SimWatch>();
  readonly ready: Step[] = [];
  readonly paused = new Set<ActorState>();
  readonly watchQueueMax: number;
  readonly readyStepsMax: number;
  /** The scheduled step being executed (or about to be). */
  stepIndex = 0;
  /** The actor whose step is running, "sim"/"gc" for others, undefined between steps. */
  current: string | undefined;
  running = false;
  fatal: Fatal | undefined;
  gcQueued = false;
  onRecord: ((record: TraceRecord) => void) | undefined;
  private sequence = 0;
  private pendingLogs: Array<Omit<TraceRecord, "step" | "timeMs">> = [];

  constructor(options: {
    clock: VirtualClock;
    store: Store;
    rng: Rng;
    traceMode: TraceMode;
    watchQueueMax: number;
    readyStepsMax: number;
  }) {
    this.clock = options.clock;
    this.store = options.store;
    this.rng = options.rng;
    this.trace = new TraceWriter(options.traceMode);
    this.watchQueueMax = options.watchQueueMax;
    this.readyStepsMax = options.readyStepsMax;
  }

  enqueue(step: Omit<Step, "seq">): Step {
    const full = step as Step;
    full.seq = this.sequence++;
    this.ready.push(full);
    if (full.owner !== undefined && full.timer === undefined) full.owner.readyCount++;
    if (this.ready.length > this.readyStepsMax) {
      this.fail({ status: "sim-error", message: `more than ${this.readyStepsMax} ready steps` });
    }
    return full;
  }

  /** Takes a step out of the ready list (it ran, or it was withdrawn). */
  remove(step: Step, hint = -1): void {
    const index = this.ready[hint] === step ? hint : this.ready.indexOf(step);
    if (index < 0) return;
    // shift() lets V8 trim the array's front in place; splice(0, 1) would move every element.
    if (index === 0) this.ready.shift();
    else this.ready.splice(index, 1);
    if (step.owner !== undefined && step.timer === undefined) {
      step.owner.readyCount--;
      assert(step.owner.readyCount >= 0, "actor ready count stays non-negative");
    }
  }

  /** Schedules a timer owned by an actor incarnation (cancelled by its crash). */
  scheduleFor(owner: ActorState, ms: number, fn: () => void, label: string, kind: StepKind = "timer"): TimerEntry {
    const entry = this.clock.schedule(
      ms,
      () => {
        owner.timers.delete(entry);
        fn();
      },
      owner.name,
      label,
      kind,
    );
    owner.timers.add(entry);
    entry.onCancelPromoted = (cancelled) => this.withdrawTimer(cancelled);
    return entry;
  }

  cancelTimer(owner: ActorState | undefined, entry: TimerEntry): void {
    owner?.timers.delete(entry);
    this.clock.cancel(entry);
  }

  private withdrawTimer(entry: TimerEntry): void {
    const step = this.ready.find((candidate) => candidate.timer === entry);
    if (step !== undefined) this.remove(step);
  }

  /** Moves every due timer into the ready list, in `(dueAt, sequence)` order. */
  promoteDue(): void {
    for (let entry = this.clock.takeDue(); entry !== undefined; entry = this.clock.takeDue()) {
      const timer = entry;
      const owner = this.actors.get(timer.owner);
      this.enqueue({
        actor: timer.owner,
        kind: timer.kind as StepKind,
        label: timer.label,
        ...(owner !== undefined && owner.timers.has(timer) ? { owner } : {}),
        timer,
        run: () => {
          timer.state = "fired";
          timer.fire();
          return "fired";
        },
      });
    }
  }

  /** The ready steps a strategy may choose: all of them unless some actor is paused. */
  eligible(): Step[] {
    if (this.paused.size === 0) return this.ready;
    const now = this.clock.now();
    for (const state of this.paused) if (state.pausedUntil <= now) this.paused.delete(state);
    if (this.paused.size === 0) return this.ready;
    return this.ready.filter((step) => {
      const state = this.actors.get(step.actor);
      return state === undefined || !this.paused.has(state);
    });
  }

  /** When something next becomes runnable without a step: a timer or the end of a pause. */
  nextWakeAt(): number | undefined {
    let wake = this.clock.nextDueAt();
    for (const state of this.paused) {
      if (wake === undefined || state.pausedUntil < wake) wake = state.pausedUntil;
    }
    return wake;
  }

  /** True while an actor incarnation has something in the simulation that can resume it. */
  busy(state: ActorState): boolean {
    return state.readyCount > 0 || state.timers.size > 0 || state.waiters > 0;
  }

  /** Records the first fatal outcome; later ones are consequences and are dropped. */
  fail(fatal: Fatal): void {
    this.fatal ??= fatal;
  }

  /** Checks that code of `state`'s incarnation runs inside one of its own steps. */
  checkCaller(state: ActorState, incarnation: number): boolean {
    if (state.incarnation !== incarnation || state.status !== "running") return false;
    if (!this.running || this.current !== state.name) {
      this.fail({
        status: "outside-await",
        actor: state.name,
        message: `actor ${state.name} awaited something outside the simulation at step ${this.stepIndex}`,
      });
      return false;
    }
    return true;
  }

  record(record: Omit<TraceRecord, "step" | "timeMs">): TraceRecord {
    const full = { step: this.stepIndex, timeMs: this.clock.now(), ...record } as TraceRecord;
    this.trace.add(full);
    this.onRecord?.(full);
    return full;
  }

  /** A log line: written after the record of the step it happened in, so a step's effects read in order. */
  log(record: Omit<TraceRecord, "step" | "timeMs">): void {
    if (this.current === undefined) this.record(record);
    else this.pendingLogs.push(record);
  }

  /** Writes the log lines of the step just recorded. */
  flushLogs(): void {
    if (this.pendingLogs.length === 0) return;
    const logs = this.pendingLogs;
    this.pendingLogs = [];
    for (const log of logs) this.record(log);
  }

  getExternal(name: string): unknown {
    const value = this.externals.get(name);
    // On the hot path of every property check: build the message only when the assertion fails.
    if (value === undefined) assert(this.externals.has(name), `external "${name}" is defined`);
    return value;
  }
}
