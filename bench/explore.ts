// Exploration figures: time to the first finding of the Ensemble delta bug (median over 20 seeds), runs/s
// of the level variant, and the naive alternative (one random schedule with one random kill, again and
// again until it fails) measured against the explorer in the same run.
import { fileURLToPath } from "node:url";
import { loadScenario } from "../src/explore/load.ts";
import { runScenario } from "../src/explore/run.ts";
import { Rng } from "../src/sim/rng.ts";
import { randomStrategy } from "../src/sim/strategy.ts";
import type { Scenario } from "../src/explore/scenario.ts";
import { firstFinding, median, runsPerSecond } from "./lib.ts";

const scenarioPath = fileURLToPath(new URL("../examples/ensemble/scenario.ts", import.meta.url));

/** Runs until the first finding; returns the runs it took. */
async function naiveRunsToFailure(scenario: Scenario, seed: number, runsMax: number): Promise<number> {
  const rng = new Rng(seed);
  const workloads = Object.keys(scenario.workloads);
  for (let run = 1; run <= runsMax; run++) {
    const atStep = rng.int(80);
    const outcome = await runScenario(scenario, {
      variant: "delta",
      workload: workloads[rng.int(workloads.length)]!,
      params: scenario.params,
      seed: rng.int(0x7fffffff),
      strategy: randomStrategy(),
      faults: [{ atStep, kind: "crash", target: "operator" }],
    });
    if (outcome.verdict.kind !== "ok") return run;
  }
  return runsMax;
}

export async function benchExplore(): Promise<Record<string, string | number>> {
  const scenario = await loadScenario(scenarioPath);
  const first = await firstFinding(scenario, scenarioPath, "delta");
  const level = await runsPerSecond(scenario, scenarioPath, "level", 300);
  const naive: number[] = [];
  for (let seed = 1; seed <= 20; seed++) naive.push(await naiveRunsToFailure(scenario, seed, 1000));
  return {
    "delta: time to first finding, median of 20 seeds (ms, incl. shrinking)": first.msMedian.toFixed(0),
    "delta: runs to first finding, median": first.runsMedian,
    "level: runs/s (1 worker, 300 runs)": level.runsPerSec.toFixed(0),
    "naive (random schedule + one random kill): runs to first failure, median": median(naive),
    "naive / settle runs-to-first-finding ratio": (median(naive) / first.runsMedian).toFixed(1),
  };
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(await benchExplore());
