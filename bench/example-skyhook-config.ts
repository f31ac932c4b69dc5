// The Skyhook ConfigMap gate example's figures: time to the first finding of the buggy operator (median over
// 20 seeds, the default budget and strategy, stopping at the first finding, reference run and shrinking
// included), and runs/s of the fixed operator (the 30 s safety-net requeue).
import { fileURLToPath } from "node:url";
import { explore } from "../src/explore/explore.ts";
import { loadScenario } from "../src/explore/load.ts";

const scenarioPath = fileURLToPath(new URL("../examples/skyhook-config/scenario.ts", import.meta.url));
const nowMs = () => performance.now();

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

export async function bench(): Promise<Record<string, string | number>> {
  const scenario = await loadScenario(scenarioPath);
  const base = { scenarioPath, params: scenario.params, workers: 1, strategy: "mix" as const };
  const firstMs: number[] = [];
  const firstRuns: number[] = [];
  let missed = 0;
  for (let seed = 1; seed <= 20; seed++) {
    const start = nowMs();
    const result = await explore(scenario, { ...base, variant: "buggy", runs: 1000, seed, first: true }, nowMs);
    firstMs.push(nowMs() - start);
    firstRuns.push(result.runs);
    if (result.findings.length === 0) missed++;
  }
  const fixedStart = nowMs();
  const fixed = await explore(scenario, { ...base, variant: "fixed", runs: 300, seed: 1, first: false }, nowMs);
  const fixedRunsPerSec = (fixed.runs * 1000) / (nowMs() - fixedStart);
  return {
    "buggy: time to first finding, median of 20 seeds (ms, incl. reference run and shrinking)": median(firstMs).toFixed(0),
    "buggy: runs to first finding, median (max)": `${median(firstRuns)} (${Math.max(...firstRuns)})`,
    "buggy: seeds without a finding in 1000 runs": missed,
    "fixed: runs/s (1 worker, 300 runs)": fixedRunsPerSec.toFixed(1),
    "fixed: steps per run (mean)": (fixed.steps / fixed.runs).toFixed(0),
    "fixed: findings in those runs": fixed.findings.length,
  };
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(await bench());
