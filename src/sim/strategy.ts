// How the scheduler picks the next step among the ready ones. Every strategy answers an index into the
// ready list (ordered by when each step became ready); 0 is the oldest step, the FIFO default that
// shrinking falls back to.
import type { Rng } from "./rng.ts";
import type { StepFacts, StepKind } from "./trace.ts";
import { assert } from "../api/assert.ts";

export type { StepKind };

/** What a strategy sees of a ready step. */
export interface ReadyStep {
  /** The order in which steps became ready; strictly increasing along the ready list. */
  readonly seq: number;
  /** The actor the step belongs to: an actor name, "gc" or "sim". */
  readonly actor: string;
  readonly kind: StepKind;
  /** Stable across runs with the same choices: `get ConfigMap ns/a`, `sleep 30000ms`, ... */
  readonly label: string;
  /** What the step will touch, where known (the same facts its trace record gets): for reduction. */
  readonly facts?: StepFacts;
  /** For a watch delivery: the collection the watch follows (a write into it adds to what the watch delivers). */
  readonly collection?: StepFacts["object"];
  /** Where the step comes from; present only when the strategy asks for it (`ordersByOrigin`). */
  readonly origin?: StepOrigin;
}

/**
 * Where a ready step comes from: when it became ready, and which step made it (enqueued it, or set the timer or the
 * request whose response it is) as the how-manieth thing that step made. Schedules that differ only by the order of
 * steps that commute give each step the same origin, while the ready list's own order (`seq`) follows when steps
 * happened to be enqueued. Ordered by `compareOrigins`, the ready list is then the same set in the same order after
 * any reordering of commuting steps, which is what lets the bounded search count preemptions soundly with
 * partial-order reduction (see src/explore/bounded-search.ts).
 */
export interface StepOrigin {
  readonly readyMs: number;
  /** The origin of the step that made this one; undefined for steps made outside any step (set-up, a fault). */
  readonly parent: StepOrigin | undefined;
  /**
   * Its place among what its parent made (or among what was made outside any step): steps enqueued directly in the
   * order they were, then timers (responses included) in the order they were set, as `timerIndexBase` + n. A timer
   * set to fire at once becomes ready after its step ends, behind what the step enqueued, and this keeps it there.
   */
  readonly index: number;
}

/** Where timers start among a parent's children (see `StepOrigin.index`). */
export const timerIndexBase = 2 ** 30;

/**
 * Orders origins by ready time, then by their parents' order, then by their place among their parent's. Along a
 * run that always takes the least ready step this is the order steps were enqueued in: a step's children come after
 * it, and after the children of every step that ran before it, so FIFO and origin order choose alike.
 */
export function compareOrigins(a: StepOrigin, b: StepOrigin): number {
  for (;;) {
    if (a === b) return 0;
    if (a.readyMs !== b.readyMs) return a.readyMs - b.readyMs;
    const pa = a.parent;
    const pb = b.parent;
    if (pa === pb) return a.index - b.index;
    if (pa === undefined) return -1;
    if (pb === undefined) return 1;
    a = pa;
    b = pb;
  }
}

export interface Strategy {
  /** A stable name for reports: "fifo", "random", "pct(3)", "replay". */
  readonly name: string;
  /** Ask the kernel to give every ready step its `origin` (costs an allocation per step; off unless asked). */
  readonly ordersByOrigin?: boolean;
  /** Returns an index into `ready` (never empty). `step` is the index of the step being chosen. */
  next(ready: readonly ReadyStep[], rng: Rng, step: number): number;
}

/** Non-zero choices only, as `[step, index]` pairs in step order: absent steps chose 0. */
export type Choices = ReadonlyArray<readonly [number, number]>;

/** Always the oldest ready step. */
export function fifoStrategy(): Strategy {
  return { name: "fifo", next: () => 0 };
}

/** A uniformly random ready step. */
export function randomStrategy(): Strategy {
  return { name: "random", next: (ready, rng) => rng.int(ready.length) };
}

export interface PctOptions {
  /** Bug depth d: d - 1 priority-change points. Default 3. */
  depth?: number;
  /** The expected number of steps, over which change points are spread. Default 10_000. */
  stepsHint?: number;
}

/**
 * PCT (Burckhardt et al.): every actor gets a random priority when first seen; the ready step of the
 * highest-priority actor runs (its oldest one); at d - 1 random steps the running actor drops to a low
 * priority. Finds bugs of depth d with probability at least 1 / (n * k^(d-1)).
 */
export function pctStrategy(options: PctOptions = {}): Strategy {
  const depth = options.depth ?? 3;
  const stepsHint = options.stepsHint ?? 10_000;
  assert(Number.isInteger(depth) && depth >= 1, "pct depth is a positive integer");
  assert(Number.isInteger(stepsHint) && stepsHint >= 1, "pct stepsHint is a positive integer");
  const priorities = new Map<string, number>();
  let changePoints: number[] | undefined;
  return {
    name: `pct(${depth})`,
    next(ready, rng, step) {
      changePoints ??= Array.from({ length: depth - 1 }, () => rng.int(stepsHint)).sort((a, b) => a - b);
      let best = 0;
      let bestPriority = -1;
      for (let i = 0; i < ready.length; i++) {
        const actor = ready[i]!.actor;
        let priority = priorities.get(actor);
        if (priority === undefined) {
          priority = depth + rng.int(0x4000_0000);
          priorities.set(actor, priority);
        }
        if (priority > bestPriority) {
          best = i;
          bestPriority = priority;
        }
      }
      const change = changePoints.indexOf(step);
      if (change >= 0) priorities.set(ready[best]!.actor, depth - 1 - change);
      return best;
    },
  };
}

/**
 * Follows recorded choices: index `choices[step]` where recorded, 0 elsewhere and beyond the end; the
 * simulation clamps an index past the ready list to its last step, so shortened lists stay valid.
 */
export function replayStrategy(choices: Choices): Strategy {
  const byStep = new Map<number, number>();
  for (const [step, index] of choices) {
    assert(Number.isInteger(step) && step >= 0, "replay choice step is a non-negative integer");
    assert(Number.isInteger(index) && index >= 0, "replay choice index is a non-negative integer");
    byStep.set(step, index);
  }
  return { name: "replay", next: (_ready, _rng, step) => byStep.get(step) ?? 0 };
}
