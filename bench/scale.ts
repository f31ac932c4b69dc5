// Scale: one fault-free rollout v0 -> v1 of a 1,000-node and a 5,000-node bootc pool (maxUnavailable 10%,
// safety checked once per virtual second): wall time, steps and peak RSS of each, and how the time grows with
// the fleet (the ratio of CPU seconds per node, 5,000 against 1,000: 1 is linear). Benchmarks may read real time.
// Runnable alone: `node --conditions=settle-source --import tsx bench/scale.ts [nodes...]`.
import { fileURLToPath } from "node:url";
import { loadScenario } from "../src/explore/load.ts";
import { runScenario } from "../src/explore/run.ts";
import type { Scenario } from "../src/explore/scenario.ts";
import { nowMs } from "./lib.ts";

const scenarioPath = fileURLToPath(new URL("../examples/bootc-rollout/scenario.ts", import.meta.url));

interface Rollout {
  seconds: number;
  /** CPU seconds of this process (user and system): what the rollout costs on a machine shared with others. */
  cpuSeconds: number;
  steps: number;
  rssMb: number;
  verdict: string;
}

/** One rollout of `nodes` nodes; peak RSS is sampled every 250 ms of real time and at the end. */
export async function fleetRollout(scenario: Scenario, nodes: number): Promise<Rollout> {
  // A 5,000-node rollout takes more steps than the scenario's bound for exploration runs.
  const fleet: Scenario = { ...scenario, timing: { ...scenario.timing, stepsMax: 20_000_000 } };
  const params = { ...scenario.params, nodes, maxUnavailable: "10%", safetyChecks: "per-second" };
  let rssMax = process.memoryUsage().rss;
  const sampler = setInterval(() => (rssMax = Math.max(rssMax, process.memoryUsage().rss)), 250);
  const start = nowMs();
  const cpu = process.cpuUsage();
  const outcome = await runScenario(fleet, { variant: "fixed", workload: "rollout", params, seed: 1 });
  const seconds = (nowMs() - start) / 1000;
  const { user, system } = process.cpuUsage(cpu);
  clearInterval(sampler);
  rssMax = Math.max(rssMax, process.memoryUsage().rss);
  return { seconds, cpuSeconds: (user + system) / 1e6, steps: outcome.steps, rssMb: rssMax / 1e6, verdict: outcome.verdict.kind };
}

export async function benchScale(fleets: readonly number[] = [1000, 5000]): Promise<Record<string, string | number>> {
  const scenario = await loadScenario(scenarioPath);
  const figures: Record<string, string | number> = {};
  const perNode: number[] = [];
  for (const nodes of fleets) {
    const r = await fleetRollout(scenario, nodes);
    figures[`${nodes}-node rollout: verdict`] = r.verdict;
    figures[`${nodes}-node rollout: wall time (s, goal < 30 at 5,000)`] = r.seconds.toFixed(1);
    figures[`${nodes}-node rollout: CPU time (s)`] = r.cpuSeconds.toFixed(1);
    figures[`${nodes}-node rollout: steps`] = r.steps;
    figures[`${nodes}-node rollout: steps/s`] = Math.round(r.steps / r.seconds);
    figures[`${nodes}-node rollout: peak RSS (MB, goal < 2048)`] = r.rssMb.toFixed(0);
    perNode.push(r.cpuSeconds / nodes);
  }
  if (fleets.length >= 2) {
    const growth = perNode[perNode.length - 1]! / perNode[0]!;
    figures[`growth ${fleets[0]} -> ${fleets[fleets.length - 1]}: CPU time per node, ratio (1 = linear)`] = growth.toFixed(2);
  }
  return figures;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const fleets = process.argv.slice(2).map(Number);
  const figures = await benchScale(fleets.length > 0 ? fleets : undefined);
  for (const [key, value] of Object.entries(figures)) process.stdout.write(`${key}: ${value}\n`);
}
