// What a DELETE does to an object, as kube-apiserver's registry decides it: remove it now, or mark it
// terminating (deletionTimestamp, grace period, garbage-collection finalizers) and keep it.
import type { DeleteOptions, PropagationPolicy } from "../api/client.ts";
import { formatTimestamp } from "../api/clock.ts";
import type { KubeObject } from "../api/object.ts";
import type { KindState } from "./registry.ts";
import { crdCleanupFinalizer } from "./crd.ts";
import { isRecord } from "../api/json.ts";

export const orphanFinalizer = "orphan";
export const foregroundFinalizer = "foregroundDeletion";
export const namespaceFinalizer = "kubernetes";

/** The grace period of a pod delete: 0 for pods never scheduled or already finished. */
function podGraceSeconds(pod: KubeObject, options: DeleteOptions): number {
  const spec = isRecord(pod.spec) ? pod.spec : {};
  const phase = isRecord(pod.status) ? pod.status.phase : undefined;
  if (typeof spec.nodeName !== "string" || spec.nodeName === "") return 0;
  if (phase === "Succeeded" || phase === "Failed") return 0;
  const fromSpec = typeof spec.terminationGracePeriodSeconds === "number" ? spec.terminationGracePeriodSeconds : 30;
  const grace = options.gracePeriodSeconds ?? fromSpec;
  // A negative grace period means "as soon as possible", which the API server turns into 1 second.
  return grace < 0 ? 1 : Math.floor(grace);
}

function policyOf(current: KubeObject, state: KindState, options: DeleteOptions): PropagationPolicy {
  if (options.propagationPolicy !== undefined) return options.propagationPolicy;
  const finalizers = current.metadata.finalizers ?? [];
  if (finalizers.includes(orphanFinalizer)) return "Orphan";
  if (finalizers.includes(foregroundFinalizer)) return "Foreground";
  return state.rules.defaultPropagation;
}

function finalizersAfter(current: KubeObject, policy: PropagationPolicy, isCrd: boolean): string[] {
  const finalizers = (current.metadata.finalizers ?? []).filter((f) => f !== orphanFinalizer && f !== foregroundFinalizer);
  if (policy === "Orphan") finalizers.push(orphanFinalizer);
  if (policy === "Foreground") finalizers.push(foregroundFinalizer);
  if (isCrd && !finalizers.includes(crdCleanupFinalizer)) finalizers.push(crdCleanupFinalizer);
  return finalizers;
}

/** Namespaces also wait for their `spec.finalizers` (the namespace controller's "kubernetes"). */
export function namespaceSpecFinalizers(object: KubeObject): string[] {
  if (object.kind !== "Namespace" || !isRecord(object.spec) || !Array.isArray(object.spec.finalizers)) return [];
  return object.spec.finalizers as string[];
}

/** True when a terminating object has nothing left holding it: no finalizers and a grace period of 0. */
export function isFinalized(object: KubeObject): boolean {
  const meta = object.metadata;
  if (meta.deletionTimestamp === undefined || meta.deletionTimestamp === null) return false;
  if ((meta.finalizers ?? []).length > 0) return false;
  if (namespaceSpecFinalizers(object).length > 0) return false;
  return (meta.deletionGracePeriodSeconds ?? 0) === 0;
}

/**
 * Plans a delete of `current`: "remove" to delete it now, or the terminating object to store instead
 * (which may equal `current` when a repeated delete changes nothing).
 */
export function planDelete(current: KubeObject, state: KindState, options: DeleteOptions, nowMs: number): KubeObject | "remove" {
  const isCrd = current.kind === "CustomResourceDefinition" && current.apiVersion.startsWith("apiextensions.k8s.io/");
  const policy = policyOf(current, state, options);
  const finalizers = finalizersAfter(current, policy, isCrd);
  const grace = state.rules.gracefulDelete ? podGraceSeconds(current, options) : 0;
  const held = finalizers.length > 0 || grace > 0 || namespaceSpecFinalizers(current).length > 0;
  if (!held) return "remove";
  const meta = { ...current.metadata };
  if (finalizers.length > 0) meta.finalizers = finalizers;
  else delete meta.finalizers;
  const next: KubeObject = { ...current, metadata: meta };
  const previousGrace = meta.deletionGracePeriodSeconds;
  if (meta.deletionTimestamp === undefined || meta.deletionTimestamp === null) {
    meta.deletionTimestamp = formatTimestamp(nowMs + grace * 1000) as unknown as typeof meta.deletionTimestamp;
    meta.deletionGracePeriodSeconds = grace;
    // The first deletionTimestamp is a change of intent: generation moves, as markAsDeleting does.
    meta.generation = (meta.generation ?? 0) + 1;
  } else if (previousGrace !== undefined && grace < previousGrace) {
    meta.deletionTimestamp = formatTimestamp(nowMs + grace * 1000) as unknown as typeof meta.deletionTimestamp;
    meta.deletionGracePeriodSeconds = grace;
  }
  if (current.kind === "Namespace" && current.apiVersion === "v1") {
    next.status = { ...(isRecord(current.status) ? current.status : {}), phase: "Terminating" };
  }
  return next;
}
