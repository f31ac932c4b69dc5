// `settle drill --replay ARTIFACT [--repeat N]`: drills again exactly the point a failing drill recorded (the same
// variant, write number, fault and resource), N times, and counts how many runs fail again the way it did. The
// controller is a real process: its threads, its runtime and the machine's load decide when each request leaves,
// so one run of a point is not a replay of another, byte for byte. A replay counts; it never claims identity.
import { readFileSync } from "node:fs";
import { isDrillFaultKind } from "../api/faults.ts";
import { isRecord } from "../api/json.ts";
import { drillArtifactKind, type DrillArtifact } from "./artifact.ts";
import { drill } from "./drill.ts";
import type { DrillPoint, DrillResult, DrillRun } from "./types.ts";
import type { DrillTarget } from "./target.ts";

export const replayRepeatMax = 100;

/** What the output says of every replay: a count over real runs, not a claim that a run was reproduced exactly. */
export const replayCaveat =
  "a real process is not deterministic (its scheduling, its runtime and the machine's load change from run to run), so each run drills the same point again; it does not reproduce the recorded run byte for byte";

/** An artifact that cannot be replayed: the message names the file and what is wrong. */
export class DrillArtifactError extends Error {}

/** Reads and checks an artifact for a replay. */
export function readDrillArtifact(path: string): DrillArtifact & { run: { point: DrillPoint }; replay: NonNullable<DrillArtifact["replay"]> } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, "utf8"));
  } catch (error) {
    throw new DrillArtifactError(`${path}: not a readable JSON file (${error instanceof Error ? error.message : String(error)})`);
  }
  if (!isRecord(parsed) || parsed.kind !== drillArtifactKind) throw new DrillArtifactError(`${path}: kind: expected "${drillArtifactKind}" (a drill artifact; a simulator replay file is for settle replay)`);
  const artifact = parsed as unknown as DrillArtifact;
  const point = artifact.run?.point as unknown;
  if (point === undefined) throw new DrillArtifactError(`${path}: run.point: absent: the artifact is of the reference run, which has no point to drill again (drill the scenario again instead)`);
  if (!isRecord(point) || !Number.isSafeInteger(point.afterWrite) || (point.afterWrite as number) < 1) throw new DrillArtifactError(`${path}: run.point.afterWrite: expected a write number >= 1`);
  if (!isDrillFaultKind(point.fault)) throw new DrillArtifactError(`${path}: run.point.fault: ${JSON.stringify(point.fault)} is not a drill fault`);
  if (point.resource !== undefined && typeof point.resource !== "string") throw new DrillArtifactError(`${path}: run.point.resource: expected a string`);
  const replay = artifact.replay as unknown;
  if (!isRecord(replay)) throw new DrillArtifactError(`${path}: replay: absent: the artifact was written before settle drill --replay existed; drill the point again with: ${artifact.rerun}`);
  for (const field of ["path", "variant", "workload"] as const) {
    if (typeof replay[field] !== "string") throw new DrillArtifactError(`${path}: replay.${field}: expected a string`);
  }
  if (replay.command !== undefined && !(Array.isArray(replay.command) && replay.command.length > 0 && replay.command.every((a) => typeof a === "string"))) {
    throw new DrillArtifactError(`${path}: replay.command: expected a non-empty list of strings`);
  }
  return artifact as ReturnType<typeof readDrillArtifact>;
}

/** Whether a run failed again as the recorded one did: the same verdict and, for a violation, a property in common. */
export function failsAgain(recorded: DrillRun, run: DrillRun): boolean {
  if (run.verdict !== recorded.verdict) return false;
  if (run.verdict !== "violated") return true;
  return run.failed.some((name) => recorded.failed.includes(name));
}

export interface ReplayOptions {
  /** Runs of the point. Default 1. */
  repeat?: number;
  /** Runs at once. Default: the drill's. */
  concurrency?: number;
  /** The controller command; default the artifact's (given after -- when it was found), else the variant's. */
  command?: readonly string[];
  onProgress?(line: string): void;
  onRun?(run: DrillRun): void;
}

export interface DrillReplay {
  point: DrillPoint;
  recorded: DrillRun;
  result: DrillResult;
  /** Runs that failed again as the recorded one did. */
  again: number;
  repeat: number;
}

/** Drills the artifact's point `repeat` times against `target` (loaded from `artifact.replay`). */
export async function replayDrill(artifact: ReturnType<typeof readDrillArtifact>, target: DrillTarget, options: ReplayOptions = {}): Promise<DrillReplay> {
  const repeat = options.repeat ?? 1;
  if (!Number.isSafeInteger(repeat) || repeat < 1 || repeat > replayRepeatMax) throw new RangeError(`drill: --repeat expects 1 to ${replayRepeatMax}, got ${repeat}`);
  const { replay, run: recorded } = artifact;
  const point: DrillPoint = { afterWrite: recorded.point.afterWrite, fault: recorded.point.fault, ...(recorded.point.resource === undefined ? {} : { resource: recorded.point.resource }) };
  const command = options.command ?? replay.command;
  const result = await drill({
    target,
    ...(command === undefined ? {} : { command }),
    points: Array.from({ length: repeat }, () => point),
    ...(replay.quietMs === undefined ? {} : { quietMs: replay.quietMs }),
    ...(replay.timeoutMs === undefined ? {} : { timeoutMs: replay.timeoutMs }),
    ...(replay.coldStart === true ? { coldStart: true } : {}),
    ...(options.concurrency === undefined ? {} : { concurrency: options.concurrency }),
    ...(options.onProgress === undefined ? {} : { onProgress: options.onProgress }),
    ...(options.onRun === undefined ? {} : { onRun: options.onRun }),
  });
  const again = result.runs.filter((run) => run !== undefined && failsAgain(recorded, run)).length;
  return { point, recorded, result, again, repeat };
}
