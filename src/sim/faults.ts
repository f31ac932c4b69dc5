// Faults a real cluster produces, applied as trace records before a step, and drawn from a budget.
// A fault whose target no longer fits (an actor already down, a closed watch) is skipped, never an error:
// shrinking removes faults and choices freely and every such plan must still be a valid run.
import { assert } from "../api/assert.ts";
import type { Kernel, ActorState } from "./kernel.ts";
import type { Rng } from "./rng.ts";
import type { FaultBudget, FaultKind, FaultTarget, PlannedFault, WorldView } from "./types.ts";

export const BUILTIN_FAULT_KINDS = [
  "crash",
  "pause",
  "stale-read",
  "delay-watch",
  "close-watch",
  "fail-request",
  "lost-response",
] as const;

export interface FaultHooks {
  crash(state: ActorState): string;
}

interface Applied {
  actor: string;
  result: string;
}

/** Applies one fault; returns who it concerned and what came of it. */
export function applyFault(kernel: Kernel, hooks: FaultHooks, custom: ReadonlyMap<string, FaultKind>, target: FaultTarget, fault: PlannedFault): Applied {
  const kind = custom.get(fault.kind);
  if (kind !== undefined) return { actor: "sim", result: kind.apply(target, fault) };
  if (fault.kind === "delay-watch" || fault.kind === "close-watch") return applyWatchFault(kernel, fault);
  const state = kernel.actors.get(fault.target);
  if (state === undefined) return { actor: "sim", result: `skipped: no actor ${fault.target}` };
  const actor = state.name;
  if (state.status !== "running") return { actor, result: `skipped: ${state.status}` };
  switch (fault.kind) {
    case "crash":
      return { actor, result: hooks.crash(state) };
    case "pause": {
      const ms = numberParam(fault, "durationMs", 1000);
      state.pausedUntil = Math.max(state.pausedUntil, kernel.clock.now() + ms);
      kernel.paused.add(state);
      return { actor, result: `paused until +${ms}ms` };
    }
    case "stale-read":
      state.armed.staleLagRevisions = numberParam(fault, "lagRevisions", 1);
      return { actor, result: "armed" };
    case "fail-request":
      state.armed.failCode = numberParam(fault, "code", 500);
      return { actor, result: "armed" };
    case "lost-response":
      state.armed.loseResponse = true;
      return { actor, result: "armed" };
    default:
      return { actor, result: `skipped: unknown fault kind ${fault.kind}` };
  }
}

function applyWatchFault(kernel: Kernel, fault: PlannedFault): Applied {
  const actor = fault.target.split("/")[0] ?? "sim";
  const watch = kernel.watches.get(fault.target);
  if (watch === undefined || !watch.open) return { actor, result: "skipped: no open watch" };
  if (fault.kind === "close-watch") {
    watch.end();
    return { actor, result: "closed" };
  }
  const ms = numberParam(fault, "delayMs", 1000);
  watch.delay(ms);
  return { actor, result: `delayed +${ms}ms` };
}

function numberParam(fault: PlannedFault, name: string, fallback: number): number {
  const value = fault[name];
  if (value === undefined) return fallback;
  assert(typeof value === "number" && Number.isFinite(value) && value >= 0, `fault ${fault.kind} ${name} is a non-negative number`);
  return value;
}

/** The valid targets of a kind now, sorted so that draws do not depend on insertion order. */
function targetsOf(kernel: Kernel, custom: ReadonlyMap<string, FaultKind>, view: WorldView, kind: string): string[] {
  const customKind = custom.get(kind);
  if (customKind !== undefined) return [...customKind.targets(view)];
  if (kind === "delay-watch" || kind === "close-watch") {
    const faultable = (id: string) => kernel.actors.get(id.split("/")[0] ?? "")?.def.faultable !== false;
    return [...kernel.watches.values()].filter((watch) => watch.open && faultable(watch.id)).map((watch) => watch.id).sort();
  }
  const targets: string[] = [];
  for (const state of kernel.actors.values()) {
    if (state.status !== "running" || !state.startPending) continue;
    if (state.def.faultable === false) continue;
    if (kind === "crash" && state.def.crashable === false) continue;
    if (kind === "pause" && kernel.paused.has(state)) continue;
    targets.push(state.name);
  }
  return targets.sort();
}

/** Draws at most one fault before `step`, spending `remaining` (per-kind counts, mutated). */
export function drawFault(
  kernel: Kernel,
  custom: ReadonlyMap<string, FaultKind>,
  view: WorldView,
  rng: Rng,
  budget: FaultBudget,
  remaining: Map<string, number>,
  step: number,
): PlannedFault | undefined {
  const [numerator, denominator] = budget.chance;
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
  const fault: PlannedFault = { atStep: step, kind, target: rng.pick(targets) };
  return Object.assign(fault, drawParams(budget, custom.get(kind), rng, kind));
}

function drawParams(budget: FaultBudget, custom: FaultKind | undefined, rng: Rng, kind: string): Record<string, string | number | boolean> {
  if (custom !== undefined) return custom.params?.(rng) ?? {};
  switch (kind) {
    case "pause": {
      const [min, max] = budget.pauseMs ?? [1000, 30_000];
      return { durationMs: rng.between(min, max) };
    }
    case "delay-watch": {
      const [min, max] = budget.delayWatchMs ?? [100, 5000];
      return { delayMs: rng.between(min, max) };
    }
    case "stale-read":
      return { lagRevisions: rng.between(1, budget.staleLagRevisionsMax ?? 5) };
    case "fail-request":
      return { code: rng.pick(budget.failCodes ?? [409, 429, 500, 504]) };
    default:
      return {};
  }
}
