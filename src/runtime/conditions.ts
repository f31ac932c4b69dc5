// Status conditions as `metav1.Condition`: `lastTransitionTime` moves only when `status` changes, and
// `observedGeneration` records which spec the condition speaks about, so a reader can tell a stale
// "Ready=True" (about an older generation) from a current one.
import { assert } from "../api/assert.ts";
import { formatTimestamp } from "../api/clock.ts";
import type { KubeObject } from "../api/object.ts";

export type ConditionStatus = "True" | "False" | "Unknown";

export interface Condition {
  type: string;
  status: ConditionStatus;
  /** UpperCamelCase, machine-readable. */
  reason: string;
  message: string;
  observedGeneration?: number;
  /** RFC 3339, second precision. */
  lastTransitionTime: string;
}

export type ConditionInput = Omit<Condition, "lastTransitionTime">;

/** Conditions kept per object; more is a bug in the caller (types are a small fixed set). */
export const conditionsMax = 32;

export function getCondition(conditions: readonly Condition[] | undefined, type: string): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}

/**
 * True when the condition is "True" and, if `generation` is given, was observed at that generation
 * (a condition about an older spec says nothing about the current one).
 */
export function isConditionTrue(conditions: readonly Condition[] | undefined, type: string, generation?: number): boolean {
  const condition = getCondition(conditions, type);
  if (condition?.status !== "True") return false;
  return generation === undefined || condition.observedGeneration === generation;
}

/** Returns a new list with the condition set; `lastTransitionTime` is `nowMs` only when the status changed. */
export function setCondition(conditions: readonly Condition[] | undefined, input: ConditionInput, nowMs: number): Condition[] {
  assert(input.type.length > 0, "condition-type-given");
  assert(input.reason.length > 0, "condition-reason-given");
  const list = [...(conditions ?? [])];
  const index = list.findIndex((c) => c.type === input.type);
  const previous = index >= 0 ? list[index] : undefined;
  const lastTransitionTime =
    previous !== undefined && previous.status === input.status ? previous.lastTransitionTime : formatTimestamp(nowMs);
  const next: Condition = { ...input, lastTransitionTime };
  if (index >= 0) list[index] = next;
  else list.push(next);
  assert(list.length <= conditionsMax, "conditions-bounded");
  return list;
}

export function removeCondition(conditions: readonly Condition[] | undefined, type: string): Condition[] {
  return (conditions ?? []).filter((c) => c.type !== type);
}

/**
 * Returns a copy of `object` with the condition set in `status.conditions`; `observedGeneration` defaults to
 * the object's `metadata.generation`. The input object is not changed (cached objects are frozen).
 */
export function withCondition<T extends KubeObject>(
  object: T,
  input: Omit<ConditionInput, "observedGeneration"> & { observedGeneration?: number },
  nowMs: number,
): T {
  const status = (object["status"] ?? {}) as { conditions?: Condition[] } & Record<string, unknown>;
  const observedGeneration = input.observedGeneration ?? object.metadata.generation;
  const full: ConditionInput = observedGeneration === undefined ? { ...input } : { ...input, observedGeneration };
  return { ...object, status: { ...status, conditions: setCondition(status.conditions, full, nowMs) } };
}

/** True when the two lists say the same thing (ignoring order), so a status write can be skipped. */
export function conditionsEqual(a: readonly Condition[] | undefined, b: readonly Condition[] | undefined): boolean {
  const left = a ?? [];
  const right = b ?? [];
  if (left.length !== right.length) return false;
  return left.every((c) => {
    const d = getCondition(right, c.type);
    return (
      d !== undefined &&
      d.status === c.status &&
      d.reason === c.reason &&
      d.message === c.message &&
      d.observedGeneration === c.observedGeneration &&
      d.lastTransitionTime === c.lastTransitionTime
    );
  });
}
