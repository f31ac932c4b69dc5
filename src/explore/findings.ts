// Replay files: `.settle/findings/<scenario>/<variant>-<id>.json`, one per finding, written atomically,
// with the minimal run's trace beside it (`.trace.jsonl`) so a replay can name the first differing step.
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, renameSync, writeFileSync, existsSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import type { PlannedFault } from "../sim/types.ts";
import type { TraceRecord } from "../sim/trace.ts";
import { toJsonl } from "../sim/trace.ts";
import type { ThrownError, VerdictKind } from "../check/verdict.ts";
import type { Params, Scenario } from "./scenario.ts";
import type { BoundedStats, SearchPosition, Unit } from "./types.ts";
import type { RunSpec } from "./run.ts";

/**
 * The version of the replay format and of the semantics a replay depends on (scheduling, the trace's hashed
 * fields, fault placement). A change to any of them bumps it, and the run of an older file keeps that older
 * version's semantics, so a file a user committed as a regression test keeps reproducing. Version 1: requests
 * take no virtual time, and every write counts against "settled". Version 2: each request takes a seeded
 * latency (`timing.requestLatencyMs`), heartbeat writes (Leases) do not unsettle the world, and settled means
 * quiescent. It equals `currentSemantics` in run.ts: a replay runs with `semantics: file.version`.
 */
export const replayFormatVersion = 2;

export interface ReplayFile {
  version: number;
  /** Relative to the working directory the file was written from. */
  scenario: string;
  variant: string;
  workload: string;
  params: Params;
  seed: number;
  choices: Array<[number, number]>;
  faults: PlannedFault[];
  verdict: VerdictKind;
  property: string | null;
  /** actor-error only: the actor that threw (two actors' errors are two findings, in two files). */
  actor?: string;
  traceHash: string;
  steps: number;
  /** The index of the first exploration run that found it (merge keeps the lowest); below 0 for a fault-free reference run. */
  run?: number;
  /**
   * The request latency the run took, when the exploration chose it rather than the scenario's timing: the bounded
   * search runs every request with one constant latency (`[L, L]`). A replay runs with it, to the same trace.
   */
  requestLatencyMs?: [number, number];
  /** A scenario error or an actor error: what was thrown and where (for people; a replay recomputes it). */
  error?: ThrownError;
  /**
   * The sha256 of the scenario file's bytes when the file was written (files of older settles have none): a replay
   * that diverges says whether the scenario changed since, rather than calling an edit nondeterminism.
   */
  scenarioSha256?: string;
}

/** The sha256 of a scenario file's bytes, as a replay file records it; undefined when it cannot be read. */
export function scenarioDigest(path: string): string | undefined {
  if (!existsSync(path)) return undefined;
  return createHash("sha256").update(readFileSync(path)).digest("hex");
}

/** Reported with exit code 2: the file is missing, not JSON, or has a bad field. */
export class ReplayFileError extends Error {
  override name = "ReplayFileError";
}

/** The id in a finding's file name: of its verdict and its property, or for an actor error, its actor. */
export function findingId(verdict: string, property: string | null, actor?: string): string {
  return createHash("sha256").update(`${verdict}\0${property ?? actor ?? ""}`).digest("hex").slice(0, 10);
}

/** Writes the replay file and its trace atomically (temp file + rename); returns the path relative to `cwd`. */
export function writeReplayFile(cwd: string, file: ReplayFile, trace: readonly TraceRecord[], scenarioName: string): string {
  const name = `${file.variant}-${findingId(file.verdict, file.property, file.actor)}`;
  const dir = join(cwd, ".settle", "findings", scenarioName);
  mkdirSync(dir, { recursive: true });
  const path = join(dir, `${name}.json`);
  atomicWrite(join(dir, `${name}.trace.jsonl`), toJsonl(trace));
  atomicWrite(path, `${JSON.stringify(file, null, 2)}\n`);
  return relative(cwd, path);
}

function atomicWrite(path: string, text: string): void {
  const temp = `${path}.${process.pid}.tmp`;
  writeFileSync(temp, text);
  renameSync(temp, path);
}

function field<T>(object: Record<string, unknown>, path: string, name: string, check: (v: unknown) => boolean, expected: string): T {
  const value = object[name];
  if (!check(value)) throw new ReplayFileError(`${path}: field "${name}" must be ${expected}, got ${JSON.stringify(value)}`);
  return value as T;
}

const isInt = (v: unknown) => Number.isInteger(v);
const isString = (v: unknown) => typeof v === "string";

export function readReplayFile(path: string): { file: ReplayFile; trace?: TraceRecord[] } {
  if (!existsSync(path)) throw new ReplayFileError(`${path}: no such file`);
  let data: unknown;
  try {
    data = JSON.parse(readFileSync(path, "utf8"));
  } catch (error) {
    throw new ReplayFileError(`${path}: not valid JSON (${error instanceof Error ? error.message : String(error)})`);
  }
  if (typeof data !== "object" || data === null || Array.isArray(data)) throw new ReplayFileError(`${path}: expected a JSON object`);
  const o = data as Record<string, unknown>;
  const version = field<number>(o, path, "version", isInt, "an integer");
  if (version < 1 || version > replayFormatVersion) throw new ReplayFileError(`${path}: format version ${version} is not supported (this settle reads 1 to ${replayFormatVersion})`);
  const isCount = (v: unknown) => Number.isInteger(v) && (v as number) >= 0;
  const pairs = (v: unknown) => Array.isArray(v) && v.every((p) => Array.isArray(p) && p.length === 2 && p.every(isCount));
  const faultsOk = (v: unknown) => Array.isArray(v) && v.every((f) => typeof f === "object" && f !== null && isCount((f as PlannedFault).atStep) && isString((f as PlannedFault).kind) && isString((f as PlannedFault).target));
  const file: ReplayFile = {
    version,
    scenario: field(o, path, "scenario", isString, "a path"),
    variant: field(o, path, "variant", isString, "a string"),
    workload: field(o, path, "workload", isString, "a string"),
    params: field(o, path, "params", (v) => typeof v === "object" && v !== null && !Array.isArray(v), "an object"),
    seed: field(o, path, "seed", isInt, "an integer"),
    choices: field(o, path, "choices", pairs, "a list of [step, index] pairs of non-negative integers"),
    faults: field(o, path, "faults", faultsOk, "a list of { atStep (>= 0), kind, target } faults"),
    verdict: field(o, path, "verdict", isString, "a verdict name"),
    property: field(o, path, "property", (v) => v === null || isString(v), "a string or null"),
    traceHash: field(o, path, "traceHash", isString, "a sha256 hex string"),
    steps: field(o, path, "steps", isInt, "an integer"),
  };
  if (o.actor !== undefined) file.actor = field<string>(o, path, "actor", isString, "a string");
  if (o.run !== undefined) file.run = field<number>(o, path, "run", isInt, "an integer");
  if (o.scenarioSha256 !== undefined) file.scenarioSha256 = field<string>(o, path, "scenarioSha256", (v) => typeof v === "string" && /^[0-9a-f]{64}$/.test(v), "a sha256 hex string");
  if (o.requestLatencyMs !== undefined) {
    const range = (v: unknown) => Array.isArray(v) && v.length === 2 && v.every(isCount) && (v[0] as number) <= (v[1] as number);
    file.requestLatencyMs = field<[number, number]>(o, path, "requestLatencyMs", range, "[min, max] whole ms with 0 <= min <= max");
  }
  const tracePath = path.replace(/\.json$/, ".trace.jsonl");
  if (!existsSync(tracePath)) return { file };
  const trace = readFileSync(tracePath, "utf8").split("\n").filter((l) => l.length > 0).map((l) => JSON.parse(l) as TraceRecord);
  return { file, trace };
}

/** The scenario file a replay file names, resolved against the working directory. */
export function replayScenarioPath(cwd: string, file: ReplayFile): string {
  return resolve(cwd, file.scenario);
}

export { dirname };

/** The scenario a replay runs: the scenario file's, with the request latency the file recorded, if any. */
export function replayScenario(scenario: Scenario, file: ReplayFile): Scenario {
  if (file.requestLatencyMs === undefined) return scenario;
  return { ...scenario, timing: { ...scenario.timing, requestLatencyMs: file.requestLatencyMs } };
}

/**
 * The parameters a replay runs with: the scenario's defaults, overridden by those the file recorded. A
 * parameter the scenario gained since keeps its default; one it no longer has, or of another type, is an error.
 */
export function replayParams(scenario: { name: string; params: Params }, file: ReplayFile, path: string): Params {
  const params: Params = { ...scenario.params };
  for (const [key, value] of Object.entries(file.params)) {
    if (!(key in scenario.params)) throw new ReplayFileError(`${path}: param "${key}" is not a param of scenario ${scenario.name}`);
    if (typeof value !== typeof scenario.params[key]) {
      throw new ReplayFileError(`${path}: param "${key}" must be a ${typeof scenario.params[key]}, got ${JSON.stringify(value)}`);
    }
    params[key] = value;
  }
  return params;
}

/**
 * The run a replay file asks for: its variant, workload, seed, choices and faults, its parameters over the
 * scenario's (`replayParams`), at the semantics version it was recorded with. `settle replay` and the report both
 * run exactly this, so the report shows the run the replay reproduces.
 */
export function replayRunSpec(scenario: Scenario, file: ReplayFile, path: string): Omit<RunSpec, "traceMode"> {
  const params = replayParams(scenario, file, path);
  return { variant: file.variant, workload: file.workload, params, seed: file.seed, choices: file.choices, faults: file.faults, semantics: file.version };
}

/**
 * What a bounded search writes beside its findings (`<scenario>/<variant>.search.json`): its bounds, its shard, its
 * figures, and where in the search tree each finding came first. `settle merge` of every shard's findings adds them
 * up to the unsharded search's figures and says whether the whole space was searched (src/cli/merge.ts).
 */
export interface SearchRecord {
  version: number;
  /** The scenario's name (its folder under .settle/findings). */
  scenario: string;
  variant: string;
  workload: string | null;
  params: Params;
  seed: number;
  shard: { index: number; count: number };
  stats: BoundedStats;
  steps: number;
  /** Schedules per unit of the search tree, in search order: `[root, step, index, schedules]` (bounded.ts). */
  units: Unit[];
  findings: Array<{ key: string; replay: string | null; position: SearchPosition; occurrences: number; run: number }>;
}

export const searchRecordVersion = 1;
export const searchRecordSuffix = ".search.json";

/** Writes a search record beside the scenario's replay files in `findingsDir` (a .settle/findings), atomically. */
export function writeSearchRecord(findingsDir: string, record: SearchRecord): void {
  const dir = join(findingsDir, record.scenario);
  mkdirSync(dir, { recursive: true });
  atomicWrite(join(dir, `${record.variant}${searchRecordSuffix}`), `${JSON.stringify(record, null, 2)}\n`);
}

export function readSearchRecord(path: string): SearchRecord {
  let data: unknown;
  try {
    data = JSON.parse(readFileSync(path, "utf8"));
  } catch (error) {
    throw new ReplayFileError(`${path}: not a search record (${error instanceof Error ? error.message : String(error)})`);
  }
  if (typeof data !== "object" || data === null || Array.isArray(data)) throw new ReplayFileError(`${path}: expected a search record (a JSON object)`);
  const o = data as Record<string, unknown>;
  const version = field<number>(o, path, "version", isInt, "an integer");
  if (version !== searchRecordVersion) throw new ReplayFileError(`${path}: search record version ${version} is not supported (this settle reads ${searchRecordVersion})`);
  field(o, path, "scenario", isString, "a scenario name");
  field(o, path, "variant", isString, "a string");
  field(o, path, "shard", isShard, "{ index, count } with 0 <= index < count");
  field(o, path, "stats", (v) => typeof v === "object" && v !== null && ["schedules", "pruned", "placements", "placementsTotal", "runs", "preemptions", "faultPoints", "latencyMs"].every((k) => isInt((v as Record<string, unknown>)[k])) && typeof (v as { complete?: unknown }).complete === "boolean", "the search's figures");
  field(o, path, "steps", isInt, "an integer");
  field(o, path, "units", (v) => Array.isArray(v) && v.every((u) => Array.isArray(u) && u.length === 4 && u.every(isInt)), "a list of [root, step, index, schedules]");
  field(o, path, "findings", (v) => Array.isArray(v) && v.every((f) => typeof f === "object" && f !== null && isString((f as { key?: unknown }).key) && isInt((f as { occurrences?: unknown }).occurrences)), "a list of { key, position, occurrences, run }");
  return data as SearchRecord;
}

function isShard(v: unknown): boolean {
  if (typeof v !== "object" || v === null) return false;
  const { index, count } = v as { index?: unknown; count?: unknown };
  return isInt(index) && isInt(count) && (index as number) >= 0 && (index as number) < (count as number);
}
