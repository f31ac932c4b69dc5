// The bounded search's figures (issue 23), one worker, in-process: for the buggy form of Ensemble, Skyhook and
// every zoo case, the smallest bounds (K preemptions, F planned faults, cheapest first) at which the search finds
// it, and the time; for the fixed forms, the largest bounds a search completes within a time budget, with the
// schedule counts of the reduced and the plain search side by side. Benchmarks may read real time; tests never do.
//
// BOUNDED_BUDGET_MS: the wall time one search may take (default 20 s; the issue asks for 10 minutes).
// BOUNDED_LATENCY_MS: when set, every scenario runs with that constant request latency instead of its own range
// (a constant latency lets requests of different actors commute and puts same-instant steps in the schedule).
// `node --conditions=settle-source --import tsx bench/bounded.ts [case...]` runs some cases only.
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { explore, type ExploreResult } from "../src/explore/explore.ts";
import { loadScenario } from "../src/explore/load.ts";
import type { Scenario } from "../src/explore/scenario.ts";
import { nowMs } from "./lib.ts";
import { zooCases } from "./zoo.ts";

const repo = fileURLToPath(new URL("../", import.meta.url));

interface Case {
  name: string;
  path: string;
  buggy: string;
  fixed: string;
}

function cases(): Case[] {
  const zoo = zooCases().map((name) => ({ name: `zoo/${name}`, path: join(repo, "examples", "zoo", name, "scenario.ts"), buggy: "buggy", fixed: "fixed" }));
  return [
    { name: "ensemble", path: join(repo, "examples", "ensemble", "scenario.ts"), buggy: "delta", fixed: "level" },
    { name: "skyhook-config", path: join(repo, "examples", "skyhook-config", "scenario.ts"), buggy: "buggy", fixed: "fixed" },
    ...zoo,
  ];
}

/** Bounds in the order a user would raise them: cheapest first. */
const ladder: ReadonlyArray<readonly [number, number]> = [
  [0, 0],
  [1, 0],
  [0, 1],
  [2, 0],
  [1, 1],
  [3, 0],
  [2, 1],
  [0, 2],
  [1, 2],
  [2, 2],
];

async function search(scenario: Scenario, path: string, variant: string, bounds: readonly [number, number], options: { first: boolean; reduction: boolean; budgetMs: number }): Promise<{ result: ExploreResult; ms: number }> {
  const start = nowMs();
  const deadline = start + options.budgetMs;
  const result = await explore(
    scenario,
    {
      scenarioPath: path,
      variant,
      params: scenario.params,
      runs: Number.POSITIVE_INFINITY,
      seed: 1,
      workers: 1,
      strategy: "bounded",
      first: options.first,
      bounded: { preemptions: bounds[0], faultPoints: bounds[1], reduction: options.reduction, shouldStop: () => nowMs() > deadline },
    },
    nowMs,
  );
  return { result, ms: nowMs() - start };
}

/** The first rung of the ladder whose search finds the buggy form, with its time; or the rungs tried. */
async function smallestFinding(scenario: Scenario, c: Case, budgetMs: number): Promise<string> {
  let spentMs = 0;
  for (const bounds of ladder) {
    const { result, ms } = await search(scenario, c.path, c.buggy, bounds, { first: true, reduction: true, budgetMs });
    spentMs += ms;
    const stats = result.bounded!;
    if (result.findings.length > 0) {
      return `K=${bounds[0]}, F=${bounds[1]}: ${result.findings[0]!.key} after ${stats.schedules} schedules, ${(ms / 1000).toFixed(1)} s (ladder ${(spentMs / 1000).toFixed(1)} s)`;
    }
    if (!stats.complete) return `not found; K=${bounds[0]}, F=${bounds[1]} incomplete in ${(budgetMs / 1000).toFixed(0)} s (${stats.schedules} schedules)`;
  }
  return `not found up to K=2, F=2 (${(spentMs / 1000).toFixed(1)} s)`;
}

/**
 * For each F, the largest K whose reduced search of the fixed form completes within the budget (K up to 6), with
 * the schedule counts of the reduced and the plain search there.
 */
async function largestComplete(scenario: Scenario, c: Case, budgetMs: number): Promise<string> {
  const parts: string[] = [];
  for (let f = 0; f <= 2; f++) {
    let best: string | undefined;
    for (let k = 0; k <= 6; k++) {
      const reduced = await search(scenario, c.path, c.fixed, [k, f], { first: false, reduction: true, budgetMs });
      if (!reduced.result.bounded!.complete) break;
      const plain = await search(scenario, c.path, c.fixed, [k, f], { first: false, reduction: false, budgetMs });
      const r = reduced.result.bounded!;
      const p = plain.result.bounded!;
      const plainText = p.complete ? `plain ${p.schedules}` : `plain > ${p.schedules}`;
      const found = reduced.result.findings.length > 0 ? `, ${reduced.result.findings.length} finding(s)!` : "";
      best = `F=${f}: K=${k} ${r.schedules} schedules, ${r.pruned} pruned, ${(reduced.ms / 1000).toFixed(1)} s (${plainText}, ${(plain.ms / 1000).toFixed(1)} s)${found}`;
    }
    if (best === undefined) break;
    parts.push(best);
  }
  return parts.length === 0 ? "nothing complete" : parts.join("; ");
}

export async function benchBounded(only: readonly string[] = []): Promise<Record<string, string | number>> {
  const budgetMs = Number(process.env.BOUNDED_BUDGET_MS ?? 20_000);
  const latency = process.env.BOUNDED_LATENCY_MS;
  const figures: Record<string, string | number> = {
    budget: `${(budgetMs / 1000).toFixed(0)} s per search, one worker${latency === undefined ? "" : `, request latency fixed at ${latency} ms`}`,
  };
  for (const c of cases()) {
    if (only.length > 0 && !only.includes(c.name)) continue;
    const loaded = await loadScenario(c.path);
    const scenario: Scenario = latency === undefined ? loaded : { ...loaded, timing: { ...loaded.timing, requestLatencyMs: [Number(latency), Number(latency)] } };
    figures[`${c.name} ${c.buggy}: found at`] = await smallestFinding(scenario, c, budgetMs);
    figures[`${c.name} ${c.fixed}: complete up to`] = await largestComplete(scenario, c, budgetMs);
  }
  return figures;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const figures = await benchBounded(process.argv.slice(2));
  for (const [key, value] of Object.entries(figures)) console.log(`${key.padEnd(44)}  ${value}`);
}
