// The Skyhook ConfigMap gate example's figures: time to the first finding of the buggy operator (median over
// 20 seeds, the default budget and strategy, stopping at the first finding, reference run and shrinking
// included), and runs/s of the fixed operator (the 30 s safety-net requeue).
import { fileURLToPath } from "node:url";
import { loadScenario } from "../src/explore/load.ts";
import { firstFinding, runsPerSecond } from "./lib.ts";

const scenarioPath = fileURLToPath(new URL("../examples/skyhook-config/scenario.ts", import.meta.url));

export async function bench(): Promise<Record<string, string | number>> {
  const scenario = await loadScenario(scenarioPath);
  const first = await firstFinding(scenario, scenarioPath, "buggy");
  const fixed = await runsPerSecond(scenario, scenarioPath, "fixed", 300);
  return {
    "buggy: time to first finding, median of 20 seeds (ms, incl. reference run and shrinking)": first.msMedian.toFixed(0),
    "buggy: runs to first finding, median (max)": `${first.runsMedian} (${first.runsMax})`,
    "buggy: seeds without a finding in 1000 runs": first.missed,
    "fixed: runs/s (1 worker, 300 runs)": fixed.runsPerSec.toFixed(1),
    "fixed: steps per run (mean)": fixed.stepsPerRun.toFixed(0),
    "fixed: findings in those runs": fixed.findings,
  };
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(await bench());
