// The DaemonSet controller: one pod per eligible node (node selector, affinity and taints, with the
// tolerations every daemon pod gets), pinned to its node by required node affinity and bound by the
// scheduler; RollingUpdate (maxUnavailable, no surge) or OnDelete; status a rollout script waits on.
import type { PodTemplateSpec, Toleration } from "kubernetes-types/core/v1.js";
import { assert } from "../api/assert.ts";
import { isAlreadyExists, isNotFound } from "../api/errors.ts";
import { controllerOf } from "../api/object.ts";
import type { KubeObject } from "../api/object.ts";
import type { ActorDefinition } from "../sim/types.ts";
import { Action, defineController } from "../runtime/controller.ts";
import type { ReconcileContext } from "../runtime/controller.ts";
import type { Lister } from "../runtime/cache.ts";
import { indexNames } from "../runtime/cache.ts";
import { canonicalEqual, controllerActor, daemonSetKind, deleteIfPresent, eventNote, intOrPercent, isPodActive, isPodReady, isTerminating, nodeKind, ownedBy, podFromTemplate, podKind, templateHash, toleratesAll } from "./common.ts";
import type { Node, Note, Pod, Workload } from "./common.ts";
import { Expectations, isPodAvailable } from "./replicaset.ts";
import type { WorkloadControllerOptions } from "./replicaset.ts";
import { podFitsNode } from "./scheduler.ts";
import { controllerRevisionKind } from "./statefulset.ts";
import { cloneJson } from "../api/json.ts";

export const daemonHashLabel = "controller-revision-hash";

/** The tolerations the real controller adds to every daemon pod. */
const daemonTolerations: Toleration[] = [
  { key: "node.kubernetes.io/not-ready", operator: "Exists", effect: "NoExecute" },
  { key: "node.kubernetes.io/unreachable", operator: "Exists", effect: "NoExecute" },
  { key: "node.kubernetes.io/disk-pressure", operator: "Exists", effect: "NoSchedule" },
  { key: "node.kubernetes.io/memory-pressure", operator: "Exists", effect: "NoSchedule" },
  { key: "node.kubernetes.io/pid-pressure", operator: "Exists", effect: "NoSchedule" },
  { key: "node.kubernetes.io/unschedulable", operator: "Exists", effect: "NoSchedule" },
];

function daemonPod(ds: Workload, node: string, hash: string): Pod {
  const template = ds.spec.template as PodTemplateSpec;
  const tolerations = [...(template.spec?.tolerations ?? []), ...daemonTolerations];
  const affinity = { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchFields: [{ key: "metadata.name", operator: "In", values: [node] }] }] } } };
  return podFromTemplate(ds, template, { generateName: `${ds.metadata.name}-`, labels: { [daemonHashLabel]: hash }, spec: { tolerations, affinity } });
}

/** Whether a daemon pod belongs on the node: the node selector and affinity, and its taints (condition taints aside). */
function shouldRun(ds: Workload, node: Node): boolean {
  if (isTerminating(node)) return false;
  const probe = daemonPod(ds, node.metadata.name ?? "", "");
  // Conditions and cordons do not take a daemon off a node; only the node's own taints do.
  const plain: Node = { ...node, spec: { ...(node.spec ?? {}), unschedulable: false }, status: { conditions: [{ type: "Ready", status: "True" }] } };
  return podFitsNode(probe, plain) && toleratesAll(probe.spec.tolerations, node.spec?.taints ?? []);
}

interface NodePlan {
  node: string;
  /** Its daemon pods as the cache has them, less the ones we deleted and the cache still shows. */
  pods: Pod[];
  /** A pod we created that the cache does not show yet. */
  creating: boolean;
}

/** Creates missing daemon pods, deletes ones on nodes they do not belong, and the surplus on a node. */
async function syncNodes(ds: Workload, plans: NodePlan[], misplaced: Pod[], hash: string, ctx: Ctx): Promise<void> {
  for (const plan of plans) {
    const active = plan.pods.filter(isPodActive);
    const failed = plan.pods.filter((p) => p.status?.phase === "Failed" && !isTerminating(p));
    for (const pod of failed) await removePod(ds, pod, ctx);
    // As the real controller: a terminating pod does not hold back its replacement.
    if (active.length === 0 && !plan.creating) {
      const created = await ctx.client.create<Pod>({ object: daemonPod(ds, plan.node, hash) });
      ctx.expectations.expect(`${ds.metadata.uid}/${plan.node}`, "adds", created.metadata.name ?? "", ctx.clock.now());
      if (ctx.note !== undefined) await ctx.note(ds, "SuccessfulCreate", `Created pod: ${created.metadata.name}`);
    }
    // Keep the oldest, delete the rest.
    for (const extra of active.slice(1)) await removePod(ds, extra, ctx);
  }
  for (const pod of misplaced) if (isPodActive(pod)) await removePod(ds, pod, ctx);
}

type Ctx = ReconcileContext & { expectations: Expectations; history?: boolean; note?: Note };

async function removePod(ds: Workload, pod: Pod, ctx: Ctx): Promise<void> {
  ctx.expectations.expect(`${controllerOf(pod)?.uid}/${podNode(pod)}`, "deletes", pod.metadata.name ?? "", ctx.clock.now());
  await deleteIfPresent(ctx, { ...podKind, namespace: pod.metadata.namespace, name: pod.metadata.name ?? "", preconditions: { uid: pod.metadata.uid ?? "" } });
  if (ctx.note !== undefined) await ctx.note(ds, "SuccessfulDelete", `Deleted pod: ${pod.metadata.name}`);
}

/** RollingUpdate: delete old-template pods while fewer than maxUnavailable nodes lack an available pod. */
async function rollingUpdate(ds: Workload, plans: NodePlan[], hash: string, ctx: Ctx): Promise<void> {
  const strategy = ds.spec.updateStrategy as { type?: string; rollingUpdate?: { maxUnavailable?: number | string } } | undefined;
  if (strategy?.type === "OnDelete") return;
  const maxUnavailable = Math.max(1, intOrPercent(strategy?.rollingUpdate?.maxUnavailable, plans.length, "1", true));
  const minReady = Number(ds.spec.minReadySeconds ?? 0);
  const now = ctx.clock.now();
  const unavailable = plans.filter((plan) => !plan.pods.some((p) => isPodActive(p) && isPodAvailable(p, minReady, now))).length;
  let budget = maxUnavailable - unavailable;
  // Old pods that are not available go first: deleting them costs no availability.
  const old = plans.flatMap((plan) => plan.pods.filter((p) => isPodActive(p) && p.metadata.labels?.[daemonHashLabel] !== hash));
  for (const pod of old.filter((p) => !isPodAvailable(p, minReady, now))) await removePod(ds, pod, ctx);
  for (const pod of old.filter((p) => isPodAvailable(p, minReady, now))) {
    if (budget <= 0) break;
    budget--;
    await removePod(ds, pod, ctx);
  }
}

function daemonSetStatus(ds: Workload, plans: NodePlan[], misplaced: Pod[], hash: string, nowMs: number): Record<string, unknown> {
  const minReady = Number(ds.spec.minReadySeconds ?? 0);
  const current = plans.map((plan) => plan.pods.find(isPodActive)).filter((p): p is Pod => p !== undefined);
  const available = current.filter((p) => isPodAvailable(p, minReady, nowMs)).length;
  return {
    desiredNumberScheduled: plans.length,
    currentNumberScheduled: current.length,
    numberMisscheduled: misplaced.filter(isPodActive).length,
    numberReady: current.filter(isPodReady).length,
    numberAvailable: available,
    numberUnavailable: plans.length - available,
    updatedNumberScheduled: current.filter((p) => p.metadata.labels?.[daemonHashLabel] === hash).length,
    observedGeneration: ds.metadata.generation ?? 0,
  };
}

type ControllerRevision = KubeObject & { revision: number };

/**
 * The template's versions as ControllerRevisions `<set>-<hash>`, as the real controller keeps them (what `kubectl
 * rollout history` and `rollout undo` read for a DaemonSet): one per template, the current one numbered after every
 * other (a rollback renumbers it), and at most `revisionHistoryLimit` (default 10) old ones no pod runs.
 */
async function syncHistory(ds: Workload, hash: string, pods: Pod[], ctx: Ctx): Promise<void> {
  const history = ownedBy(ctx.lister<ControllerRevision>(controllerRevisionKind).byIndex(indexNames.ownerUid, ds.metadata.uid ?? ""), ds);
  const name = `${ds.metadata.name}-${hash}`;
  const latest = Math.max(0, ...history.map((r) => r.revision));
  const existing = history.find((r) => r.metadata.name === name);
  if (existing === undefined) {
    const labels = { ...(ds.spec.template.metadata?.labels ?? {}), [daemonHashLabel]: hash };
    const owner = { ...daemonSetKind, name: ds.metadata.name ?? "", uid: ds.metadata.uid ?? "", controller: true, blockOwnerDeletion: true };
    const data = { spec: { template: { ...cloneJson(ds.spec.template), $patch: "replace" } } };
    try {
      await ctx.client.create({ readOnly: true, object: { ...controllerRevisionKind, metadata: { name, namespace: ds.metadata.namespace, labels, ownerReferences: [owner] }, data, revision: latest + 1 } });
    } catch (error) {
      if (!isAlreadyExists(error)) throw error;
    }
  } else if (existing.revision < latest) {
    await ctx.client.patch({ readOnly: true, ...controllerRevisionKind, namespace: ds.metadata.namespace, name, patchType: "merge", patch: { revision: latest + 1 } });
  }
  const running = new Set(pods.map((p) => p.metadata.labels?.[daemonHashLabel] ?? ""));
  const limit = typeof ds.spec.revisionHistoryLimit === "number" ? ds.spec.revisionHistoryLimit : 10;
  const old = history.filter((r) => r.metadata.name !== name && !running.has(r.metadata.labels?.[daemonHashLabel] ?? "")).sort((a, b) => a.revision - b.revision);
  for (const revision of old.slice(0, Math.max(0, old.length - limit))) {
    await deleteIfPresent(ctx, { ...controllerRevisionKind, namespace: ds.metadata.namespace, name: revision.metadata.name ?? "" });
  }
}

async function reconcileDaemonSet(ds: Workload, ctx: Ctx): Promise<Action> {
  assert(ds.metadata.uid !== undefined, "daemonset-has-uid");
  const hash = templateHash(ds.spec.template);
  const pods = ownedBy(ctx.lister<Pod>(podKind).byIndex(indexNames.ownerUid, ds.metadata.uid), ds);
  const nodes = ctx.lister<Node>(nodeKind).list();
  const byNode = new Map<string, Pod[]>();
  for (const pod of pods) {
    const node = podNode(pod);
    byNode.set(node, [...(byNode.get(node) ?? []), pod]);
  }
  const eligible = nodes.filter((node) => shouldRun(ds, node)).map((node) => node.metadata.name ?? "");
  const plans = eligible.map((node) => {
    const all = byNode.get(node) ?? [];
    const pending = ctx.expectations.settle(`${ds.metadata.uid}/${node}`, all, ctx.clock.now());
    return { node, pods: all.filter((p) => !pending.deleting.has(p.metadata.name ?? "")), creating: pending.adds > 0 };
  });
  const misplaced = pods.filter((pod) => !eligible.includes(podNode(pod)));
  if (!isTerminating(ds)) {
    if (ctx.history) await syncHistory(ds, hash, pods, ctx);
    await syncNodes(ds, plans, misplaced, hash, ctx);
    await rollingUpdate(ds, plans, hash, ctx);
  }
  const status = daemonSetStatus(ds, plans, misplaced, hash, ctx.clock.now());
  if (!canonicalEqual(ds.status ?? {}, status)) {
    try {
      await ctx.client.updateStatus({ readOnly: true, object: { ...ds, status } });
    } catch (error) {
      if (!isNotFound(error)) throw error;
    }
  }
  const minReady = Number(ds.spec.minReadySeconds ?? 0);
  return minReady > 0 && status.numberReady !== status.numberAvailable ? Action.requeueAfter(minReady * 1000) : Action.awaitChange();
}

/** The node a daemon pod is for: its binding, or the node its required affinity names. */
function podNode(pod: Pod): string {
  if ((pod.spec.nodeName ?? "") !== "") return pod.spec.nodeName ?? "";
  const terms = pod.spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms ?? [];
  return terms[0]?.matchFields?.find((f) => f.key === "metadata.name")?.values?.[0] ?? "";
}

export interface DaemonSetControllerOptions extends WorkloadControllerOptions {
  /**
   * Keep the template's history as ControllerRevisions, as kube-controller-manager does (`kubectl rollout history`
   * and `rollout undo` need them). Default false: it adds a watched kind and writes, and runs recorded before it must
   * replay unchanged.
   */
  revisions?: boolean;
}

export function daemonSetController(options: DaemonSetControllerOptions = {}): ActorDefinition {
  return controllerActor("daemonset-controller", options, (ctx) => {
    // Node events concern every DaemonSet; the DaemonSet cache is reached through the first reconcile's context.
    let sets: Lister<Workload> | undefined;
    const expectations = new Expectations();
    const controller = defineController<Workload>({
      name: "daemonset-controller",
      for: daemonSetKind,
      owns: options.revisions === true ? [podKind, controllerRevisionKind] : [podKind],
      watches: [{ ...nodeKind, map: () => (sets?.list() ?? []).map((ds) => ({ namespace: ds.metadata.namespace, name: ds.metadata.name ?? "" })) }],
      resyncMs: 0,
      reconcile: (ds, rctx) => {
        sets = rctx.lister<Workload>(daemonSetKind);
        return reconcileDaemonSet(ds, { ...rctx, expectations, history: options.revisions === true, note: eventNote(options.events, rctx.events) });
      },
    });
    return [controller];
  });
}

/** What `kubectl rollout status` says of a DaemonSet. */
export function daemonSetRolloutStatus(ds: KubeObject): { done: boolean; message: string } {
  const status = (ds.status ?? {}) as Record<string, number>;
  const name = ds.metadata.name ?? "";
  if ((ds.metadata.generation ?? 0) > (status.observedGeneration ?? 0)) return { done: false, message: "Waiting for daemon set spec update to be observed..." };
  const desired = status.desiredNumberScheduled ?? 0;
  const updated = status.updatedNumberScheduled ?? 0;
  if (updated < desired) return { done: false, message: `Waiting for daemon set "${name}" rollout to finish: ${updated} out of ${desired} new pods have been updated...` };
  const available = status.numberAvailable ?? 0;
  if (available < desired) return { done: false, message: `Waiting for daemon set "${name}" rollout to finish: ${available} of ${desired} updated pods are available...` };
  return { done: true, message: `daemon set "${name}" successfully rolled out` };
}
