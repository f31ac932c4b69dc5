// The simulator's public shapes: actors and their context, faults, run options and results, the world view.
import type { Client } from "../api/client.ts";
import type { Clock } from "../api/clock.ts";
import type { KubeObject, ObjectRef, KindRef } from "../api/object.ts";
import type { Admission, Store, StoreOptions } from "../store/types.ts";
import type { Rng } from "./rng.ts";
import type { Choices, Strategy } from "./strategy.ts";
import type { TraceMode, TraceRecord } from "./trace.ts";

/** A read-only view of the world for properties: API objects at the latest revision and external state. */
export interface WorldView {
  readonly revision: number;
  /** Virtual ms since the epoch. */
  now(): number;
  /** The stored object (frozen, shared), or undefined when absent. */
  get(ref: ObjectRef): KubeObject | undefined;
  /** Every object of a kind, optionally in one namespace and matching a label selector. */
  list(options: KindRef & { namespace?: string; labelSelector?: string }): readonly KubeObject[];
  /** The current value of an external cell (frozen); throws for an unknown name. */
  external<T = unknown>(name: string): T;
}

/** Non-Kubernetes state (a host's booted image, a registry's tags); it survives actor crashes. */
export interface ExternalHandle<T> {
  /** A step: resolves with a private copy of the value. */
  read(): Promise<T>;
  /** A step: stores a copy of `value`, or of what `update` returns for (a copy of) the current value. */
  write(value: T | ((current: T) => T)): Promise<void>;
}

/** Synchronous access for setup, crash hooks and fault kinds (not for actors: their accesses are steps). */
export interface ExternalCell<T> {
  get(): T;
  set(value: T): void;
}

export interface ActorLog {
  (msg: string, fields?: Record<string, unknown>): void;
}

export interface ActorContext {
  readonly name: string;
  /** 0 at the first start, +1 at every restart after a crash. */
  readonly incarnation: number;
  readonly client: Client;
  readonly clock: Clock;
  /** A stream of its own (`actor/<name>/<incarnation>`), for jitter and such. */
  readonly rng: Rng;
  readonly log: ActorLog;
  external<T = unknown>(name: string): ExternalHandle<T>;
}

export interface CrashContext {
  readonly actor: string;
  readonly incarnation: number;
  readonly now: number;
  external<T = unknown>(name: string): ExternalCell<T>;
}

export interface ActorDefinition {
  name: string;
  start(ctx: ActorContext): Promise<void> | void;
  /** Delay before a crashed actor starts again. Default 1000 ms. */
  restartDelayMs?: number;
  /** Whether the random fault budget may crash it. Default true. Planned crashes ignore this. */
  crashable?: boolean;
  /**
   * Whether random faults of any kind (request failures, stale reads, watch faults, pauses) may target it.
   * Default true. A scenario's workload (what users do) is not faulted: its code rarely retries. Planned
   * faults ignore this.
   */
  faultable?: boolean;
  /** Runs in the crash step, e.g. a node rebooting into its staged image. */
  onCrash?(ctx: CrashContext): void;
  /**
   * What the actor was doing when its start is pending but it waits on nothing of the simulation's, appended to
   * the outside-await message (a module actor names the real timer or socket it used, or that it never watched).
   */
  explainOutsideAwait?(): string | undefined;
}

/** An explicit fault: injected before scheduled step `atStep`. Extra fields are the kind's parameters. */
export interface PlannedFault {
  atStep: number;
  kind: string;
  /** An actor name, a watch id (`actor/incarnation/wN`) or whatever a scenario fault kind targets. */
  target: string;
  [param: string]: string | number | boolean;
}

/** A scenario-declared fault kind, drawn and recorded like the built-in ones. */
export interface FaultKind {
  name: string;
  /** The targets valid now (e.g. node names); none means the kind cannot be drawn at this step. */
  targets(view: WorldView): readonly string[];
  /** Draws the parameters of one fault. Default: none. */
  params?(rng: Rng): Record<string, string | number | boolean>;
  /** Applies the fault and returns a short result for the trace. */
  apply(sim: FaultTarget, fault: PlannedFault): string;
}

/** What a scenario fault kind may touch. */
export interface FaultTarget {
  readonly store: Store;
  readonly view: WorldView;
  now(): number;
  external<T = unknown>(name: string): ExternalCell<T>;
}

export interface FaultBudget {
  /** Probability of a fault before each step, as `[numerator, denominator]`. */
  chance: readonly [number, number];
  /** How many faults of each kind may be drawn; kinds absent are never drawn. */
  counts: Readonly<Record<string, number>>;
  /** Pause length range. Default [1000, 30000]. */
  pauseMs?: readonly [number, number];
  /** Watch delay range. Default [100, 5000]. */
  delayWatchMs?: readonly [number, number];
  /** Largest stale-read lag in revisions. Default 5. */
  staleLagRevisionsMax?: number;
  /** Codes a failed request gets. Default [409, 429, 500, 504]. */
  failCodes?: readonly number[];
  /**
   * Chance, as `[numerator, denominator]`, that a drawn close-watch fails its watch with a 410 Expired ERROR event
   * (`expired: 1`) instead of ending it. Default [1, 4]; [0, 1] never does.
   */
  closeWatchExpired?: readonly [number, number];
  /**
   * The largest wall-clock skew a run may draw (ms, either way): with chance `clockSkewChance`, one actor's clock is
   * set that far at most ahead of or behind the simulation's from the run's start (a `clock-skew` fault at step 0).
   * Drawn from a stream of its own, so no other draw moves. Absent or 0: never.
   */
  clockSkewMs?: number;
  /** Chance, as `[numerator, denominator]`, that a run draws a clock skew when `clockSkewMs` allows one. Default [1, 2]. */
  clockSkewChance?: readonly [number, number];
}

export interface SimulationOptions {
  /** The run's only seed (32-bit integer). Default 0. */
  seed?: number;
  /** Virtual start time. Default 2026-01-01T00:00:00Z. */
  epochMs?: number;
  /** Admission run on every write in the store. */
  admission?: Admission[];
  /** Store history bound. Default: the store's. */
  historyRevisionsMax?: number;
  /** Makes the store (given the clock, admission and history options). Default: the real `createStore`. */
  createStore?: (options: StoreOptions) => Store;
  /** "hash-only" keeps no records, only the running hash. Default "full". */
  traceMode?: TraceMode;
  /** Events queued per watch before the server closes it (as a real server drops a slow watcher). Default 10_000. */
  watchQueueMax?: number;
  /** Ready steps (all actors) beyond which the run fails: a bound against runaway fan-out. Default 1_000_000. */
  readyStepsMax?: number;
  /**
   * The range of a request's latency in virtual ms, drawn per request from the seed: its response arrives that
   * long after it was applied, so a loop of requests moves the clock as on a real cluster. Default [0, 0] (a
   * response is ready at once); scenarios run with their `timing.requestLatencyMs`.
   */
  requestLatencyMs?: readonly [number, number];
  /** Give every ready step its origin, for a strategy that orders by it (`Strategy.ordersByOrigin`). Default false. */
  stepOrigins?: boolean;
}

export interface RunOptions {
  /** Stop after this many scheduled steps in total (this run and earlier ones). Default 100_000. */
  maxSteps?: number;
  /** Stop before virtual time passes this instant (ms since the epoch). Default: no bound. */
  untilMs?: number;
  /** Called after every step and fault with the record and the world; "stop" ends the run. */
  onStep?(record: TraceRecord, view: WorldView): "stop" | void;
  /** Default: random. Ignored when `choices` is given. */
  strategy?: Strategy;
  /** Replays these choices (FIFO where none is recorded). */
  choices?: Choices;
  /** Faults injected at given steps. */
  faults?: readonly PlannedFault[];
  /** Faults drawn at random (from the "faults" stream). */
  faultBudget?: FaultBudget;
  /** Compare with an earlier trace and stop at the first difference ("divergence"). Needs traceMode "full". */
  expectTrace?: readonly TraceRecord[];
}

export type RunStatus =
  /** Nothing ready and no timer left. */
  | "idle"
  | "max-steps"
  | "until"
  /** `onStep` returned "stop". */
  | "stopped"
  /** An actor's start threw, or it left a rejection unhandled. */
  | "actor-error"
  /** An actor awaited something outside the simulation (a real timer, real I/O). */
  | "outside-await"
  /** `expectTrace` differs at `step`. */
  | "divergence"
  /** A bound of the simulator itself was exceeded or the store failed with a non-API error. */
  | "sim-error";

export interface RunResult {
  status: RunStatus;
  message?: string;
  actor?: string;
  /** actor-error: what the actor threw (reports show its location). */
  error?: unknown;
  /** Scheduled steps so far. */
  steps: number;
  timeMs: number;
  /** Every non-zero choice so far, `[step, index]`. */
  choices: Array<[number, number]>;
  /** Every fault reached so far (planned or drawn), as a plan that replays it. */
  faults: PlannedFault[];
  traceHash: string;
  /** The records (empty in hash-only mode). */
  trace: readonly TraceRecord[];
}
