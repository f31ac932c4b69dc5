// What a drill is given and what it finds: the options, a point, a run's verdict, timings and timeline, the result.
// Plain data, shared by the orchestration (drill.ts), a run (run.ts), the artifacts and the command line.
import { drillFaultKinds, drillFaultParam, isClockDrillFault, type DrillFaultKind } from "../api/faults.ts";
import { faketimeSpec } from "./faketime.ts";
import type { ThrownError } from "../check/verdict.ts";
import type { Scenario, ScenarioContext } from "../explore/scenario.ts";
import type { RequestSeen, WriteSeen } from "./proxy.ts";
import type { DrillTarget } from "./target.ts";

// What the drill does at a point: `kill` the group, or one of the other faults (`--faults`); names and parameters
// are the shared fault model's (`api/faults.ts`).
export { drillFaultKinds, type DrillFaultKind };

export interface DrillPoint {
  /** Right after the controller's k-th applied write (1-based) of this run. */
  afterWrite: number;
  fault: DrillFaultKind;
  /** The resource (plural) a per-resource fault aims at (`drillFaults[fault].perResource`). */
  resource?: string;
}

export interface DrillOptions {
  /** The scenario as a drill target; or give `scenario` and `ctx` for a TypeScript scenario. */
  target?: DrillTarget;
  scenario?: Scenario;
  ctx?: ScenarioContext;
  /** The controller's command line. Default: the target's own (YAML variants declare one). */
  command?: readonly string[];
  /**
   * No store write for this long counts as quiet, in every run. Default: the reference run waits the target's
   * `quietMs` (2000 if it has none) and the points wait what it learned (see quiet.ts).
   */
  quietMs?: number;
  /** Every run (start, first watch, workload, restart, quiet) must finish within this. Default 60_000. */
  timeoutMs?: number;
  /** Kill after these writes (1-based). Default: every write of the reference run. */
  killPoints?: readonly number[];
  /**
   * Exactly these points, in this order (a point may repeat), instead of a plan: `--replay`. Each runs once the
   * reference has made its write.
   */
  points?: readonly DrillPoint[];
  /**
   * Apply every fault of `drillFaults` at every point, not only the target's (default: kill): the per-resource
   * ones for each resource the controller watched in the reference run.
   */
  faults?: boolean;
  /** Points drilled at once, each with its own server and process group. Default: the machine's cores. */
  concurrency?: number;
  /**
   * Start every controller process at its turn, not ahead of it with its API requests held (the next point's first
   * process, and the one that replaces a killed process). For a controller whose start-up, before its first API
   * request, has effects outside the API server or reads local state its killed predecessor wrote. Default false.
   */
  coldStart?: boolean;
  /** A folder for one JSON artifact per failing point (`settle report --html` renders it). Default none. */
  artifactsDir?: string;
  onProgress?(line: string): void;
  /** Called with each finished run (the CLI writes artifacts and prints output from here). */
  onRun?(run: DrillRun): void;
}

/**
 * `violated`: a property was false; `no-quiet`: not quiet within the timeout; `no-watch`: the controller never
 * watched; `controller-failed`: it exited before watching; `workload-failed`: a workload step failed (a write the
 * server refused; a `waitFor` that times out ends the workload instead, and the properties judge the world); `scenario-error`: the scenario's
 * own code threw (a property, a TypeScript workload, the summary), so the run says nothing about the controller.
 */
export type DrillVerdict = "ok" | "violated" | "no-quiet" | "no-watch" | "controller-failed" | "workload-failed" | "scenario-error";

export interface DrillTimings {
  /** From the start of the run (ms): the first watch, the fault, the restarted process's first watch, quiet. */
  firstWatchMs?: number;
  /** The workload's last step done. */
  workloadMs?: number;
  faultMs?: number;
  rewatchMs?: number;
  quietMs?: number;
  totalMs: number;
  /** The quiet window this run ended with (a point's may have widened while it ran). */
  quietWindowMs?: number;
  /** The longest time from a change of the world to the controller's next write request (what points learn from). */
  thinkMaxMs?: number;
}

export interface DrillRun {
  point?: DrillPoint;
  /** The write the process was killed after (kill points), or undefined for the reference run. */
  killAfterWrite?: number;
  write?: WriteSeen;
  verdict: DrillVerdict;
  /** Properties that were false (always: after any write; eventually: once quiet). */
  failed: string[];
  writes: number;
  detail: string;
  /** The scenario's one-line summary of the world once quiet, if it has one. */
  world?: string;
  /** scenario-error: what the scenario's code threw, and the user's file:line (as explore reports it). */
  error?: ThrownError;
  /** What the drill did at the point, as it happened (e.g. whether a stale list was actually served). */
  applied?: string;
  timings: DrillTimings;
  /** The controller's output (every start, prefixed `[n]`), last lines; kept for runs that are not ok. */
  output?: string[];
  /** The controller's requests and the world's writes, for the report; kept for runs that are not ok. */
  timeline?: DrillTimeline;
  /** The resources the controller watched, in the order of their first watch (per-resource faults aim at these). */
  watched?: string[];
}

export interface DrillTimeline {
  startMs: number;
  requests: RequestSeen[];
  events: Array<{ atMs: number; type: string; revision: number; object: unknown }>;
  initial: unknown[];
}

export interface DrillResult {
  target: { name: string; variant: string; workload: string };
  reference: DrillRun;
  runs: DrillRun[];
  /** Given write numbers (`killPoints`) past the reference run's last write: not drilled. Absent when none. */
  unreached?: number[];
}

export function pointLabel(point: DrillPoint): string {
  // A clock point says its skew as the fault model does: `clock-ahead (clock-skew +30s) after write 3`.
  const fault = isClockDrillFault(point.fault) ? `${point.fault} (clock-skew ${faketimeSpec(drillFaultParam(point.fault, "offsetMs"))}s)` : point.fault;
  return `${fault}${point.resource === undefined ? "" : ` ${point.resource}`} after write ${point.afterWrite}`;
}

export function shortPath(path: string): string {
  return path.replace(/^\/token\/[^/]+/, "").split("?")[0]!;
}
