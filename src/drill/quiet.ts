// When a drilled controller has gone quiet. Quiet means: every condition the run waits for is ready (the workload
// is done, the point's fault has played out), no request of the controller is in flight, and the store has seen no
// write for a window. The window is the only guess in it, so the drill learns it: the reference run waits the full
// window and records how long the controller took, at most, from a change of the world (a store write, a watch
// opened) to its next write request — its "think time". The points then wait a small multiple of that, with a floor,
// and never more than the reference's own window (a longer think time could not have shown up there). A point whose
// controller thinks longer than the reference did widens its own window as it goes; a point where a write of the
// controller fails (a fault's failed request or lost response, or the server's own error answer, such as the 409 a
// rerun handler meets on a child it made before the kill) waits the reference's own window: a retry comes on the
// controller's timer, a backoff no think time measures, and a retry loop slower than the learned window would
// otherwise pass for quiet. The user's `--quiet-ms` fixes the window and turns learning off.
import { realClock } from "../api/clock.ts";

/** The learned window is this many times the longest think time seen... */
export const thinkFactor = 3;
/** ...and never shorter than this: a loaded machine delays any process by tens of milliseconds. */
export const quietFloorMs = 500;

export interface QuietWindow {
  /** The window a point starts with. */
  ms: number;
  /** The most any point may widen it to (the reference run's window); equal to `ms` when fixed. */
  maxMs: number;
  /** Whether think times seen during a point widen it. */
  adaptive: boolean;
  /** One line for the progress output: how the window was chosen. */
  why: string;
}

/** The points' window, from the reference run's longest think time and its own window. */
export function learnQuietWindow(thinkMaxMs: number, referenceMs: number): QuietWindow {
  if (!(referenceMs > 0)) throw new Error(`drill: the reference window must be positive, got ${referenceMs}`);
  if (!(thinkMaxMs >= 0)) throw new Error(`drill: a think time must be >= 0, got ${thinkMaxMs}`);
  const learned = Math.ceil(thinkMaxMs * thinkFactor);
  const ms = Math.min(referenceMs, Math.max(quietFloorMs, learned));
  const bound = ms === referenceMs ? `the reference's own ${referenceMs} ms` : ms === quietFloorMs ? `the floor` : `${thinkFactor} x ${Math.ceil(thinkMaxMs)} ms`;
  return { ms, maxMs: referenceMs, adaptive: true, why: `quiet window ${ms} ms (${bound}; the controller's longest think time in the reference run was ${Math.ceil(thinkMaxMs)} ms)` };
}

/** A window given by the user: every run waits exactly this long. */
export function fixedQuietWindow(ms: number): QuietWindow {
  if (!(ms > 0)) throw new Error(`drill: the quiet window must be positive, got ${ms}`);
  return { ms, maxMs: ms, adaptive: false, why: `quiet window ${ms} ms (given)` };
}

export type QuietCondition = "workload" | "point" | "restart" | "held-events";

/**
 * Tracks one run's quiet: one timer, re-armed on each change; no polling. It also measures the controller's think
 * times (what the reference run learns from).
 */
export class QuietTracker {
  readonly reached: Promise<void>;
  /** The longest time from a change to the controller's next write request, so far. */
  thinkMaxMs = 0;
  private windowMs: number;
  private readonly waiting = new Set<QuietCondition>(["workload", "point"]);
  private lastChangeMs = realClock.now();
  private timer: { cancel(): void } | undefined;
  private wake: () => void = () => {};
  private stopped = false;
  /** Think times count from the controller's first watch: what it writes before is start-up, not a reaction. */
  private measuring = false;
  /** A write of the controller failed: the window stays the longest (`awaitRetry`). */
  private retrying = false;

  constructor(
    private window: QuietWindow,
    private readonly requestsInFlight: () => number,
  ) {
    this.windowMs = window.ms;
    this.reached = new Promise((resolve) => (this.wake = resolve));
  }

  /** The window now (it may have widened since the run began). */
  get currentMs(): number {
    return this.windowMs;
  }

  /**
   * The window learned by the reference run, arriving while this run goes on: it replaces the one the run started
   * with, widened by what this run's controller has shown so far.
   */
  relearn(window: QuietWindow): void {
    this.window = window;
    const shown = this.window.adaptive ? Math.ceil(this.thinkMaxMs * thinkFactor) : 0;
    this.windowMs = this.retrying ? window.maxMs : Math.min(window.maxMs, Math.max(window.ms, shown));
    this.arm();
  }

  /**
   * A write of the controller failed (an error status, the server's own or a fault's; a lost response): its retry, if
   * it makes one, comes on a timer of its own (a backoff), which no think time measures, since a think time is a
   * reaction to a change of the world. From now on the run waits the longest window it may (the reference's own),
   * not the learned one.
   */
  awaitRetry(): void {
    this.retrying = true;
    this.windowMs = this.window.maxMs;
    this.arm();
  }

  /** A store write, or a change the drill made (a fault, a watch opened): quiet counts again from now. */
  changed(): void {
    this.lastChangeMs = realClock.now();
    this.arm();
  }

  /** The controller watches: from now on its write requests are reactions, and their think times count. */
  watching(): void {
    this.measuring = true;
    this.changed();
  }

  /** The controller sent a write request: its think time is the time since the last change. */
  writeRequested(): void {
    if (!this.measuring) return;
    const thinkMs = realClock.now() - this.lastChangeMs;
    this.thinkMaxMs = Math.max(this.thinkMaxMs, thinkMs);
    if (this.window.adaptive) this.windowMs = Math.min(this.window.maxMs, Math.max(this.windowMs, Math.ceil(thinkMs * thinkFactor)));
  }

  /** A request of the controller ended: quiet may have been held back by it. */
  requestEnded(): void {
    this.arm();
  }

  ready(condition: QuietCondition): void {
    this.waiting.delete(condition);
    this.arm();
  }

  wait(condition: QuietCondition): void {
    this.waiting.add(condition);
    this.arm();
  }

  isReady(condition: QuietCondition): boolean {
    return !this.waiting.has(condition);
  }

  stop(): void {
    this.stopped = true;
    this.timer?.cancel();
  }

  private arm(): void {
    this.timer?.cancel();
    this.timer = undefined;
    if (this.stopped || this.waiting.size > 0) return;
    const left = this.lastChangeMs + this.windowMs - realClock.now();
    this.timer = realClock.setTimer(Math.max(0, left), () => {
      this.timer = undefined;
      if (realClock.now() - this.lastChangeMs < this.windowMs) return this.arm();
      // A request still in flight may yet lead to a write: its end re-arms the timer.
      if (this.requestsInFlight() > 0) return;
      this.wake();
    });
  }
}
