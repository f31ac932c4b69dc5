// What the exploration benchmarks share: the time to a scenario variant's first finding over many seeds
// (default budget and strategy, stopping at the first finding, reference runs and shrinking included), and
// the runs per second of a variant. Benchmarks may read real time; tests never do.
import { explore } from "../src/explore/explore.ts";
import type { Scenario } from "../src/explore/scenario.ts";

export const nowMs = (): number => performance.now();

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

export interface FirstFinding {
  /** Wall ms to the first finding, median over the seeds. */
  msMedian: number;
  runsMedian: number;
  runsMax: number;
  /** Seeds whose `runs` found nothing. */
  missed: number;
}

/** Explores `variant` once per seed 1..`seeds` with `first: true`, one worker. */
export async function firstFinding(scenario: Scenario, scenarioPath: string, variant: string, options: { seeds?: number; runs?: number } = {}): Promise<FirstFinding> {
  const ms: number[] = [];
  const runs: number[] = [];
  let missed = 0;
  for (let seed = 1; seed <= (options.seeds ?? 20); seed++) {
    const start = nowMs();
    const result = await explore(scenario, { scenarioPath, params: scenario.params, workers: 1, strategy: "mix", variant, runs: options.runs ?? 1000, seed, first: true }, nowMs);
    ms.push(nowMs() - start);
    runs.push(result.runs);
    if (result.findings.length === 0) missed++;
  }
  return { msMedian: median(ms), runsMedian: median(runs), runsMax: Math.max(...runs), missed };
}

/** Runs/s of `runs` runs of `variant` on one worker (seed 1), with the findings and steps they had. */
export async function runsPerSecond(scenario: Scenario, scenarioPath: string, variant: string, runs: number): Promise<{ runsPerSec: number; findings: number; stepsPerRun: number }> {
  const start = nowMs();
  const result = await explore(scenario, { scenarioPath, params: scenario.params, workers: 1, strategy: "mix", variant, runs, seed: 1, first: false }, nowMs);
  return { runsPerSec: (result.runs * 1000) / (nowMs() - start), findings: result.findings.length, stepsPerRun: result.steps / result.runs };
}
