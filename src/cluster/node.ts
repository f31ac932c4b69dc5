// Node lifecycle (a node whose kubelet stops renewing its Lease goes Ready=Unknown), the disruption
// controller (PodDisruptionBudget status), and drain: cordon, then evictions that honour the budgets the
// way the eviction subresource does (spend one `disruptionsAllowed` with optimistic concurrency, then delete).
import { assert } from "../api/assert.ts";
import { formatMicroTime } from "../api/clock.ts";
import { isApiError, isConflict, isNotFound } from "../api/errors.ts";
import type { KubeObject } from "../api/object.ts";
import type { ActorContext, ActorDefinition } from "../sim/types.ts";
import { defineActor } from "../sim/simulation.ts";
import { Action, defineController } from "../runtime/controller.ts";
import type { Lister } from "../runtime/cache.ts";
import { canonicalEqual, clusterActor, controllerActor, formatTime, intOrPercent, isNodeReady, isPodActive, isPodReady, isTerminating, leaseKind, nodeKind, parseTime, pdbKind, podKind, selectorMatches, type ClusterActorOptions } from "./common.ts";
import type { Node, Pod } from "./common.ts";

export interface NodeLifecycleOptions {
  /** A Lease older than this marks the node Ready=Unknown. Default 40_000 (the real node-monitor-grace-period). */
  gracePeriodMs?: number;
  /** How often Leases are checked. Default 5000. */
  monitorPeriodMs?: number;
  restartDelayMs?: number;
  crashable?: boolean;
}

/** Marks nodes whose kubelet stopped heartbeating Ready=Unknown (`NodeStatusUnknown`), as the node lifecycle controller does. */
export function nodeLifecycle(options: NodeLifecycleOptions = {}): ActorDefinition {
  const graceMs = options.gracePeriodMs ?? 40_000;
  const periodMs = options.monitorPeriodMs ?? 5000;
  assert(periodMs > 0, "node-lifecycle-period-positive");
  return clusterActor("node-lifecycle", options, async (ctx) => {
    for (;;) {
      await ctx.clock.sleep(periodMs);
      try {
        await monitorOnce(ctx, graceMs);
      } catch (error) {
        if (!isApiError(error)) throw error;
      }
    }
  });
}

async function monitorOnce(ctx: ActorContext, graceMs: number): Promise<void> {
  const leases = await ctx.client.list({ ...leaseKind, namespace: "kube-node-lease" });
  const renewed = new Map(leases.items.map((lease) => [lease.metadata.name ?? "", parseTime((lease.spec as { renewTime?: string }).renewTime) ?? 0]));
  const nodes = await ctx.client.list<Node>({ ...nodeKind });
  const now = ctx.clock.now();
  for (const node of nodes.items) {
    const last = renewed.get(node.metadata.name ?? "");
    // No Lease: this node's kubelet does not heartbeat, so silence says nothing.
    if (last === undefined || now - last <= graceMs || !isNodeReady(node)) continue;
    const stamp = formatTime(now);
    const condition = { type: "Ready", status: "Unknown", reason: "NodeStatusUnknown", message: "Kubelet stopped posting node status.", lastHeartbeatTime: stamp, lastTransitionTime: stamp };
    await ctx.client.patchStatus({ readOnly: true, ...nodeKind, name: node.metadata.name ?? "", patchType: "merge", patch: { status: { conditions: [condition] } } });
  }
}

interface PdbSpec {
  selector?: { matchLabels?: Record<string, string> };
  minAvailable?: number | string;
  maxUnavailable?: number | string;
}

/** Disrupted pods stay counted as unavailable this long unless they are gone (the real 2 minutes). */
const disruptedPodTimeoutMs = 2 * 60 * 1000;

/** The status the disruption controller computes for a budget from the pods it selects. */
export function pdbStatus(pdb: KubeObject, pods: readonly Pod[], nowMs: number): Record<string, unknown> {
  const spec = (pdb.spec ?? {}) as PdbSpec;
  const previous = (pdb.status ?? {}) as { disruptedPods?: Record<string, string> };
  const selected = pods.filter((p) => isPodActive(p) && selectorMatches(spec.selector, p.metadata.labels));
  const disrupted: Record<string, string> = {};
  for (const [name, at] of Object.entries(previous.disruptedPods ?? {})) {
    const pod = selected.find((p) => p.metadata.name === name);
    if (pod !== undefined && (parseTime(at) ?? 0) + disruptedPodTimeoutMs > nowMs) disrupted[name] = at;
  }
  const expected = selected.length;
  const healthy = selected.filter((p) => isPodReady(p) && disrupted[p.metadata.name ?? ""] === undefined).length;
  const desired = spec.maxUnavailable !== undefined ? Math.max(0, expected - intOrPercent(spec.maxUnavailable, expected, "0", true)) : intOrPercent(spec.minAvailable, expected, "1", true);
  return {
    observedGeneration: pdb.metadata.generation ?? 0,
    expectedPods: expected,
    currentHealthy: healthy,
    desiredHealthy: desired,
    disruptionsAllowed: Math.max(0, healthy - desired),
    ...(Object.keys(disrupted).length > 0 ? { disruptedPods: disrupted } : {}),
  };
}

/** Keeps every PodDisruptionBudget's status (disruptionsAllowed) current. */
export function disruptionController(options: ClusterActorOptions = {}): ActorDefinition {
  return controllerActor("disruption-controller", options, (ctx) => {
    let budgets: Lister | undefined;
    const controller = defineController({
      name: "disruption-controller",
      for: pdbKind,
      watches: [
        {
          ...podKind,
          map: (pod) => (budgets?.list({ namespace: pod.metadata.namespace ?? "" }) ?? []).map((b) => ({ namespace: b.metadata.namespace, name: b.metadata.name ?? "" })),
        },
      ],
      resyncMs: 0,
      reconcile: async (pdb, rctx) => {
        budgets = rctx.lister(pdbKind);
        const pods = rctx.lister<Pod>(podKind).list({ namespace: pdb.metadata.namespace ?? "" });
        const status = pdbStatus(pdb, pods, rctx.clock.now());
        if (!canonicalEqual(pdb.status ?? {}, status)) await rctx.client.updateStatus({ readOnly: true, object: { ...pdb, status } });
        // Disrupted entries expire: look again then.
        return status.disruptedPods === undefined ? Action.awaitChange() : Action.requeueAfter(disruptedPodTimeoutMs);
      },
    });
    return [controller];
  });
}

export type EvictionResult = "evicted" | "gone" | "blocked";

/**
 * The eviction subresource: a pod covered by a budget with no disruption left is refused (429); otherwise
 * one disruption is spent on the budget (a conflict means someone else spent one: try again) and the pod
 * is deleted gracefully.
 */
export async function evictPod(client: ActorContext["client"], pod: Pod, nowMs: number): Promise<EvictionResult> {
  const namespace = pod.metadata.namespace ?? "";
  const budgets = (await client.list({ ...pdbKind, namespace })).items.filter((b) => selectorMatches((b.spec as PdbSpec).selector, pod.metadata.labels));
  if (budgets.length > 1) return "blocked"; // The API server refuses pods under more than one budget.
  const budget = budgets[0];
  if (budget !== undefined && pod.status?.phase !== "Succeeded" && pod.status?.phase !== "Failed") {
    const status = (budget.status ?? {}) as { observedGeneration?: number; disruptionsAllowed?: number; disruptedPods?: Record<string, string> };
    if ((status.observedGeneration ?? -1) < (budget.metadata.generation ?? 0) || (status.disruptionsAllowed ?? 0) <= 0) return "blocked";
    const disruptedPods = { ...(status.disruptedPods ?? {}), [pod.metadata.name ?? ""]: formatMicroTime(nowMs) };
    try {
      await client.updateStatus({ readOnly: true, object: { ...budget, status: { ...status, disruptionsAllowed: (status.disruptionsAllowed ?? 0) - 1, disruptedPods } } });
    } catch (error) {
      if (isConflict(error)) return "blocked";
      throw error;
    }
  }
  try {
    await client.delete({ readOnly: true, ...podKind, namespace, name: pod.metadata.name ?? "", preconditions: { uid: pod.metadata.uid ?? "" } });
    return "evicted";
  } catch (error) {
    if (isNotFound(error) || isConflict(error)) return "gone";
    throw error;
  }
}

/** External cell where a drain reports how it ended: `{ state: "running" | "done" | "timed-out", ... }`. */
export function drainCell(node: string): string {
  return `drain/${node}`;
}

export interface DrainOptions {
  node: string;
  /** Start this long after the actor starts. Default 0. */
  afterMs?: number;
  /** Give up (report "timed-out") after this long. Default 300_000. */
  timeoutMs?: number;
  /** Retry blocked evictions this often. Default 5000. */
  retryMs?: number;
  /** Actor name. Default `drain-<node>`. */
  name?: string;
  /** Write progress to the external cell `drain/<node>` (must be defined). Default false. */
  report?: boolean;
}

function drainable(pod: Pod): boolean {
  const owner = pod.metadata.ownerReferences?.find((o) => o.controller === true);
  // `kubectl drain --ignore-daemonsets`: daemon pods stay; mirror pods are not evicted.
  if (owner?.kind === "DaemonSet") return false;
  if (pod.metadata.annotations?.["kubernetes.io/config.mirror"] !== undefined) return false;
  return !isTerminating(pod);
}

/** One pass of a drain: evicts what may go; returns how many drainable pods are still on the node. */
export async function drainOnce(client: ActorContext["client"], node: string, nowMs: number): Promise<number> {
  const pods = (await client.list<Pod>({ ...podKind, fieldSelector: `spec.nodeName=${node}` })).items.filter(drainable);
  let left = 0;
  for (const pod of pods) {
    if ((await evictPod(client, pod, nowMs)) === "blocked") left++;
  }
  // Evicted pods still terminating count as not drained yet.
  const remaining = (await client.list<Pod>({ ...podKind, fieldSelector: `spec.nodeName=${node}` })).items.filter((p) => drainable(p) || (isTerminating(p) && p.metadata.ownerReferences?.find((o) => o.controller === true)?.kind !== "DaemonSet"));
  return Math.max(left, remaining.length);
}

export async function cordon(client: ActorContext["client"], node: string, unschedulable = true): Promise<void> {
  await client.patch({ readOnly: true, ...nodeKind, name: node, patchType: "merge", patch: { spec: { unschedulable } } });
}

/** `kubectl drain <node> --ignore-daemonsets` as an actor: cordon, then evict until the node is empty or time runs out. */
export function drain(options: DrainOptions): ActorDefinition {
  return defineActor({
    name: options.name ?? `drain-${options.node}`,
    crashable: false,
    async start(ctx) {
      const report = (state: Record<string, unknown>) => (options.report === true ? ctx.external(drainCell(options.node)).write(state) : Promise.resolve());
      if ((options.afterMs ?? 0) > 0) await ctx.clock.sleep(options.afterMs ?? 0);
      const deadline = ctx.clock.now() + (options.timeoutMs ?? 300_000);
      await report({ state: "running" });
      for (;;) {
        try {
          await cordon(ctx.client, options.node);
          const left = await drainOnce(ctx.client, options.node, ctx.clock.now());
          if (left === 0) return void (await report({ state: "done", atMs: ctx.clock.now() }));
        } catch (error) {
          if (!isApiError(error)) throw error;
        }
        if (ctx.clock.now() >= deadline) return void (await report({ state: "timed-out", atMs: ctx.clock.now() }));
        await ctx.clock.sleep(options.retryMs ?? 5000);
      }
    },
  });
}
