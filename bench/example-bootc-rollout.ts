// The bootc rollout's figures: time to the first finding of the buggy daemon (median over 20 seeds, with
// shrinking), runs/s of the fixed variant with 3 nodes, and the wall time and memory of one rollout of a
// 1,000-node and a 5,000-node pool (maxUnavailable 10%, no faults).
import { fileURLToPath } from "node:url";
import { loadScenario } from "../src/explore/load.ts";
import { runScenario } from "../src/explore/run.ts";
import type { Scenario } from "../src/explore/scenario.ts";
import { firstFinding, nowMs, runsPerSecond } from "./lib.ts";

const scenarioPath = fileURLToPath(new URL("../examples/bootc-rollout/scenario.ts", import.meta.url));

/** One fault-free rollout v0 -> v1 of `nodes` nodes: wall seconds, steps, peak RSS and heap after (MB). */
async function fleetRollout(scenario: Scenario, nodes: number): Promise<{ seconds: number; steps: number; rssMb: number; heapMb: number; verdict: string }> {
  // A 5,000-node rollout takes more steps than the scenario's bound for exploration runs.
  const fleet: Scenario = { ...scenario, timing: { ...scenario.timing, stepsMax: 20_000_000 } };
  const params = { ...scenario.params, nodes, maxUnavailable: "10%", safetyChecks: "per-second" };
  let rssMax = process.memoryUsage().rss;
  const sampler = setInterval(() => (rssMax = Math.max(rssMax, process.memoryUsage().rss)), 250);
  const start = nowMs();
  const outcome = await runScenario(fleet, { variant: "fixed", workload: "rollout", params, seed: 1 });
  const seconds = (nowMs() - start) / 1000;
  clearInterval(sampler);
  rssMax = Math.max(rssMax, process.memoryUsage().rss);
  return { seconds, steps: outcome.steps, rssMb: rssMax / 1e6, heapMb: process.memoryUsage().heapUsed / 1e6, verdict: outcome.verdict.kind };
}

export async function bench(): Promise<Record<string, string | number>> {
  const scenario = await loadScenario(scenarioPath);
  const first = await firstFinding(scenario, scenarioPath, "buggy");
  const fixed = await runsPerSecond(scenario, scenarioPath, "fixed", 200);
  const figures: Record<string, string | number> = {
    "buggy: time to first finding, median of 20 seeds (ms, incl. shrinking)": first.msMedian.toFixed(0),
    "buggy: runs to first finding, median": first.runsMedian,
    "fixed: runs/s (3 nodes, 1 worker, 200 runs)": fixed.runsPerSec.toFixed(1),
  };
  for (const nodes of [1000, 5000]) {
    const r = await fleetRollout(scenario, nodes);
    figures[`${nodes}-node rollout: verdict`] = r.verdict;
    figures[`${nodes}-node rollout: wall time (s)`] = r.seconds.toFixed(1);
    figures[`${nodes}-node rollout: steps`] = r.steps;
    figures[`${nodes}-node rollout: peak RSS (MB)`] = r.rssMb.toFixed(0);
    figures[`${nodes}-node rollout: heap after (MB)`] = r.heapMb.toFixed(0);
  }
  return figures;
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(await bench());
