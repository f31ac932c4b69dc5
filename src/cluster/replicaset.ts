// The ReplicaSet controller: keeps `spec.replicas` active pods per ReplicaSet and reports how many are ready
// and available. Like the real one it remembers the creates and deletes it has not seen in its cache yet
// (expectations), so a lagging cache does not make it overshoot.
import type { PodTemplateSpec } from "kubernetes-types/core/v1.js";
import { assert } from "../api/assert.ts";
import { isNotFound } from "../api/errors.ts";
import type { ActorDefinition } from "../sim/types.ts";
import { Action, defineController } from "../runtime/controller.ts";
import type { ReconcileContext } from "../runtime/controller.ts";
import { indexNames } from "../runtime/cache.ts";
import { canonicalEqual, controllerActor, deleteIfPresent, eventNote, isPodActive, isPodReady, isTerminating, ownedBy, parseTime, podFromTemplate, podKind, replicaSetKind } from "./common.ts";
import type { Note } from "./common.ts";
import type { Pod, Workload } from "./common.ts";

export interface WorkloadControllerOptions {
  restartDelayMs?: number;
  crashable?: boolean;
  /** Record the Events the real controller records (pods created and deleted, scaling). Default false. */
  events?: boolean;
}

/** Creates or deletes at most this many pods per reconcile (the real controller's burst is 500). */
const podBurstMax = 500;
/** Expectations not met within this time are dropped (the real controller's 5 minutes). */
const expectationsTimeoutMs = 5 * 60 * 1000;

/** Creates and deletes issued but not yet seen in the cache, per owner key. */
export class Expectations {
  private readonly pending = new Map<string, { adds: Set<string>; deletes: Set<string>; sinceMs: number }>();

  /** Forgets what the cache now shows; returns the pods to count as active on top of / instead of the cache. */
  settle(key: string, pods: readonly Pod[], nowMs: number): { adds: number; deleting: Set<string> } {
    const entry = this.pending.get(key);
    if (entry === undefined) return { adds: 0, deleting: new Set() };
    if (nowMs - entry.sinceMs > expectationsTimeoutMs) {
      this.pending.delete(key);
      return { adds: 0, deleting: new Set() };
    }
    const byName = new Map(pods.map((p) => [p.metadata.name ?? "", p]));
    for (const name of [...entry.adds]) if (byName.has(name)) entry.adds.delete(name);
    for (const name of [...entry.deletes]) {
      const pod = byName.get(name);
      if (pod === undefined || !isPodActive(pod)) entry.deletes.delete(name);
    }
    if (entry.adds.size === 0 && entry.deletes.size === 0) this.pending.delete(key);
    return { adds: entry.adds.size, deleting: new Set(entry.deletes) };
  }

  /** A create or delete that failed will never be seen: stop waiting for it (client-go's `Lowered*` on error). */
  lower(key: string, kind: "adds" | "deletes", name: string): void {
    const entry = this.pending.get(key);
    if (entry === undefined) return;
    entry[kind].delete(name);
    if (entry.adds.size === 0 && entry.deletes.size === 0) this.pending.delete(key);
  }

  expect(key: string, kind: "adds" | "deletes", name: string, nowMs: number): void {
    const entry = this.pending.get(key) ?? { adds: new Set<string>(), deletes: new Set<string>(), sinceMs: nowMs };
    entry[kind].add(name);
    entry.sinceMs = nowMs;
    this.pending.set(key, entry);
  }
}

/** Ready for at least `minReadySeconds` (by the Ready condition's transition time). */
export function isPodAvailable(pod: Pod, minReadySeconds: number, nowMs: number): boolean {
  if (!isPodReady(pod)) return false;
  if (minReadySeconds <= 0) return true;
  const since = parseTime((pod.status?.conditions ?? []).find((c) => c.type === "Ready")?.lastTransitionTime);
  return since !== undefined && since + minReadySeconds * 1000 <= nowMs;
}

/** Deletion order: unscheduled, then pending, then not ready, then the newest first. */
function deletionRank(a: Pod, b: Pod): number {
  const score = (p: Pod) => [(p.spec.nodeName ?? "") === "" ? 0 : 1, p.status?.phase === "Pending" ? 0 : 1, isPodReady(p) ? 1 : 0];
  const [sa, sb] = [score(a), score(b)];
  for (let i = 0; i < sa.length; i++) if (sa[i] !== sb[i]) return sa[i]! - sb[i]!;
  const [ta, tb] = [String(a.metadata.creationTimestamp ?? ""), String(b.metadata.creationTimestamp ?? "")];
  if (ta !== tb) return ta < tb ? 1 : -1;
  return (a.metadata.name ?? "") < (b.metadata.name ?? "") ? 1 : -1;
}

async function scalePods(rs: Workload, active: Pod[], pending: { adds: number; deleting: Set<string> }, ctx: ReconcileContext, expectations: Expectations, note: Note | undefined): Promise<void> {
  const key = `${rs.metadata.namespace}/${rs.metadata.name}`;
  const counted = active.filter((p) => !pending.deleting.has(p.metadata.name ?? ""));
  const diff = (rs.spec.replicas ?? 1) - counted.length - pending.adds;
  if (diff > 0) {
    for (let i = 0; i < Math.min(diff, podBurstMax); i++) {
      const pod = podFromTemplate(rs, rs.spec.template as PodTemplateSpec, { generateName: `${rs.metadata.name}-` });
      const created = await ctx.client.create<Pod>({ object: pod });
      expectations.expect(key, "adds", created.metadata.name ?? "", ctx.clock.now());
      if (note !== undefined) await note(rs, "SuccessfulCreate", `Created pod: ${created.metadata.name}`);
    }
  } else if (diff < 0) {
    const victims = [...counted].sort(deletionRank).slice(0, Math.min(-diff, podBurstMax));
    for (const pod of victims) {
      const name = pod.metadata.name ?? "";
      expectations.expect(key, "deletes", name, ctx.clock.now());
      try {
        await deleteIfPresent(ctx, { ...podKind, namespace: pod.metadata.namespace, name, preconditions: { uid: pod.metadata.uid ?? "" } });
      } catch (error) {
        expectations.lower(key, "deletes", name);
        throw error;
      }
      if (note !== undefined) await note(rs, "SuccessfulDelete", `Deleted pod: ${name}`);
    }
  }
}

function replicaSetStatus(rs: Workload, active: Pod[], nowMs: number): Record<string, unknown> {
  const minReady = Number(rs.spec.minReadySeconds ?? 0);
  const labels = rs.spec.template.metadata?.labels ?? {};
  return {
    replicas: active.length,
    fullyLabeledReplicas: active.filter((p) => Object.entries(labels).every(([k, v]) => p.metadata.labels?.[k] === v)).length,
    readyReplicas: active.filter(isPodReady).length,
    availableReplicas: active.filter((p) => isPodAvailable(p, minReady, nowMs)).length,
    observedGeneration: rs.metadata.generation ?? 0,
  };
}

/** Status as the ReplicaSet controller computes it, written only when it changed. */
async function syncStatus(rs: Workload, status: Record<string, unknown>, ctx: ReconcileContext): Promise<void> {
  const previous = { ...(rs.status ?? {}) };
  delete previous.conditions;
  if (canonicalEqual(previous, status)) return;
  try {
    await ctx.client.updateStatus({ readOnly: true, object: { ...rs, status } });
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
}

export function replicaSetController(options: WorkloadControllerOptions = {}): ActorDefinition {
  return controllerActor("replicaset-controller", options, (ctx) => {
    const expectations = new Expectations();
    const controller = defineController<Workload>({
      name: "replicaset-controller",
      for: replicaSetKind,
      owns: [podKind],
      resyncMs: 0,
      reconcile: async (rs, rctx) => {
        assert(rs.metadata.uid !== undefined, "replicaset-has-uid");
        const key = `${rs.metadata.namespace}/${rs.metadata.name}`;
        const pods = ownedBy(rctx.lister<Pod>(podKind).byIndex(indexNames.ownerUid, rs.metadata.uid), rs);
        const active = pods.filter(isPodActive);
        const pending = expectations.settle(key, pods, rctx.clock.now());
        if (!isTerminating(rs)) await scalePods(rs, active, pending, rctx, expectations, eventNote(options.events, rctx.events));
        await syncStatus(rs, replicaSetStatus(rs, active, rctx.clock.now()), rctx);
        // A pod that becomes ready counts as available only after minReadySeconds: look again then.
        const minReady = Number(rs.spec.minReadySeconds ?? 0);
        if (minReady > 0 && active.some((p) => isPodReady(p) && !isPodAvailable(p, minReady, rctx.clock.now()))) return Action.requeueAfter(minReady * 1000);
        // Expectations that are never met (an event lost to a crash of ours) expire: look again when they do.
        const waiting = pending.adds > 0 || pending.deleting.size > 0;
        return waiting ? Action.requeueAfter(expectationsTimeoutMs + 1) : Action.awaitChange();
      },
    });
    return [controller];
  });
}
