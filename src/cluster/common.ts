// Shared pieces of the cluster actors: kinds, typed views of the built-in objects, pod and node predicates,
// a deterministic template hash, and the way an actor runs its controllers.
import type { Container, NodeSpec, NodeStatus, PodSpec, PodStatus, PodTemplateSpec, Toleration, Taint } from "kubernetes-types/core/v1.js";
import type { LabelSelector } from "kubernetes-types/meta/v1.js";
import { assert } from "../api/assert.ts";
import { formatTimestamp } from "../api/clock.ts";
import { isApiError, isNotFound } from "../api/errors.ts";
import { canonicalJson, cloneJson } from "../api/json.ts";
import type { KubeObject } from "../api/object.ts";
import { labelSelectorFromSpec, matchesLabels } from "../api/selectors.ts";
import { RESTART_DELAY_MS_DEFAULT } from "../sim/kernel.ts";
import { defineActor } from "../sim/simulation.ts";
import type { ActorContext, ActorDefinition } from "../sim/types.ts";
import { runController } from "../runtime/controller.ts";
import type { Controller } from "../runtime/controller.ts";
import type { EventRecorder } from "../runtime/events.ts";

export { canonicalJson };

export const podKind = { apiVersion: "v1", kind: "Pod" } as const;
export const nodeKind = { apiVersion: "v1", kind: "Node" } as const;
export const leaseKind = { apiVersion: "coordination.k8s.io/v1", kind: "Lease" } as const;
export const deploymentKind = { apiVersion: "apps/v1", kind: "Deployment" } as const;
export const replicaSetKind = { apiVersion: "apps/v1", kind: "ReplicaSet" } as const;
export const daemonSetKind = { apiVersion: "apps/v1", kind: "DaemonSet" } as const;
export const jobKind = { apiVersion: "batch/v1", kind: "Job" } as const;
export const cronJobKind = { apiVersion: "batch/v1", kind: "CronJob" } as const;
export const pdbKind = { apiVersion: "policy/v1", kind: "PodDisruptionBudget" } as const;

export type Pod = KubeObject & { spec: PodSpec; status?: PodStatus };

/** Records a Normal Event about `regarding`: what the real component reports having done. */
export type Note = (regarding: KubeObject, reason: string, message: string) => Promise<void>;

/**
 * The actor's `Note` when it was asked to record Events (`events: true`), else undefined: each Event is a write, and
 * runs recorded without them must replay unchanged, so call sites skip the call (and its await) altogether.
 */
export function eventNote(enabled: boolean | undefined, recorder: EventRecorder): Note | undefined {
  return enabled === true ? (regarding, reason, message) => recorder.record(regarding, { type: "Normal", reason, message }) : undefined;
}
export type Node = KubeObject & { spec?: NodeSpec; status?: NodeStatus };
/** A workload: Deployment, ReplicaSet, DaemonSet or Job (the fields the controllers read are typed loosely). */
export type Workload = KubeObject & {
  spec: { replicas?: number; selector?: LabelSelector; template: PodTemplateSpec; [field: string]: unknown };
  status?: Record<string, unknown>;
};

/** Annotations the simulated kubelet reads to run a pod (scenario knobs, not Kubernetes API). */
export const annotations = {
  /** Ms from pull to Running. */
  startMs: "sim.settle.dev/start-ms",
  /** Ms from Running to Ready. */
  readyMs: "sim.settle.dev/ready-ms",
  /** Ms a container runs before it exits; absent: it runs until deleted. */
  runMs: "sim.settle.dev/run-ms",
  /** The exit code when it exits. Default 0. */
  exitCode: "sim.settle.dev/exit-code",
  /** On a Node: a new value asks the node's kubelet to reboot the host. */
  reboot: "sim.settle.dev/reboot",
  /** On a Node, beside `reboot`: the boot id the request was made in; the request lapses when that boot ends. */
  rebootBootId: "sim.settle.dev/reboot-boot-id",
} as const;

export function isTerminating(object: KubeObject): boolean {
  return object.metadata.deletionTimestamp !== undefined && object.metadata.deletionTimestamp !== null;
}

export function podPhase(pod: Pod): string {
  return pod.status?.phase ?? "Pending";
}

export function isPodFinished(pod: Pod): boolean {
  const phase = podPhase(pod);
  return phase === "Succeeded" || phase === "Failed";
}

/** Counts toward a workload's replicas: not finished and not terminating. */
export function isPodActive(pod: Pod): boolean {
  return !isPodFinished(pod) && !isTerminating(pod);
}

export function isPodReady(object: KubeObject): boolean {
  const pod = object as Pod;
  return podPhase(pod) === "Running" && (pod.status?.conditions ?? []).some((c) => c.type === "Ready" && c.status === "True");
}

export function isNodeReady(object: KubeObject): boolean {
  const node = object as Node;
  return (node.status?.conditions ?? []).some((c) => c.type === "Ready" && c.status === "True");
}

/** The taints the scheduler sees: the node's own plus the ones its conditions and cordon imply. */
export function effectiveTaints(node: Node): Taint[] {
  const taints = [...(node.spec?.taints ?? [])];
  if (node.spec?.unschedulable === true) taints.push({ key: "node.kubernetes.io/unschedulable", effect: "NoSchedule" });
  const ready = (node.status?.conditions ?? []).find((c) => c.type === "Ready");
  if (ready?.status === "False") taints.push({ key: "node.kubernetes.io/not-ready", effect: "NoSchedule" });
  if (ready === undefined || ready.status === "Unknown") taints.push({ key: "node.kubernetes.io/unreachable", effect: "NoSchedule" });
  return taints;
}

function tolerates(toleration: Toleration, taint: Taint): boolean {
  if (toleration.effect !== undefined && toleration.effect !== "" && toleration.effect !== taint.effect) return false;
  if (toleration.operator === "Exists") return toleration.key === undefined || toleration.key === "" || toleration.key === taint.key;
  return toleration.key === taint.key && (toleration.value ?? "") === (taint.value ?? "");
}

/** Every NoSchedule/NoExecute taint is tolerated (PreferNoSchedule is only a preference). */
export function toleratesAll(tolerations: readonly Toleration[] | undefined, taints: readonly Taint[]): boolean {
  return taints.every((taint) => taint.effect === "PreferNoSchedule" || (tolerations ?? []).some((t) => tolerates(t, taint)));
}

export function selectorMatches(selector: LabelSelector | undefined, labels: Record<string, string> | undefined): boolean {
  if (selector === undefined) return false;
  return matchesLabels(labelSelectorFromSpec(selector), labels);
}

/**
 * FNV-1a over canonical JSON, as 10 lowercase base-36 characters: the `pod-template-hash` of a template. Members that
 * are null count as absent, as they do in the Go struct the real controller hashes: a template sent back with
 * `creationTimestamp: null` (as kubectl 1.33's `rollout undo` sends it) is the same template.
 */
export function templateHash(value: unknown): string {
  // A frozen template is one the store or a cache froze whole (see `deepFreeze`): its hash cannot change, and the
  // workload controllers ask for it several times in every reconcile of the same cached object.
  const frozen = typeof value === "object" && value !== null && Object.isFrozen(value);
  if (frozen) {
    const known = frozenTemplateHashes.get(value);
    if (known !== undefined) return known;
  }
  const hash = computeTemplateHash(value);
  if (frozen) frozenTemplateHashes.set(value as object, hash);
  return hash;
}

const frozenTemplateHashes = new WeakMap<object, string>();

function computeTemplateHash(value: unknown): string {
  let hash = 0x811c9dc5;
  let high = 0x01000193;
  const text = canonicalJson(value, true);
  for (let i = 0; i < text.length; i++) {
    hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193) >>> 0;
    high = Math.imul(high ^ hash, 0x5bd1e995) >>> 0;
  }
  const digits = (high.toString(36) + hash.toString(36)).padStart(10, "0");
  return digits.slice(-10);
}

/**
 * `canonicalJson(a) === canonicalJson(b)` without building either text: controllers compare the status they
 * computed with the one they read on every reconcile, and most of the time the two are equal plain data. Values
 * whose JSON form is not simply themselves (non-finite numbers, functions, class instances, array slots without
 * JSON form) are compared by their canonical text, so the answer is always the one the texts give.
 */
export function canonicalEqual(a: unknown, b: unknown): boolean {
  const answer = plainEqual(a, b);
  return answer === undefined ? canonicalJson(a) === canonicalJson(b) : answer;
}

type PlainKind = "string" | "boolean" | "number" | "null" | "array" | "object" | "other";

/** Values whose canonical text is plain JSON of that kind; "other" for the rest (see `canonicalEqual`). */
function plainKind(value: unknown): PlainKind {
  switch (typeof value) {
    case "string":
      return "string";
    case "boolean":
      return "boolean";
    case "number":
      return Number.isFinite(value) ? "number" : "other";
    case "object": {
      if (value === null) return "null";
      if (Array.isArray(value)) return "array";
      const prototype = Object.getPrototypeOf(value);
      return prototype === Object.prototype || prototype === null ? "object" : "other";
    }
    default:
      return "other";
  }
}

/**
 * True or false for plain data; undefined when a value needs the text comparison. Every member's text is one
 * self-delimiting token (strings are quoted, brackets balanced), so two texts with the same keys and array lengths
 * are equal exactly when every member's texts are: the first plain member that differs decides.
 */
function plainEqual(a: unknown, b: unknown): boolean | undefined {
  const kind = plainKind(a);
  const otherKind = plainKind(b);
  if (kind === "other" || otherKind === "other") return undefined;
  if (kind !== otherKind) return false;
  if (kind === "array") return arraysEqual(a as unknown[], b as unknown[]);
  if (kind === "object") return objectsEqual(a as Record<string, unknown>, b as Record<string, unknown>);
  return a === b; // -0 and 0 both print 0
}

function arraysEqual(a: readonly unknown[], b: readonly unknown[]): boolean | undefined {
  if (a.length !== b.length) return undefined; // slots without JSON form can make different lengths print alike
  for (let i = 0; i < a.length; i++) {
    const answer = plainEqual(a[i], b[i]);
    if (answer !== true) return answer;
  }
  return true;
}

function objectsEqual(a: Record<string, unknown>, b: Record<string, unknown>): boolean | undefined {
  let defined = 0;
  for (const key of Object.keys(a)) {
    const member = a[key];
    if (member === undefined) continue;
    defined++;
    const other = Object.hasOwn(b, key) ? b[key] : undefined;
    if (other === undefined) return false; // the key is printed in one text only
    const answer = plainEqual(member, other);
    if (answer !== true) return answer;
  }
  for (const key of Object.keys(b)) if (b[key] !== undefined) defined--;
  return defined === 0;
}

/** Milliseconds since the epoch of an RFC 3339 timestamp (virtual time written by the store or an actor). */
export function parseTime(value: unknown): number | undefined {
  if (typeof value !== "string") return undefined;
  const ms = Date.parse(value);
  return Number.isFinite(ms) ? ms : undefined;
}

export function numberAnnotation(object: KubeObject, key: string): number | undefined {
  const text = object.metadata.annotations?.[key];
  if (text === undefined) return undefined;
  const value = Number(text);
  return Number.isFinite(value) && value >= 0 ? value : undefined;
}

/** A pod built from a workload's template, controlled by the workload. */
export function podFromTemplate(owner: KubeObject, template: PodTemplateSpec, extra: { generateName: string; labels?: Record<string, string>; spec?: Partial<PodSpec> }): Pod {
  assert(owner.metadata.uid !== undefined, "pod-owner-has-uid");
  assert(template.spec !== undefined, "pod-template-has-spec");
  const meta = template.metadata ?? {};
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      generateName: extra.generateName,
      namespace: owner.metadata.namespace,
      labels: { ...(meta.labels ?? {}), ...(extra.labels ?? {}) },
      ...(meta.annotations === undefined ? {} : { annotations: { ...meta.annotations } }),
      ownerReferences: [
        { apiVersion: owner.apiVersion, kind: owner.kind, name: owner.metadata.name ?? "", uid: owner.metadata.uid, controller: true, blockOwnerDeletion: true },
      ],
    },
    spec: { ...(cloneJson(template.spec) as PodSpec), ...(extra.spec ?? {}) },
  };
}

/** The controller-owned objects of `owner` in a lister's list. */
export function ownedBy<T extends KubeObject>(objects: readonly T[], owner: KubeObject): T[] {
  const uid = owner.metadata.uid;
  return objects.filter((o) => (o.metadata.ownerReferences ?? []).some((ref) => ref.controller === true && ref.uid === uid));
}

/** Deletes, treating "already gone" as done. */
export async function deleteIfPresent(ctx: { client: ActorContext["client"] }, ref: Parameters<ActorContext["client"]["delete"]>[0]): Promise<void> {
  try {
    await ctx.client.delete({ ...ref, readOnly: true });
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
}

/** True for the failures a real controller shrugs off and retries: API errors of any kind. */
export function isRetryable(error: unknown): boolean {
  return isApiError(error);
}

/** Runs controllers in one actor until any of them stops; a programmer error in one fails the actor. */
export async function runControllers(ctx: ActorContext, controllers: readonly Controller<any>[]): Promise<void> {
  assert(controllers.length > 0, "run-controllers-not-empty");
  const handles = controllers.map((controller) => runController(controller, { client: ctx.client, clock: ctx.clock, log: ctx.log }));
  await Promise.all(handles.map((handle) => handle.done));
}

/** What a scenario may set on every cluster actor. */
export interface ClusterActorOptions {
  /** How long after a crash (or a return) the actor starts again; default the kernel's `RESTART_DELAY_MS_DEFAULT`. */
  restartDelayMs?: number;
  /** Whether crash faults may stop the actor; default true. */
  crashable?: boolean;
}

/** A cluster actor: crashable and restarted after the kernel's default delay unless `options` say otherwise. */
export function clusterActor(name: string, options: ClusterActorOptions, start: ActorDefinition["start"]): ActorDefinition {
  return defineActor({ name, restartDelayMs: options.restartDelayMs ?? RESTART_DELAY_MS_DEFAULT, crashable: options.crashable ?? true, start });
}

/**
 * A cluster actor that runs controllers until one stops. `controllers` builds them again on every start, so an
 * incarnation after a crash begins with empty caches and queues, as a restarted kube-controller-manager does.
 */
export function controllerActor(name: string, options: ClusterActorOptions, controllers: (ctx: ActorContext) => readonly Controller<any>[]): ActorDefinition {
  return clusterActor(name, options, async (ctx) => {
    await runControllers(ctx, controllers(ctx));
  });
}

/** Pod images by container, in order: the images the kubelet must have before a pod runs. */
export function podContainers(pod: Pod): Container[] {
  return [...(pod.spec.initContainers ?? []), ...pod.spec.containers];
}

/** Integer or percentage (`"25%"`) of `total`, rounded up or down as the API does for surge and unavailability. */
export function intOrPercent(value: number | string | undefined, total: number, fallback: string, roundUp: boolean): number {
  const raw = value ?? fallback;
  if (typeof raw === "number") return raw;
  const match = /^(\d+)%$/.exec(raw);
  if (match === null) return Number(raw) || 0;
  const exact = (Number(match[1]) * total) / 100;
  return roundUp ? Math.ceil(exact) : Math.floor(exact);
}

/** RFC 3339 with seconds, as the API writes timestamps. */
export const formatTime = formatTimestamp;
