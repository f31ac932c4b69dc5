// The process-level host of simulations. A run patches process globals (`Date`, `Math.random`) and takes over
// unhandled rejections, so two runs in one thread would see each other's: the host runs them one at a time by
// construction (a queue, not an assertion). Each worker thread has its own module instance and so its own host,
// which is how exploration runs simulations in parallel.
//
// The host also tells a step when everything it released has run (`released`). Node reports unhandled rejections
// at one moment only: when its queue of ticks and V8's microtask queue are both empty, before the next macrotask.
// A promise rejected on purpose with nothing to handle it (the quiet marker) is therefore reported exactly when the
// step's microtasks and ticks are done, as one `setImmediate` round trip would have said, but without leaving the
// macrotask. Rejections the step left unhandled are reported in the same pass, before the step's continuation (a
// microtask) runs: they are still blamed on the step that caused them.
import { assert } from "../api/assert.ts";
import { installGuards, type GuardSources } from "./guards.ts";

/**
 * Marks an exception thrown only to unwind code whose actor incarnation is already over (a module's
 * `process.exit`): when it escapes from a callback Node runs outside any step (an 'error' event it emits on the next
 * tick), nothing is left to report, and it must not end the process as an uncaught exception would.
 */
export const incarnationUnwind = Symbol.for("settle.incarnationUnwind");

function isUnwind(error: unknown): boolean {
  return typeof error === "object" && error !== null && (error as Record<symbol, unknown>)[incarnationUnwind] === true;
}

/** What a run lends the host while it holds it. */
export interface HostLease extends GuardSources {
  /** An unhandled rejection while the run holds the host: an actor's bug. */
  onRejection(reason: unknown): void;
}

/** How a step waits for the work it set off. */
export interface StepWaits {
  /** Resolves once every microtask and tick released so far has run; an event-loop turn only now and then. */
  released(): Promise<void>;
  /** One event-loop turn (`setImmediate`): what waits on real I/O or real timers gets its chance to run. */
  turn(): Promise<void>;
}

/**
 * Waits on the quiet marker in a row before one event-loop turn. Real I/O of the process (a test runner, an
 * explorer's worker messages) would otherwise wait for the run's end; counted in waits, not time, so the count never
 * depends on how fast the machine is (a turn never changes which step runs next: see `SimulationHost.released`).
 */
export const QUIET_WAITS_PER_TURN_MAX = 64;

/** The reason of the quiet marker: recognised by identity, never an actor's. */
const quietMarker: unique symbol = Symbol("settle.quietMarker");

/** One event-loop turn. */
function turn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * Whether Node reports unhandled rejections by `unhandledRejection` events, as the quiet marker needs. Under
 * `--unhandled-rejections=strict` it raises an uncaught exception first, which would end the process.
 */
function rejectionsAreEvents(): boolean {
  const flags = [...process.execArgv, ...(process.env["NODE_OPTIONS"] ?? "").split(/\s+/)];
  for (let i = 0; i < flags.length; i++) {
    if (flags[i] === "--unhandled-rejections=strict") return false;
    if (flags[i] === "--unhandled-rejections" && flags[i + 1] === "strict") return false;
  }
  return true;
}

class SimulationHost implements StepWaits {
  /** Resolves when the run holding the host (if any) has given it back. */
  private tail: Promise<void> = Promise.resolve();
  private holder: HostLease | undefined;
  /** The step waiting for its quiet marker to be reported. */
  private quietWaiter: (() => void) | undefined;
  /** Quiet waits since the last event-loop turn. */
  private quietWaits = 0;
  /** False once Node is known not to report the marker (strict rejections, or the watchdog had to step in). */
  private markerWorks = rejectionsAreEvents();
  /** An event-loop turn is pending that checks the marker was reported (see `watchdog`). */
  private watching = false;
  private readonly handler = (reason: unknown) => {
    if (reason === quietMarker) return this.quiet();
    assert(this.holder !== undefined, "the host handles rejections only while a run holds it");
    this.holder.onRejection(reason);
  };
  /** The process's own uncaught-exception listeners, set aside while a run holds the host. */
  private uncaughtListeners: Array<(...args: unknown[]) => void> = [];
  private readonly uncaught = (error: unknown, origin: unknown) => {
    if (isUnwind(error)) return;
    // Anything else is what it was before the run: the process's listeners', or the end of the process.
    if (this.uncaughtListeners.length > 0) {
      for (const listener of this.uncaughtListeners) listener(error, origin);
      return;
    }
    process.removeListener("uncaughtException", this.uncaught);
    process.nextTick(() => {
      throw error;
    });
  };
  private readonly watchdogFn = () => this.watchdog();

  /** Runs `body` when every earlier run has finished, with the determinism guards and the rejection handler in place. */
  async exclusive<T>(lease: HostLease, body: () => Promise<T>): Promise<T> {
    const previous = this.tail;
    let release!: () => void;
    this.tail = new Promise<void>((resolve) => (release = resolve));
    await previous;
    assert(this.holder === undefined, "a run holds the host alone");
    this.holder = lease;
    const guards = installGuards(lease);
    // While a run holds the host, unhandled rejections are the simulation's; the process's own listeners
    // (a test runner's, for one) come back untouched when it is given back.
    const listeners = process.listeners("unhandledRejection");
    process.removeAllListeners("unhandledRejection");
    process.on("unhandledRejection", this.handler);
    // Uncaught exceptions too, for the unwinds alone (see `incarnationUnwind`); the others go where they went.
    this.uncaughtListeners = process.listeners("uncaughtException") as Array<(...args: unknown[]) => void>;
    process.removeAllListeners("uncaughtException");
    process.on("uncaughtException", this.uncaught);
    try {
      return await body();
    } finally {
      process.removeListener("uncaughtException", this.uncaught);
      for (const listener of this.uncaughtListeners) process.on("uncaughtException", listener);
      this.uncaughtListeners = [];
      assert(this.quietWaiter === undefined, "no step waits when a run ends");
      process.removeListener("unhandledRejection", this.handler);
      for (const listener of listeners) process.on("unhandledRejection", listener);
      guards.restore();
      this.holder = undefined;
      release();
    }
  }

  /**
   * Resolves once every microtask and tick released so far has run. Both ways of waiting end at a moment when
   * both queues are empty and nothing outside the run has been waited for, so which one is taken never changes
   * what the next step sees: only an actor that waits on the outside could tell, and the kernel gives such an
   * actor a turn of its own before judging it.
   */
  released(): Promise<void> {
    assert(this.holder !== undefined, "only a run waits for what its steps released");
    assert(this.quietWaiter === undefined, "one step waits at a time");
    // A domain would take the marker's report for itself (Node routes rejections made inside one to it).
    if (!this.markerWorks || (process as { domain?: unknown }).domain != null || ++this.quietWaits > QUIET_WAITS_PER_TURN_MAX) {
      this.quietWaits = 0;
      return turn();
    }
    if (!this.watching) {
      this.watching = true;
      setImmediate(this.watchdogFn);
    }
    return new Promise<void>((resolve) => {
      this.quietWaiter = resolve;
      void Promise.reject(quietMarker);
    });
  }

  turn(): Promise<void> {
    return turn();
  }

  /** Node reported the quiet marker: the waiting step goes on (a microtask, after the other reports of this pass). */
  private quiet(): void {
    const waiter = this.quietWaiter;
    // None waits only for a report the watchdog stood in for; no marker is made after that.
    if (waiter === undefined) return;
    this.quietWaiter = undefined;
    waiter();
  }

  /**
   * One event-loop turn after quiet waiting began. Node reports a rejection before the macrotask it happened in
   * ends, so a step still waiting here waits for a report that will not come (a Node that reports otherwise): the
   * turn stands in for it, and every later wait takes a turn.
   */
  private watchdog(): void {
    this.watching = false;
    if (this.quietWaiter === undefined) return;
    this.markerWorks = false;
    this.quiet();
  }
}

/** The one host of this thread. */
export const simulationHost = new SimulationHost();
