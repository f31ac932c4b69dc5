// A drill run's life as an explicit state machine, advanced only by `stepPhase(phase, input)`: the run (run.ts)
// applies its results and does the work (starting processes, arming the point, waiting for quiet).
//
//   opened --begin--> starting --watched--> watching --finish--> finished --close--> closed
//   starting --finish--> finished   (the controller never watched, or exited before it did)
//   opened --close--> closed        (a warmed-up run that no point took)
//   starting|watching --close--> closed   (the run threw: it is closed on the way out all the same)
//
// Invariants: a run begins once and its point is fixed then; it reports (finish) at most once, and only after it
// began; nothing happens to it once closed.
import { assert } from "../api/assert.ts";

export type RunPhase =
  /** Its server, proxy and world exist; standbys may be starting with their requests held. */
  | "opened"
  /** Its first process is let through; waiting for its first watch. */
  | "starting"
  /** The controller watches; the workload runs and the run waits for quiet. */
  | "watching"
  /** Its verdict is made; it is still to be torn down. */
  | "finished"
  /** Its processes, proxy and server are gone. */
  | "closed";

export type PhaseInput = { readonly type: "begin" } | { readonly type: "watched" } | { readonly type: "finish" } | { readonly type: "close" };

export const initialPhase: RunPhase = "opened";

export function stepPhase(phase: RunPhase, input: PhaseInput): RunPhase {
  switch (input.type) {
    case "begin":
      assert(phase === "opened", "a run begins once, from opened");
      return "starting";
    case "watched":
      assert(phase === "starting", "a run's first watch comes while it starts");
      return "watching";
    case "finish":
      assert(phase === "starting" || phase === "watching", "a run finishes once, after it began");
      return "finished";
    case "close":
      assert(phase !== "closed", "a run is closed once");
      return "closed";
  }
}
