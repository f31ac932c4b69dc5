// What one explored variant amounts to, for people and programs: the object `settle explore --json` prints and
// `settle/test`'s `explore()` returns, the text report of each finding, and the replay files written for them
// (with, for the bounded search, its search record beside them).
// One function builds all three, so the CLI and the test API cannot drift apart.
import { basename, join, relative } from "node:path";
import type { ExploreResult } from "../explore/explore.ts";
import { boundedLine, type BoundedStats } from "../explore/bounded.ts";
import { replayFormatVersion, searchRecordVersion, scenarioDigest, writeReplayFile, writeSearchRecord } from "../explore/findings.ts";
import type { Params } from "../explore/scenario.ts";
import { formatFinding } from "./text.ts";
import type { ThrownError } from "../check/verdict.ts";

export interface FindingSummary {
  verdict: string;
  property: string | null;
  seed: number;
  workload: string;
  /** The replay file, relative to the working directory when it is below it. */
  replay: string;
  steps: number;
  faults: number;
  choices: number;
  run: number;
  occurrences: number;
  /** scenario-error and actor-error: what was thrown and where. */
  error?: ThrownError;
}

export interface VariantSummary {
  scenario: string;
  variant: string;
  runs: number;
  findings: FindingSummary[];
  /** With the bounded strategy also `complete`, `schedules`, `pruned`, `placements` (see `BoundedStats`). */
  stats: { steps: number; runsPerSec: number; wallMs: number; detectMs: number; shrinkMs: number; faultPointsCovered: number; faultPoints: number } & Partial<BoundedStats>;
  properties: Array<{ name: string; kind: string; evaluations: number; failures: number; everHeld: boolean }>;
}

export interface SummaryInput {
  name: string;
  scenarioPath: string;
  variant: string;
  params: Record<string, unknown>;
  result: ExploreResult;
  /** Where `.settle/findings` goes and what paths are relative to. */
  cwd: string;
}

/** Writes a replay file per finding and returns the JSON summary and each finding's text report. */
export function summarizeVariant(input: SummaryInput): { summary: VariantSummary; reports: string[]; line: string } {
  const { name, scenarioPath, variant, params, result, cwd } = input;
  const reports: string[] = [];
  const digest = scenarioDigest(scenarioPath);
  const findings = result.findings.map((f): FindingSummary => {
    const outcome = f.minimal.outcome;
    const replay = writeReplayFile(
      cwd,
      {
        version: replayFormatVersion,
        scenario: relative(cwd, scenarioPath),
        variant,
        workload: f.run.workload,
        params: params as Record<string, string | number | boolean>,
        seed: f.run.seed,
        choices: f.minimal.choices,
        faults: f.minimal.faults,
        verdict: outcome.verdict.kind,
        property: outcome.verdict.property ?? null,
        ...(outcome.verdict.actor === undefined ? {} : { actor: outcome.verdict.actor }),
        traceHash: outcome.traceHash,
        steps: outcome.steps,
        run: f.run.index,
        ...(outcome.verdict.error === undefined ? {} : { error: outcome.verdict.error }),
        ...(result.bounded === undefined ? {} : { requestLatencyMs: [result.bounded.latencyMs, result.bounded.latencyMs] }),
        ...(digest === undefined ? {} : { scenarioSha256: digest }),
      },
      outcome.trace,
      name,
    );
    reports.push(
      formatFinding({
        scenario: name,
        variant,
        workload: f.run.workload,
        verdict: outcome.verdict,
        counters: outcome.counters,
        trace: outcome.trace,
        faults: f.minimal.faults.length,
        choices: f.minimal.choices.length,
        occurrences: f.occurrences,
        replayPath: replay,
        ...(outcome.finalWorld === undefined ? {} : { finalWorld: outcome.finalWorld }),
      }),
    );
    const { seed, workload, index: run } = f.run;
    const summary: FindingSummary = { verdict: outcome.verdict.kind, property: outcome.verdict.property ?? null, seed, workload, replay, steps: outcome.steps, faults: f.minimal.faults.length, choices: f.minimal.choices.length, run, occurrences: f.occurrences };
    if (outcome.verdict.error !== undefined) summary.error = outcome.verdict.error;
    return summary;
  });
  if (result.bounded !== undefined && result.search !== undefined) {
    const { workload, seed, shard, steps, units, found } = result.search;
    const replayOf = (key: string) => {
      const at = result.findings.findIndex((f) => f.key === key);
      return at < 0 ? null : basename(findings[at]!.replay);
    };
    const record = { version: searchRecordVersion, scenario: name, variant, workload, params: params as Params, seed, shard, stats: result.bounded, steps, units, findings: found.map((f) => ({ ...f, replay: replayOf(f.key) })) };
    writeSearchRecord(join(cwd, ".settle", "findings"), record);
  }
  const runsPerSec = runsPerSecond(result.runs, result.detectMs);
  const stats = { steps: result.steps, runsPerSec, wallMs: Math.round(result.wallMs), detectMs: Math.round(result.detectMs), shrinkMs: Math.round(result.shrinkMs), faultPointsCovered: result.pointsCovered, faultPoints: result.points.length, ...result.bounded };
  const properties = result.counters.map((c) => ({ name: c.name, kind: c.kind, evaluations: c.evaluations, failures: c.failures, everHeld: c.everHeld }));
  const errors = findings.filter((f) => f.verdict === "scenario-error").length;
  const found = findings.length - errors;
  const verdict = [found === 0 && errors === 0 ? "no finding" : found > 0 ? `${found} finding(s)` : "", errors > 0 ? "a scenario error (exit 2)" : ""].filter((t) => t !== "").join(", ");
  const covered = `${result.pointsCovered}/${result.points.length}`;
  const line =
    result.bounded !== undefined
      ? boundedLine(name, variant, result.bounded, findings.length, result.wallMs)
      : `${name} --variant ${variant}: ${result.runs} runs, ${verdict}; systematic fault points covered ${covered}; ${result.steps} steps, ${runsPerSec} runs/s; ` +
        (findings.length > 0 ? `found in ${seconds(result.detectMs)}, shrunk in ${seconds(result.shrinkMs)}` : `ran in ${seconds(result.detectMs)}`);
  return { summary: { scenario: name, variant, runs: result.runs, findings, stats, properties }, reports, line };
}

/**
 * Runs per second over detection only (shrinking is reported on its own), rounded for people: whole numbers from
 * 10, one decimal from 1, two significant digits below (a single 26 s run is 0.038 runs/s, not 0).
 */
export function runsPerSecond(runs: number, detectMs: number): number {
  const rate = detectMs > 0 ? (runs * 1000) / detectMs : runs;
  return rate >= 10 ? Math.round(rate) : rate >= 1 ? Math.round(rate * 10) / 10 : Number(rate.toPrecision(2));
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}
