// The Skyhook operator's two reconcilers, as the issue report describes them.
//
// - The Skyhook pass (`skyhookPass`): report state (any status write ends the pass with a 2 s requeue), then
//   `HandleConfigUpdates` for each package with a ConfigMap, then advance each node's package lifecycle by
//   creating the next stage pod. It runs on Skyhook events (spec and status) and Node events, and on its own
//   requeues. It reads Nodes, Pods and ConfigMaps from informer caches; Pod and ConfigMap events never run it.
// - The pod reconciler (`podReconcile`): when a stage pod's init container has exited 0 and the pod is not
//   being deleted yet, patch the node's package state to `{stage, complete}`, then delete the pod.
//
// The gate: a ConfigMap edit is written (and the nodes sent back to the config stage) only in a pass that sees
// every node done with the package and no pod of the package on any node. That pass is one window; the
// buggy operator records nothing and asks for no retry when it misses it.
import picomatch from "picomatch";
import { Action, defineController, isAlreadyExists, isNotFound, runController, setControllerReference } from "settle";
import type { Client, Clock, KubeObject, Lister, Log, ReconcileContext } from "settle";
import {
  changedKeys,
  configMapKind,
  configMapName,
  hasInterrupt,
  isPackageComplete,
  labels,
  nextStage,
  nodeKind,
  nodeStateAnnotation,
  operatorNamespace,
  packageRef,
  podKind,
  readNodeState,
  sameData,
  skyhookKind,
  type NodeState,
  type PackageSpec,
  type Skyhook,
  type Stage,
  type Status,
} from "./skyhook.ts";

export const variants = ["buggy", "fixed", "always-write-cm", "clear-on-generation"] as const;
export type Variant = (typeof variants)[number];

export interface OperatorOptions {
  variant: Variant;
  /** The requeue after any write the pass makes (the real operator's 2 s). */
  requeueMs: number;
  /** The fix: requeue this soon while a ConfigMap diff waits behind a closed gate (upstream: 30 s). */
  pendingSyncMs: number;
  /** The requeue of a pass with nothing to do (the real operator's MAX_INTERVAL, 10 min). */
  maxIntervalMs: number;
}

export interface OperatorContext {
  client: Client;
  clock: Clock;
  log: Log;
}

/** The image of the stage pods' main container: it only keeps the pod alive until it is deleted. */
export const pauseImage = "skyhook/pause:3.9";

type Pod = KubeObject & { spec: { nodeName?: string; initContainers?: Array<{ name: string; image?: string }> }; status?: { initContainerStatuses?: InitStatus[] } };
type InitStatus = { name: string; state?: { terminated?: { exitCode?: number } } };

/** What one pass reads from its caches. */
interface Snapshot {
  skyhook: Skyhook;
  nodes: KubeObject[];
  states: Map<string, NodeState>;
  pods: Lister<Pod>;
  configMaps: Lister;
}

function updatesOf(skyhook: Skyhook, name: string): string[] {
  return skyhook.status?.configUpdates?.[name] ?? [];
}

function interruptOf(skyhook: Skyhook, name: string, pkg: PackageSpec): boolean {
  return hasInterrupt(pkg, updatesOf(skyhook, name));
}

/** `podExists` of the real operator: any pod of the package on the node, terminating ones included. */
function podExists(snap: Snapshot, node: string, name: string): boolean {
  const selector = { [labels.skyhook]: snap.skyhook.metadata.name!, [labels.package]: name };
  return snap.pods.list({ namespace: operatorNamespace, labelSelector: selector }).some((pod) => pod.spec.nodeName === node);
}

function stagePodExists(snap: Snapshot, node: string, name: string, stage: Stage): boolean {
  const selector = { [labels.skyhook]: snap.skyhook.metadata.name!, [labels.package]: name, [labels.stage]: stage };
  return snap.pods.list({ namespace: operatorNamespace, labelSelector: selector }).some((pod) => pod.spec.nodeName === node);
}

function complete(snap: Snapshot, node: string, name: string, pkg: PackageSpec): boolean {
  const state = snap.states.get(node)?.[packageRef(name, pkg.version)];
  return isPackageComplete(state, interruptOf(snap.skyhook, name, pkg));
}

function nodeDone(snap: Snapshot, node: string): boolean {
  return Object.entries(snap.skyhook.spec.packages).every(([name, pkg]) => complete(snap, node, name, pkg));
}

/** The status the pass reports: overall state, observed generation, node-state mirror, config updates. */
function reportedStatus(snap: Snapshot, variant: Variant): NonNullable<Skyhook["status"]> {
  const { skyhook } = snap;
  const done = snap.nodes.every((node) => nodeDone(snap, node.metadata.name!));
  const status: Status = done ? "complete" : "in_progress";
  const nodeState: Record<string, NodeState> = {};
  for (const [node, state] of snap.states) if (Object.keys(state).length > 0) nodeState[node] = state;
  let configUpdates = skyhook.status?.configUpdates ?? {};
  // Option C: a new spec generation drops every recorded config update.
  if (variant === "clear-on-generation" && skyhook.status?.observedGeneration !== skyhook.metadata.generation) configUpdates = {};
  return { status, observedGeneration: skyhook.metadata.generation!, configUpdates, nodeState };
}

function sameStatus(a: Skyhook["status"], b: Skyhook["status"]): boolean {
  return JSON.stringify(canonical(a ?? {})) === JSON.stringify(canonical(b ?? {}));
}

function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value === null || typeof value !== "object") return value;
  const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined);
  return Object.fromEntries(entries.sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => [k, canonical(v)]));
}

async function writeStatus(client: Client, skyhook: Skyhook, status: NonNullable<Skyhook["status"]>): Promise<void> {
  // An update carrying the cached resourceVersion: a stale cache gets 409 and the pass is retried.
  await client.updateStatus({ object: { ...structuredClone(skyhook), status } as KubeObject });
}

/** Writes one node's state for this Skyhook, conditional on the resourceVersion the state was read at. */
async function writeNodeState(client: Client, node: KubeObject, skyhook: string, state: NodeState): Promise<void> {
  const annotations = { [nodeStateAnnotation(skyhook)]: JSON.stringify(canonical(state)) };
  await client.patch({ ...nodeKind, name: node.metadata.name!, patchType: "merge", patch: { metadata: { resourceVersion: node.metadata.resourceVersion, annotations } } });
}

function desiredConfigMap(skyhook: Skyhook, name: string, pkg: PackageSpec): KubeObject {
  const cm: KubeObject = {
    ...configMapKind,
    metadata: { name: configMapName(skyhook.metadata.name!, name, pkg.version), namespace: operatorNamespace, labels: { [labels.skyhook]: skyhook.metadata.name! } },
    data: { ...(pkg.configMap ?? {}) },
  };
  return setControllerReference(skyhook, cm);
}

/** One line for the trace: what the gate saw (the diff, the recorded keys and what they match, the pods). */
function describeGate(snap: Snapshot, name: string, pkg: PackageSpec, changed: string[], done: string, open: boolean): string {
  const updates = updatesOf(snap.skyhook, name);
  const matches = Object.keys(pkg.configInterrupts ?? {}).flatMap((glob) => updates.filter((key) => picomatch(glob)(key)).map((key) => `${glob} matches ${key}`));
  const interrupt = updates.length > 0 ? (matches.length > 0 ? `interrupt via ${matches.join(", ")}` : "no interrupt (no glob matches)") : pkg.interrupt !== undefined ? `interrupt: ${pkg.interrupt.type}` : "no interrupt";
  const selector = { [labels.skyhook]: snap.skyhook.metadata.name!, [labels.package]: name };
  const pods = snap.pods.list({ namespace: operatorNamespace, labelSelector: selector }).map((pod) => `${pod.metadata.name}${pod.metadata.deletionTimestamp === undefined ? "" : " terminating"}`);
  const verdict = open ? "gate open: ConfigMap written" : "gate closed: nothing recorded";
  return `HandleConfigUpdates ${name}: ConfigMap differs in [${changed.join(", ")}]; configUpdates [${updates.join(", ")}], ${interrupt}; ${done}, pods [${pods.join(", ")}]; ${verdict}`;
}

type ConfigOutcome = "in-sync" | "created" | "written" | "pending";

/**
 * `HandleConfigUpdates` for one package. The gate: every node done with the package and no pod of it on any
 * node, or some node erroring in a config stage. Only then are the nodes sent back to config and the
 * ConfigMap written; a closed gate records nothing.
 */
async function handleConfigUpdates(snap: Snapshot, name: string, pkg: PackageSpec, ctx: OperatorContext, variant: Variant): Promise<ConfigOutcome> {
  const { skyhook } = snap;
  const desired = desiredConfigMap(skyhook, name, pkg);
  const cm = snap.configMaps.getByName(desired.metadata.name!, operatorNamespace);
  if (cm === undefined) {
    await ctx.client.create({ object: desired }).catch((error: unknown) => {
      if (!isAlreadyExists(error)) throw error;
    });
    return "created";
  }
  const data = (cm.data ?? {}) as Record<string, string>;
  if (sameData(data, pkg.configMap)) return "in-sync";
  const nodes = snap.nodes.map((n) => n.metadata.name!);
  const done = nodes.filter((node) => !podExists(snap, node, name) && complete(snap, node, name, pkg)).length;
  const erroring = nodes.some((node) => {
    const state = snap.states.get(node)?.[packageRef(name, pkg.version)];
    return state !== undefined && state.stage !== "apply" && state.state === "erroring";
  });
  const changed = changedKeys(data, pkg.configMap ?? {});
  const open = done === nodes.length || erroring;
  ctx.log(describeGate(snap, name, pkg, changed, `done ${done}/${nodes.length}`, open), { package: name, changed, done, nodes: nodes.length, updates: updatesOf(skyhook, name) });
  if (!open) {
    // Option A writes the ConfigMap anyway; the node reset stays behind the gate.
    if (variant === "always-write-cm") await ctx.client.update({ object: { ...structuredClone(cm), data: desired.data } as KubeObject });
    return "pending";
  }
  const previous = done === nodes.length ? [] : updatesOf(skyhook, name);
  const configUpdates = { ...(skyhook.status?.configUpdates ?? {}), [name]: [...new Set([...previous, ...changed])].sort() };
  for (const node of snap.nodes) {
    const state = { ...(snap.states.get(node.metadata.name!) ?? {}) };
    state[packageRef(name, pkg.version)] = { name, version: pkg.version, stage: "config", state: "in_progress" };
    await writeNodeState(ctx.client, node, skyhook.metadata.name!, state);
  }
  await writeStatus(ctx.client, skyhook, { ...(skyhook.status ?? {}), status: "in_progress", configUpdates });
  await ctx.client.update({ object: { ...structuredClone(cm), data: desired.data } as KubeObject });
  return "written";
}

function stagePod(skyhook: Skyhook, node: string, name: string, pkg: PackageSpec, stage: Stage): KubeObject {
  const pod: KubeObject = {
    ...podKind,
    metadata: {
      name: `${skyhook.metadata.name}-${name}-${stage}-${node}`,
      namespace: operatorNamespace,
      labels: { [labels.skyhook]: skyhook.metadata.name!, [labels.package]: name, [labels.version]: pkg.version, [labels.stage]: stage },
    },
    spec: {
      nodeName: node,
      restartPolicy: "Always",
      initContainers: [{ name: `${name}-${stage}`, image: pkg.image, args: [stage] }],
      containers: [{ name: "pause", image: pauseImage }],
    },
  };
  return setControllerReference(skyhook, pod);
}

/**
 * Moves each node's packages along: a finished stage gets the next one (state written first, then the pod),
 * a stage in progress without its pod gets the pod again. Nodes already being worked on come first; a new
 * node starts only within `interruptionBudget.count`.
 */
async function advanceLifecycle(snap: Snapshot, ctx: OperatorContext): Promise<void> {
  const { skyhook } = snap;
  const budget = skyhook.spec.interruptionBudget?.count ?? 1;
  let active = snap.nodes.filter((node) => !nodeDone(snap, node.metadata.name!) && Object.keys(snap.states.get(node.metadata.name!) ?? {}).length > 0).length;
  for (const node of snap.nodes) {
    const nodeName = node.metadata.name!;
    const state = { ...(snap.states.get(nodeName) ?? {}) };
    const started = Object.keys(state).length > 0;
    if (nodeDone(snap, nodeName)) continue;
    if (!started && active >= budget) continue;
    let changed = false;
    const toCreate: Array<[string, PackageSpec, Stage]> = [];
    for (const [name, pkg] of Object.entries(skyhook.spec.packages)) {
      if (complete(snap, nodeName, name, pkg)) continue;
      const ref = packageRef(name, pkg.version);
      const current = state[ref];
      const stage = current === undefined ? "apply" : current.state === "complete" ? nextStage(current.stage, interruptOf(skyhook, name, pkg)) : current.state === "in_progress" ? current.stage : undefined;
      // A pod of the previous stage may still be terminating; only a pod of this very stage holds it back.
      if (stage === undefined || stagePodExists(snap, nodeName, name, stage)) continue;
      if (current?.stage !== stage || current.state !== "in_progress") {
        state[ref] = { name, version: pkg.version, stage, state: "in_progress" };
        changed = true;
      }
      toCreate.push([name, pkg, stage]);
    }
    if (!started && toCreate.length > 0) active += 1;
    if (changed) await writeNodeState(ctx.client, node, skyhook.metadata.name!, state);
    for (const [name, pkg, stage] of toCreate) {
      await ctx.client.create({ object: stagePod(skyhook, nodeName, name, pkg, stage) }).catch((error: unknown) => {
        if (!isAlreadyExists(error)) throw error;
      });
    }
  }
}

function snapshot(skyhook: Skyhook, rctx: ReconcileContext): Snapshot {
  const nodes = rctx.lister(nodeKind).list();
  const states = new Map(nodes.map((node) => [node.metadata.name!, readNodeState(node, skyhook.metadata.name!)]));
  return { skyhook, nodes, states, pods: rctx.lister<Pod>(podKind), configMaps: rctx.lister(configMapKind) };
}

/** One pass of the Skyhook reconciler over one Skyhook. */
export async function skyhookPass(skyhook: Skyhook, rctx: ReconcileContext, options: OperatorOptions, ctx: OperatorContext): Promise<Action> {
  const snap = snapshot(skyhook, rctx);
  const status = reportedStatus(snap, options.variant);
  if (!sameStatus(status, skyhook.status)) {
    await writeStatus(ctx.client, skyhook, status);
    return Action.requeueAfter(options.requeueMs);
  }
  let pendingSync = false;
  for (const [name, pkg] of Object.entries(skyhook.spec.packages)) {
    if (pkg.configMap === undefined) continue;
    const outcome = await handleConfigUpdates(snap, name, pkg, ctx, options.variant);
    if (outcome === "written") return Action.requeueAfter(options.requeueMs);
    pendingSync ||= outcome === "pending";
  }
  await advanceLifecycle(snap, ctx);
  // The fix as landed upstream: a diff seen behind a closed gate asks for a pass 30 s later.
  if (pendingSync && options.variant === "fixed") {
    ctx.log(`pass done: ConfigMap sync pending, requeue in ${options.pendingSyncMs / 1000} s`);
    return Action.requeueAfter(options.pendingSyncMs);
  }
  if (pendingSync) ctx.log(`pass done with a ConfigMap diff pending: next pass only on an event or in ${options.maxIntervalMs / 1000} s`);
  return Action.requeueAfter(options.maxIntervalMs);
}

function initContainersSucceeded(pod: Pod): boolean {
  const statuses = pod.status?.initContainerStatuses ?? [];
  const expected = pod.spec.initContainers?.length ?? 0;
  return statuses.length === expected && expected > 0 && statuses.every((s) => s.state?.terminated?.exitCode === 0);
}

/** `PodReconcile`: a stage pod whose package container exited 0 marks its stage complete on the node, then goes. */
export async function podReconcile(pod: Pod, ctx: OperatorContext): Promise<Action> {
  if (!initContainersSucceeded(pod) || pod.metadata.deletionTimestamp !== undefined) return Action.awaitChange();
  const skyhook = pod.metadata.labels?.[labels.skyhook] ?? "";
  const name = pod.metadata.labels?.[labels.package] ?? "";
  const version = pod.metadata.labels?.[labels.version] ?? "";
  const stage = pod.metadata.labels?.[labels.stage] as Stage;
  // Node state first, then the delete: the pass the Node event runs still sees this pod (terminating).
  const node = await ctx.client.get({ ...nodeKind, name: pod.spec.nodeName ?? "" });
  const state = readNodeState(node, skyhook);
  state[packageRef(name, version)] = { name, version, stage, state: "complete" };
  await writeNodeState(ctx.client, node, skyhook, state);
  await ctx.client.delete({ ...podKind, namespace: operatorNamespace, name: pod.metadata.name! }).catch((error: unknown) => {
    if (!isNotFound(error)) throw error;
  });
  return Action.awaitChange();
}

/** Runs both reconcilers in one process (one actor), each with its informers and work queue. */
export async function runOperator(ctx: OperatorContext, options: OperatorOptions): Promise<void> {
  // Node events re-run the pass of every Skyhook this process has reconciled (the real pass covers them all).
  const known = new Set<string>();
  const main = defineController<Skyhook>({
    name: "skyhook",
    for: skyhookKind,
    watches: [
      { ...nodeKind, map: () => [...known].sort().map((name) => ({ name })) },
      // Caches only: a Pod or ConfigMap event never runs a pass (pod deletions in particular).
      { ...podKind, namespace: operatorNamespace, labelSelector: labels.skyhook, map: () => [] },
      { ...configMapKind, namespace: operatorNamespace, map: () => [] },
    ],
    resyncMs: 0,
    reconcile: (skyhook, rctx) => {
      known.add(skyhook.metadata.name!);
      return skyhookPass(skyhook, rctx, options, ctx);
    },
  });
  const pods = defineController<Pod>({
    name: "skyhook-pods",
    for: { ...podKind, namespace: operatorNamespace, labelSelector: labels.skyhook },
    resyncMs: 0,
    reconcile: (pod) => podReconcile(pod, ctx),
  });
  const handles = [main, pods].map((controller) => runController(controller as never, { client: ctx.client, clock: ctx.clock, log: ctx.log }));
  await Promise.all(handles.map((handle) => handle.done));
}
