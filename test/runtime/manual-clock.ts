// A `Clock` whose time moves only when a test advances it. Timers fire in (dueAt, sequence) order, and the
// test's promises settle between two timers, so async code behaves as it would on virtual time.
import type { Clock, Timer } from "../../src/api/clock.ts";

interface Pending {
  dueAtMs: number;
  sequence: number;
  fn: () => void;
  cancelled: boolean;
}

/** Lets every pending promise chain run: a few macrotask turns, each draining all microtasks. */
export async function settle(turns = 20): Promise<void> {
  for (let i = 0; i < turns; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

export class ManualClock implements Clock {
  private nowMs: number;
  private sequence = 0;
  private pending: Pending[] = [];

  constructor(startMs = 1_700_000_000_000) {
    this.nowMs = startMs;
  }

  now(): number {
    return this.nowMs;
  }

  setTimer(ms: number, fn: () => void): Timer {
    const entry: Pending = { dueAtMs: this.nowMs + Math.max(0, ms), sequence: this.sequence++, fn, cancelled: false };
    this.pending.push(entry);
    return {
      cancel: () => {
        entry.cancelled = true;
      },
    };
  }

  sleep(ms: number, options?: { signal?: AbortSignal }): Promise<void> {
    return new Promise((resolve, reject) => {
      const signal = options?.signal;
      if (signal?.aborted) return reject(signal.reason);
      const onAbort = () => {
        timer.cancel();
        reject(signal?.reason);
      };
      const timer = this.setTimer(ms, () => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      });
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  /** Timers not yet fired or cancelled. */
  pendingCount(): number {
    return this.pending.filter((p) => !p.cancelled).length;
  }

  /** Moves time forward by `ms`, firing each due timer in order and settling promises after each. */
  async advance(ms: number): Promise<void> {
    const targetMs = this.nowMs + ms;
    await settle();
    for (;;) {
      const next = this.nextDue(targetMs);
      if (next === undefined) break;
      this.pending.splice(this.pending.indexOf(next), 1);
      this.nowMs = next.dueAtMs;
      next.fn();
      await settle();
    }
    this.nowMs = targetMs;
    await settle();
  }

  private nextDue(limitMs: number): Pending | undefined {
    this.pending = this.pending.filter((p) => !p.cancelled);
    let best: Pending | undefined;
    for (const p of this.pending) {
      if (p.dueAtMs > limitMs) continue;
      if (best === undefined || p.dueAtMs < best.dueAtMs || (p.dueAtMs === best.dueAtMs && p.sequence < best.sequence)) {
        best = p;
      }
    }
    return best;
  }
}
