// Virtual time. Timers are ordered by `(dueAt, sequence)`; time only moves when the simulation (or a test
// calling `advance`) moves it, so an hour of simulated time costs what its timers cost.
import type { Clock, Timer } from "../api/clock.ts";
import { assert } from "../api/assert.ts";

/** 2026-01-01T00:00:00Z: where virtual time starts unless told otherwise. */
export const DEFAULT_EPOCH_MS = Date.UTC(2026, 0, 1);

export type TimerState = "queued" | "promoted" | "cancelled" | "fired";

/** One timer. The simulation promotes due timers to ready steps; `owner` names the actor ("sim" for none). */
export interface TimerEntry {
  readonly dueAt: number;
  readonly seq: number;
  readonly owner: string;
  readonly label: string;
  /** The step kind the firing is traced as: "timer" unless the simulation says otherwise. */
  readonly kind: string;
  state: TimerState;
  fire: () => void;
  /** Called when a promoted timer is cancelled, so its ready step can be withdrawn. */
  onCancelPromoted?: (entry: TimerEntry) => void;
}

function before(a: TimerEntry, b: TimerEntry): boolean {
  return a.dueAt < b.dueAt || (a.dueAt === b.dueAt && a.seq < b.seq);
}

/** A binary min-heap of timers; cancelled entries are dropped lazily when they reach the top. */
class TimerHeap {
  private readonly items: TimerEntry[] = [];

  get size(): number {
    return this.items.length;
  }

  push(entry: TimerEntry): void {
    const items = this.items;
    items.push(entry);
    let i = items.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(items[i]!, items[parent]!)) break;
      [items[i], items[parent]] = [items[parent]!, items[i]!];
      i = parent;
    }
  }

  peek(): TimerEntry | undefined {
    while (this.items.length > 0 && this.items[0]!.state === "cancelled") this.pop();
    return this.items[0];
  }

  pop(): TimerEntry | undefined {
    const items = this.items;
    const top = items[0];
    const last = items.pop();
    if (items.length > 0 && last !== undefined) {
      items[0] = last;
      let i = 0;
      for (;;) {
        const left = 2 * i + 1;
        const right = left + 1;
        let smallest = i;
        if (left < items.length && before(items[left]!, items[smallest]!)) smallest = left;
        if (right < items.length && before(items[right]!, items[smallest]!)) smallest = right;
        if (smallest === i) break;
        [items[i], items[smallest]] = [items[smallest]!, items[i]!];
        i = smallest;
      }
    }
    return top;
  }
}

export interface VirtualClockOptions {
  /** Virtual time at the start, ms since the Unix epoch. Default `DEFAULT_EPOCH_MS` (2026-01-01T00:00:00Z). */
  epochMs?: number;
}

export class VirtualClock implements Clock {
  private nowMs: number;
  private sequence = 0;
  private live = 0;
  private readonly heap = new TimerHeap();

  constructor(options: VirtualClockOptions = {}) {
    this.nowMs = options.epochMs ?? DEFAULT_EPOCH_MS;
    assert(Number.isSafeInteger(this.nowMs), "virtual clock epoch is an integer of ms");
  }

  now(): number {
    return this.nowMs;
  }

  setTimer(ms: number, fn: () => void): Timer {
    const entry = this.schedule(ms, fn, "sim", `timer ${ms}ms`);
    return { cancel: () => this.cancel(entry) };
  }

  sleep(ms: number, options?: { signal?: AbortSignal }): Promise<void> {
    return sleepOn(this, ms, "sim", options?.signal);
  }

  /** Queues `fn` at `now + max(0, ms)` (fractions round up: virtual time is whole ms). */
  schedule(ms: number, fn: () => void, owner: string, label: string, kind = "timer"): TimerEntry {
    assert(Number.isFinite(ms), "timer delay is finite");
    const dueAt = this.nowMs + Math.max(0, Math.ceil(ms));
    const entry: TimerEntry = { dueAt, seq: this.sequence++, owner, label, kind, state: "queued", fire: fn };
    this.heap.push(entry);
    this.live++;
    return entry;
  }

  cancel(entry: TimerEntry): void {
    if (entry.state === "queued") {
      entry.state = "cancelled";
      this.live--;
    } else if (entry.state === "promoted") {
      entry.state = "cancelled";
      entry.onCancelPromoted?.(entry);
    }
  }

  /** The due time of the earliest live timer. */
  nextDueAt(): number | undefined {
    return this.heap.peek()?.dueAt;
  }

  /** Timers not yet fired, promoted or cancelled. */
  get pendingTimers(): number {
    return this.live;
  }

  /** Moves time forward without firing anything (the simulation fires timers as steps). */
  advanceTo(ms: number): void {
    assert(ms >= this.nowMs, "virtual time never goes back");
    this.nowMs = ms;
  }

  /** Removes and returns the earliest timer if it is due now, marking it promoted. */
  takeDue(): TimerEntry | undefined {
    const top = this.heap.peek();
    if (top === undefined || top.dueAt > this.nowMs) return undefined;
    this.heap.pop();
    this.live--;
    top.state = "promoted";
    return top;
  }

  /**
   * For unit tests without a simulation: moves time forward by `ms`, firing every timer due on the way in
   * `(dueAt, sequence)` order, at its due time. Microtasks run only after this returns.
   */
  advance(ms: number): void {
    assert(ms >= 0, "advance by a non-negative delay");
    const target = this.nowMs + ms;
    for (;;) {
      const top = this.heap.peek();
      if (top === undefined || top.dueAt > target) break;
      this.nowMs = Math.max(this.nowMs, top.dueAt);
      const entry = this.takeDue();
      assert(entry === top, "advance fires the earliest timer");
      entry.state = "fired";
      entry.fire();
    }
    this.nowMs = target;
  }
}

/** A sleep on `clock` owned by `owner`; an aborted signal cancels the timer and rejects with its reason. */
export function sleepOn(clock: VirtualClock, ms: number, owner: string, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clock.cancel(entry);
      reject(signal?.reason);
    };
    const entry = clock.schedule(
      ms,
      () => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      },
      owner,
      `sleep ${ms}ms`,
    );
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
