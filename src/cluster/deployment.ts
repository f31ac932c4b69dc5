// The Deployment controller: one ReplicaSet per pod template (named by its hash), rolled by RollingUpdate
// (maxSurge, maxUnavailable) or Recreate, with rollout status (observedGeneration, updated/ready/available
// replicas, Progressing/Available conditions, the progress deadline) that scripts and properties wait on.
// `kubectl rollout restart` is a template annotation (`kubectl.kubernetes.io/restartedAt`): a new template hash.
import type { PodTemplateSpec } from "kubernetes-types/core/v1.js";
import { assert } from "../api/assert.ts";
import { isAlreadyExists, isNotFound } from "../api/errors.ts";
import type { KubeObject } from "../api/object.ts";
import type { ActorContext, ActorDefinition } from "../sim/types.ts";
import { Action, defineController } from "../runtime/controller.ts";
import type { ReconcileContext } from "../runtime/controller.ts";
import { indexNames } from "../runtime/cache.ts";
import { canonicalEqual, controllerActor, deploymentKind, formatTime, intOrPercent, isPodFinished, isTerminating, ownedBy, parseTime, podKind, replicaSetKind, templateHash } from "./common.ts";
import type { Pod, Workload } from "./common.ts";
import type { WorkloadControllerOptions } from "./replicaset.ts";
import { cloneJson } from "../api/json.ts";

export const restartedAtAnnotation = "kubectl.kubernetes.io/restartedAt";
export const revisionAnnotation = "deployment.kubernetes.io/revision";
const hashLabel = "pod-template-hash";

interface Condition {
  type: string;
  status: string;
  reason: string;
  message: string;
  lastUpdateTime: string;
  lastTransitionTime: string;
}

const num = (value: unknown): number => (typeof value === "number" ? value : 0);
const specReplicas = (rs: Workload): number => rs.spec.replicas ?? 1;

/** The ReplicaSet a Deployment's current template needs (replicas filled in by the caller). */
function newReplicaSet(deploy: Workload, hash: string, revision: number, replicas: number): Workload {
  const template = cloneJson(deploy.spec.template) as PodTemplateSpec;
  template.metadata = { ...(template.metadata ?? {}), labels: { ...(template.metadata?.labels ?? {}), [hashLabel]: hash } };
  const selector = cloneJson(deploy.spec.selector ?? {});
  selector.matchLabels = { ...(selector.matchLabels ?? {}), [hashLabel]: hash };
  return {
    ...replicaSetKind,
    metadata: {
      name: `${deploy.metadata.name}-${hash}`,
      namespace: deploy.metadata.namespace,
      labels: { ...(template.metadata.labels ?? {}) },
      annotations: { [revisionAnnotation]: String(revision) },
      ownerReferences: [{ ...deploymentKind, name: deploy.metadata.name ?? "", uid: deploy.metadata.uid ?? "", controller: true, blockOwnerDeletion: true }],
    },
    spec: { replicas, minReadySeconds: deploy.spec.minReadySeconds ?? 0, selector, template },
  };
}

function hashOf(deploy: Workload): string {
  return templateHash(deploy.spec.template);
}

/** A reconcile's context, with the Deployment's ScalingReplicaSet event when it records Events. */
type DeployCtx = ReconcileContext & { noteScaling?: (message: string) => Promise<void> };

async function scale(rs: Workload, replicas: number, ctx: DeployCtx): Promise<void> {
  if (specReplicas(rs) === replicas) return;
  await ctx.client.patch({ readOnly: true, ...replicaSetKind, namespace: rs.metadata.namespace, name: rs.metadata.name ?? "", patchType: "merge", patch: { spec: { replicas } } });
  if (ctx.noteScaling !== undefined) await ctx.noteScaling(`Scaled ${replicas > specReplicas(rs) ? "up" : "down"} replica set ${rs.metadata.name} from ${specReplicas(rs)} to ${replicas}`);
}

async function ensureNewReplicaSet(deploy: Workload, sets: Workload[], ctx: DeployCtx, replicas: number): Promise<Workload> {
  const hash = hashOf(deploy);
  const existing = sets.find((rs) => rs.metadata.labels?.[hashLabel] === hash);
  if (existing !== undefined) return existing;
  const revision = 1 + Math.max(0, ...sets.map((rs) => Number(rs.metadata.annotations?.[revisionAnnotation] ?? 0)));
  const want = newReplicaSet(deploy, hash, revision, replicas);
  try {
    const created = await ctx.client.create<Workload>({ object: want });
    if (ctx.noteScaling !== undefined && replicas > 0) await ctx.noteScaling(`Scaled up replica set ${created.metadata.name} from 0 to ${replicas}`);
    return created;
  } catch (error) {
    if (!isAlreadyExists(error)) throw error;
    return await ctx.client.get<Workload>({ ...replicaSetKind, namespace: deploy.metadata.namespace, name: want.metadata.name ?? "" });
  }
}

/** RollingUpdate: surge the new set up to maxSurge, then scale old sets down while maxUnavailable allows. */
async function rollingUpdate(deploy: Workload, sets: Workload[], ctx: DeployCtx): Promise<void> {
  const replicas = deploy.spec.replicas ?? 1;
  const strategy = (deploy.spec.strategy as { rollingUpdate?: { maxSurge?: number | string; maxUnavailable?: number | string } } | undefined)?.rollingUpdate;
  const surge = intOrPercent(strategy?.maxSurge, replicas, "25%", true);
  let unavailable = intOrPercent(strategy?.maxUnavailable, replicas, "25%", false);
  if (surge === 0 && unavailable === 0) unavailable = 1;
  const old = sets.filter((rs) => rs.metadata.labels?.[hashLabel] !== hashOf(deploy));
  const oldActive = old.filter((rs) => specReplicas(rs) > 0);
  const fresh = await ensureNewReplicaSet(deploy, sets, ctx, oldActive.length === 0 ? replicas : 0);
  if (oldActive.length === 0) return scale(fresh, replicas, ctx);
  const total = specReplicas(fresh) + oldActive.reduce((sum, rs) => sum + specReplicas(rs), 0);
  const newWant = Math.min(replicas, specReplicas(fresh) + Math.max(0, replicas + surge - total));
  if (newWant > specReplicas(fresh)) return scale(fresh, newWant, ctx);
  // Scale old sets down: first their unavailable pods, then as far as availability allows.
  const minAvailable = replicas - unavailable;
  // A set's status may lag a scale-down: never count more available pods than it is meant to have.
  const available = [fresh, ...oldActive].reduce((sum, rs) => sum + Math.min(specReplicas(rs), num(rs.status?.availableReplicas)), 0);
  const newUnavailable = specReplicas(fresh) - num(fresh.status?.availableReplicas);
  let cleanup = Math.max(0, total - minAvailable - newUnavailable);
  let canScaleDown = Math.max(0, available - minAvailable);
  for (const rs of sortOldestFirst(oldActive)) {
    const unhealthy = Math.max(0, specReplicas(rs) - num(rs.status?.availableReplicas));
    const drop = Math.min(unhealthy, cleanup);
    cleanup -= drop;
    const more = Math.min(specReplicas(rs) - drop, canScaleDown);
    canScaleDown -= more;
    if (drop + more > 0) await scale(rs, specReplicas(rs) - drop - more, ctx);
  }
}

const revisionOf = (object: KubeObject): number => Number(object.metadata.annotations?.[revisionAnnotation] ?? 0);

function sortOldestFirst(sets: Workload[]): Workload[] {
  return [...sets].sort((a, b) => revisionOf(a) - revisionOf(b));
}

export interface DeploymentControllerOptions extends WorkloadControllerOptions {
  /**
   * Revision numbers as kube-controller-manager keeps them: the Deployment carries its current one in the
   * `deployment.kubernetes.io/revision` annotation, and a ReplicaSet brought back by a rollback takes the next number
   * (what `kubectl rollout undo` and `rollout history` read). Default false: it adds writes, and runs recorded before
   * it must replay unchanged.
   */
  revisions?: boolean;
}

/**
 * The current template's ReplicaSet numbered after every older one, and the Deployment annotated with its number. A
 * set created by this reconcile is not in `sets` yet: its arrival in the cache brings the Deployment back.
 */
async function syncRevision(deploy: Workload, sets: Workload[], ctx: ReconcileContext): Promise<void> {
  const hash = hashOf(deploy);
  const fresh = sets.find((rs) => rs.metadata.labels?.[hashLabel] === hash);
  if (fresh === undefined) return;
  const newest = Math.max(0, ...sets.filter((rs) => rs !== fresh).map(revisionOf));
  const revision = String(Math.max(revisionOf(fresh), newest + 1));
  const annotate = async (kind: { apiVersion: string; kind: string }, object: Workload) => {
    if (object.metadata.annotations?.[revisionAnnotation] === revision) return;
    const patch = { metadata: { annotations: { [revisionAnnotation]: revision } } };
    try {
      await ctx.client.patch({ readOnly: true, ...kind, namespace: object.metadata.namespace, name: object.metadata.name ?? "", patchType: "merge", patch });
    } catch (error) {
      if (!isNotFound(error)) throw error;
    }
  };
  await annotate(replicaSetKind, fresh);
  await annotate(deploymentKind, deploy);
}

/** Recreate: every old pod gone (terminating ones too) before the new set scales up. */
async function recreate(deploy: Workload, sets: Workload[], ctx: DeployCtx): Promise<void> {
  const old = sets.filter((rs) => rs.metadata.labels?.[hashLabel] !== hashOf(deploy));
  for (const rs of old) await scale(rs, 0, ctx);
  if (old.some((rs) => num(rs.status?.replicas) > 0 || specReplicas(rs) > 0)) return;
  const pods = ctx.lister<Pod>(podKind);
  if (old.some((rs) => pods.byIndex(indexNames.ownerUid, rs.metadata.uid ?? "").some((p) => !isPodFinished(p)))) return;
  const fresh = await ensureNewReplicaSet(deploy, sets, ctx, deploy.spec.replicas ?? 1);
  await scale(fresh, deploy.spec.replicas ?? 1, ctx);
}

/** Deletes old, empty sets beyond `revisionHistoryLimit` (default 10). */
async function cleanupHistory(deploy: Workload, sets: Workload[], ctx: ReconcileContext): Promise<void> {
  const limit = typeof deploy.spec.revisionHistoryLimit === "number" ? deploy.spec.revisionHistoryLimit : 10;
  const hash = hashOf(deploy);
  const empty = sortOldestFirst(sets.filter((rs) => rs.metadata.labels?.[hashLabel] !== hash && specReplicas(rs) === 0 && num(rs.status?.replicas) === 0));
  for (const rs of empty.slice(0, Math.max(0, empty.length - limit))) {
    try {
      await ctx.client.delete({ readOnly: true, ...replicaSetKind, namespace: rs.metadata.namespace, name: rs.metadata.name ?? "", preconditions: { uid: rs.metadata.uid ?? "" } });
    } catch (error) {
      if (!isNotFound(error)) throw error;
    }
  }
}

function condition(previous: Condition | undefined, type: string, status: string, reason: string, message: string, now: string, progressed: boolean): Condition {
  const same = previous !== undefined && previous.status === status && previous.reason === reason;
  return {
    type,
    status,
    reason,
    message,
    lastUpdateTime: same && !progressed ? previous.lastUpdateTime : now,
    lastTransitionTime: previous !== undefined && previous.status === status ? previous.lastTransitionTime : now,
  };
}

/** The status a rollout script waits on, and when to look again for the progress deadline. */
function deploymentStatus(deploy: Workload, sets: Workload[], nowMs: number): { status: Record<string, unknown>; recheckMs?: number } {
  const replicas = deploy.spec.replicas ?? 1;
  const hash = hashOf(deploy);
  const fresh = sets.find((rs) => rs.metadata.labels?.[hashLabel] === hash);
  const sum = (field: string) => sets.reduce((total, rs) => total + num(rs.status?.[field]), 0);
  const counts = {
    observedGeneration: deploy.metadata.generation ?? 0,
    replicas: sum("replicas"),
    updatedReplicas: num(fresh?.status?.replicas),
    readyReplicas: sum("readyReplicas"),
    availableReplicas: sum("availableReplicas"),
    unavailableReplicas: Math.max(0, replicas - sum("availableReplicas")),
  };
  const previous = (deploy.status ?? {}) as Record<string, unknown>;
  const conditions = (previous.conditions ?? []) as Condition[];
  const now = formatTime(nowMs);
  const strategy = deploy.spec.strategy as { type?: string; rollingUpdate?: { maxUnavailable?: number | string } } | undefined;
  const maxUnavailable = strategy?.type === "Recreate" ? replicas : intOrPercent(strategy?.rollingUpdate?.maxUnavailable, replicas, "25%", false);
  const availableOk = counts.availableReplicas >= replicas - maxUnavailable;
  const available = condition(conditions.find((c) => c.type === "Available"), "Available", availableOk ? "True" : "False", availableOk ? "MinimumReplicasAvailable" : "MinimumReplicasUnavailable", availableOk ? "Deployment has minimum availability." : "Deployment does not have minimum availability.", now, false);
  const complete = fresh !== undefined && counts.updatedReplicas === replicas && counts.replicas === replicas && counts.availableReplicas === replicas;
  const before = conditions.find((c) => c.type === "Progressing");
  const progressed = ["replicas", "updatedReplicas", "readyReplicas", "availableReplicas"].some((k) => previous[k] !== counts[k as keyof typeof counts]) || previous.observedGeneration !== counts.observedGeneration;
  const deadlineMs = (typeof deploy.spec.progressDeadlineSeconds === "number" ? deploy.spec.progressDeadlineSeconds : 600) * 1000;
  let progressing: Condition;
  let recheckMs: number | undefined;
  if (complete) {
    progressing = condition(before, "Progressing", "True", "NewReplicaSetAvailable", `ReplicaSet "${fresh?.metadata.name}" has successfully progressed.`, now, progressed);
  } else if (progressed || before === undefined || before.reason === "NewReplicaSetAvailable") {
    progressing = condition(before, "Progressing", "True", "ReplicaSetUpdated", `ReplicaSet "${fresh?.metadata.name ?? ""}" is progressing.`, now, true);
    recheckMs = deadlineMs;
  } else {
    const since = parseTime(before.lastUpdateTime) ?? nowMs;
    const exceeded = before.reason === "ProgressDeadlineExceeded" || nowMs >= since + deadlineMs;
    progressing = exceeded
      ? condition(before, "Progressing", "False", "ProgressDeadlineExceeded", `ReplicaSet "${fresh?.metadata.name ?? ""}" has timed out progressing.`, now, false)
      : before;
    if (!exceeded) recheckMs = since + deadlineMs - nowMs;
  }
  const status = { ...counts, conditions: [available, progressing] };
  return recheckMs === undefined ? { status } : { status, recheckMs };
}

async function syncStatus(deploy: Workload, status: Record<string, unknown>, ctx: ReconcileContext): Promise<void> {
  if (canonicalEqual(deploy.status ?? {}, status)) return;
  try {
    await ctx.client.updateStatus({ readOnly: true, object: { ...deploy, status } });
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
}

function deploymentOfPod(pod: KubeObject): Array<{ namespace?: string; name: string }> {
  const owner = pod.metadata.ownerReferences?.find((ref) => ref.controller === true && ref.kind === "ReplicaSet");
  const cut = owner === undefined ? -1 : owner.name.lastIndexOf("-");
  if (owner === undefined || cut <= 0) return [];
  return [{ namespace: pod.metadata.namespace, name: owner.name.slice(0, cut) }];
}

export function deploymentController(options: DeploymentControllerOptions = {}): ActorDefinition {
  return controllerActor("deployment-controller", options, (ctx) => {
    const controller = defineController<Workload>({
      name: "deployment-controller",
      for: deploymentKind,
      owns: [replicaSetKind],
      // Pods matter for Recreate (old pods gone, terminating ones too); ours are named `<deployment>-<hash>-<suffix>`.
      watches: [{ ...podKind, map: (pod) => deploymentOfPod(pod) }],
      resyncMs: 0,
      reconcile: async (deploy, rctx) => {
        assert(deploy.metadata.uid !== undefined, "deployment-has-uid");
        const sets = ownedBy(rctx.lister<Workload>(replicaSetKind).byIndex(indexNames.ownerUid, deploy.metadata.uid), deploy);
        if (isTerminating(deploy)) return Action.awaitChange();
        if (deploy.spec.paused !== true) {
          const dctx: DeployCtx = options.events === true ? { ...rctx, noteScaling: (message) => rctx.events.record(deploy, { type: "Normal", reason: "ScalingReplicaSet", message }) } : rctx;
          if ((deploy.spec.strategy as { type?: string } | undefined)?.type === "Recreate") await recreate(deploy, sets, dctx);
          else await rollingUpdate(deploy, sets, dctx);
          await cleanupHistory(deploy, sets, rctx);
        }
        if (options.revisions === true) await syncRevision(deploy, sets, rctx);
        const { status, recheckMs } = deploymentStatus(deploy, sets, rctx.clock.now());
        await syncStatus(deploy, status, rctx);
        return recheckMs === undefined ? Action.awaitChange() : Action.requeueAfter(recheckMs);
      },
    });
    return [controller];
  });
}

/** What `kubectl rollout status` says of a Deployment: done, or why it is still waiting (or failed). */
export function deploymentRolloutStatus(deploy: KubeObject): { done: boolean; failed: boolean; message: string } {
  const spec = (deploy.spec ?? {}) as { replicas?: number };
  const status = (deploy.status ?? {}) as Record<string, unknown>;
  const name = deploy.metadata.name ?? "";
  const replicas = spec.replicas ?? 1;
  if ((deploy.metadata.generation ?? 0) > num(status.observedGeneration)) return { done: false, failed: false, message: "Waiting for deployment spec update to be observed..." };
  const progressing = ((status.conditions ?? []) as Condition[]).find((c) => c.type === "Progressing");
  if (progressing?.reason === "ProgressDeadlineExceeded") return { done: false, failed: true, message: `deployment "${name}" exceeded its progress deadline` };
  const updated = num(status.updatedReplicas);
  if (updated < replicas) return { done: false, failed: false, message: `Waiting for deployment "${name}" rollout to finish: ${updated} out of ${replicas} new replicas have been updated...` };
  if (num(status.replicas) > updated) return { done: false, failed: false, message: `Waiting for deployment "${name}" rollout to finish: ${num(status.replicas) - updated} old replicas are pending termination...` };
  if (num(status.availableReplicas) < updated) return { done: false, failed: false, message: `Waiting for deployment "${name}" rollout to finish: ${num(status.availableReplicas)} of ${updated} updated replicas are available...` };
  return { done: true, failed: false, message: `deployment "${name}" successfully rolled out` };
}

/** `kubectl rollout restart`: stamps the template so the Deployment rolls every pod. */
export async function rolloutRestart(client: ActorContext["client"], ref: { namespace: string; name: string; kind?: string; apiVersion?: string }, nowMs: number): Promise<void> {
  const kind = { apiVersion: ref.apiVersion ?? "apps/v1", kind: ref.kind ?? "Deployment" };
  const patch = { spec: { template: { metadata: { annotations: { [restartedAtAnnotation]: formatTime(nowMs) } } } } };
  await client.patch({ readOnly: true, ...kind, namespace: ref.namespace, name: ref.name, patchType: "merge", patch });
}
