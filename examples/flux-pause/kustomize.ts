// Flux's Kustomization objects as this example needs them, and the kustomize-controller process. The process
// runs as the program of the kustomize-controller pod (the kubelet's `programs`), so it lives and dies with its
// pod: the kubelet kills it when the pod is deleted, or when the kubelet itself is killed, and the container
// restarts it with a fresh memory. A killed process's executions vanish without writing status.
import { Action, defineController, runController, type Client, type Clock, type Controller, type KubeObject } from "settle";
import type { PodProgram, ProgramContext } from "settle/sim";

export const kustomizationKind = { apiVersion: "kustomize.toolkit.fluxcd.io/v1", kind: "Kustomization" } as const;
export const podKind = { apiVersion: "v1", kind: "Pod" } as const;
export const deploymentKind = { apiVersion: "apps/v1", kind: "Deployment" } as const;

export const fluxNamespace = "flux-system";
export const parentRef = { ...kustomizationKind, namespace: fluxNamespace, name: "parent" } as const;
export const childRef = { ...kustomizationKind, namespace: "infrastructure", name: "child" } as const;
export const controllerRef = { namespace: fluxNamespace, name: "kustomize-controller" } as const;
export const controllerImage = "ghcr.io/fluxcd/kustomize-controller:v1.4.0";
export const controllerRepo = "ghcr.io/fluxcd/kustomize-controller";
export const controllerLabels = { app: "kustomize-controller" } as const;

/** The lease holder of the policy parent (the transaction that suspended it). */
export const parentOwnerAnnotation = "ghcr-policy-parent-owner";
/** The lease holder of the child fence. */
export const handoffOwnerAnnotation = "ghcr-policy-handoff-owner";
/** On the child: the parent must not apply over it while the handoff runs. */
export const reconcileAnnotation = "kustomize.toolkit.fluxcd.io/reconcile";
/** `flux reconcile` sets this; a new value asks for an execution now. */
export const requestedAtAnnotation = "reconcile.fluxcd.io/requestedAt";

export interface Condition {
  type: string;
  status: "True" | "False" | "Unknown";
  reason: string;
  message: string;
  lastTransitionTime: string;
}

export interface Kustomization extends KubeObject {
  spec: { interval: string; path: string; prune: boolean; suspend?: boolean; sourceRef: { kind: string; name: string } };
  status?: { conditions?: Condition[]; lastAppliedRevision?: string };
}

export function isReconciling(k: KubeObject | undefined): boolean {
  const conditions = ((k as Kustomization | undefined)?.status?.conditions ?? []) as Condition[];
  return conditions.some((c) => c.type === "Reconciling" && c.status === "True");
}

export function isSuspended(k: KubeObject | undefined): boolean {
  return (k as Kustomization | undefined)?.spec?.suspend === true;
}

/** `parentOwned` of the script: this object (by uid), claimed by `holder`, suspended. */
export function parentOwned(k: KubeObject | undefined, uid: string, holder: string): boolean {
  return k !== undefined && k.metadata.uid === uid && k.metadata.annotations?.[parentOwnerAnnotation] === holder && isSuspended(k);
}

/** `childOwned` of the script: this object, claimed by `holder`, `reconcile=disabled`, suspended. */
export function childOwned(k: KubeObject | undefined, uid: string, holder: string): boolean {
  if (k === undefined || k.metadata.uid !== uid) return false;
  const notes = k.metadata.annotations ?? {};
  return notes[handoffOwnerAnnotation] === holder && notes[reconcileAnnotation] === "disabled" && isSuspended(k);
}

// Condition texts carry what a real cluster puts there (revisions, paths); the example's S3 property treats
// every reason and message as private, so they must never reach the script's output.
const revision = "main@sha1:4f6c1e0b9a27d3c85e1f";

function reconcilingConditions(nowIso: string): Condition[] {
  return [
    { type: "Reconciling", status: "True", reason: "Progressing", message: `Reconciliation in progress for revision ${revision}`, lastTransitionTime: nowIso },
    { type: "Ready", status: "Unknown", reason: "Progressing", message: `Reconciliation in progress for revision ${revision}`, lastTransitionTime: nowIso },
  ];
}

function readyConditions(nowIso: string): Condition[] {
  return [{ type: "Ready", status: "True", reason: "ReconciliationSucceeded", message: `Applied revision: ${revision}`, lastTransitionTime: nowIso }];
}

/** The status a Kustomization carries when an execution was cut off after writing `Reconciling=True`. */
export function frozenReconcilingStatus(nowMs: number): Kustomization["status"] {
  return { conditions: reconcilingConditions(new Date(nowMs).toISOString()) };
}

export interface FluxTiming {
  /** `spec.interval`: the next execution starts this long after the last one ended. */
  intervalMs: number;
  /** From reading the object to writing `Reconciling=True`. */
  gapMs: number;
  /** From `Reconciling=True` to `Ready=True` (applying, health checks). */
  workMs: number;
}

/** An execution started: a pod log line (`kubectl logs`), the ground truth the properties read. */
export function executionStartLine(key: string, pid: string): string {
  return `execution start ${key} pid=${pid}`;
}
export function executionEndLine(key: string, pid: string): string {
  return `execution end ${key} pid=${pid}`;
}
export function processStartLine(pid: string): string {
  return `process start pid=${pid}`;
}

const never = <T>(): Promise<T> => new Promise<T>(() => {});

/** Nothing a killed process asked for comes back to it: requests and timers after the kill vanish. */
function fence<T>(signal: AbortSignal, call: () => Promise<T>): Promise<T> {
  if (signal.aborted) return never();
  return call().then(
    (value) => (signal.aborted ? never<T>() : value),
    (error: unknown) => (signal.aborted ? never<T>() : Promise.reject(error)),
  );
}

function fencedClient(client: Client, signal: AbortSignal): Client {
  return {
    get: (o) => fence(signal, () => client.get(o)),
    list: (o) => fence(signal, () => client.list(o)),
    create: (o) => fence(signal, () => client.create(o)),
    update: (o) => fence(signal, () => client.update(o)),
    updateStatus: (o) => fence(signal, () => client.updateStatus(o)),
    patch: (o) => fence(signal, () => client.patch(o)),
    patchStatus: (o) => fence(signal, () => client.patchStatus(o)),
    delete: (o) => fence(signal, () => client.delete(o)),
    // The controller is stopped at the kill, which closes its watches.
    watch: (o) => client.watch(o),
  } as Client;
}

function fencedClock(clock: Clock, signal: AbortSignal): Clock {
  return {
    now: () => clock.now(),
    sleep: (ms, options) => fence(signal, () => clock.sleep(ms, options)),
    setTimer: (ms, fn) => clock.setTimer(ms, () => (signal.aborted ? undefined : fn())),
  };
}

interface Seen {
  generation: number;
  requestedAt: string;
  dueAtMs: number;
}

/**
 * The kustomize-controller: an execution per Kustomization on its interval, on a spec change (a new generation)
 * or on a reconcile request, as Flux's predicates allow; status and annotation writes alone do not start one.
 */
export function kustomizeController(pid: string, timing: FluxTiming, log: (line: string) => Promise<void>): Controller<Kustomization> {
  const seen = new Map<string, Seen>();
  return defineController<Kustomization>({
    name: "kustomize-controller",
    for: kustomizationKind,
    resyncMs: 0,
    // Flux runs several executions at once (`--concurrent=4`).
    maxConcurrentReconciles: 4,
    rateLimiter: { baseDelayMs: 1000, maxDelayMs: 60_000 },
    reconcile: async (k, ctx) => {
      const key = `${k.metadata.namespace}/${k.metadata.name}`;
      const now = ctx.clock.now();
      const trigger = { generation: k.metadata.generation ?? 0, requestedAt: k.metadata.annotations?.[requestedAtAnnotation] ?? "" };
      const last = seen.get(key);
      const changed = last === undefined || last.generation !== trigger.generation || last.requestedAt !== trigger.requestedAt;
      if (!changed && now < last.dueAtMs) return Number.isFinite(last.dueAtMs) ? Action.requeueAfter(last.dueAtMs - now) : Action.awaitChange();
      if (isSuspended(k)) {
        // A suspended object is skipped and its status left as it is, until its spec changes.
        seen.set(key, { ...trigger, dueAtMs: Number.POSITIVE_INFINITY });
        return Action.awaitChange();
      }
      await execute(k, key, ctx.client, ctx.clock);
      seen.set(key, { ...trigger, dueAtMs: ctx.clock.now() + timing.intervalMs });
      return Action.requeueAfter(timing.intervalMs);
    },
  });

  // Once started, an execution runs to the end even if `suspend` flips meanwhile (Flux documents this).
  async function execute(k: Kustomization, key: string, client: Client, clock: Clock): Promise<void> {
    const ref = { ...kustomizationKind, namespace: k.metadata.namespace, name: k.metadata.name ?? "" };
    await log(executionStartLine(key, pid));
    try {
      await clock.sleep(timing.gapMs);
      const started = new Date(clock.now()).toISOString();
      await client.patchStatus({ ...ref, patchType: "merge", patch: { status: { conditions: reconcilingConditions(started) } } });
      await clock.sleep(timing.workMs);
      const done = new Date(clock.now()).toISOString();
      await client.patchStatus({ ...ref, patchType: "merge", patch: { status: { conditions: readyConditions(done), lastAppliedRevision: revision } } });
    } finally {
      await log(executionEndLine(key, pid));
    }
  }
}

/** The container's program: one kustomize-controller process per container start. */
export function kustomizeControllerProgram(timing: FluxTiming): PodProgram {
  return async (pctx: ProgramContext): Promise<number> => {
    const { signal } = pctx;
    // The process id: the pod and the instant its container started (a restart is a new process).
    const pid = `${pctx.pod.metadata.name}@${pctx.clock.now()}`;
    const log = (line: string) => fence(signal, () => pctx.log(line));
    await log(processStartLine(pid));
    const handle = runController(kustomizeController(pid, timing, log), { client: fencedClient(pctx.client, signal), clock: fencedClock(pctx.clock, signal) });
    return await new Promise<number>((resolve, reject) => {
      const kill = () => {
        handle.stop();
        resolve(137);
      };
      if (signal.aborted) kill();
      else signal.addEventListener("abort", kill, { once: true });
      handle.done.then(() => resolve(0), reject);
    });
  };
}
