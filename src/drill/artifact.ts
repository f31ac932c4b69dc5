// A drill point that failed leaves an artifact: one JSON file with the point, the verdict, the controller's output
// and the timeline (every request of the controller, every write the store saw, the objects before and after).
// `settle report --html` renders it as it renders a simulator finding: swimlanes for the controller's starts, the
// workload and the garbage collector, a row per object. A drill cannot be replayed step by step (the controller is
// a real process), so the report's "replay" line is the command that drills the same point again:
// `settle drill --replay ARTIFACT`, from what the artifact records of how the drill ran (`DrillReplayInfo`).
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { assert } from "../api/assert.ts";
import { isRecord } from "../api/json.ts";
import type { KubeObject } from "../api/object.ts";
import type { Change, ObjectVersion } from "../report/capture.ts";
import { reportFormatVersion, type ReportData } from "../report/model.ts";
import type { TraceRecord } from "../sim/trace.ts";
import type { RequestSeen } from "./proxy.ts";
import { pointLabel, type DrillResult, type DrillRun, type DrillTimeline } from "./types.ts";

export const drillArtifactKind = "settle-drill-finding";

/** What a replay needs beyond the run's point: how the drill that found it was run. */
export interface DrillReplayInfo {
  /** The scenario as the drill loaded it (a scenario.yaml, a scenario file or an example folder), absolute. */
  path: string;
  variant: string;
  workload: string;
  /** A TypeScript scenario's parameters, as resolved. */
  params?: Record<string, unknown>;
  /** The controller command given after --, if any (else the variant's own). */
  command?: string[];
  quietMs?: number;
  timeoutMs?: number;
  coldStart?: boolean;
}

export interface DrillArtifact {
  kind: typeof drillArtifactKind;
  format: 1;
  scenario: string;
  variant: string;
  workload: string;
  /** The command that drills this point again (the controller command after `--` is the user's). */
  rerun: string;
  run: DrillRun;
  /** Absent in artifacts written before `--replay` existed. */
  replay?: DrillReplayInfo;
}

/**
 * Writes the artifact of a failed run into `dir` and returns its path. With `replay`, the artifact can be drilled
 * again with `settle drill --replay`, which becomes its rerun command.
 */
export function writeDrillArtifact(dir: string, result: Pick<DrillResult, "target">, run: DrillRun, rerun: string, replay?: DrillReplayInfo): string {
  const point = run.point === undefined ? "reference" : `${run.point.fault}${run.point.resource === undefined ? "" : `-${run.point.resource}`}-${run.point.afterWrite}`;
  const path = join(dir, `${result.target.variant}-${point}.json`);
  mkdirSync(dir, { recursive: true });
  const artifact: DrillArtifact = { kind: drillArtifactKind, format: 1, scenario: result.target.name, variant: result.target.variant, workload: result.target.workload, rerun, run };
  if (replay !== undefined && run.point !== undefined) {
    artifact.replay = replay;
    artifact.rerun = `npx settle drill --replay ${path}`;
  }
  writeFileSync(path, `${JSON.stringify(artifact)}\n`);
  return path;
}

/** Whether a JSON file is a drill artifact (rather than a simulator replay file). */
export function isDrillArtifactFile(path: string): boolean {
  try {
    const parsed = JSON.parse(readFileSync(path, "utf8")) as unknown;
    return isRecord(parsed) && parsed.kind === drillArtifactKind;
  } catch {
    return false;
  }
}

function refOf(object: unknown): string {
  const o = object as KubeObject;
  const ns = o.metadata?.namespace;
  return `${o.kind} ${ns === undefined || ns === "" ? "" : `${ns}/`}${o.metadata?.name ?? ""}`;
}

/**
 * The records, object versions and changes of a drill's timeline, built in time order by this one writer: the
 * controller's requests and the store's writes interleaved by when they happened, then the point's fault.
 */
class TimelineRecords {
  readonly records: TraceRecord[] = [];
  readonly versions: ObjectVersion[];
  readonly initial: number[];
  readonly changes: Array<[number, Change[]]> = [];
  readonly #latest: Map<string, number>;
  #revision: number;

  constructor(initialObjects: readonly unknown[]) {
    this.versions = initialObjects.map((object) => ({ key: refOf(object), revision: Number((object as KubeObject).metadata?.resourceVersion ?? 0), object }));
    this.initial = this.versions.map((_, i) => i);
    this.#latest = new Map<string, number>(this.versions.map((v, i) => [v.key, i]));
    this.#revision = Math.max(0, ...this.versions.map((v) => v.revision ?? 0));
  }

  get revision(): number {
    return this.#revision;
  }

  request(request: RequestSeen): void {
    const label = `${request.method} ${request.path}${request.watch ? " (watch)" : ""}`;
    const result = request.note ?? (request.status >= 200 && request.status < 300 ? "ok" : String(request.status));
    const revision = this.#revision;
    this.records.push({ step: this.records.length, timeMs: request.atMs, actor: `controller[${request.incarnation}]`, kind: "request", label, write: request.write !== undefined, revisionBefore: revision, revisionAfter: revision, result });
  }

  event(event: DrillTimeline["events"][number]): void {
    const key = refOf(event.object);
    const index = this.versions.push({ key, revision: event.revision, object: event.object }) - 1;
    const before = this.#latest.get(key) ?? -1;
    this.#latest.set(key, index);
    const at = this.records.length;
    this.records.push({ step: at, timeMs: event.atMs, actor: "store", kind: "response", label: `${event.type} ${key}`, ref: key, write: true, revisionBefore: this.#revision, revisionAfter: event.revision, result: `${event.type} ${key}@${event.revision}` });
    this.#revision = event.revision;
    this.changes.push([at, [[key, before, event.type === "DELETED" ? -1 : index]]]);
  }

  /** The point's fault, placed before the first record at or after its time; later steps and changes move up one. */
  fault(record: TraceRecord): void {
    const found = this.records.findIndex((r) => r.timeMs >= record.timeMs);
    const at = found < 0 ? this.records.length : found;
    this.records.splice(at, 0, record);
    this.records.forEach((r, i) => (r.step = i));
    for (const entry of this.changes) if (entry[0] >= at) entry[0]++;
    assert(this.records[at] === record, "the fault record sits at its place");
  }
}

/** The records of a timeline: its requests and its store events in time order (requests first on a tie). */
function timelineRecords(timeline: DrillTimeline): TimelineRecords {
  const built = new TimelineRecords(timeline.initial);
  type Item = { atMs: number; order: number; make: () => void };
  const items: Item[] = [
    ...timeline.requests.map((request, order) => ({ atMs: request.atMs, order, make: () => built.request(request) })),
    ...timeline.events.map((event, order) => ({ atMs: event.atMs, order: timeline.requests.length + order, make: () => built.event(event) })),
  ];
  items.sort((a, b) => a.atMs - b.atMs || a.order - b.order);
  for (const item of items) item.make();
  return built;
}

/** The report model of an artifact: records from the controller's requests and the store's writes, in time order. */
export function reportDataFromDrillArtifact(path: string, cwd = process.cwd()): ReportData {
  const artifact = JSON.parse(readFileSync(path, "utf8")) as DrillArtifact;
  if (artifact.kind !== drillArtifactKind || artifact.run.timeline === undefined) throw new Error(`${path}: not a drill artifact with a timeline`);
  const { run } = artifact;
  const timeline = run.timeline!;
  const built = timelineRecords(timeline);
  if (run.timings.faultMs !== undefined && run.point !== undefined) {
    const atMs = timeline.startMs + run.timings.faultMs;
    const fault = { kind: run.point.fault, target: run.point.resource ?? "controller", applied: true };
    built.fault({ step: 0, timeMs: atMs, actor: "drill", kind: "fault", label: pointLabel(run.point), revisionBefore: built.revision, revisionAfter: built.revision, result: run.verdict, fault });
  }
  const { records, changes, versions, initial } = built;
  const shown = resolve(cwd, path).startsWith(resolve(cwd)) ? relative(cwd, resolve(cwd, path)) : path;
  return {
    format: reportFormatVersion,
    scenario: artifact.scenario,
    scenarioPath: artifact.scenario,
    variant: artifact.variant,
    workload: artifact.workload,
    params: {},
    seed: 0,
    verdict: {
      kind: run.verdict === "violated" ? "silent-divergence" : run.verdict === "scenario-error" ? "scenario-error" : "no-convergence",
      ...(run.failed[0] === undefined ? {} : { property: run.failed[0] }),
      ...(run.error === undefined ? {} : { error: run.error }),
      step: records.length - 1,
      elapsedMs: run.timings.totalMs,
      detail: `${run.point === undefined ? "reference run" : pointLabel(run.point)}: ${run.detail}`,
    },
    counters: [],
    replayPath: shown,
    replayCommand: artifact.rerun,
    reproduced: true,
    recorded: { verdict: run.verdict, property: run.failed[0] ?? null },
    faults: [],
    choices: 0,
    epochMs: timeline.startMs,
    records,
    changes,
    versions,
    initial,
  };
}
