// The process-level host of simulations. A run patches process globals (`Date`, `Math.random`) and takes over
// unhandled rejections, so two runs in one thread would see each other's: the host runs them one at a time by
// construction (a queue, not an assertion). Each worker thread has its own module instance and so its own host,
// which is how exploration runs simulations in parallel.
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

class SimulationHost {
  /** Resolves when the run holding the host (if any) has given it back. */
  private tail: Promise<void> = Promise.resolve();
  private holder: HostLease | undefined;
  private readonly handler = (reason: unknown) => {
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
      process.removeListener("unhandledRejection", this.handler);
      for (const listener of listeners) process.on("unhandledRejection", listener);
      guards.restore();
      this.holder = undefined;
      release();
    }
  }
}

/** The one host of this thread. */
export const simulationHost = new SimulationHost();
