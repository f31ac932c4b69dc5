// Which run is which: every run of an exploration is a pure function of (scenario, options, run index),
// so any number of workers or shards gives the same results.
import { Rng } from "../sim/rng.ts";
import { fifoStrategy, pctStrategy, randomStrategy, type Strategy } from "../sim/strategy.ts";
import type { PlannedFault } from "../sim/types.ts";
import type { TraceRecord } from "../sim/trace.ts";
import type { Params, Scenario } from "./scenario.ts";
import { WORKLOAD_ACTOR, type RunSpec } from "./run.ts";

export const strategyNames = ["mix", "random", "pct", "systematic"] as const;
export type StrategyName = (typeof strategyNames)[number];

/** A fault point of the systematic strategy: one fault planned at a step of a fault-free reference run. */
export interface FaultPoint {
  workload: string;
  fault: PlannedFault;
  /** What the point is, for reports: `crash operator after create ConfigMap ns/a (applied, response pending)`. */
  label: string;
}

export interface PlanContext {
  scenario: Scenario;
  variant: string;
  /** Fixed workload, or undefined to draw one per run. */
  workload: string | undefined;
  params: Params;
  seed: number;
  strategy: StrategyName;
  points: readonly FaultPoint[];
}

export interface PlannedRun {
  index: number;
  strategy: string;
  spec: RunSpec;
  /** The systematic fault point this run covers. */
  point?: number;
}

/** A 32-bit seed for run `index`, well spread even for consecutive indexes. */
export function runSeed(seed: number, index: number): number {
  let x = (Math.imul(seed ^ 0x9e3779b9, 0x85ebca6b) + Math.imul(index + 1, 0xc2b2ae35)) >>> 0;
  x = Math.imul(x ^ (x >>> 16), 0x7feb352d) >>> 0;
  x = Math.imul(x ^ (x >>> 15), 0x846ca68b) >>> 0;
  return (x ^ (x >>> 16)) >>> 0;
}

/** Runs an exploration asks for: the systematic strategy runs each fault point once and no more. */
export function plannedRunCount(ctx: PlanContext, runs: number): number {
  return ctx.strategy === "systematic" ? Math.min(runs, ctx.points.length) : runs;
}

/**
 * The systematic fault point run `index` covers, if any. `systematic` runs the points in order; `mix`
 * gives every other run to them (even indexes) until they are all covered, so random and PCT schedules with
 * random faults run from the start even when a scenario has more points than runs.
 */
export function pointOfRun(ctx: Pick<PlanContext, "strategy" | "points">, index: number): number | undefined {
  if (ctx.strategy === "systematic") return index < ctx.points.length ? index : undefined;
  if (ctx.strategy !== "mix" || index % 2 === 1) return undefined;
  const point = index / 2;
  return point < ctx.points.length ? point : undefined;
}

export function planRun(ctx: PlanContext, index: number): PlannedRun {
  const seed = runSeed(ctx.seed, index);
  const base = { variant: ctx.variant, params: ctx.params, seed };
  const pointIndex = pointOfRun(ctx, index);
  if (pointIndex !== undefined) {
    const point = ctx.points[pointIndex]!;
    return { index, strategy: "systematic", point: pointIndex, spec: { ...base, workload: point.workload, strategy: fifoStrategy(), faults: [point.fault] } };
  }
  const workloads = Object.keys(ctx.scenario.workloads);
  const workload = ctx.workload ?? workloads[new Rng(seed).fork("workload").int(workloads.length)]!;
  const usePct = ctx.strategy === "pct" || (ctx.strategy === "mix" && (index >> 1) % 2 === 1);
  const strategy: Strategy = usePct ? pctStrategy({ depth: 3, stepsHint: 2_000 }) : randomStrategy();
  return { index, strategy: strategy.name, spec: { ...base, workload, strategy, drawFaults: true } };
}

/** Fault kinds the systematic strategy knows how to place, with the parameters of each point. */
export const systematicKinds = ["crash", "stale-read", "delay-watch"] as const;

/**
 * The systematic strategy's fault points, from a fault-free FIFO reference run, for the kinds the scenario's
 * budget allows: each crashable actor killed right after each of its writes is applied (response still
 * pending) and right after the response reaches it; each informer list (`resourceVersion: "0"`) served
 * stale; each watch event delivered late.
 */
export function faultPointsOf(workload: string, trace: readonly TraceRecord[], crashable: ReadonlySet<string>, kinds: ReadonlySet<string>): FaultPoint[] {
  const points: FaultPoint[] = [];
  const point = (atStep: number, kind: string, target: string, label: string, params: Record<string, number> = {}): FaultPoint => ({
    workload,
    fault: { atStep, kind, target, ...params },
    label,
  });
  // Responses by the request they answer: the request's number pairs them (no label is parsed).
  const responses = new Map<number, TraceRecord>();
  for (const record of trace) {
    if (record.kind === "response" && record.requestSeq !== undefined) responses.set(record.requestSeq, record);
  }
  for (const record of trace) {
    if (!crashable.has(record.actor)) continue;
    if (kinds.has("crash") && record.kind === "request" && record.access === "write") {
      points.push(point(record.step + 1, "crash", record.actor, `crash ${record.actor} after ${record.label} (applied, response pending)`));
      const response = record.requestSeq === undefined ? undefined : responses.get(record.requestSeq);
      if (response !== undefined) points.push(point(response.step + 1, "crash", record.actor, `crash ${record.actor} after ${record.label} (response received)`));
    }
    if (kinds.has("stale-read") && record.kind === "request" && record.verb === "list" && record.cached === true) {
      points.push(point(record.step, "stale-read", record.actor, `stale ${record.label} (${staleLagRevisions} revisions behind)`, { lagRevisions: staleLagRevisions }));
    }
    if (kinds.has("delay-watch") && record.kind === "watch" && record.watchId !== undefined) {
      const watchId = record.watchId;
      points.push(point(record.step, "delay-watch", watchId, `delay ${record.result} on ${watchId} by ${delayWatchMs} ms`, { delayMs: delayWatchMs }));
    }
  }
  // Crashes first: a kill mid-work is what loses work, so those points are the likeliest to find something
  // early; then stale reads, then late events. Within a kind, trace order.
  const rank = (p: FaultPoint) => systematicKinds.indexOf(p.fault.kind as (typeof systematicKinds)[number]);
  return points.map((p, i) => ({ p, i })).sort((a, b) => rank(a.p) - rank(b.p) || a.i - b.i).map(({ p }) => p);
}

/** The lag of a systematic stale read, and the delay of a systematic late watch event. */
const staleLagRevisions = 3;
const delayWatchMs = 5000;

export function crashableActors(scenario: Scenario, ctx: { variant: string; workload: string; params: Params }): Set<string> {
  const names = scenario.actors(ctx).filter((a) => a.crashable !== false).map((a) => a.name);
  return new Set(names.filter((name) => name !== WORKLOAD_ACTOR));
}
