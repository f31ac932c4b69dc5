// The bug zoo's figures (issue 18): for every case in examples/zoo, the median time and runs to the buggy form's
// first failing run over 10 seeds (default budget and strategy, `first`, one worker, in-process, reference runs
// included, no process start-up; the total with the shrinking of the finding is shown beside it), measured side
// by side with a naive baseline on the same simulator: a random schedule with at most one crash placed
// uniformly, rerun until a run fails, capped. The ratios say how much the planned exploration saves; the last
// column says whether a case meets the issue's targets (under 1 s median; at least 10x faster than the baseline
// where it needs more than 10 runs; no slower than 1.5x where it needs one or two).
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { explore } from "../src/explore/explore.ts";
import { loadScenario } from "../src/explore/load.ts";
import { crashableActors } from "../src/explore/plan.ts";
import { runScenario } from "../src/explore/run.ts";
import { Rng } from "../src/sim/rng.ts";
import { fifoStrategy, randomStrategy } from "../src/sim/strategy.ts";
import type { Scenario } from "../src/explore/scenario.ts";
import { median, nowMs } from "./lib.ts";

const zooDir = fileURLToPath(new URL("../examples/zoo/", import.meta.url));

export interface ZooBenchOptions {
  /** Seeds per case, for both sides. Default 10. */
  seeds?: number;
  /** Runs the explorer may take per seed. Default 1000. */
  runsMax?: number;
  /** Runs the naive baseline may take per seed before it gives up. Default 300. */
  naiveRunsMax?: number;
  /** Only these cases (folder names). Default: every case. */
  cases?: readonly string[];
  /** Also every buggy variant (expect: finding) of the seed examples in examples/. Default true. */
  seedExamples?: boolean;
  /**
   * The baseline's cap for the seed examples, whose runs cost up to a second each: some of their bugs need a fault
   * the baseline never places (a failed registry read), so its figure is a lower bound there anyway. Default 50.
   */
  seedExampleNaiveRunsMax?: number;
}

const examplesDir = fileURLToPath(new URL("../examples/", import.meta.url));

/** The seed examples' buggy variants as `[label, scenario path, variant]`. */
async function seedExampleTargets(): Promise<Array<[string, string, string]>> {
  const targets: Array<[string, string, string]> = [];
  for (const name of readdirSync(examplesDir).sort()) {
    const path = join(examplesDir, name, "scenario.ts");
    if (name === "zoo" || !existsSync(path)) continue;
    const scenario = await loadScenario(path);
    for (const [variant, info] of Object.entries(scenario.variants)) if (info.expect === "finding") targets.push([`${name} --variant ${variant}`, path, variant]);
  }
  return targets;
}

interface Settle {
  /** Runs up to and including the first failing one. */
  runs: number;
  /** Wall ms to the end of the first failing run: reference runs and the runs before it, no shrinking. */
  msToFailure: number;
  /** Wall ms of the whole exploration, shrinking of the finding included. */
  msTotal: number;
  found: boolean;
}

/** The explorer for one seed, as `settle explore --variant buggy --first --workers 1` runs it, in-process. */
async function settleToFailure(scenario: Scenario, scenarioPath: string, variant: string, seed: number, runsMax: number): Promise<Settle> {
  const options = { scenarioPath, params: scenario.params, workers: 1, strategy: "mix" as const, variant, runs: runsMax, seed, first: true };
  const result = await explore(scenario, options, nowMs);
  // `detectMs` ends with the first failing run (reference runs included), so the comparison with the baseline,
  // which does not shrink, is run against run; the total with shrinking is reported beside it.
  return { runs: result.runs, msToFailure: result.detectMs, msTotal: result.wallMs, found: result.findings.length > 0 };
}

interface Naive {
  runs: number;
  ms: number;
  found: boolean;
}

/**
 * The naive baseline for one seed: each run draws a workload, a random schedule and, with one chance in
 * (steps + 1), no crash, else one crash of a crashable actor at a step drawn uniformly from the length of the
 * fault-free reference run of that workload. Runs until a run's verdict is not ok, or `runsMax` runs.
 */
async function naiveToFailure(scenario: Scenario, variant: string, seed: number, runsMax: number): Promise<Naive> {
  const rng = new Rng(seed);
  const workloads = Object.keys(scenario.workloads);
  const referenceSteps = new Map<string, number>();
  const start = nowMs();
  for (let run = 1; run <= runsMax; run++) {
    const workload = workloads[rng.int(workloads.length)]!;
    const spec = { variant, workload, params: scenario.params };
    if (!referenceSteps.has(workload)) referenceSteps.set(workload, (await runScenario(scenario, { ...spec, seed: 1, strategy: fifoStrategy() })).steps);
    const actors = [...crashableActors(scenario, spec)].sort();
    const atStep = rng.int(referenceSteps.get(workload)! + 1);
    const target = actors[rng.int(actors.length)]!;
    const faults = atStep === 0 || actors.length === 0 ? [] : [{ atStep, kind: "crash", target }];
    const outcome = await runScenario(scenario, { ...spec, seed: rng.int(0x7fffffff), strategy: randomStrategy(), faults });
    if (outcome.verdict.kind !== "ok") return { runs: run, ms: nowMs() - start, found: true };
  }
  return { runs: runsMax, ms: nowMs() - start, found: false };
}

/** Whether a case meets the issue's targets, and if not, which one it misses. */
function target(settleMs: number, ratioMs: number, naiveRuns: number, lowerBound: boolean): string {
  if (settleMs >= 1000) return "misses: median >= 1 s";
  if (naiveRuns > 10 && ratioMs < 10 && lowerBound) return "open: the baseline found nothing within its cap, so the ratio is only a lower bound";
  if (naiveRuns > 10) return ratioMs >= 10 ? "meets" : "misses: < 10x the baseline";
  if (naiveRuns <= 2) return ratioMs >= 1 / 1.5 ? "meets" : "misses: > 1.5x slower than the baseline";
  return "under 1 s (no ratio target: the baseline needs 3-10 runs)";
}

export function zooCases(): string[] {
  return readdirSync(zooDir)
    .filter((name) => statSync(join(zooDir, name)).isDirectory() && existsSync(join(zooDir, name, "scenario.ts")))
    .sort();
}

export async function benchZoo(options: ZooBenchOptions = {}): Promise<Record<string, string | number>> {
  const seeds = options.seeds ?? 10;
  const naiveRunsMax = options.naiveRunsMax ?? 300;
  const figures: Record<string, string | number> = {
    columns: `settle ms to the failing run (runs) [ms with shrinking] | naive ms (runs; seeds not found in ${naiveRunsMax}) | naive/settle runs, wall | target`,
  };
  const targets: Array<[string, string, string, number]> = (options.cases ?? zooCases()).map((name) => [name, join(zooDir, name, "scenario.ts"), "buggy", naiveRunsMax]);
  if (options.seedExamples !== false && options.cases === undefined) {
    for (const [label, path, variant] of await seedExampleTargets()) targets.push([label, path, variant, options.seedExampleNaiveRunsMax ?? 50]);
  }
  for (const [label, path, variant, cap] of targets) {
    const scenario = await loadScenario(path);
    const explored: Settle[] = [];
    const naive: Naive[] = [];
    for (let seed = 1; seed <= seeds; seed++) {
      explored.push(await settleToFailure(scenario, path, variant, seed, options.runsMax ?? 1000));
      naive.push(await naiveToFailure(scenario, variant, seed, cap));
    }
    figures[label] = row(explored, naive, seeds);
  }
  return figures;
}

/** One case's line: medians of both sides, their ratios and the target verdict. */
function row(explored: readonly Settle[], naive: readonly Naive[], seeds: number): string {
  const settleRuns = median(explored.map((e) => e.runs));
  const settleMs = median(explored.map((e) => e.msToFailure));
  const settleMissed = explored.filter((e) => !e.found).length;
  const naiveRuns = median(naive.map((n) => n.runs));
  const naiveMs = median(naive.map((n) => n.ms));
  const naiveMissed = naive.filter((n) => !n.found).length;
  const ratioMs = naiveMs / settleMs;
  const settleSide = `${settleMs.toFixed(0)} ms (${settleRuns}${settleMissed > 0 ? `, ${settleMissed} not found` : ""}) [${median(explored.map((e) => e.msTotal)).toFixed(0)} ms]`;
  // When the baseline's median seed never found it, its figures are only lower bounds.
  const atLeast = naiveMissed > seeds / 2 ? ">=" : "";
  const naiveSide = `${atLeast}${naiveMs.toFixed(0)} ms (${atLeast}${naiveRuns}; ${naiveMissed} not found)`;
  return `${settleSide} | ${naiveSide} | ${atLeast}${(naiveRuns / settleRuns).toFixed(1)}x, ${atLeast}${ratioMs.toFixed(1)}x | ${target(settleMs, ratioMs, naiveRuns, atLeast !== "")}`;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const cases = process.argv.slice(2);
  const figures = await benchZoo(cases.length > 0 ? { cases } : {});
  for (const [key, value] of Object.entries(figures)) console.log(`${key.padEnd(26)}  ${value}`);
}
