// Garbage collection in (the given clock's) time: the store plans GC and the namespace/CRD cleanup one action at a
// time; this loop runs them after writes, a bounded batch per timer tick so requests interleave, and backs off
// while actions make no progress (an action that fails leaves the garbage there; the real collector retries too).
import { assert } from "../api/assert.ts";
import type { Clock, Timer } from "../api/clock.ts";
import type { Store } from "../store/index.ts";

export interface GcLoopOptions {
  /** Actions per tick. Default 100. */
  batchActionsMax?: number;
  /** Delay before retrying when a batch made no progress. Default 1000. */
  retryDelayMs?: number;
  /** Told of every action taken. */
  log?: (description: string) => void;
}

export class GcLoop {
  readonly #batchActionsMax: number;
  readonly #retryDelayMs: number;
  readonly #log: ((description: string) => void) | undefined;
  #timer: Timer | undefined;
  #stopped = false;
  /** Actions taken since start: the tests and the benchmark read it. */
  actions = 0;

  constructor(
    readonly store: Store,
    readonly clock: Clock,
    options: GcLoopOptions = {},
  ) {
    this.#batchActionsMax = options.batchActionsMax ?? 100;
    this.#retryDelayMs = options.retryDelayMs ?? 1000;
    this.#log = options.log;
    assert(this.#batchActionsMax >= 1, "batchActionsMax >= 1");
    assert(this.#retryDelayMs >= 0, "retryDelayMs >= 0");
  }

  /**
   * Schedules a batch soon, unless one is scheduled already or there is nothing to collect: most writes leave no
   * garbage, and asking the store now costs what the batch would spend finding that out, without a timer per write.
   */
  kick(delayMs = 0): void {
    if (this.#stopped || this.#timer !== undefined || !this.store.hasGarbage()) return;
    this.#timer = this.clock.setTimer(delayMs, () => {
      this.#timer = undefined;
      this.#batch();
    });
  }

  #batch(): void {
    const before = this.store.revision;
    for (let i = 0; i < this.#batchActionsMax && this.store.hasGarbage(); i++) {
      const description = this.store.collectGarbage();
      if (description === undefined) break;
      this.actions++;
      this.#log?.(description);
    }
    if (!this.store.hasGarbage()) return;
    this.kick(this.store.revision === before ? this.#retryDelayMs : 0);
  }

  stop(): void {
    this.#stopped = true;
    this.#timer?.cancel();
    this.#timer = undefined;
  }
}
