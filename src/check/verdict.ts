// The outcome of one run. `silent-divergence` is the verdict settle exists for: the world settled,
// every actor idle, while a property that must eventually hold is false.

export type VerdictKind =
  | "ok"
  | "safety-violation"
  | "silent-divergence"
  | "deadline-missed"
  | "no-convergence"
  | "actor-error"
  | "nondeterminism";

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
}

/** Exit codes shared by every command: scripts rely on them. */
export const exitCodes = { ok: 0, finding: 1, usage: 2, nondeterminism: 3 } as const;

export function isFinding(verdict: Verdict): boolean {
  return verdict.kind !== "ok";
}

/** The deduplication key of a finding: verdict kind and property (or actor). */
export function findingKey(verdict: Verdict): string {
  return `${verdict.kind}:${verdict.property ?? verdict.actor ?? ""}`;
}
