// One run of a scenario: build the world, run the fault phase with safety checked after every step,
// stop the faults, run the healing phase until the world settles (or the horizon), and judge it.
import type { Choices, Strategy } from "../sim/strategy.ts";
import { createSimulation, defineActor, type Simulation } from "../sim/simulation.ts";
import type { TraceMode, TraceRecord } from "../sim/trace.ts";
import type { PlannedFault, RunOptions, RunResult, WorldView } from "../sim/types.ts";
import { createStore } from "../store/index.ts";
import { PropertyMonitor, lastStepOf, type EventuallyProperty, type MissedDeadline, type PropertyCounter } from "../check/properties.ts";
import type { ThrownError, Verdict } from "../check/verdict.ts";
import { describeThrown, thrownLine } from "../check/thrown.ts";
import { finalWorld } from "./final-world.ts";
import { describeRef, type KubeObject } from "../api/object.ts";
import { isApiError } from "../api/errors.ts";
import { setupOnce } from "./setup-cache.ts";
import { faultBudgetOf, workloadContext, type HeartbeatRef, type Params, type Scenario, type ScenarioContext, type SetupWorld } from "./scenario.ts";
import { cloneJson } from "../api/json.ts";

/** The name of the actor that runs the workload. */
export const WORKLOAD_ACTOR = "user";

export interface RunSpec {
  variant: string;
  workload: string;
  params: Params;
  seed: number;
  /** Picks among ready steps when `choices` is absent. Default: random. */
  strategy?: Strategy;
  /** Replays these choices instead of asking a strategy. */
  choices?: Choices;
  /** Faults to inject at given steps (a replay, a shrink candidate, a systematic fault point). */
  faults?: readonly PlannedFault[];
  /** Draw faults from the scenario's budget (ignored when `faults` is given). */
  drawFaults?: boolean;
  traceMode?: TraceMode;
  /** Stop at the first step that differs from this trace (replay). */
  expectTrace?: readonly TraceRecord[];
  /**
   * The semantics to run under: the replay format version a replay file was recorded with. Default: the
   * current one. Version 1: requests take no virtual time, every write counts against "settled", and a world
   * with no step ready at the horizon counts as settled.
   */
  semantics?: number;
  /** Called after each step with its record and the world after it (the planner reads a reference run with it). */
  observe?: (record: TraceRecord, view: WorldView) => void;
}

/** The semantics version fresh runs use; replay files record it (see `replayFormatVersion`). */
export const currentSemantics = 2;

export interface RunOutcome {
  verdict: Verdict;
  counters: PropertyCounter[];
  steps: number;
  /** Every non-zero choice, `[step, index]`. */
  choices: Array<[number, number]>;
  /** Every fault injected, as a plan that replays it. */
  faults: PlannedFault[];
  traceHash: string;
  trace: readonly TraceRecord[];
  /** A replay that differed from its expected trace: the first differing step. */
  divergedAtStep?: number;
  /**
   * Full-trace runs that did not pass: the final world, as reports end with it (the scenario's summary, else the
   * objects the failing property read). See src/explore/final-world.ts.
   */
  finalWorld?: string[];
}

/** Thrown for scenario mistakes (bad setup objects, unknown variant): the CLI exits 2 on it. */
export class ScenarioError extends Error {
  override name = "ScenarioError";
}

interface Progress {
  /** Virtual time of the last change of state (store revision or external state), heartbeats aside. */
  lastChangeMs: number;
  /**
   * The records of the latest state changes, to name what keeps changing when the world never settles. Kept
   * as they are and described only when a verdict needs it: most runs never do.
   */
  recentChanges: Ring<TraceRecord>;
  /** The latest steps, to name the loop when a run reaches its step bound. */
  recentSteps: Ring<TraceRecord>;
  workloadDone: boolean;
  verdict: Verdict | undefined;
  /** The workload's exception, if it threw: the run ends in a scenario error. */
  workloadError: unknown;
}

export async function runScenario(scenario: Scenario, spec: RunSpec): Promise<RunOutcome> {
  if (!(spec.variant in scenario.variants)) {
    throw new ScenarioError(`unknown variant "${spec.variant}" (known: ${Object.keys(scenario.variants).join(", ")})`);
  }
  const workloadFn = scenario.workloads[spec.workload];
  if (workloadFn === undefined) {
    throw new ScenarioError(`unknown workload "${spec.workload}" (known: ${Object.keys(scenario.workloads).join(", ")})`);
  }
  const ctx: ScenarioContext = { variant: spec.variant, workload: spec.workload, params: spec.params };
  const semantics = spec.semantics ?? currentSemantics;
  if (!Number.isInteger(semantics) || semantics < 1 || semantics > currentSemantics) {
    throw new ScenarioError(`semantics version ${String(semantics)} is not one this settle runs (1 to ${currentSemantics})`);
  }
  const sim = createSimulation({
    seed: spec.seed,
    createStore,
    traceMode: spec.traceMode ?? "hash-only",
    requestLatencyMs: semantics >= 2 ? scenario.timing.requestLatencyMs : [0, 0],
    stepOrigins: spec.strategy?.ordersByOrigin === true,
    ...(scenario.admission === undefined ? {} : { admission: scenario.admission }),
  });
  buildWorld(scenario, ctx, sim);
  const epochMs = sim.clock.now();
  const progress: Progress = {
    lastChangeMs: epochMs,
    recentChanges: new Ring<TraceRecord>(recentChangesMax),
    recentSteps: new Ring<TraceRecord>(recentStepsMax),
    workloadDone: false,
    verdict: undefined,
    workloadError: undefined,
  };
  sim.addActor(
    defineActor({
      name: WORKLOAD_ACTOR,
      crashable: false,
      faultable: false,
      start: async (actx) => {
        try {
          await workloadFn(workloadContext(actx, scenario.timing, epochMs, (name, atMs) => monitor.mark(name, atMs)), ctx);
        } catch (error) {
          // The scenario's own mistake, not the controller's: kept here, it ends the run as a scenario error.
          progress.workloadError = error;
          return;
        }
        progress.workloadDone = true;
      },
    }),
  );
  const monitor = new PropertyMonitor(scenarioCall(scenario, "properties", () => scenario.properties(ctx)));
  const outcome = await runPhases({ scenario, spec, sim, monitor, progress, epochMs, semantics });
  const error = scenarioErrorOf(spec, monitor, progress);
  // A scenario error found by a later check (the final liveness check) still wins over the verdict it led to.
  if (error !== undefined && outcome.verdict.kind !== "scenario-error") {
    outcome.verdict = { ...outcome.verdict, kind: "scenario-error", detail: thrownLine(error), error };
    delete outcome.verdict.property;
  }
  // Only the runs a report shows keep a full trace; the final world is worked out for them alone.
  if (outcome.verdict.kind !== "ok" && spec.traceMode === "full") {
    const failing = monitor.properties.find((p) => p.name === (outcome.verdict.property ?? (monitor.thrown?.property ?? "")));
    outcome.finalWorld = finalWorld(sim.view(), scenario.summary, failing);
  }
  return { ...outcome, counters: monitor.snapshot() };
}

/** The scenario's own error in this run, if any: the workload's exception first, then a property's. */
function scenarioErrorOf(spec: RunSpec, monitor: PropertyMonitor, progress: Progress): ThrownError | undefined {
  if (progress.workloadError !== undefined) return describeThrown(`workload "${spec.workload}"`, progress.workloadError);
  if (monitor.thrown !== undefined) return describeThrown(`property "${monitor.thrown.property}"`, monitor.thrown.error);
  return undefined;
}

/**
 * Calls one of the scenario's own functions (setup, properties, actors, externals) while building a run (or a
 * drill target): what it throws is the scenario's mistake, reported as a ScenarioError (exit code 2) with its location.
 */
export function scenarioCall<T>(scenario: Scenario, what: string, call: () => T): T {
  try {
    return call();
  } catch (error) {
    if (error instanceof ScenarioError) throw error;
    const thrown = describeThrown(`scenario ${scenario.name}: ${what}`, error);
    const stack = thrown.stack.length > 1 ? `\n${thrown.stack.map((frame) => `    at ${frame}`).join("\n")}` : "";
    throw new ScenarioError(`${thrownLine(thrown)}${stack}`);
  }
}

function buildWorld(scenario: Scenario, ctx: ScenarioContext, sim: Simulation): void {
  const write = <T extends KubeObject>(object: T, how: "create" | "updateStatus"): T => {
    try {
      const stored = how === "create" ? sim.store.create(cloneJson(object)) : sim.store.updateStatus(cloneJson(object));
      return cloneJson(stored) as T;
    } catch (error) {
      const what = describeRef({ kind: object.kind, namespace: object.metadata?.namespace, name: object.metadata?.name });
      const why = isApiError(error) ? error.message : String(error);
      throw new ScenarioError(`scenario ${scenario.name}: setup ${how} of ${what} was rejected: ${why}`);
    }
  };
  const world: SetupWorld = { create: (o) => write(o, "create"), updateStatus: (o) => write(o, "updateStatus") };
  setupOnce(scenario, ctx, sim.store, () => void scenarioCall(scenario, "setup", () => scenario.setup?.(ctx, world) ?? []).forEach((object) => world.create(object)));
  for (const [name, value] of Object.entries(scenarioCall(scenario, "externals", () => scenario.externals?.(ctx) ?? {}))) sim.defineExternal(name, value);
  for (const kind of scenario.faultKinds ?? []) sim.defineFaultKind(kind);
  for (const actor of scenarioCall(scenario, "actors", () => scenario.actors(ctx))) sim.addActor(actor);
}

function changesState(record: TraceRecord): boolean {
  if (record.revisionAfter !== record.revisionBefore) return true;
  if (record.kind === "fault") return true;
  return record.kind === "external" && record.access === "write";
}

const recentChangesMax = 4096;
const recentStepsMax = 512;

/** The last `capacity` items pushed, oldest first on `items()`; a push costs the same however full it is. */
class Ring<T> {
  private readonly slots: T[] = [];
  private next = 0;

  constructor(private readonly capacity: number) {}

  push(item: T): void {
    if (this.slots.length < this.capacity) this.slots.push(item);
    else this.slots[this.next] = item;
    this.next = (this.next + 1) % this.capacity;
  }

  items(): T[] {
    if (this.slots.length < this.capacity) return [...this.slots];
    return [...this.slots.slice(this.next), ...this.slots.slice(0, this.next)];
  }
}

/** A write to an object the scenario declares a heartbeat (a Lease renewal): it does not unsettle the world. */
function isHeartbeat(record: TraceRecord, heartbeats: readonly HeartbeatRef[]): boolean {
  const object = record.object;
  if (object === undefined || record.kind === "fault") return false;
  return heartbeats.some((h) => h.kind === object.kind && (h.namespace === undefined || h.namespace === object.namespace) && (h.name === undefined || h.name === object.name));
}

/** What a state-changing step changed, for people: an object, an external cell, a fault, the collector. */
function describeChange(record: TraceRecord): string {
  if (record.kind === "fault") return `fault ${record.label}`;
  if (record.external !== undefined) return `external ${record.external}`;
  if (record.object !== undefined) return describeRef(record.object);
  return record.label;
}

/** Keeps the progress bookkeeping of one step: the last change of state (heartbeats aside) and what it was. */
function trackStep(progress: Progress, record: TraceRecord, semantics: number, heartbeats: readonly HeartbeatRef[]): void {
  progress.recentSteps.push(record);
  if (!changesState(record)) return;
  if (semantics >= 2 && isHeartbeat(record, heartbeats)) return;
  progress.lastChangeMs = record.timeMs;
  progress.recentChanges.push(record);
}

/** The most frequent of `items` with its count (ties: the latest wins, so the answer is stable). */
function mostFrequent(items: readonly string[]): { item: string; count: number } | undefined {
  const counts = new Map<string, number>();
  let best: { item: string; count: number } | undefined;
  for (const item of items) {
    const count = (counts.get(item) ?? 0) + 1;
    counts.set(item, count);
    if (best === undefined || count >= best.count) best = { item, count };
  }
  return best;
}

/** Why the world never settled: what was changed most in the last settle window, and by whom. */
function stillChanging(progress: Progress, nowMs: number, settleWindowMs: number, horizonMs: number): string {
  const recent = progress.recentChanges.items().filter((c) => c.timeMs > nowMs - settleWindowMs);
  const top = mostFrequent(recent.map((c) => `${c.actor} kept changing ${describeChange(c)}`));
  if (top === undefined) return `the world was still changing at the ${horizonMs} ms horizon`;
  return `the world was still changing at the ${horizonMs} ms horizon: ${top.item} (${top.count} of ${recent.length} changes in the last ${settleWindowMs} ms)`;
}

type Outcome = Omit<RunOutcome, "counters">;

interface PhasesOptions {
  scenario: Scenario;
  spec: RunSpec;
  /** Built, with the world and actors in place. */
  sim: Simulation;
  monitor: PropertyMonitor;
  /** Updated as the run goes. */
  progress: Progress;
  /** Virtual time at the start of the run. */
  epochMs: number;
  /** The semantics version (see `RunSpec.semantics`). */
  semantics: number;
}

/**
 * A run in its phases: the fault phase, then healing up to each liveness deadline in order, then up to the horizon,
 * where the world must have settled with every property true.
 */
async function runPhases(phases: PhasesOptions): Promise<Outcome> {
  const { scenario, spec, sim, progress, epochMs } = phases;
  const state = { healing: false };
  const base: PhaseRun = {
    maxSteps: scenario.timing.stepsMax,
    onStep: stepObserver(phases, state),
    ...(spec.strategy === undefined ? {} : { strategy: spec.strategy }),
    ...(spec.choices === undefined ? {} : { choices: spec.choices }),
    ...(spec.expectTrace === undefined ? {} : { expectTrace: spec.expectTrace }),
  };
  const budget = faultBudgetOf(scenario, { variant: spec.variant, workload: spec.workload, params: spec.params });
  const result = await sim.run({
    ...base,
    untilMs: epochMs + scenario.timing.faultPhaseMs,
    ...(spec.faults !== undefined ? { faults: spec.faults } : spec.drawFaults && budget !== undefined ? { faultBudget: budget } : {}),
  });
  const early = judgeStatus(result, sim, elapsed(phases), progress);
  if (early !== undefined) return finish(result, early);
  sim.stopFaults();
  state.healing = true;
  const healed = await runToDeadlines(phases, base, result);
  return healed.outcome ?? (await runToHorizon(phases, base, healed.result));
}

/** What every phase's `sim.run` takes besides its end. */
type PhaseRun = Omit<RunOptions, "untilMs" | "faults" | "faultBudget">;

/** Virtual time since the run started. */
function elapsed({ sim, epochMs }: PhasesOptions): number {
  return sim.clock.now() - epochMs;
}

/** The workload is done and nothing changed for a settle window. */
function settledNow({ scenario, sim, progress }: PhasesOptions): boolean {
  return progress.workloadDone && sim.clock.now() - progress.lastChangeMs >= scenario.timing.settleWindowMs;
}

/**
 * What runs after each step: the observer, the scenario's errors, deadlines counted from marks, the safety
 * properties, and, once healing (`state.healing`), the end of the run when the world has settled.
 */
function stepObserver(phases: PhasesOptions, state: { healing: boolean }): (record: TraceRecord, view: WorldView) => "stop" | void {
  const { scenario, spec, sim, monitor, progress, epochMs, semantics } = phases;
  const { settleWindowMs, heartbeats } = scenario.timing;
  const observe = spec.observe;
  const stopOnScenarioError = (): "stop" => {
    const error = scenarioErrorOf(spec, monitor, progress)!;
    progress.verdict = { ...verdict("scenario-error", sim, elapsed(phases), thrownLine(error)), error };
    return "stop";
  };
  return (record, view) => {
    observe?.(record, view);
    if (progress.workloadError !== undefined) return stopOnScenarioError();
    const last = lastStepOf(sim.store, record);
    // A deadline counted from a mark that this step went past is judged on the world before the step.
    const late = monitor.checkMarkedDeadlines(view, record.timeMs, last);
    if (monitor.thrown !== undefined) return stopOnScenarioError();
    if (late !== undefined) {
      progress.verdict = markedDeadlineVerdict(sim, late, epochMs, progress.workloadDone && late.atMs - progress.lastChangeMs >= settleWindowMs);
      return "stop";
    }
    trackStep(progress, record, semantics, heartbeats);
    const violated = monitor.checkSafety(view, last);
    if (monitor.thrown !== undefined) return stopOnScenarioError();
    if (violated !== undefined) {
      progress.verdict = verdict("safety-violation", sim, elapsed(phases), `${violated.name} became false`, violated.name);
      return "stop";
    }
    if (state.healing && settledNow(phases)) return "stop";
  };
}

/**
 * Heals up to each liveness deadline (counted from the end of the faults) in order, judging each property at its
 * own: the outcome when one is missed or the run stops, else the last run's result.
 */
async function runToDeadlines(phases: PhasesOptions, base: PhaseRun, faulted: RunResult): Promise<{ result: RunResult; outcome?: Outcome }> {
  const { scenario, sim, monitor, progress, epochMs } = phases;
  const { horizonMs } = scenario.timing;
  const healStartMs = sim.clock.now();
  const deadlines = monitor.properties
    .filter((p): p is EventuallyProperty & { withinMs: number } => p.kind === "eventually" && p.withinMs !== undefined && p.from === undefined)
    .map((p) => ({ property: p, atMs: healStartMs + p.withinMs }))
    .filter((d) => d.atMs < epochMs + horizonMs)
    .sort((a, b) => a.atMs - b.atMs || a.property.name.localeCompare(b.property.name));
  let result = faulted;
  for (const deadline of deadlines) {
    if (!settledNow(phases)) {
      result = await sim.run({ ...base, untilMs: deadline.atMs });
      const stopped = judgeStatus(result, sim, elapsed(phases), progress);
      if (stopped !== undefined) return { result, outcome: finish(result, stopped) };
    }
    // Idle at the deadline: settled, or nothing left to run before the horizon (a timer due later is work to do).
    const idle = settledNow(phases) || sim.idle(epochMs + horizonMs - sim.clock.now());
    const lateMark = monitor.closeMarkedDeadlines(sim.view(), deadline.atMs);
    if (lateMark !== undefined) return { result, outcome: finish(result, markedDeadlineVerdict(sim, lateMark, epochMs, idle)) };
    const missed = monitor.checkLiveness(sim.view(), (p) => p === deadline.property);
    if (missed !== undefined) {
      const state = idle ? "the world was idle (lost work)" : "the world was still busy";
      const v = verdict("deadline-missed", sim, deadline.atMs - epochMs, `${missed.name} was false ${missed.withinMs} ms after the faults stopped; ${state}`, missed.name);
      return { result, outcome: finish(result, { ...v, idleAtDeadline: idle }) };
    }
  }
  return { result };
}

/** Heals up to the horizon unless settled already, then judges: settled, and every liveness property true. */
async function runToHorizon(phases: PhasesOptions, base: PhaseRun, healed: RunResult): Promise<Outcome> {
  const { scenario, sim, monitor, progress, epochMs, semantics } = phases;
  const { horizonMs, settleWindowMs } = scenario.timing;
  let result = healed;
  if (!settledNow(phases)) {
    result = await sim.run({ ...base, untilMs: epochMs + horizonMs });
    const stopped = judgeStatus(result, sim, elapsed(phases), progress);
    if (stopped !== undefined) return finish(result, stopped);
  }
  // Version 2: settled is quiescent — no change for a settle window, or nothing left to run at all. (Version 1 also
  // took "no step ready at this instant", which a controller writing every few seconds forever passed.)
  const nothingLeft = semantics >= 2 ? sim.idle(Number.POSITIVE_INFINITY) : sim.idle();
  const settled = settledNow(phases) || (progress.workloadDone && nothingLeft) || (result.status === "idle" && !progress.workloadDone);
  const lateMark = monitor.closeMarkedDeadlines(sim.view(), epochMs + horizonMs);
  if (lateMark !== undefined) return finish(result, markedDeadlineVerdict(sim, lateMark, epochMs, settled));
  if (!settled) {
    const detail = semantics >= 2 ? stillChanging(progress, sim.clock.now(), settleWindowMs, horizonMs) : `the world was still changing at the ${horizonMs} ms horizon`;
    return finish(result, verdict("no-convergence", sim, elapsed(phases), detail));
  }
  const failed = monitor.checkLiveness(sim.view());
  if (failed !== undefined) {
    const detail = `the world settled while ${failed.name} was false: every actor idle, nothing left to do`;
    return finish(result, verdict("silent-divergence", sim, elapsed(phases), detail, failed.name));
  }
  return finish(result, verdict("ok", sim, elapsed(phases), "every property held and the world settled"));
}

/** The verdict of a deadline counted from a workload's mark; `idle` tells lost work from a slow world. */
function markedDeadlineVerdict(sim: Simulation, missed: MissedDeadline, epochMs: number, idle: boolean): Verdict {
  const { name, withinMs, from } = missed.property;
  const state = idle ? "the world was idle (lost work)" : "the world was still busy";
  const detail = `${name} was false ${withinMs} ms after the mark "${from}"; ${state}`;
  return { ...verdict("deadline-missed", sim, missed.atMs - epochMs, detail, name), idleAtDeadline: idle };
}

/** Turns a run status that ends the run early into a verdict; undefined when the run may go on. */
function judgeStatus(result: RunResult, sim: Simulation, elapsedMs: number, progress: Progress): Verdict | undefined {
  if (progress.verdict !== undefined) return progress.verdict;
  switch (result.status) {
    case "actor-error":
    case "outside-await": {
      const v: Verdict = { ...verdict("actor-error", sim, elapsedMs, result.message ?? result.status), actor: result.actor ?? "?" };
      if (result.error === undefined) return v;
      const error = describeThrown(`actor ${v.actor}`, result.error);
      return { ...v, detail: error.location === undefined ? v.detail : `${v.detail} (at ${error.location})`, error };
    }
    case "divergence":
      return verdict("nondeterminism", sim, elapsedMs, result.message ?? "the replay diverged");
    case "max-steps": {
      const steps = progress.recentSteps.items().map((r) => `${r.actor}: ${r.label}`);
      const loop = mostFrequent(steps);
      const where = loop === undefined ? "" : `; most of the last ${steps.length} steps were ${loop.item} (${loop.count})`;
      return verdict("no-convergence", sim, elapsedMs, `the run reached its bound of ${result.steps} steps (a hot loop?)${where}`);
    }
    case "sim-error":
      throw new Error(`simulator error: ${result.message ?? "unknown"}`);
    default:
      return undefined;
  }
}

function verdict(kind: Verdict["kind"], sim: Simulation, elapsedMs: number, detail: string, property?: string): Verdict {
  const v: Verdict = { kind, step: sim.steps, elapsedMs, detail };
  if (property !== undefined) v.property = property;
  return v;
}

function finish(result: RunResult, v: Verdict): Outcome {
  const outcome: Outcome = {
    verdict: v,
    steps: result.steps,
    choices: result.choices,
    faults: result.faults,
    traceHash: result.traceHash,
    trace: result.trace,
  };
  if (result.status === "divergence") outcome.divergedAtStep = result.steps;
  return outcome;
}
