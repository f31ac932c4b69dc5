// The lives of a wire connection and of a watch on it, as explicit state machines advanced only by pure step
// functions (as `stepLife` advances an actor's in src/sim/lifecycle.ts): `Connection` and `WireWatch` hold one value
// each, replace it with what the step returns, and carry out the side effects the change calls for.
//
// A connection:
//   open --close--> closed          the client end was destroyed, or the wire reset it (a lost response)
//   open|closed --drop--> dropped   its incarnation ended (crash, exit) or its simulation did (its delivery slot
//                                   as it was: the kernel drops the incarnation's steps, or the simulation is over)
// and beside that, its delivery slot (one delivery step at a time, in order):
//   idle --enqueue--> enqueued --ran--> idle       (a step due now)
//   idle --defer--> deferred --ran--> idle         (a step after a latency or a delay: the kernel promotes it)
//   enqueued --unschedule--> idle                  (a delay-watch fault takes the step back to wait longer)
// Closing takes an enqueued step back (the wire removes it from the kernel); a deferred one stays, and finds its
// connection closed when it runs. `serverEnded` records that the server ended its side (at most once).
//
// A watch:
//   requested --opened--> open --finished--> ended
//   requested --finished--> ended   answered without a stream (an error Status, an injected failure)
//   any --kill--> ended             its incarnation crashed (the kernel resets the waiters itself)
// with the stream the server attached (once), and a fault asked of it before the stream was there (`pending`).
import { assert } from "../api/assert.ts";

export type ConnectionPhase = "open" | "closed" | "dropped";
export type DeliverySlot = "idle" | "enqueued" | "deferred";

export interface ConnectionLife {
  readonly phase: ConnectionPhase;
  readonly delivery: DeliverySlot;
  readonly serverEnded: boolean;
}

export type ConnectionInput =
  | { readonly type: "enqueue" }
  | { readonly type: "defer" }
  | { readonly type: "ran" }
  | { readonly type: "unschedule" }
  | { readonly type: "server-end" }
  | { readonly type: "close" }
  | { readonly type: "drop" };

export const initialConnection: ConnectionLife = { phase: "open", delivery: "idle", serverEnded: false };

export function stepConnection(life: ConnectionLife, input: ConnectionInput): ConnectionLife {
  switch (input.type) {
    case "enqueue":
    case "defer":
      assert(life.phase === "open", "only an open connection schedules a delivery");
      assert(life.delivery === "idle", "a connection has one delivery step at a time");
      return { ...life, delivery: input.type === "enqueue" ? "enqueued" : "deferred" };
    case "ran":
      assert(life.delivery !== "idle", "a delivery step runs only when scheduled");
      return { ...life, delivery: "idle" };
    case "unschedule":
      assert(life.phase === "open", "only an open connection reschedules a delivery");
      assert(life.delivery === "enqueued", "only a step due now is taken back");
      return { ...life, delivery: "idle" };
    case "server-end":
      assert(!life.serverEnded, "the server ends its side once");
      return { ...life, serverEnded: true };
    case "close":
      assert(life.phase === "open", "only an open connection closes");
      return { ...life, phase: "closed", delivery: life.delivery === "enqueued" ? "idle" : life.delivery };
    case "drop":
      assert(life.phase !== "dropped", "a connection is dropped once");
      return { ...life, phase: "dropped" };
  }
}

export type WatchPhase = "requested" | "open" | "ended";

/** A fault asked of a watch whose stream the server has not attached yet: applied as soon as it is. */
export type WatchPending = { readonly type: "none" } | { readonly type: "close" } | { readonly type: "fail"; readonly error: unknown };

export interface WatchLife {
  readonly phase: WatchPhase;
  readonly attached: boolean;
  readonly pending: WatchPending;
  /** Counted among the incarnation's waiters (from opened until finished or killed). */
  readonly counted: boolean;
}

export type WatchInput =
  | { readonly type: "attach" }
  | { readonly type: "opened" }
  | { readonly type: "finished" }
  | { readonly type: "kill" }
  | { readonly type: "close" }
  | { readonly type: "fail"; readonly error: unknown };

export const initialWatch: WatchLife = { phase: "requested", attached: false, pending: { type: "none" }, counted: false };

export function stepWatch(life: WatchLife, input: WatchInput): WatchLife {
  switch (input.type) {
    case "attach":
      assert(!life.attached, "a watch request gets one stream");
      // The pending fault is handed to the stream now: nothing is left pending.
      return { ...life, attached: true, pending: { type: "none" } };
    case "opened":
      assert(life.phase === "requested", "a watch opens once, from requested");
      assert(!life.counted, "a watch is counted among the waiters once");
      return { ...life, phase: "open", counted: true };
    case "finished":
    case "kill":
      return { ...life, phase: "ended", counted: false };
    case "close":
    case "fail":
      assert(life.phase !== "ended", "a fault acts on a watch that has not ended");
      if (life.attached) return life;
      // A failure asked for wins over a close asked for (the stream gets the one that says more).
      if (life.pending.type === "fail" && input.type === "close") return life;
      return { ...life, pending: input.type === "close" ? { type: "close" } : { type: "fail", error: input.error } };
  }
}
