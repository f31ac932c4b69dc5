// The bug zoo's figures (issue 18): for every case in examples/zoo, the median time and runs to the buggy form's
// first finding over 10 seeds (default budget and strategy, `first`, one worker, in-process, reference runs and
// shrinking included, no process start-up), measured side by side with a naive baseline on the same simulator:
// a random schedule with at most one crash placed uniformly, rerun until a run fails, capped. The ratios say
// how much the planned exploration saves; the last column says whether a case meets the issue's targets (under
// 1 s median; at least 10x faster than the baseline where it needs more than 10 runs; no slower than 1.5x where
// it needs one or two).
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { loadScenario } from "../src/explore/load.ts";
import { crashableActors } from "../src/explore/plan.ts";
import { runScenario } from "../src/explore/run.ts";
import { Rng } from "../src/sim/rng.ts";
import { fifoStrategy, randomStrategy } from "../src/sim/strategy.ts";
import type { Scenario } from "../src/explore/scenario.ts";
import { firstFinding, median, nowMs } from "./lib.ts";

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
async function naiveToFailure(scenario: Scenario, seed: number, runsMax: number): Promise<Naive> {
  const rng = new Rng(seed);
  const workloads = Object.keys(scenario.workloads);
  const referenceSteps = new Map<string, number>();
  const start = nowMs();
  for (let run = 1; run <= runsMax; run++) {
    const workload = workloads[rng.int(workloads.length)]!;
    const spec = { variant: "buggy", workload, params: scenario.params };
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
function target(settleMs: number, ratioMs: number, naiveRuns: number): string {
  if (settleMs >= 1000) return "misses: median >= 1 s";
  if (naiveRuns > 10 && ratioMs < 10) return "misses: < 10x the baseline";
  if (naiveRuns <= 2 && ratioMs < 1 / 1.5) return "misses: > 1.5x slower than the baseline";
  return "meets";
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
    "columns": `settle median ms (runs) | naive median ms (runs; seeds not found in ${naiveRunsMax}) | naive/settle runs, wall | target`,
  };
  for (const name of options.cases ?? zooCases()) {
    const path = join(zooDir, name, "scenario.ts");
    const scenario = await loadScenario(path);
    const first = await firstFinding(scenario, path, "buggy", { seeds, runs: options.runsMax ?? 1000 });
    const naive: Naive[] = [];
    for (let seed = 1; seed <= seeds; seed++) naive.push(await naiveToFailure(scenario, seed, naiveRunsMax));
    const naiveRuns = median(naive.map((n) => n.runs));
    const naiveMs = median(naive.map((n) => n.ms));
    const missed = naive.filter((n) => !n.found).length;
    const runsText = missed > seeds / 2 ? `>=${naiveRuns}` : String(naiveRuns);
    const ratioMs = naiveMs / first.msMedian;
    const settleSide = `${first.msMedian.toFixed(0)} ms (${first.runsMedian}${first.missed > 0 ? `, ${first.missed} missed` : ""})`;
    const naiveSide = `${naiveMs.toFixed(0)} ms (${runsText}; ${missed} not found)`;
    figures[name] = `${settleSide} | ${naiveSide} | ${(naiveRuns / first.runsMedian).toFixed(1)}x, ${ratioMs.toFixed(1)}x | ${target(first.msMedian, ratioMs, naiveRuns)}`;
  }
  return figures;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const cases = process.argv.slice(2);
  const figures = await benchZoo(cases.length > 0 ? { cases } : {});
  for (const [key, value] of Object.entries(figures)) console.log(`${key.padEnd(26)}  ${value}`);
}
