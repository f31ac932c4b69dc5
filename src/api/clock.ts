// Time, injected. Nothing in settle reads real time except `realClock` below; the simulator
// provides a virtual implementation of the same interface.

export interface Timer {
  /** Stops the timer if it has not fired yet. Idempotent. */
  cancel(): void;
}

export interface Clock {
  /**
   * Milliseconds since the Unix epoch (virtual in the simulator): the machine's wall clock, which may be off other
   * machines' and may jump (the simulator's clock faults model both). Right for timestamps others read; wrong for
   * measuring how long something took, which is what `monotonic` is for.
   */
  now(): number;
  /**
   * Milliseconds from an arbitrary origin on a clock that never jumps and runs at the true rate: for durations and
   * deadlines. A clock without it has no wall-clock faults to hide (see `monotonicNow`).
   */
  monotonic?(): number;
  /** Resolves after `ms` milliseconds. An aborted signal rejects with the signal's reason. */
  sleep(ms: number, options?: { signal?: AbortSignal }): Promise<void>;
  /** Calls `fn` once after `ms` milliseconds. */
  setTimer(ms: number, fn: () => void): Timer;
}

/** The production clock: wall time and real timers. */
export const realClock: Clock = {
  now: () => Date.now(),
  monotonic: () => performance.now(),
  sleep(ms, options) {
    return new Promise((resolve, reject) => {
      const signal = options?.signal;
      if (signal?.aborted) return reject(signal.reason);
      const handle = setTimeout(() => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      }, ms);
      const onAbort = () => {
        clearTimeout(handle);
        reject(signal?.reason);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  },
  setTimer(ms, fn) {
    const handle = setTimeout(fn, ms);
    return { cancel: () => clearTimeout(handle) };
  },
};

/** A monotonic reading of `clock`: its `monotonic()`, or its wall reading when it has none. */
export function monotonicNow(clock: Pick<Clock, "now" | "monotonic">): number {
  return clock.monotonic === undefined ? clock.now() : clock.monotonic();
}

/**
 * Seconds `formatTimestamp` formatted, and their text. A run's writes fall in a few seconds of virtual time, and
 * every run of an exploration starts over at the same instant, so one remembered second would miss at each start.
 */
const timestampTexts = new Map<number, string>();
const timestampTextsMax = 4096;

/** An RFC 3339 timestamp with second precision, as Kubernetes writes `creationTimestamp`. */
export function formatTimestamp(ms: number): string {
  const second = Math.floor(ms / 1000);
  let text = timestampTexts.get(second);
  if (text === undefined) {
    // A Date out of range throws here, before the memo changes, as it did without one.
    text = new Date(second * 1000).toISOString().replace(".000Z", "Z");
    if (timestampTexts.size >= timestampTextsMax) timestampTexts.clear();
    timestampTexts.set(second, text);
  }
  return text;
}

/** RFC 3339 with microseconds, as Kubernetes writes `MicroTime` fields (Lease `renewTime`, Event `eventTime`). */
export function formatMicroTime(ms: number): string {
  const iso = new Date(ms).toISOString(); // 2026-11-29T20:09:24.123Z
  return `${iso.slice(0, -1)}000Z`;
}
