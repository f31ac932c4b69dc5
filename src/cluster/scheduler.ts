// Scheduler-lite: binds each pending pod to a feasible node (Ready, not cordoned, taints tolerated, node
// selector and required node affinity met), spreading by the fewest pods bound, ties by name.
import type { NodeSelectorRequirement, NodeSelectorTerm, Taint } from "kubernetes-types/core/v1.js";
import { isApiError, isInvalid, isNotFound } from "../api/errors.ts";
import type { ActorDefinition } from "../sim/types.ts";
import { Action, defineController } from "../runtime/controller.ts";
import type { Lister } from "../runtime/cache.ts";
import { createEventRecorder } from "../runtime/events.ts";
import { controllerActor, effectiveTaints, isPodActive, nodeKind, podKind, toleratesAll } from "./common.ts";
import type { Node, Pod } from "./common.ts";

export interface SchedulerOptions {
  /** Actor name. Default "scheduler". */
  name?: string;
  /** Pods naming another `spec.schedulerName` are left alone. Default "default-scheduler". */
  schedulerName?: string;
  /** Retry for a pod no node fits, besides every Node change. Default 0: only Node changes. */
  retryMs?: number;
  restartDelayMs?: number;
  crashable?: boolean;
  /** Record a `Scheduled` Event for each pod bound, as the real scheduler does. Default false. */
  events?: boolean;
}

function matchesRequirement(node: Node, requirement: NodeSelectorRequirement, field: boolean): boolean {
  const value = field ? (requirement.key === "metadata.name" ? node.metadata.name : undefined) : node.metadata.labels?.[requirement.key];
  const values = requirement.values ?? [];
  switch (requirement.operator) {
    case "In":
      return value !== undefined && values.includes(value);
    case "NotIn":
      return value === undefined || !values.includes(value);
    case "Exists":
      return value !== undefined;
    case "DoesNotExist":
      return value === undefined;
    default:
      return false;
  }
}

function matchesTerm(node: Node, term: NodeSelectorTerm): boolean {
  return (
    (term.matchExpressions ?? []).every((r) => matchesRequirement(node, r, false)) &&
    (term.matchFields ?? []).every((r) => matchesRequirement(node, r, true))
  );
}

/** Whether the pod may run on the node: what the scheduler's filters check, minus resources and ports. */
export function podFitsNode(pod: Pod, node: Node): boolean {
  const selector = pod.spec.nodeSelector ?? {};
  if (!Object.entries(selector).every(([key, value]) => node.metadata.labels?.[key] === value)) return false;
  const terms = pod.spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;
  if (terms !== undefined && terms.length > 0 && !terms.some((term) => matchesTerm(node, term))) return false;
  return toleratesAll(pod.spec.tolerations, effectiveTaints(node));
}

/** Why the pod may not run on the node, in the words of the real scheduler's first failing filter; undefined if it may. */
function unfitReason(pod: Pod, node: Node): string | undefined {
  const untolerated = (taint: { key?: string; effect?: string }) => taint.effect !== "PreferNoSchedule" && !toleratesAll(pod.spec.tolerations, [taint as Taint]);
  if (node.spec?.unschedulable === true && untolerated({ key: "node.kubernetes.io/unschedulable", effect: "NoSchedule" })) return "node(s) were unschedulable";
  const taint = effectiveTaints(node).find(untolerated);
  if (taint !== undefined) return `node(s) had untolerated taint {${taint.key}: ${taint.value ?? ""}}`;
  return podFitsNode(pod, node) ? undefined : "node(s) didn't match Pod's node affinity/selector";
}

/** The FailedScheduling message: how many nodes failed for each reason, sorted, as the real scheduler words it. */
function unschedulableMessage(pod: Pod, nodes: readonly Node[]): string {
  if (nodes.length === 0) return "no nodes available to schedule pods";
  const counts = new Map<string, number>();
  for (const node of nodes) {
    const reason = node.metadata.deletionTimestamp !== undefined ? "node(s) were being deleted" : (unfitReason(pod, node) ?? "node(s) had no room");
    counts.set(reason, (counts.get(reason) ?? 0) + 1);
  }
  const reasons = [...counts].map(([reason, n]) => `${n} ${reason}`).sort();
  return `0/${nodes.length} nodes are available: ${reasons.join(", ")}. preemption: 0/${nodes.length} nodes are available: ${nodes.length} Preemption is not helpful for scheduling.`;
}

function pickNode(pod: Pod, nodes: readonly Node[], pods: Lister<Pod>): Node | undefined {
  let best: Node | undefined;
  let bestLoad = Infinity;
  for (const node of nodes) {
    if (node.metadata.deletionTimestamp !== undefined || !podFitsNode(pod, node)) continue;
    const load = pods.byIndex("node", node.metadata.name ?? "").filter(isPodActive).length;
    if (load < bestLoad) {
      best = node;
      bestLoad = load;
    }
  }
  return best;
}

export function scheduler(options: SchedulerOptions = {}): ActorDefinition {
  const schedulerName = options.schedulerName ?? "default-scheduler";
  return controllerActor(options.name ?? "scheduler", options, (ctx) => {
    // Node events re-queue every pending pod; the pod cache is reached through the first reconcile's context.
    let podLister: Lister<Pod> | undefined;
    const recorder = options.events === true ? createEventRecorder({ client: ctx.client, clock: ctx.clock, component: schedulerName }) : undefined;
    const controller = defineController<Pod>({
      name: options.name ?? "scheduler",
      for: { ...podKind, indexers: { node: (pod) => [String((pod.spec as { nodeName?: string })?.nodeName ?? "")] } },
      watches: [
        {
          ...nodeKind,
          map: () => (podLister?.byIndex("node", "") ?? []).map((p) => ({ namespace: p.metadata.namespace, name: p.metadata.name ?? "" })),
        },
      ],
      resyncMs: 0,
      reconcile: async (pod, rctx) => {
        const pods = rctx.lister<Pod>(podKind);
        podLister = pods;
        if ((pod.spec.nodeName ?? "") !== "" || !isPodActive(pod)) return Action.awaitChange();
        if ((pod.spec.schedulerName ?? "default-scheduler") !== schedulerName) return Action.awaitChange();
        const nodes = rctx.lister<Node>(nodeKind).list();
        const node = pickNode(pod, nodes, pods);
        if (node === undefined) {
          if (recorder !== undefined) await recorder.record(pod, { type: "Warning", reason: "FailedScheduling", message: unschedulableMessage(pod, nodes), action: "Scheduling" });
          return options.retryMs ? Action.requeueAfter(options.retryMs) : Action.awaitChange();
        }
        try {
          // Setting `spec.nodeName` once stands in for the binding subresource.
          await rctx.client.patch({ readOnly: true, ...podKind, namespace: pod.metadata.namespace, name: pod.metadata.name ?? "", patchType: "merge", patch: { spec: { nodeName: node.metadata.name } } });
        } catch (error) {
          if (isNotFound(error) || isInvalid(error)) return Action.awaitChange();
          if (!isApiError(error)) throw error;
          throw error;
        }
        if (recorder !== undefined) {
          await recorder.record(pod, { type: "Normal", reason: "Scheduled", message: `Successfully assigned ${pod.metadata.namespace}/${pod.metadata.name} to ${node.metadata.name}`, action: "Binding" });
        }
        return Action.awaitChange();
      },
    });
    return [controller];
  });
}
