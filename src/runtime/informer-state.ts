// The informer's protocol as an explicit state machine (kube-rs `watcher`, client-go `Reflector`):
// `step(state, input)` is pure and returns the next state and the one effect the driver must perform.
import { assert } from "../api/assert.ts";

export type InformerPhase = "Empty" | "Listing" | "Watching" | "Backoff" | "Stopped";

export type InformerState =
  | { phase: "Empty" }
  /** `consistent`: list at the latest revision instead of "0" (after a 410, as client-go does). */
  | { phase: "Listing"; consistent: boolean; failures: number }
  /** `eventsSeen` counts events of the current watch; `idleCloses` counts watches that closed without any. */
  | { phase: "Watching"; revision: string; failures: number; eventsSeen: number; idleCloses: number }
  | { phase: "Backoff"; failures: number; resume: Resume; delayMs: number }
  | { phase: "Stopped" };

/** What to do when a backoff ends. */
export type Resume = { to: "list"; consistent: boolean } | { to: "watch"; revision: string; idleCloses: number };

export type InformerInput =
  | { type: "start" }
  | { type: "listed"; revision: string }
  | { type: "listFailed"; gone: boolean }
  | { type: "event"; revision: string }
  | { type: "watchClosed" }
  | { type: "watchFailed"; gone: boolean }
  | { type: "backoffDone" }
  | { type: "stop" };

export type InformerEffect =
  | { type: "none" }
  | { type: "list"; consistent: boolean }
  | { type: "watch"; revision: string }
  | { type: "sleep"; ms: number };

export interface BackoffOptions {
  /** First delay after a failure. Default 800 ms (client-go's reflector). */
  initialBackoffMs: number;
  /** Cap on the delay. Default 30,000 ms (client-go's reflector). */
  backoffMsMax: number;
  /** A watch that closes normally without one event this many times in a row is retried after a backoff. Default 3. */
  idleClosesMax: number;
}

export const backoffDefaults: BackoffOptions = { initialBackoffMs: 800, backoffMsMax: 30_000, idleClosesMax: 3 };

/** Capped exponential: initial * 2^(failures-1). */
export function backoffDelayMs(failures: number, options: BackoffOptions): number {
  assert(failures >= 1, "backoff-after-a-failure");
  return Math.min(options.initialBackoffMs * 2 ** Math.min(failures - 1, 40), options.backoffMsMax);
}

export interface Step {
  state: InformerState;
  effect: InformerEffect;
}

const none: InformerEffect = { type: "none" };

function backoff(failures: number, resume: Resume, options: BackoffOptions): Step {
  const delayMs = backoffDelayMs(failures, options);
  return { state: { phase: "Backoff", failures, resume, delayMs }, effect: { type: "sleep", ms: delayMs } };
}

function watching(revision: string, failures: number, idleCloses: number): Step {
  return {
    state: { phase: "Watching", revision, failures, eventsSeen: 0, idleCloses },
    effect: { type: "watch", revision },
  };
}

function listing(consistent: boolean, failures: number): Step {
  return { state: { phase: "Listing", consistent, failures }, effect: { type: "list", consistent } };
}

function stepWatching(state: Extract<InformerState, { phase: "Watching" }>, input: InformerInput, options: BackoffOptions): Step {
  switch (input.type) {
    case "event":
      // A watch that delivers is healthy again: failures reset.
      // Every field written out (no spread of `state`): this runs for every event an informer receives.
      return { state: { phase: "Watching", revision: input.revision, failures: 0, eventsSeen: state.eventsSeen + 1, idleCloses: 0 }, effect: none };
    case "watchClosed": {
      // A normal close: resume from the last revision seen, so nothing is missed or replayed twice.
      const idleCloses = state.eventsSeen === 0 ? state.idleCloses + 1 : 0;
      if (idleCloses < options.idleClosesMax) return watching(state.revision, state.failures, idleCloses);
      return backoff(state.failures + 1, { to: "watch", revision: state.revision, idleCloses: 0 }, options);
    }
    case "watchFailed":
      // 410: the revision is compacted away; relist at once, consistently, so a stale "0" list cannot
      // lead straight back to the same 410 (a second 410 before any event backs off). Any other failure:
      // relist after a backoff.
      if (input.gone && state.failures === 0) return listing(true, 1);
      if (input.gone) return backoff(state.failures + 1, { to: "list", consistent: true }, options);
      return backoff(state.failures + 1, { to: "list", consistent: false }, options);
    default:
      assert(false, `informer-input-${input.type}-not-expected-while-watching`);
  }
}

export function step(state: InformerState, input: InformerInput, options: BackoffOptions = backoffDefaults): Step {
  if (input.type === "stop") return { state: { phase: "Stopped" }, effect: none };
  assert(state.phase !== "Stopped", "informer-no-input-after-stop");
  switch (state.phase) {
    case "Empty":
      assert(input.type === "start", "informer-starts-empty");
      return listing(false, 0);
    case "Listing":
      if (input.type === "listed") return watching(input.revision, state.failures, 0);
      assert(input.type === "listFailed", "informer-listing-gets-list-result");
      return backoff(state.failures + 1, { to: "list", consistent: state.consistent || input.gone }, options);
    case "Watching":
      return stepWatching(state, input, options);
    case "Backoff": {
      assert(input.type === "backoffDone", "informer-backoff-ends-by-timer");
      const resume = state.resume;
      if (resume.to === "list") return listing(resume.consistent, state.failures);
      return watching(resume.revision, state.failures, resume.idleCloses);
    }
  }
}
