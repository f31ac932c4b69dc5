// The outcome of one run. `silent-divergence` is the verdict settle exists for: the world settled,
// every actor idle, while a property that must eventually hold is false.

export type VerdictKind =
  | "ok"
  | "safety-violation"
  | "silent-divergence"
  | "deadline-missed"
  | "no-convergence"
  | "actor-error"
  | "nondeterminism"
  | "scenario-error";

export interface Verdict {
  kind: VerdictKind;
  /** The property that failed (safety-violation, silent-divergence, deadline-missed). */
  property?: string;
  /** The step at which the verdict was reached. */
  step: number;
  /** Virtual time of that step, ms since the run started. */
  elapsedMs: number;
  /** One line a person can read. */
  detail: string;
  /** deadline-missed only: whether the world was idle at the deadline (idle means lost work, busy means slow). */
  idleAtDeadline?: boolean;
  /** actor-error only. */
  actor?: string;
  /**
   * scenario-error and actor-error: what was thrown, and where. A scenario error is the scenario's own mistake (a
   * property, a workload or a setup that threw), never a finding about the controller: exit code 2.
   */
  error?: ThrownError;
}

/** An exception as reports show it: its message, the first frame in the user's code and the stack. */
export interface ThrownError {
  /** Where it was thrown from: `property "name"`, `workload "main"`, `actor op`. */
  source: string;
  message: string;
  /** `file:line:column` of the first stack frame outside settle and node (relative to the working directory), if any. */
  location?: string;
  /** The stack, settle's and node's own frames left out (at most `stackFramesMax` frames). */
  stack: string[];
}

/** Exit codes shared by every command: scripts rely on them. */
export const exitCodes = { ok: 0, finding: 1, usage: 2, nondeterminism: 3 } as const;

/**
 * True for a run that did not pass: a finding, or a scenario error. Runs that end in either are kept, reported
 * and written a replay file; `isScenarioError` tells the scenario's own mistakes (exit code 2) apart.
 */
export function isFinding(verdict: Verdict): boolean {
  return verdict.kind !== "ok";
}

/** True for a run that ended in the scenario's own error (exit code 2, not a finding). */
export function isScenarioError(verdict: Verdict): boolean {
  return verdict.kind === "scenario-error";
}


/** The deduplication key of a finding: verdict kind and property (or actor). */
export function findingKey(verdict: Verdict): string {
  return `${verdict.kind}:${verdict.property ?? verdict.actor ?? ""}`;
}
