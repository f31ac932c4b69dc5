// What an HTML report shows, as plain JSON: built once from a replay file and a captured re-run, embedded
// in the page, and read by the page's script. Nothing in it depends on the machine that wrote it.
import { relative, resolve } from "node:path";
import type { PlannedFault } from "../sim/types.ts";
import type { TraceRecord } from "../sim/trace.ts";
import type { PropertyCounter } from "../check/properties.ts";
import type { Verdict } from "../check/verdict.ts";
import type { Params } from "../explore/scenario.ts";
import { readReplayFile, replayRunSpec, replayScenario, replayScenarioPath, type ReplayFile } from "../explore/findings.ts";
import { loadScenario } from "../explore/load.ts";
import { captureRun, type Change, type ObjectVersion } from "./capture.ts";

export const reportFormatVersion = 1;

export interface ReportData {
  format: number;
  scenario: string;
  scenarioPath: string;
  variant: string;
  workload: string;
  params: Params;
  seed: number;
  verdict: Verdict;
  counters: PropertyCounter[];
  /** The replay file as given (relative to the working directory when it is inside it). */
  replayPath: string;
  replayCommand: string;
  /** True when the re-run's trace hash equals the replay file's: the picture is the recorded run. */
  reproduced: boolean;
  /** The verdict the replay file recorded, for when it was not reproduced. */
  recorded: { verdict: string; property: string | null };
  faults: PlannedFault[];
  choices: number;
  /** Virtual time of the run's start (the first record's time). */
  epochMs: number;
  records: TraceRecord[];
  /** Sparse: `[recordIndex, changes]` for the records that changed objects or external state. */
  changes: Array<[number, Change[]]>;
  versions: ObjectVersion[];
  /** Versions making up the world before the first step. */
  initial: number[];
  /** The final world: the scenario's summary, or the objects the failing property read (empty when passing). */
  finalWorld?: string[];
}

export interface ReportOptions {
  /** Paths in the report are relative to this. Default: process.cwd(). */
  cwd?: string;
}

/** Re-runs a replay file with object capture and returns what the report shows. Throws ReplayFileError / ScenarioError. */
export async function reportDataFromReplayFile(replayPath: string, options: ReportOptions = {}): Promise<ReportData> {
  const cwd = options.cwd ?? process.cwd();
  const absolute = resolve(cwd, replayPath);
  const { file } = readReplayFile(absolute);
  const scenario = replayScenario(await loadScenario(replayScenarioPath(cwd, file)), file);
  const spec = replayRunSpec(scenario, file, replayPath);
  const capture = await captureRun(scenario, spec);
  const shownPath = absolute.startsWith(resolve(cwd)) ? relative(cwd, absolute) : absolute;
  const { outcome } = capture;
  const changes: Array<[number, Change[]]> = [];
  capture.changes.forEach((list, index) => {
    if (list.length > 0) changes.push([index, list]);
  });
  return {
    format: reportFormatVersion,
    scenario: scenario.name,
    scenarioPath: file.scenario,
    variant: file.variant,
    workload: file.workload,
    params: spec.params,
    seed: file.seed,
    verdict: outcome.verdict,
    counters: capture.counters,
    replayPath: shownPath,
    replayCommand: replayCommand(shownPath),
    reproduced: outcome.traceHash === file.traceHash,
    recorded: { verdict: file.verdict, property: file.property },
    faults: file.faults,
    choices: file.choices.length,
    epochMs: outcome.trace[0]?.timeMs ?? 0,
    records: [...outcome.trace],
    changes,
    versions: capture.versions,
    initial: capture.initial,
    finalWorld: outcome.finalWorld ?? [],
  };
}

/** The command a person pastes to reproduce a finding. */
export function replayCommand(replayPath: string): string {
  const quoted = /^[\w./@%+=:,-]+$/.test(replayPath) ? replayPath : `'${replayPath.replace(/'/g, "'\\''")}'`;
  return `npx settle replay ${quoted}`;
}

/** `<scenario>-<variant>-<id>.html`, from the replay file's own name (`<variant>-<id>.json`). */
export function htmlReportName(file: Pick<ReplayFile, "scenario">, replayPath: string): string {
  const scenarioName = file.scenario.replace(/[\\/]scenario\.[mc]?[jt]s$/, "").split(/[\\/]/).pop() ?? "scenario";
  const base = replayPath.split(/[\\/]/).pop()!.replace(/\.json$/, "");
  return `${scenarioName}-${base}.html`;
}
