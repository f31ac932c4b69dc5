// Faults a real cluster produces, applied as trace records before a step, and drawn from a budget.
// A fault whose target no longer fits (an actor already down, a closed watch) is skipped, never an error:
// shrinking removes faults and choices freely and every such plan must still be a valid run.
import { assert } from "../api/assert.ts";
import { builtinFaultKinds, CLOCK_OFFSET_MS_MAX, expiredWatchError, faultDrawDefaults, injectedRequestError, faultIntegerParam, faultParam, faultParamError, isBuiltinFaultKind } from "../api/faults.ts";
import type { Kernel, ActorState } from "./kernel.ts";
import type { Rng } from "./rng.ts";
import type { FaultBudget, FaultKind, FaultTarget, PlannedFault, WorldView } from "./types.ts";

/** The fault model's kinds (`api/faults.ts`), under the name the simulator's public API has always used. */
export const BUILTIN_FAULT_KINDS = builtinFaultKinds;

/** Who a fault concerned, what came of it, and the facts its record carries beyond kind and target. */
export interface Applied {
  actor: string;
  result: string;
  applied: boolean;
  /** An applied pause's length. */
  pauseMs?: number;
  /** An applied clock fault: the actor's wall-clock offset after it. */
  clockOffsetMs?: number;
}

function skipped(actor: string, result: string): Applied {
  return { actor, result, applied: false };
}

function applied(actor: string, result: string): Applied {
  return { actor, result, applied: true };
}

export interface ApplyFaultOptions {
  kernel: Kernel;
  /** The scenario's own fault kinds, by name. */
  custom: ReadonlyMap<string, FaultKind>;
  /** What a scenario fault kind may touch. */
  target: FaultTarget;
  fault: PlannedFault;
}

/** Applies one fault through the kernel; returns who it concerned and what came of it. */
export function applyFault({ kernel, custom, target, fault }: ApplyFaultOptions): Applied {
  const kind = custom.get(fault.kind);
  if (kind !== undefined) {
    // A scenario's kind reports a target that no longer fits the way the built-in ones do (src/sim/README.md).
    const result = kind.apply(target, fault);
    return { actor: "sim", result, applied: !result.startsWith("skipped") };
  }
  if (fault.kind === "delay-watch" || fault.kind === "close-watch") return applyWatchFault(kernel, fault);
  const state = kernel.actor(fault.target);
  if (state === undefined) return skipped("sim", `skipped: no actor ${fault.target}`);
  const actor = state.name;
  // The clock is the machine's: it moves whether the actor's process is running, down or not started yet.
  if (fault.kind === "clock-skew" || fault.kind === "clock-step") return applyClockFault(kernel, state, fault);
  const down = kernel.notFaultable(state);
  if (down !== undefined) return skipped(actor, down);
  switch (fault.kind) {
    case "crash": {
      const relistAtRevision = numberParam(fault, "relistAtRevision");
      if (relistAtRevision === 0) return applied(actor, kernel.crash(state, {}));
      const relistKind = stringParam(fault, "relistKind");
      if (relistKind === "") return applied(actor, kernel.crash(state, { relistAtRevision }));
      return applied(actor, kernel.crash(state, { relistAtRevision, relistKind, relistCatchUpMs: numberParam(fault, "relistCatchUpMs") }));
    }
    case "pause": {
      const pauseMs = numberParam(fault, "durationMs");
      return { ...applied(actor, kernel.pause(state, pauseMs)), pauseMs };
    }
    case "stale-read":
      return applied(actor, kernel.arm(state, { staleLagRevisions: numberParam(fault, "lagRevisions") }));
    case "fail-request":
      return applied(actor, kernel.arm(state, { failCode: numberParam(fault, "code") }));
    case "lost-response":
      return applied(actor, kernel.arm(state, { loseResponse: true }));
    default:
      return skipped(actor, `skipped: unknown fault kind ${fault.kind}`);
  }
}

/** A clock fault: the actor's wall clock set off the simulation's (skew), or jumped by an amount (step). */
function applyClockFault(kernel: Kernel, state: ActorState, fault: PlannedFault): Applied {
  const before = kernel.clockOffsetOf(state);
  const offsetMs = fault.kind === "clock-skew" ? numberParam(fault, "offsetMs") : before + numberParam(fault, "deltaMs");
  if (Math.abs(offsetMs) > CLOCK_OFFSET_MS_MAX) return skipped(state.name, `skipped: the clock would be more than ${CLOCK_OFFSET_MS_MAX} ms off`);
  kernel.setClockOffset(state, offsetMs);
  return { ...applied(state.name, `wall clock ${describeClockOffset(offsetMs)}`), clockOffsetMs: offsetMs };
}

/** An offset in words: `12 s ahead`, `1.5 s behind`, `true` (zero). */
export function describeClockOffset(offsetMs: number): string {
  if (offsetMs === 0) return "true";
  const seconds = Math.abs(offsetMs) / 1000;
  return `${seconds} s ${offsetMs > 0 ? "ahead" : "behind"}`;
}

function applyWatchFault(kernel: Kernel, fault: PlannedFault): Applied {
  const watch = kernel.watch(fault.target);
  // A watch id is `actor/incarnation/wN` (actor names have no slash): the actor even when the watch is gone.
  const actor = watch?.owner.name ?? fault.target.split("/")[0] ?? "sim";
  if (watch === undefined || !watch.open) return skipped(actor, "skipped: no open watch");
  if (fault.kind === "close-watch") {
    const relistAtRevision = numberParam(fault, "relistAtRevision");
    const expired = numberParam(fault, "expired") === 1;
    if (relistAtRevision === 0 && !expired) {
      watch.end();
      return applied(actor, "closed");
    }
    if (watch.error === undefined) return skipped(actor, "skipped: this watch cannot fail mid-stream");
    // A watch whose resource version fell behind compaction: an ERROR event with the 410, then the end. The client
    // cannot resume from its last revision; it must relist (client-go's reflector, the settle runtime, client-node's
    // ListWatch all do).
    const failure = expired ? expiredWatchError({ wording: "simulator", resource: "objects", name: watch.id }) : injectedRequestError(500, { wording: "simulator", resource: "objects", name: watch.id });
    if (relistAtRevision === 0) {
      watch.error(failure);
      return applied(actor, "failed with 410 Expired");
    }
    // A watch that fails, unlike one that ends, is not resumed: the client relists (client-go's reflector and the
    // settle runtime both do after a non-410 error), and the API server that answers that list may have a watch
    // cache for this kind behind the others (one cache per resource, one per server behind a load balancer).
    const catchUpMs = numberParam(fault, "relistCatchUpMs");
    if (watch.kind === undefined) return skipped(actor, "skipped: this watch cannot fail mid-stream");
    const armed = kernel.arm(watch.owner, { staleAtRevision: relistAtRevision, staleKind: watch.kind, ...(catchUpMs > 0 ? { staleCatchUpMs: catchUpMs } : {}) });
    if (armed !== "armed") return skipped(actor, armed);
    watch.error(failure);
    return applied(actor, `failed with ${failure.code}, next cached read of ${watch.kind} at revision ${relistAtRevision}`);
  }
  const ms = numberParam(fault, "delayMs");
  watch.delay(ms);
  return applied(actor, `delayed +${ms}ms`);
}

/**
 * A parameter of a built-in fault: its default from the fault model when the fault leaves it out. A value outside
 * the model's bounds is a bug in the plan (drawn faults stay inside them), so it fails an assertion naming it.
 */
function numberParam(fault: PlannedFault, name: string): number {
  assert(isBuiltinFaultKind(fault.kind), "a built-in fault's parameter belongs to a built-in kind");
  const param = faultIntegerParam(fault.kind, name);
  const value = fault[name];
  if (value === undefined) return param.default;
  const error = faultParamError(param, value, name);
  assert(error === undefined, `fault ${fault.kind} ${name} fits the fault model: ${error?.message ?? ""}`);
  return value as number;
}

/** A string parameter of a built-in fault, as `numberParam`. */
function stringParam(fault: PlannedFault, name: string): string {
  assert(isBuiltinFaultKind(fault.kind), "a built-in fault's parameter belongs to a built-in kind");
  const param = faultParam(fault.kind, name);
  assert(param.type === "string", `fault parameter ${fault.kind}.${name} is a string`);
  const value = fault[name];
  if (value === undefined) return param.default;
  const error = faultParamError(param, value, name);
  assert(error === undefined, `fault ${fault.kind} ${name} fits the fault model: ${error?.message ?? ""}`);
  return value as string;
}

/** The valid targets of a kind now, sorted so that draws do not depend on insertion order. */
function targetsOf(kernel: Kernel, custom: ReadonlyMap<string, FaultKind>, view: WorldView, kind: string): string[] {
  const customKind = custom.get(kind);
  if (customKind !== undefined) return [...customKind.targets(view)];
  if (kind === "delay-watch" || kind === "close-watch") {
    const targets: string[] = [];
    for (const watch of kernel.watches()) if (watch.open && watch.owner.def.faultable !== false) targets.push(watch.id);
    return targets.sort();
  }
  const targets: string[] = [];
  for (const state of kernel.actors()) {
    // Drawn faults hit actors whose main code is still running: one that returned has nothing left to lose.
    if (state.life.phase !== "running") continue;
    if (state.def.faultable === false) continue;
    if (kind === "crash" && state.def.crashable === false) continue;
    if (kind === "pause" && kernel.isPaused(state)) continue;
    targets.push(state.name);
  }
  return targets.sort();
}

export interface DrawFaultOptions {
  kernel: Kernel;
  custom: ReadonlyMap<string, FaultKind>;
  view: WorldView;
  /** The "faults" stream. */
  rng: Rng;
  budget: FaultBudget;
  /** Per-kind counts left in the budget; the drawn kind's is decremented. */
  remaining: Map<string, number>;
  /** The step the fault is injected before. */
  step: number;
}

/** Draws at most one fault before `step`, spending `remaining`. */
export function drawFault({ kernel, custom, view, rng, budget, remaining, step }: DrawFaultOptions): PlannedFault | undefined {
  // Indexed, not destructured: this runs before every step, and most draws end here.
  const numerator = budget.chance[0];
  const denominator = budget.chance[1];
  assert(denominator > 0, "a fault chance has a positive denominator");
  if (!rng.chance(numerator, denominator)) return undefined;
  const kinds: Array<[string, string[]]> = [];
  for (const kind of [...remaining.keys()].sort()) {
    if ((remaining.get(kind) ?? 0) <= 0) continue;
    const targets = targetsOf(kernel, custom, view, kind);
    if (targets.length > 0) kinds.push([kind, targets]);
  }
  if (kinds.length === 0) return undefined;
  const [kind, targets] = rng.pick(kinds);
  remaining.set(kind, (remaining.get(kind) ?? 0) - 1);
  assert(remaining.get(kind)! >= 0, "a drawn fault stays within its kind's budget");
  const fault: PlannedFault = { atStep: step, kind, target: rng.pick(targets) };
  Object.assign(fault, drawParams(budget, custom.get(kind), rng, kind));
  if (kind === "close-watch" && custom.get(kind) === undefined && drawsExpired({ kernel, budget, rng, fault })) fault.expired = 1;
  return fault;
}

interface DrawExpiredOptions {
  kernel: Kernel;
  budget: FaultBudget;
  /** The "faults" stream: only its seed is used, never its position. */
  rng: Rng;
  /** The drawn close-watch fault, its step and target set. */
  fault: PlannedFault;
}

/**
 * Whether a drawn close-watch fails its watch with a 410 Expired ERROR event (`expired: 1`) rather than ending it.
 * The choice comes from a stream of its own, forked from the faults stream's seed and labelled with the fault's
 * step (at most one fault is drawn per step, so the label names this fault), instead of one more draw from the
 * faults stream: that draw would move every later fault of the run, and with them the trace of every seed that
 * reached a close-watch before another fault. Forked this way, a run whose close-watch stays a plain end draws
 * exactly the faults it drew before. A watch that cannot fail mid-stream is only ever ended.
 */
function drawsExpired({ kernel, budget, rng, fault }: DrawExpiredOptions): boolean {
  const [numerator, denominator] = budget.closeWatchExpired ?? faultDrawDefaults.closeWatchExpired;
  if (numerator === 0) return false;
  if (kernel.watch(fault.target)?.error === undefined) return false;
  return rng.fork(`close-watch-expired/${fault.atStep}`).chance(numerator, denominator);
}

function drawParams(budget: FaultBudget, custom: FaultKind | undefined, rng: Rng, kind: string): Record<string, string | number | boolean> {
  if (custom !== undefined) return custom.params?.(rng) ?? {};
  switch (kind) {
    case "pause": {
      const [min, max] = budget.pauseMs ?? faultDrawDefaults.pauseMs;
      return { durationMs: rng.between(min, max) };
    }
    case "delay-watch": {
      const [min, max] = budget.delayWatchMs ?? faultDrawDefaults.delayWatchMs;
      return { delayMs: rng.between(min, max) };
    }
    case "stale-read":
      return { lagRevisions: rng.between(1, budget.staleLagRevisionsMax ?? faultDrawDefaults.staleLagRevisionsMax) };
    case "fail-request":
      return { code: rng.pick(budget.failCodes ?? faultDrawDefaults.failCodes) };
    case "clock-skew":
    case "clock-step": {
      // Named in a budget's counts (the default budget draws its skew apart, in `drawClockSkew`): never 0.
      const magnitude = rng.between(1, budget.clockSkewMs || faultDrawDefaults.clockSkewMs);
      const signed = rng.chance(1, 2) ? magnitude : -magnitude;
      return kind === "clock-skew" ? { offsetMs: signed } : { deltaMs: signed };
    }
    default:
      return {};
  }
}

export interface DrawClockSkewOptions {
  kernel: Kernel;
  /** The "faults" stream: only its seed is used, never its position. */
  rng: Rng;
  budget: FaultBudget;
  /** The step the skew is injected before (the run's first). */
  step: number;
}

/**
 * At most one clock skew for a run, from its start: with the budget's chance, one faultable actor's wall clock set up
 * to `clockSkewMs` ahead or behind (never 0). Every choice comes from a stream of its own forked from the faults
 * stream's seed, as `drawsExpired` does, so a run draws every other fault, choice and latency exactly as it did
 * before clock faults existed: a run without a skew is the run it was, and one with a skew differs only by it.
 */
export function drawClockSkew({ kernel, rng, budget, step }: DrawClockSkewOptions): PlannedFault | undefined {
  const maxMs = budget.clockSkewMs ?? 0;
  if (maxMs <= 0) return undefined;
  assert(Number.isSafeInteger(maxMs) && maxMs <= CLOCK_OFFSET_MS_MAX, "a budget's clockSkewMs fits the fault model");
  const [numerator, denominator] = budget.clockSkewChance ?? faultDrawDefaults.clockSkewChance;
  const stream = rng.fork("clock-skew");
  if (!stream.chance(numerator, denominator)) return undefined;
  const targets: string[] = [];
  for (const state of kernel.actors()) if (state.def.faultable !== false) targets.push(state.name);
  if (targets.length === 0) return undefined;
  targets.sort();
  const target = stream.pick(targets);
  const magnitude = stream.between(1, maxMs);
  return { atStep: step, kind: "clock-skew", target, offsetMs: stream.chance(1, 2) ? magnitude : -magnitude };
}
