// A work queue with client-go's guarantees (workqueue/queue.go, delaying_queue.go, rate_limiting_queue.go),
// written against an injected `Clock` so that it runs the same on virtual and real time.
//
// Invariants, asserted by name:
// - `queue-key-not-processing-twice`: a key is never handed to two workers at once.
// - `queue-readd-after-done`: a key added while it is processed is queued again when `done` is called.
// - `queue-queued-is-dirty-not-processing`: every queued key is dirty and not being processed.
//
// Bounds: keys are deduplicated, so the queue, the dirty set, the processing set and the delayed set each hold
// at most one entry per distinct key: the bound is the key space (the objects the informers cache). The rate
// limiter keeps one counter per key that failed and was not forgotten (the same bound).
import { assert } from "../api/assert.ts";
import { monotonicNow, type Clock, type Timer } from "../api/clock.ts";

/** Decides how long a key that failed waits before its next attempt. */
export interface RateLimiter<K> {
  /** The delay for this key's next retry; counts the retry. */
  when(key: K): number;
  /** Clears the key's failure history (call after a success). */
  forget(key: K): void;
  /** How many retries `when` has counted for the key since it was last forgotten. */
  numRequeues(key: K): number;
}

export interface ExponentialRateLimiterOptions {
  /** Delay after the first failure. Default 5 ms (client-go's `DefaultControllerRateLimiter`). */
  baseDelayMs?: number;
  /** Cap on the delay. Default 1,000,000 ms = 1000 s (client-go's default). */
  maxDelayMs?: number;
}

export const rateLimiterDefaults = { baseDelayMs: 5, maxDelayMs: 1_000_000 } as const;

/**
 * Per-item capped exponential backoff: `baseDelayMs * 2^failures`, at most `maxDelayMs`. client-go's default
 * controller limiter also applies an overall token bucket (10 qps, burst 100); settle leaves that out, since
 * the simulator models server-side throttling (429) where it matters.
 */
export function exponentialRateLimiter<K>(options: ExponentialRateLimiterOptions = {}): RateLimiter<K> {
  const baseDelayMs = options.baseDelayMs ?? rateLimiterDefaults.baseDelayMs;
  const maxDelayMs = options.maxDelayMs ?? rateLimiterDefaults.maxDelayMs;
  assert(baseDelayMs > 0, "rate-limiter-base-positive");
  assert(maxDelayMs >= baseDelayMs, "rate-limiter-max-at-least-base");
  const failures = new Map<K, number>();
  return {
    when(key) {
      const count = failures.get(key) ?? 0;
      failures.set(key, count + 1);
      // Past 2^52 the product is far beyond any cap; stop doubling so the arithmetic stays exact.
      const delayMs = baseDelayMs * 2 ** Math.min(count, 52);
      return Math.min(delayMs, maxDelayMs);
    },
    forget(key) {
      failures.delete(key);
    },
    numRequeues(key) {
      return failures.get(key) ?? 0;
    },
  };
}

export interface WorkQueueOptions<K> {
  clock: Clock;
  /** Default: `exponentialRateLimiter()` (5 ms doubling to 1000 s). */
  rateLimiter?: RateLimiter<K>;
}

/** A FIFO of unique keys with O(1) push and shift. */
class KeyFifo<K> {
  private items: Array<K | undefined> = [];
  private head = 0;

  get length(): number {
    return this.items.length - this.head;
  }

  push(key: K): void {
    this.items.push(key);
  }

  shift(): K {
    assert(this.length > 0, "fifo-shift-non-empty");
    const key = this.items[this.head] as K;
    this.items[this.head] = undefined;
    this.head += 1;
    // Compact once the consumed prefix dominates, so memory tracks the live length.
    if (this.head > 64 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return key;
  }

  toArray(): K[] {
    return this.items.slice(this.head) as K[];
  }
}

interface Delayed {
  dueAtMs: number;
  timer: Timer;
}

export class WorkQueue<K = string> {
  private readonly clock: Clock;
  private readonly rateLimiter: RateLimiter<K>;
  private readonly queue = new KeyFifo<K>();
  /** Keys that need processing: queued, or added again while being processed. */
  private readonly dirty = new Set<K>();
  private readonly processing = new Set<K>();
  private readonly delayed = new Map<K, Delayed>();
  private readonly waiters: Array<(key: K | undefined) => void> = [];
  private drainWaiters: Array<() => void> = [];
  private shuttingDownFlag = false;
  private draining = false;

  constructor(options: WorkQueueOptions<K>) {
    this.clock = options.clock;
    this.rateLimiter = options.rateLimiter ?? exponentialRateLimiter<K>();
  }

  /** Marks the key as needing processing. Ignored after shutdown. */
  add(key: K): void {
    if (this.shuttingDownFlag) return;
    if (this.dirty.has(key)) {
      // Already dirty: either queued (dedup) or being processed (re-queued by `done`).
      return;
    }
    this.dirty.add(key);
    if (this.processing.has(key)) return;
    this.queue.push(key);
    this.dispatch();
  }

  /**
   * Adds the key after `delayMs` on the clock. A key already waiting keeps the earlier of its two due times,
   * as client-go's delaying queue does.
   */
  addAfter(key: K, delayMs: number): void {
    assert(Number.isFinite(delayMs), "queue-delay-finite");
    if (this.shuttingDownFlag) return;
    if (delayMs <= 0) {
      this.add(key);
      return;
    }
    const dueAtMs = monotonicNow(this.clock) + delayMs;
    const existing = this.delayed.get(key);
    if (existing !== undefined) {
      if (existing.dueAtMs <= dueAtMs) return;
      existing.timer.cancel();
    }
    const timer = this.clock.setTimer(delayMs, () => {
      const current = this.delayed.get(key);
      if (current?.timer !== timer) return;
      this.delayed.delete(key);
      this.add(key);
    });
    this.delayed.set(key, { dueAtMs, timer });
  }

  /** Adds the key after the rate limiter's delay for it. */
  addRateLimited(key: K): void {
    this.addAfter(key, this.rateLimiter.when(key));
  }

  /** Clears the key's failure history in the rate limiter. Does not remove it from the queue. */
  forget(key: K): void {
    this.rateLimiter.forget(key);
  }

  numRequeues(key: K): number {
    return this.rateLimiter.numRequeues(key);
  }

  /**
   * Resolves with the next key to process, which the caller must pass to `done`; resolves `undefined` once
   * the queue is shut down (after `shutDownWithDrain`, only when nothing queued is left to hand out).
   */
  get(): Promise<K | undefined> {
    if (this.queue.length > 0) {
      return Promise.resolve(this.take());
    }
    if (this.shuttingDownFlag) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      this.waiters.push(resolve);
    });
  }

  /** Marks the key as processed; re-queues it when it was added again meanwhile. */
  done(key: K): void {
    assert(this.processing.has(key), "queue-done-only-for-processing");
    this.processing.delete(key);
    if (this.dirty.has(key)) {
      if (this.shuttingDownFlag) {
        // Nobody may be left to take it: drop it, as `shutDown` drops queued keys.
        this.dirty.delete(key);
      } else {
        // queue-readd-after-done: the add that arrived during processing is honoured now.
        this.queue.push(key);
        this.dispatch();
      }
    }
    this.checkDrained();
  }

  /** Stops at once: pending and later `get`s resolve `undefined`; queued and delayed keys are dropped. */
  shutDown(): void {
    this.shuttingDownFlag = true;
    this.cancelDelayed();
    // Dropping queued keys loses nothing for a level-based controller: a restarted one relists and
    // enqueues every object again.
    while (this.queue.length > 0) this.dirty.delete(this.queue.shift());
    this.wakeAll();
    this.checkDrained();
  }

  /**
   * Stops taking new keys, keeps handing out the keys already queued, and resolves once nothing is queued or
   * being processed. Delayed keys are dropped, and so is a key re-added while it was being processed.
   */
  shutDownWithDrain(): Promise<void> {
    this.shuttingDownFlag = true;
    this.draining = true;
    this.cancelDelayed();
    const drained = new Promise<void>((resolve) => this.drainWaiters.push(resolve));
    if (this.queue.length === 0) this.wakeAll();
    this.checkDrained();
    return drained;
  }

  shuttingDown(): boolean {
    return this.shuttingDownFlag;
  }

  /** Keys waiting to be handed out (not counting delayed or processing ones). */
  len(): number {
    return this.queue.length;
  }

  /** Keys waiting on the clock. */
  delayedLen(): number {
    return this.delayed.size;
  }

  processingLen(): number {
    return this.processing.size;
  }

  /** Asserts every invariant over all keys: O(keys), for tests and debugging. */
  checkInvariants(): void {
    const queued = this.queue.toArray();
    assert(new Set(queued).size === queued.length, "queue-keys-unique");
    for (const key of queued) {
      assert(this.dirty.has(key), "queue-queued-is-dirty-not-processing");
      assert(!this.processing.has(key), "queue-queued-is-dirty-not-processing");
    }
    for (const key of this.dirty) {
      assert(this.processing.has(key) || queued.includes(key), "queue-dirty-is-queued-or-processing");
    }
    assert(this.waiters.length === 0 || queued.length === 0, "queue-no-waiter-while-keys-queued");
  }

  private take(): K {
    const key = this.queue.shift();
    assert(this.dirty.has(key), "queue-queued-is-dirty-not-processing");
    assert(!this.processing.has(key), "queue-key-not-processing-twice");
    this.dirty.delete(key);
    this.processing.add(key);
    return key;
  }

  /** Hands queued keys to waiting `get`s, oldest waiter first. */
  private dispatch(): void {
    while (this.waiters.length > 0 && this.queue.length > 0) {
      const resolve = this.waiters.shift() as (key: K | undefined) => void;
      resolve(this.take());
    }
    if (this.shuttingDownFlag && this.queue.length === 0) this.wakeAll();
  }

  private wakeAll(): void {
    const waiters = this.waiters.splice(0);
    for (const resolve of waiters) resolve(undefined);
  }

  private cancelDelayed(): void {
    for (const entry of this.delayed.values()) entry.timer.cancel();
    this.delayed.clear();
  }

  private checkDrained(): void {
    if (!this.shuttingDownFlag) return;
    if (this.draining && this.queue.length === 0) this.wakeAll();
    if (this.queue.length > 0 || this.processing.size > 0) return;
    const waiters = this.drainWaiters;
    this.drainWaiters = [];
    for (const resolve of waiters) resolve();
  }
}
