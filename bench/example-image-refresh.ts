// The image-refresh example's figures: time to the first finding of each buggy variant (median over 20 seeds,
// the default budget and strategy, every workload drawn, stopping at the first finding, shrinking included),
// runs/s of the fixed variant, and simulated days per second (a day of 15-minute cron ticks, the whole cluster).
// Runnable alone: `node --import tsx bench/example-image-refresh.ts`.
import { fileURLToPath } from "node:url";
import { explore } from "../src/explore/explore.ts";
import { loadScenario } from "../src/explore/load.ts";
import { runScenario } from "../src/explore/run.ts";
import type { Scenario } from "../src/explore/scenario.ts";
import { fifoStrategy } from "../src/sim/strategy.ts";

const scenarioPath = fileURLToPath(new URL("../examples/image-refresh/scenario.ts", import.meta.url));
const nowMs = () => performance.now();
const dayMs = 24 * 60 * 60 * 1000;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

async function firstFinding(scenario: Scenario, variant: string): Promise<Record<string, string | number>> {
  const base = { scenarioPath, params: scenario.params, workers: 1, strategy: "mix" as const };
  const firstMs: number[] = [];
  const firstRuns: number[] = [];
  let missed = 0;
  for (let seed = 1; seed <= 20; seed++) {
    const start = nowMs();
    const result = await explore(scenario, { ...base, variant, runs: 1000, seed, first: true }, nowMs);
    firstMs.push(nowMs() - start);
    firstRuns.push(result.runs);
    if (result.findings.length === 0) missed++;
  }
  return {
    [`${variant}: time to first finding, median of 20 seeds (ms)`]: median(firstMs).toFixed(0),
    [`${variant}: runs to first finding, median (max); seeds missed`]: `${median(firstRuns)} (${Math.max(...firstRuns)}); ${missed}`,
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
  for (const variant of ["b0", "b1", "b2", "b3"]) Object.assign(figures, await firstFinding(scenario, variant));
  const fixedStart = nowMs();
  const fixed = await explore(scenario, { scenarioPath, params: scenario.params, workers: 1, strategy: "mix", variant: "fixed", runs: 120, seed: 1, first: false }, nowMs);
  figures["fixed: runs/s (1 worker, 120 runs, every workload)"] = ((fixed.runs * 1000) / (nowMs() - fixedStart)).toFixed(1);
  figures["fixed: findings in those runs"] = fixed.findings.length;
  figures["simulated days/s (fixed, one day of 15-minute ticks, 1 worker)"] = (await simulatedDay(scenario)).toFixed(2);
  return figures;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  for (const [key, value] of Object.entries(await bench())) process.stdout.write(`${key}: ${value}\n`);
}
