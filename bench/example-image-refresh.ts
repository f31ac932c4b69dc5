// The image-refresh example's figures: time to the first finding of each buggy variant (median over 20 seeds,
// the default budget and strategy, every workload drawn, stopping at the first finding, shrinking included),
// runs/s of the fixed variant, and simulated days per second (a day of 15-minute cron ticks, the whole cluster).
// Runnable alone: `node --import tsx bench/example-image-refresh.ts`.
import { fileURLToPath } from "node:url";
import { loadScenario } from "../src/explore/load.ts";
import { runScenario } from "../src/explore/run.ts";
import type { Scenario } from "../src/explore/scenario.ts";
import { fifoStrategy } from "../src/sim/strategy.ts";
import { firstFinding, nowMs, runsPerSecond } from "./lib.ts";

const scenarioPath = fileURLToPath(new URL("../examples/image-refresh/scenario.ts", import.meta.url));
const dayMs = 24 * 60 * 60 * 1000;

async function firstFindingFigures(scenario: Scenario, variant: string): Promise<Record<string, string | number>> {
  const first = await firstFinding(scenario, scenarioPath, variant);
  return {
    [`${variant}: time to first finding, median of 20 seeds (ms)`]: first.msMedian.toFixed(0),
    [`${variant}: runs to first finding, median (max); seeds missed`]: `${first.runsMedian} (${first.runsMax}); ${first.missed}`,
  };
}

/** One fault-free day of the fixed system: 96 ticks, 24 auto-upgrade checks, a revert at 1:00. */
async function simulatedDay(scenario: Scenario): Promise<number> {
  const day: Scenario = { ...scenario, timing: { ...scenario.timing, faultPhaseMs: 60_000, horizonMs: dayMs + 4 * 60 * 60 * 1000 } };
  const params = { ...scenario.params, ticksAfterEvent: 92 };
  const start = nowMs();
  const outcome = await runScenario(day, { variant: "fixed", workload: "a-helm-revert", params, seed: 1, strategy: fifoStrategy() });
  if (outcome.verdict.kind !== "ok") throw new Error(`the simulated day ended ${outcome.verdict.kind}: ${outcome.verdict.detail}`);
  return outcome.verdict.elapsedMs / dayMs / ((nowMs() - start) / 1000);
}

export async function bench(): Promise<Record<string, string | number>> {
  const scenario = await loadScenario(scenarioPath);
  const figures: Record<string, string | number> = {};
  for (const variant of ["b0", "b1", "b2", "b3"]) Object.assign(figures, await firstFindingFigures(scenario, variant));
  const fixed = await runsPerSecond(scenario, scenarioPath, "fixed", 120);
  figures["fixed: runs/s (1 worker, 120 runs, every workload)"] = fixed.runsPerSec.toFixed(1);
  figures["fixed: findings in those runs"] = fixed.findings;
  figures["simulated days/s (fixed, one day of 15-minute ticks, 1 worker)"] = (await simulatedDay(scenario)).toFixed(2);
  return figures;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  for (const [key, value] of Object.entries(await bench())) process.stdout.write(`${key}: ${value}\n`);
}
