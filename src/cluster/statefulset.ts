// The StatefulSet controller: pods with stable names `<set>-<ordinal>`, created in order and each only once its
// predecessors are Running and Ready (`OrderedReady`), or all at once (`Parallel`); removed from the highest ordinal
// down; rolled by `RollingUpdate` from the highest ordinal down to `partition`, one pod at a time, or left to the user
// (`OnDelete`). Each template version is a ControllerRevision `<set>-<hash>`, and a pod's version is its
// `controller-revision-hash` label; `status.currentRevision`/`updateRevision` name revisions the way kubectl and helm
// read them. `volumeClaimTemplates` become PersistentVolumeClaims `<claim>-<set>-<ordinal>`, reported Bound at once unless a
// volume provisioner binds them (see volumes.ts).
import type { PersistentVolumeClaim, PodTemplateSpec, Volume } from "kubernetes-types/core/v1.js";
import { assert } from "../api/assert.ts";
import { isAlreadyExists, isNotFound } from "../api/errors.ts";
import type { KubeObject } from "../api/object.ts";
import type { ActorDefinition } from "../sim/types.ts";
import { Action, defineController } from "../runtime/controller.ts";
import type { ReconcileContext } from "../runtime/controller.ts";
import { indexNames } from "../runtime/cache.ts";
import { canonicalEqual, controllerActor, deleteIfPresent, eventNote, isPodFinished, isPodReady, isTerminating, ownedBy, podFromTemplate, podKind, templateHash } from "./common.ts";
import type { Note } from "./common.ts";
import type { Pod, Workload } from "./common.ts";
import { isPodAvailable } from "./replicaset.ts";
import type { WorkloadControllerOptions } from "./replicaset.ts";
import { cloneJson } from "../api/json.ts";

export const statefulSetKind = { apiVersion: "apps/v1", kind: "StatefulSet" } as const;
export const controllerRevisionKind = { apiVersion: "apps/v1", kind: "ControllerRevision" } as const;
export const pvcKind = { apiVersion: "v1", kind: "PersistentVolumeClaim" } as const;
/** The pod label naming the ControllerRevision a pod was made from. */
export const revisionLabel = "controller-revision-hash";
export const podNameLabel = "statefulset.kubernetes.io/pod-name";
export const podIndexLabel = "apps.kubernetes.io/pod-index";

type ControllerRevision = KubeObject & { data?: { spec?: { template?: PodTemplateSpec } }; revision: number };
/** A reconcile's context, with the set's Events when it records them, and whether claims are reported Bound here. */
type Ctx = ReconcileContext & { note?: Note; bindsClaims?: boolean };

export interface StatefulSetControllerOptions extends WorkloadControllerOptions {
  /** A volume provisioner binds the claims (`volume-provisioner`): the set only creates them. Default false. */
  provisioned?: boolean;
}

interface Revisions {
  current: string;
  update: string;
  /** The template of each of the two revisions. */
  templates: Map<string, PodTemplateSpec>;
}

/** What one reconcile sees: the set's pods by ordinal (in range or condemned) and its two revisions. */
interface Plan {
  set: Workload;
  replicas: number;
  /** Pods with an ordinal in [0, replicas), by ordinal. */
  byOrdinal: Map<number, Pod>;
  /** Pods with an ordinal at or past `replicas`, highest ordinal first. */
  condemned: Pod[];
  revisions: Revisions;
  ordered: boolean;
}

/** The ordinal of a pod named `<set>-<n>`, or undefined for any other name. */
export function podOrdinal(setName: string, podName: string): number | undefined {
  if (!podName.startsWith(`${setName}-`)) return undefined;
  const rest = podName.slice(setName.length + 1);
  return /^(0|[1-9]\d*)$/.test(rest) ? Number(rest) : undefined;
}

function partitionOf(set: Workload): number {
  const strategy = set.spec.updateStrategy as { type?: string; rollingUpdate?: { partition?: number } } | undefined;
  return strategy?.type === "OnDelete" ? 0 : (strategy?.rollingUpdate?.partition ?? 0);
}

function isRollingUpdate(set: Workload): boolean {
  return (set.spec.updateStrategy as { type?: string } | undefined)?.type !== "OnDelete";
}

/** Running, Ready for `minReadySeconds` and not on its way out: what OrderedReady waits for. */
function isHealthy(pod: Pod, set: Workload, nowMs: number): boolean {
  return !isTerminating(pod) && isPodAvailable(pod, Number(set.spec.minReadySeconds ?? 0), nowMs);
}

/** The revision of the current template (created when new), and the one the set's status names as current. */
async function ensureRevisions(set: Workload, revisions: ControllerRevision[], ctx: Ctx): Promise<Revisions> {
  const name = set.metadata.name ?? "";
  const update = `${name}-${templateHash(set.spec.template)}`;
  const latest = Math.max(0, ...revisions.map((r) => r.revision));
  const existing = revisions.find((r) => r.metadata.name === update);
  if (existing === undefined) {
    const template = { ...cloneJson(set.spec.template), $patch: "replace" };
    const labels = { ...(set.spec.template.metadata?.labels ?? {}), [revisionLabel]: update };
    const owner = { ...statefulSetKind, name, uid: set.metadata.uid ?? "", controller: true, blockOwnerDeletion: true };
    const object = { ...controllerRevisionKind, metadata: { name: update, namespace: set.metadata.namespace, labels, ownerReferences: [owner] }, data: { spec: { template } }, revision: latest + 1 };
    try {
      await ctx.client.create({ readOnly: true, object });
    } catch (error) {
      if (!isAlreadyExists(error)) throw error;
    }
  } else if (existing.revision < latest) {
    // Going back to an earlier template makes its revision the newest again (a rollback), as the real controller does.
    await ctx.client.patch({ readOnly: true, ...controllerRevisionKind, namespace: set.metadata.namespace, name: update, patchType: "merge", patch: { revision: latest + 1 } });
  }
  const named = String(set.status?.currentRevision ?? "");
  const currentRevision = revisions.find((r) => r.metadata.name === named);
  const current = currentRevision === undefined ? update : named;
  const templates = new Map<string, PodTemplateSpec>([[update, set.spec.template]]);
  const stored = currentRevision?.data?.spec?.template;
  templates.set(current, stored === undefined ? set.spec.template : stripPatchDirective(stored));
  return { current, update, templates };
}

function stripPatchDirective(template: PodTemplateSpec): PodTemplateSpec {
  const copy = cloneJson(template) as PodTemplateSpec & { $patch?: string };
  delete copy.$patch;
  return copy;
}

/** The pod of one ordinal at one revision: stable name and hostname, identity labels, claims mounted. */
function statefulPod(set: Workload, template: PodTemplateSpec, revision: string, ordinal: number): Pod {
  const name = `${set.metadata.name}-${ordinal}`;
  const labels = { [revisionLabel]: revision, [podNameLabel]: name, [podIndexLabel]: String(ordinal) };
  const subdomain = typeof set.spec.serviceName === "string" && set.spec.serviceName !== "" ? { subdomain: set.spec.serviceName } : {};
  const pod = podFromTemplate(set, template, { generateName: "", labels, spec: { hostname: name, ...subdomain } });
  delete pod.metadata.generateName;
  pod.metadata.name = name;
  const claims: Volume[] = claimTemplates(set).map((claim) => ({ name: claim.metadata?.name ?? "", persistentVolumeClaim: { claimName: claimName(set, claim, ordinal) } }));
  const mounted = new Set(claims.map((v) => v.name));
  if (claims.length > 0) pod.spec.volumes = [...(pod.spec.volumes ?? []).filter((v) => !mounted.has(v.name)), ...claims];
  return pod;
}

function claimTemplates(set: Workload): PersistentVolumeClaim[] {
  return (set.spec.volumeClaimTemplates as PersistentVolumeClaim[] | undefined) ?? [];
}

function claimName(set: Workload, claim: PersistentVolumeClaim, ordinal: number): string {
  return `${claim.metadata?.name ?? ""}-${set.metadata.name}-${ordinal}`;
}

/**
 * The claims of one ordinal, created when missing. Without a provisioner they are reported Bound at once: a claim
 * stands for storage that exists. The claims stay when the set scales down or goes (the `Retain` policies).
 */
async function ensureClaims(set: Workload, ordinal: number, ctx: Ctx): Promise<void> {
  const selectorLabels = set.spec.selector?.matchLabels ?? {};
  for (const claim of claimTemplates(set)) {
    const name = claimName(set, claim, ordinal);
    const object = {
      ...pvcKind,
      metadata: { name, namespace: set.metadata.namespace, labels: { ...(claim.metadata?.labels ?? {}), ...selectorLabels } },
      spec: cloneJson(claim.spec ?? {}),
    };
    let created: KubeObject;
    try {
      created = await ctx.client.create({ object });
    } catch (error) {
      if (isAlreadyExists(error)) continue;
      throw error;
    }
    if (ctx.bindsClaims !== true) continue;
    const status = { phase: "Bound", accessModes: claim.spec?.accessModes ?? ["ReadWriteOnce"], capacity: { storage: claim.spec?.resources?.requests?.storage ?? "1Gi" } };
    await ctx.client.updateStatus({ readOnly: true, object: { ...created, status } });
  }
}

async function createPod(plan: Plan, ordinal: number, ctx: Ctx): Promise<void> {
  const { set, revisions } = plan;
  // Ordinals below the partition stay at the current revision; the rest are made at the update revision.
  const revision = isRollingUpdate(set) && ordinal < partitionOf(set) ? revisions.current : revisions.update;
  await ensureClaims(set, ordinal, ctx);
  const template = revisions.templates.get(revision) ?? set.spec.template;
  const pod = statefulPod(set, template, revision, ordinal);
  try {
    await ctx.client.create({ readOnly: true, object: pod });
  } catch (error) {
    // The name is the identity: a pod the cache does not show yet is the one this create was for.
    if (!isAlreadyExists(error)) throw error;
    return;
  }
  if (ctx.note !== undefined) await ctx.note(set, "SuccessfulCreate", `create Pod ${pod.metadata.name} in StatefulSet ${set.metadata.name} successful`);
}

async function deletePod(set: Workload, pod: Pod, ctx: Ctx): Promise<void> {
  await deleteIfPresent(ctx, { ...podKind, namespace: pod.metadata.namespace, name: pod.metadata.name ?? "", preconditions: { uid: pod.metadata.uid ?? "" } });
  if (ctx.note !== undefined) await ctx.note(set, "SuccessfulDelete", `delete Pod ${pod.metadata.name} in StatefulSet ${set.metadata.name} successful`);
}

/** Ordinals in range: replace finished pods, create missing ones; OrderedReady stops at the first one not healthy. */
async function syncReplicas(plan: Plan, ctx: Ctx): Promise<boolean> {
  for (let ordinal = 0; ordinal < plan.replicas; ordinal++) {
    const pod = plan.byOrdinal.get(ordinal);
    if (pod !== undefined && isPodFinished(pod) && !isTerminating(pod)) {
      await deletePod(plan.set, pod, ctx);
      if (plan.ordered) return false;
      continue;
    }
    if (pod === undefined) {
      await createPod(plan, ordinal, ctx);
      if (plan.ordered) return false;
      continue;
    }
    if (plan.ordered && !isHealthy(pod, plan.set, ctx.clock.now())) return false;
  }
  return true;
}

/** Ordinals past `replicas`, highest first: OrderedReady removes one at a time, Parallel all at once. */
async function removeCondemned(plan: Plan, ctx: Ctx): Promise<boolean> {
  for (const pod of plan.condemned) {
    if (isTerminating(pod)) {
      if (plan.ordered) return false;
      continue;
    }
    await deletePod(plan.set, pod, ctx);
    if (plan.ordered) return false;
  }
  return plan.condemned.length === 0;
}

/** RollingUpdate: from the highest ordinal down to the partition, replace one out-of-date pod once all are healthy. */
async function rollOut(plan: Plan, ctx: Ctx): Promise<void> {
  if (!isRollingUpdate(plan.set)) return;
  for (let ordinal = plan.replicas - 1; ordinal >= partitionOf(plan.set); ordinal--) {
    const pod = plan.byOrdinal.get(ordinal);
    if (pod === undefined || !isHealthy(pod, plan.set, ctx.clock.now())) return;
    if (pod.metadata.labels?.[revisionLabel] !== plan.revisions.update) {
      await deletePod(plan.set, pod, ctx);
      return;
    }
  }
}

/** Status as the real controller counts it; the current revision catches up once every pod is updated and ready. */
function statefulSetStatus(plan: Plan, pods: Pod[], nowMs: number): Record<string, unknown> {
  const minReady = Number(plan.set.spec.minReadySeconds ?? 0);
  const live = pods.filter((p) => !isTerminating(p));
  const status = {
    observedGeneration: plan.set.metadata.generation ?? 0,
    replicas: pods.length,
    readyReplicas: pods.filter(isPodReady).length,
    availableReplicas: pods.filter((p) => isPodAvailable(p, minReady, nowMs)).length,
    currentReplicas: live.filter((p) => p.metadata.labels?.[revisionLabel] === plan.revisions.current).length,
    updatedReplicas: live.filter((p) => p.metadata.labels?.[revisionLabel] === plan.revisions.update).length,
    currentRevision: plan.revisions.current,
    updateRevision: plan.revisions.update,
    collisionCount: 0,
  };
  if (isRollingUpdate(plan.set) && status.updatedReplicas === status.replicas && status.readyReplicas === status.replicas) {
    status.currentReplicas = status.updatedReplicas;
    status.currentRevision = status.updateRevision;
  }
  return status;
}

/** Keeps `revisionHistoryLimit` (default 10) revisions besides the live ones (current, update, any pod's). */
async function cleanupHistory(set: Workload, revisions: ControllerRevision[], pods: Pod[], status: Record<string, unknown>, ctx: Ctx): Promise<void> {
  const live = new Set([String(status.currentRevision), String(status.updateRevision), ...pods.map((p) => p.metadata.labels?.[revisionLabel] ?? "")]);
  const limit = typeof set.spec.revisionHistoryLimit === "number" ? set.spec.revisionHistoryLimit : 10;
  const old = revisions.filter((r) => !live.has(r.metadata.name ?? "")).sort((a, b) => a.revision - b.revision);
  for (const revision of old.slice(0, Math.max(0, old.length - limit))) {
    await deleteIfPresent(ctx, { ...controllerRevisionKind, namespace: set.metadata.namespace, name: revision.metadata.name ?? "" });
  }
}

async function reconcileStatefulSet(set: Workload, ctx: Ctx): Promise<Action> {
  assert(set.metadata.uid !== undefined, "statefulset-has-uid");
  assert(set.spec.template.spec !== undefined, "statefulset-template-has-spec");
  if (isTerminating(set)) return Action.awaitChange();
  const name = set.metadata.name ?? "";
  const pods = ownedBy(ctx.lister<Pod>(podKind).byIndex(indexNames.ownerUid, set.metadata.uid), set).filter((p) => podOrdinal(name, p.metadata.name ?? "") !== undefined);
  const revisions = ownedBy(ctx.lister<ControllerRevision>(controllerRevisionKind).byIndex(indexNames.ownerUid, set.metadata.uid), set);
  const replicas = set.spec.replicas ?? 1;
  const byOrdinal = new Map<number, Pod>();
  const condemned: Pod[] = [];
  for (const pod of pods) {
    const ordinal = podOrdinal(name, pod.metadata.name ?? "") ?? -1;
    if (ordinal < replicas) byOrdinal.set(ordinal, pod);
    else condemned.push(pod);
  }
  condemned.sort((a, b) => (podOrdinal(name, b.metadata.name ?? "") ?? 0) - (podOrdinal(name, a.metadata.name ?? "") ?? 0));
  const plan: Plan = { set, replicas, byOrdinal, condemned, revisions: await ensureRevisions(set, revisions, ctx), ordered: set.spec.podManagementPolicy !== "Parallel" };
  if ((await syncReplicas(plan, ctx)) && (await removeCondemned(plan, ctx))) await rollOut(plan, ctx);
  const status = statefulSetStatus(plan, pods, ctx.clock.now());
  if (!canonicalEqual(set.status ?? {}, status)) {
    try {
      await ctx.client.updateStatus({ readOnly: true, object: { ...set, status } });
    } catch (error) {
      if (!isNotFound(error)) throw error;
    }
  }
  await cleanupHistory(set, revisions, pods, status, ctx);
  // A pod that becomes ready counts as available only after minReadySeconds: look again then.
  const minReady = Number(set.spec.minReadySeconds ?? 0);
  return minReady > 0 && status.readyReplicas !== status.availableReplicas ? Action.requeueAfter(minReady * 1000) : Action.awaitChange();
}

/** Actor `statefulset-controller`. Not part of `cluster()` unless asked for (`with: ["statefulset-controller"]`). */
export function statefulSetController(options: StatefulSetControllerOptions = {}): ActorDefinition {
  return controllerActor("statefulset-controller", options, (ctx) => {
    const controller = defineController<Workload>({
      name: "statefulset-controller",
      for: statefulSetKind,
      owns: [podKind, controllerRevisionKind],
      resyncMs: 0,
      reconcile: (set, rctx) => reconcileStatefulSet(set, { ...rctx, bindsClaims: options.provisioned !== true, ...(options.events === true ? { note: eventNote(true, rctx.events) } : {}) }),
    });
    return [controller];
  });
}

/** What `kubectl rollout status statefulset/<name>` says: done, or what it is still waiting for. */
export function statefulSetRolloutStatus(set: KubeObject): { done: boolean; message: string } {
  const spec = (set.spec ?? {}) as { replicas?: number; updateStrategy?: { type?: string; rollingUpdate?: { partition?: number } } };
  const status = (set.status ?? {}) as Record<string, number | string | undefined>;
  const num = (key: string) => (typeof status[key] === "number" ? status[key] : 0);
  const replicas = spec.replicas ?? 1;
  if (spec.updateStrategy?.type === "OnDelete") return { done: true, message: "rollout status is only available for RollingUpdate strategy type" };
  if (num("observedGeneration") === 0 || (set.metadata.generation ?? 0) > num("observedGeneration")) return { done: false, message: "Waiting for statefulset spec update to be observed..." };
  if (num("readyReplicas") < replicas) return { done: false, message: `Waiting for ${replicas - num("readyReplicas")} pods to be ready...` };
  const partition = spec.updateStrategy?.rollingUpdate?.partition;
  if (partition !== undefined) {
    if (num("updatedReplicas") < replicas - partition) return { done: false, message: `Waiting for partitioned roll out to finish: ${num("updatedReplicas")} out of ${replicas - partition} new pods have been updated...` };
    return { done: true, message: `partitioned roll out complete: ${num("updatedReplicas")} new pods have been updated...` };
  }
  if (status.updateRevision !== status.currentRevision) return { done: false, message: `waiting for statefulset rolling update to complete ${num("updatedReplicas")} pods at revision ${String(status.updateRevision)}...` };
  return { done: true, message: `statefulset rolling update complete ${num("currentReplicas")} pods at revision ${String(status.currentRevision)}...` };
}
