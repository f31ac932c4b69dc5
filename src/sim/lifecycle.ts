// An actor's life as an explicit state machine, advanced only by `stepLife(life, input)`: the kernel applies
// its results and carries out the side effects (steps, timers and watches that vanish with a crash).
//
//   waiting --start--> running --settled--> done
//   running|done --crash|exit--> crashed --restart--> running (next incarnation)
//   running|done --pause--> (same phase, paused until t) --resume--> (same phase)
//
// "crashed" is also "restarting": a restart is always scheduled when an incarnation ends.
import { assert } from "../api/assert.ts";

export type Phase =
  /** Added, its first start step not taken yet. */
  | "waiting"
  /** The promise its `start` returned has not settled. */
  | "running"
  /** Its `start` settled; timers, watches and requests it left behind still run. */
  | "done"
  /** Killed (SIGKILL) or exited; a restart is scheduled. */
  | "crashed";

export interface Life {
  readonly phase: Phase;
  /** 0 for the first start; bumped by each restart. */
  readonly incarnation: number;
  /** Virtual ms until which its steps are not eligible; 0 when not paused. */
  readonly pausedUntil: number;
}

export type LifeInput =
  | { readonly type: "start" }
  | { readonly type: "settled" }
  | { readonly type: "pause"; readonly untilMs: number }
  | { readonly type: "resume" }
  | { readonly type: "crash" }
  | { readonly type: "restart" };

export const initialLife: Life = { phase: "waiting", incarnation: 0, pausedUntil: 0 };

/** True while the incarnation's code may run: started and not crashed. */
export function isAlive(life: Life): boolean {
  return life.phase === "running" || life.phase === "done";
}

/** The word fault results use for an actor that cannot be faulted ("skipped: down"). */
export function statusWord(life: Life): string {
  if (life.phase === "crashed") return "down";
  return life.phase === "waiting" ? "waiting" : "running";
}

export function stepLife(life: Life, input: LifeInput): Life {
  switch (input.type) {
    case "start":
      assert(life.phase === "waiting", "an actor starts for the first time from waiting");
      return { phase: "running", incarnation: life.incarnation, pausedUntil: 0 };
    case "settled":
      assert(life.phase === "running", "only a running start settles");
      return { ...life, phase: "done" };
    case "pause":
      assert(isAlive(life), "only a live actor is paused");
      assert(Number.isFinite(input.untilMs), "a pause ends at a finite time");
      return { ...life, pausedUntil: Math.max(life.pausedUntil, input.untilMs) };
    case "resume":
      assert(life.pausedUntil > 0, "only a paused actor resumes");
      return { ...life, pausedUntil: 0 };
    case "crash":
      assert(isAlive(life), "only a live actor crashes or exits");
      return { phase: "crashed", incarnation: life.incarnation, pausedUntil: 0 };
    case "restart":
      assert(life.phase === "crashed", "only a crashed actor restarts");
      return { phase: "running", incarnation: life.incarnation + 1, pausedUntil: 0 };
  }
}
