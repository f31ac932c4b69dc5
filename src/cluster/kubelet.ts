// The kubelet of one node: registers the Node, heartbeats its Lease, runs the pods bound to it
// (pull -> Running -> Ready -> Succeeded/Failed, on the virtual clock), finishes graceful deletions with a
// grace-0 delete, and reboots the host when the Node's reboot annotation asks for it.
import type { Container, ContainerStatus, PodCondition, PodStatus, Taint } from "kubernetes-types/core/v1.js";
import { assert } from "../api/assert.ts";
import { formatMicroTime } from "../api/clock.ts";
import { isAlreadyExists, isApiError, isNotFound } from "../api/errors.ts";
import type { KubeObject } from "../api/object.ts";
import type { ActorContext, ActorDefinition, WorldView } from "../sim/types.ts";
import { Action, defineController, runController } from "../runtime/controller.ts";
import type { ControllerHandle } from "../runtime/controller.ts";
import type { Lister } from "../runtime/cache.ts";
import { createEventRecorder } from "../runtime/events.ts";
import type { EventRecorder } from "../runtime/events.ts";
import {
  annotations,
  clusterActor,
  formatTime,
  isPodFinished,
  isTerminating,
  leaseKind,
  nodeKind,
  numberAnnotation,
  parseTime,
  podContainers,
  podKind,
  podPhase,
} from "./common.ts";
import type { Node, Pod } from "./common.ts";
import { defaultPullPolicy, emptyImageCache, imageCacheCell, parseImage, pullImage, registryCell } from "./images.ts";
import type { ImageCache, Registry } from "./images.ts";
import { cloneJson } from "../api/json.ts";

/** External cell of a node's host: survives kubelet crashes; a reboot changes it. */
export function hostCell(node: string): string {
  return `host/${node}`;
}

export interface HostState {
  bootId: string;
  bootCount: number;
  /** The reboot annotation value last acted on (so a crash mid-reboot does not reboot twice). */
  lastRebootToken?: string;
  /** Scenario fields: a booted image, a staged one, ... */
  [field: string]: unknown;
}

/** External cell of every pod's log lines: `"namespace/pod" -> { node, owner, lines }`. */
export const podLogsCell = "pod-logs";
export type PodLogs = Record<string, { node: string; owner?: string; lines: string[] }>;
const logLinesMax = 200;
const logPodsMax = 500;

/** What a program a pod runs can do: the API, the clock, write log lines. Its result is the exit code. */
export interface ProgramContext {
  readonly pod: Pod;
  readonly client: ActorContext["client"];
  readonly clock: ActorContext["clock"];
  /** Appends a log line (a step: external state). */
  log(line: string): Promise<void>;
  /** Aborted when the pod is deleted or the node reboots. */
  readonly signal: AbortSignal;
  /** External state the program reads or writes (a registry, a chart repository); each access is a step. */
  external: ActorContext["external"];
  /** The kubelet's random stream (jitter and such); draws are part of the run like any other. */
  readonly rng: ActorContext["rng"];
}

export type PodProgram = (ctx: ProgramContext) => Promise<number>;

export interface KubeletOptions {
  node: string;
  /** Node labels besides `kubernetes.io/hostname`. */
  labels?: Record<string, string>;
  taints?: Taint[];
  /** Pull to Running, unless the pod's `sim.settle.dev/start-ms` says otherwise. Default 1000. */
  startMs?: number;
  /**
   * Running to Ready, unless the pod's `sim.settle.dev/ready-ms` says otherwise. Default 0. A container's
   * `readinessProbe.initialDelaySeconds` lengthens it (the probe is taken to pass at its first try).
   */
  readyMs?: number;
  /**
   * The node's address and pod network: the Node reports `hostIP` as its InternalIP and `podCIDR` (a /24), and
   * each pod gets the lowest free address of that range. Default: none, and every pod reports 10.1.0.1 on host
   * 10.0.0.1 (as runs recorded before addresses existed did).
   */
  network?: { hostIP: string; podCIDR: string };
  /**
   * How long the containers of a pod that does not restart them (`restartPolicy` Never or OnFailure: a Job's) run
   * before they exit 0, when the pod's `sim.settle.dev/run-ms` annotation and a program say nothing. Default:
   * they run until deleted. `settle serve --cluster` sets it, so Jobs, CronJobs and helm hooks complete there.
   */
  batchRunMs?: number;
  /**
   * What the node reports as `status.capacity` and `status.allocatable` (`cpu`, `memory`, `pods`, ...), and its
   * kubelet version; `kubectl describe node` computes its percentages from them. Default: none reported and
   * v1.30.0-settle, as runs recorded before them had. The scheduler does not fit pods to them.
   */
  capacity?: Record<string, string>;
  kubeletVersion?: string;
  /** Record the Events a real kubelet records about the pods it runs (image present, created, started, stopping). Default false. */
  events?: boolean;
  /** Terminating to removed (capped by the pod's grace period). Default 1000. */
  stopMs?: number;
  /** Retry after a failed image pull. Default 10_000. */
  pullBackoffMs?: number;
  /** Lease renewal period; 0 = no Lease (node lifecycle then never marks the node NotReady). Default 10_000. */
  heartbeatMs?: number;
  /** The host is down this long during a reboot. Default 30_000. */
  rebootMs?: number;
  /** The host's state after a reboot (boot id and count already advanced), e.g. booting a staged image. */
  onReboot?(host: HostState): HostState;
  /** Programs by image repository (`repo` of `repo:tag`): what a container of that image does. */
  programs?: Record<string, PodProgram>;
  /** Delay before a crashed kubelet restarts. Default 1000. */
  restartDelayMs?: number;
  crashable?: boolean;
}

/** The externals a kubelet needs, with their initial values (for `defineExternal` or a scenario's `externals`). */
export function kubeletExternals(node: string, host: Record<string, unknown> = {}, images: ImageCache = emptyImageCache()): Record<string, unknown> {
  return { [hostCell(node)]: { bootId: `${node}-boot-0`, bootCount: 0, ...host }, [imageCacheCell(node)]: images };
}

export function kubelet(options: KubeletOptions): ActorDefinition {
  assert(options.node.length > 0, "kubelet-node-named");
  return clusterActor(`kubelet-${options.node}`, options, (ctx) => new Kubelet(ctx, options).run());
}

/**
 * Asks the node's kubelet to reboot the host (what `systemctl reboot` on the node is to the cluster). The
 * request belongs to one boot, as a real `systemctl reboot` does: `bootId` is the boot it is made in (a daemon on
 * the node knows it); without it, the boot the Node reports now (one more read). A request whose boot has
 * ended before the kubelet acted on it, such as one made while the host was already going down, lapses.
 */
export async function requestReboot(client: ActorContext["client"], node: string, token: string, options: { bootId?: string } = {}): Promise<void> {
  const bootId = options.bootId ?? ((await client.get({ ...nodeKind, name: node })) as Node).status?.nodeInfo?.bootID ?? "";
  const patch = { metadata: { annotations: { [annotations.reboot]: token, [annotations.rebootBootId]: bootId } } };
  await client.patch({ readOnly: true, ...nodeKind, name: node, patchType: "merge", patch });
}

/** The log lines of a Job's pods, oldest pod first (for properties). */
export function jobLogs(view: WorldView, namespace: string, job: string): string[] {
  const logs = view.external<PodLogs>(podLogsCell);
  return Object.entries(logs)
    .filter(([key, entry]) => key.startsWith(`${namespace}/`) && entry.owner === `Job/${job}`)
    .flatMap(([, entry]) => entry.lines);
}

class Kubelet {
  private readonly node: string;
  private bootId = "";
  private podHandle: ControllerHandle | undefined;
  private rebooting = false;
  /** Pods pulled and waiting out their start delay, by uid: when they may run. */
  private readonly startAt = new Map<string, number>();
  /** Programs running, by pod uid. */
  private readonly programs = new Map<string, AbortController>();
  /** Pod IPs handed out by this incarnation, by pod uid (the cache may not show the last one written yet). */
  private readonly podIPs = new Map<string, string>();
  /** With `events`: the recorder, and the pods whose stopping was recorded (by uid). */
  private readonly recorder: EventRecorder | undefined;
  private readonly stopping = new Set<string>();
  private fail: (error: unknown) => void = () => {};

  constructor(
    private readonly ctx: ActorContext,
    private readonly options: KubeletOptions,
  ) {
    this.node = options.node;
    this.recorder = options.events === true ? createEventRecorder({ client: ctx.client, clock: ctx.clock, component: "kubelet", host: options.node }) : undefined;
  }

  /** One Normal Event per container of the pod. */
  private async noteContainers(pod: Pod, reason: string, message: (container: Container) => string): Promise<void> {
    if (this.recorder === undefined) return;
    for (const [field, containers] of [["initContainers", pod.spec.initContainers ?? []], ["containers", pod.spec.containers]] as const) {
      for (const container of containers) await this.recorder.record(pod, { type: "Normal", reason, message: message(container), fieldPath: `spec.${field}{${container.name}}` });
    }
  }

  async run(): Promise<void> {
    const host = await this.ctx.external<HostState>(hostCell(this.node)).read();
    this.bootId = host.bootId;
    await this.register();
    const fatal = new Promise<never>((_, reject) => (this.fail = reject));
    this.startPods();
    const nodes = runController(this.nodeController(), { client: this.ctx.client, clock: this.ctx.clock, log: this.ctx.log });
    const heartbeat = (this.options.heartbeatMs ?? 10_000) > 0 ? this.heartbeat() : Promise.resolve();
    await Promise.race([Promise.all([nodes.done, heartbeat]), fatal]);
  }

  private startPods(): void {
    const handle = runController(this.podController(), { client: this.ctx.client, clock: this.ctx.clock, log: this.ctx.log });
    this.podHandle = handle;
    handle.done.catch((error) => this.fail(error));
  }

  private nodeStatusPatch(ready: boolean, reason: string): Record<string, unknown> {
    const now = formatTime(this.ctx.clock.now());
    const condition = { type: "Ready", status: ready ? "True" : "False", reason, lastHeartbeatTime: now, lastTransitionTime: now };
    const network = this.options.network;
    const addresses = network === undefined ? {} : { addresses: [{ type: "InternalIP", address: network.hostIP }, { type: "Hostname", address: this.node }] };
    const capacity = this.options.capacity === undefined ? {} : { capacity: this.options.capacity, allocatable: this.options.capacity };
    const nodeInfo = { bootID: this.bootId, kubeletVersion: this.options.kubeletVersion ?? "v1.30.0-settle", operatingSystem: "linux", architecture: "amd64" };
    return { conditions: [condition], ...addresses, ...capacity, nodeInfo };
  }

  /** Creates the Node, or reports it Ready with this boot's id. */
  private async register(): Promise<void> {
    const labels = { "kubernetes.io/hostname": this.node, "kubernetes.io/os": "linux", ...(this.options.labels ?? {}) };
    const node: Node = {
      ...nodeKind,
      metadata: { name: this.node, labels },
      spec: {
        ...(this.options.taints === undefined ? {} : { taints: this.options.taints }),
        ...(this.options.network === undefined ? {} : { podCIDR: this.options.network.podCIDR, podCIDRs: [this.options.network.podCIDR] }),
      },
      status: this.nodeStatusPatch(true, "KubeletReady"),
    };
    for (;;) {
      try {
        try {
          await this.ctx.client.create({ readOnly: true, object: node });
        } catch (error) {
          if (!isAlreadyExists(error)) throw error;
          await this.setReady(true, "KubeletReady");
        }
        return;
      } catch (error) {
        if (!isApiError(error)) throw error;
        await this.ctx.clock.sleep(1000);
      }
    }
  }

  private async setReady(ready: boolean, reason: string): Promise<void> {
    await this.ctx.client.patchStatus({ readOnly: true, ...nodeKind, name: this.node, patchType: "merge", patch: { status: this.nodeStatusPatch(ready, reason) } });
  }

  private async heartbeat(): Promise<void> {
    const periodMs = this.options.heartbeatMs ?? 10_000;
    const ref = { ...leaseKind, namespace: "kube-node-lease", name: this.node };
    for (;;) {
      try {
        const spec = { holderIdentity: this.node, leaseDurationSeconds: 40, renewTime: formatMicroTime(this.ctx.clock.now()) };
        try {
          await this.ctx.client.patch({ readOnly: true, ...ref, patchType: "merge", patch: { spec } });
        } catch (error) {
          if (!isNotFound(error)) throw error;
          await this.ctx.client.create({ readOnly: true, object: { ...leaseKind, metadata: { name: this.node, namespace: "kube-node-lease" }, spec } });
        }
      } catch (error) {
        if (!isApiError(error)) throw error;
      }
      await this.ctx.clock.sleep(periodMs);
    }
  }

  private nodeController() {
    return defineController<Node>({
      name: `kubelet-${this.node}-node`,
      for: { ...nodeKind, fieldSelector: `metadata.name=${this.node}` },
      resyncMs: 0,
      reconcile: async (node) => {
        const token = node.metadata.annotations?.[annotations.reboot];
        if (token !== undefined && !this.rebooting) {
          const host = await this.ctx.external<HostState>(hostCell(this.node)).read();
          // A request tied to a boot that has ended lapsed with it (a request without a boot id is from code
          // that predates tying: it is carried out once, whenever it is seen).
          const madeIn = node.metadata.annotations?.[annotations.rebootBootId];
          if (host.lastRebootToken !== token && (madeIn === undefined || madeIn === host.bootId)) {
            await this.reboot(token);
            return Action.awaitChange();
          }
        }
        const bootId = node.status?.nodeInfo?.bootID;
        const ready = (node.status?.conditions ?? []).find((c) => c.type === "Ready")?.status === "True";
        if (!this.rebooting && (!ready || bootId !== this.bootId)) await this.setReady(true, "KubeletReady");
        return Action.awaitChange();
      },
    });
  }

  /** Host down: pods stop, the Node goes NotReady, the host changes (hook), then everything starts afresh. */
  private async reboot(token: string): Promise<void> {
    this.rebooting = true;
    this.podHandle?.stop();
    for (const abort of this.programs.values()) abort.abort(new Error("node rebooted"));
    this.programs.clear();
    this.startAt.clear();
    this.ctx.log("kubelet: rebooting", { node: this.node, token });
    await this.setReady(false, "Rebooting").catch((error) => {
      if (!isApiError(error)) throw error;
    });
    await this.ctx.clock.sleep(this.options.rebootMs ?? 30_000);
    let booted: HostState | undefined;
    await this.ctx.external<HostState>(hostCell(this.node)).write((host) => {
      const next: HostState = { ...host, bootCount: host.bootCount + 1, bootId: `${this.node}-boot-${host.bootCount + 1}`, lastRebootToken: token };
      booted = this.options.onReboot === undefined ? next : this.options.onReboot(next);
      return booted;
    });
    assert(booted !== undefined, "kubelet-reboot-wrote-host");
    this.bootId = booted.bootId;
    this.rebooting = false;
    this.startPods();
    await this.setReady(true, "KubeletReady");
  }

  private podController() {
    return defineController<Pod>({
      name: `kubelet-${this.node}`,
      for: { ...podKind, fieldSelector: `spec.nodeName=${this.node}` },
      resyncMs: 0,
      rateLimiter: { baseDelayMs: 500, maxDelayMs: 30_000 },
      reconcile: (pod, rctx) => this.reconcilePod(pod, rctx.lister<Pod>(podKind)),
    });
  }

  private async reconcilePod(pod: Pod, pods: Lister<Pod>): Promise<Action> {
    if (isTerminating(pod)) return this.terminate(pod);
    if (isPodFinished(pod)) {
      this.podIPs.delete(pod.metadata.uid ?? "");
      return Action.awaitChange();
    }
    const running = podPhase(pod) === "Running";
    if (!running) return this.startPod(pod, pods);
    const statuses = pod.status?.containerStatuses ?? [];
    if (statuses.some((s) => !(s.containerID ?? "").startsWith(`sim://${this.bootId}/`))) return this.afterReboot(pod);
    return this.runningPod(pod);
  }

  /** Terminating: wait out the stop time (at most the grace period), then remove with grace 0. */
  private async terminate(pod: Pod): Promise<Action> {
    const uid = pod.metadata.uid ?? "";
    this.programs.get(uid)?.abort(new Error("pod deleted"));
    this.programs.delete(uid);
    this.startAt.delete(uid);
    this.podIPs.delete(uid);
    if (this.recorder !== undefined && !this.stopping.has(uid) && podPhase(pod) === "Running") {
      this.stopping.add(uid);
      await this.noteContainers(pod, "Killing", (c) => `Stopping container ${c.name}`);
    }
    const graceMs = (pod.metadata.deletionGracePeriodSeconds ?? 0) * 1000;
    const deadline = parseTime(pod.metadata.deletionTimestamp) ?? this.ctx.clock.now();
    const stopAt = Math.min(deadline, deadline - graceMs + (this.options.stopMs ?? 1000));
    const waitMs = stopAt - this.ctx.clock.now();
    if (waitMs > 0) return Action.requeueAfter(waitMs);
    const ref = { ...podKind, namespace: pod.metadata.namespace, name: pod.metadata.name ?? "" };
    try {
      await this.ctx.client.delete({ readOnly: true, ...ref, gracePeriodSeconds: 0, preconditions: { uid } });
    } catch (error) {
      if (isNotFound(error)) return Action.awaitChange();
      if (!(isApiError(error) && error.code === 409)) throw error;
      // A 409 means the uid precondition failed (the pod was replaced) or a passing conflict: only a read tells.
      const current = await this.ctx.client.get<Pod>(ref).catch((readError: unknown) => {
        if (isNotFound(readError)) return undefined;
        throw readError;
      });
      if (current?.metadata.uid === uid) throw error;
    }
    return Action.awaitChange();
  }

  /** Pending: pull every image, wait out the start delay, then report Running. */
  private async startPod(pod: Pod, pods: Lister<Pod>): Promise<Action> {
    const uid = pod.metadata.uid ?? "";
    const now = this.ctx.clock.now();
    const at = this.startAt.get(uid);
    if (at === undefined) {
      const digests = await this.pull(pod);
      if (typeof digests === "string") {
        await this.writeStatus(pod, waitingStatus(pod, "ErrImagePull", digests));
        return Action.requeueAfter(this.options.pullBackoffMs ?? 10_000);
      }
      const delayMs = numberAnnotation(pod, annotations.startMs) ?? this.options.startMs ?? 1000;
      this.startAt.set(uid, now + delayMs);
      if (delayMs > 0) return Action.requeueAfter(delayMs);
    } else if (at > now) {
      return Action.requeueAfter(at - now);
    }
    this.startAt.delete(uid);
    const digests = await this.pull(pod);
    if (typeof digests === "string") return Action.requeueAfter(this.options.pullBackoffMs ?? 10_000);
    const restarts = pod.status?.containerStatuses?.[0]?.restartCount ?? 0;
    const readyNow = this.readyDelayMs(pod) === 0;
    const status = this.runningStatus(pod, digests, restarts, readyNow);
    if (this.options.network !== undefined) this.assignAddresses(pod, status, pods, this.options.network);
    await this.writeStatus(pod, status);
    if (this.recorder !== undefined) {
      await this.noteContainers(pod, "Pulled", (c) => `Container image "${c.image}" already present on machine`);
      await this.noteContainers(pod, "Created", (c) => `Created container: ${c.name}`);
      await this.noteContainers(pod, "Started", (c) => `Started container ${c.name}`);
    }
    this.launchProgram(pod);
    return this.nextDeadline(pod, now);
  }

  /** The image digest of each container, or the pull error. Reads and writes the node cache (external steps). */
  private async pull(pod: Pod): Promise<string[] | string> {
    const cacheHandle = this.ctx.external<ImageCache>(imageCacheCell(this.node));
    let cache = await cacheHandle.read();
    let registry: Registry | undefined;
    const digests: string[] = [];
    let changed = false;
    for (const container of podContainers(pod)) {
      const image = container.image ?? "";
      const policy = container.imagePullPolicy ?? defaultPullPolicy(image);
      const needsRegistry = parseImage(image).digest === undefined && (policy === "Always" || cache.tags[`${parseImage(image).repo}:${parseImage(image).tag}`] === undefined);
      if (needsRegistry && registry === undefined) registry = await this.ctx.external<Registry>(registryCell).read();
      const result = pullImage(image, policy, cache, registry ?? {});
      if (!result.ok) return `${result.reason}: ${result.message}`;
      changed ||= result.cache !== cache;
      cache = result.cache;
      digests.push(`${parseImage(image).repo}@${result.digest}`);
    }
    if (changed) await cacheHandle.write(cache);
    return digests;
  }

  /**
   * Running to Ready: the pod's annotation, else the kubelet's default or the longest readiness-probe initial delay,
   * whichever is longer (the probe passes at its first try; failing probes are not modelled).
   */
  private readyDelayMs(pod: Pod): number {
    const annotated = numberAnnotation(pod, annotations.readyMs);
    if (annotated !== undefined) return annotated;
    const probeDelaysMs = pod.spec.containers.map((c) => (c.readinessProbe === undefined ? 0 : (c.readinessProbe.initialDelaySeconds ?? 0) * 1000));
    return Math.max(this.options.readyMs ?? 0, ...probeDelaysMs);
  }

  /** The node's host IP and the lowest pod IP of its range that no other live pod on this node holds. */
  private assignAddresses(pod: Pod, status: PodStatus, pods: Lister<Pod>, network: { hostIP: string; podCIDR: string }): void {
    const match = /^(\d+\.\d+\.\d+)\.0\/24$/.exec(network.podCIDR);
    assert(match !== null, "kubelet-pod-cidr-is-a-24");
    const uid = pod.metadata.uid ?? "";
    // Forget the addresses of pods gone from the cache (deleted without this kubelet seeing them terminate): every
    // pod this kubelet addressed was in its cache, only the status it wrote may not be there yet.
    const live = new Set(pods.list().map((p) => p.metadata.uid));
    for (const known of [...this.podIPs.keys()]) if (!live.has(known)) this.podIPs.delete(known);
    const used = new Set(this.podIPs.values());
    for (const other of pods.list()) {
      if (other.metadata.uid !== uid && !isPodFinished(other) && other.spec.hostNetwork !== true && other.status?.podIP !== undefined) used.add(other.status.podIP);
    }
    // A pod on the host's network shares the node's address; the others each get one of the node's range.
    let podIP = pod.spec.hostNetwork === true ? network.hostIP : (pod.status?.podIP ?? this.podIPs.get(uid));
    for (let host = 2; podIP === undefined && host < 255; host++) if (!used.has(`${match[1]}.${host}`)) podIP = `${match[1]}.${host}`;
    if (podIP === undefined) throw new Error(`kubelet ${this.node}: no free pod IP left in ${network.podCIDR}`);
    if (pod.spec.hostNetwork !== true) this.podIPs.set(uid, podIP);
    status.hostIP = network.hostIP;
    status.hostIPs = [{ ip: network.hostIP }];
    status.podIP = podIP;
    status.podIPs = [{ ip: podIP }];
  }

  private runningStatus(pod: Pod, imageIds: string[], restarts: number, ready: boolean): PodStatus {
    const now = formatTime(this.ctx.clock.now());
    const uid = pod.metadata.uid ?? "";
    const containerStatuses: ContainerStatus[] = pod.spec.containers.map((c, i) => ({
      name: c.name,
      image: c.image ?? "",
      imageID: imageIds[(pod.spec.initContainers ?? []).length + i] ?? "",
      containerID: `sim://${this.bootId}/${uid}/${c.name}/${restarts}`,
      ready,
      started: true,
      restartCount: restarts,
      state: { running: { startedAt: now } },
    }));
    return {
      phase: "Running",
      // A restarted container keeps its pod's addresses (the lists only exist with the `network` option).
      hostIP: pod.status?.hostIP ?? "10.0.0.1",
      ...(pod.status?.hostIPs === undefined ? {} : { hostIPs: pod.status.hostIPs }),
      podIP: pod.status?.podIP ?? "10.1.0.1",
      ...(pod.status?.podIPs === undefined ? {} : { podIPs: pod.status.podIPs }),
      startTime: pod.status?.startTime ?? now,
      conditions: podConditions(ready, now),
      containerStatuses,
    };
  }

  /** Running: become Ready after the ready delay; exit after the run time (restart or finish by policy). */
  private async runningPod(pod: Pod): Promise<Action> {
    const now = this.ctx.clock.now();
    const startedAt = parseTime(pod.status?.containerStatuses?.[0]?.state?.running?.startedAt) ?? now;
    const program = this.options.programs?.[parseImage(pod.spec.containers[0]?.image ?? "").repo];
    if (program !== undefined && !this.programs.has(pod.metadata.uid ?? "")) {
      // The kubelet lost its program (it crashed): the container is gone, as after a SIGKILL.
      return this.exit(pod, 137, "ContainerLost");
    }
    const runMs = this.runMs(pod);
    if (program === undefined && runMs !== undefined && now >= startedAt + runMs) {
      return this.exit(pod, numberAnnotation(pod, annotations.exitCode) ?? 0, "Completed");
    }
    const readyMs = this.readyDelayMs(pod);
    const ready = (pod.status?.conditions ?? []).some((c) => c.type === "Ready" && c.status === "True");
    if (!ready && now >= startedAt + readyMs) {
      const status = cloneJson(pod.status ?? {}) as PodStatus;
      status.conditions = podConditions(true, formatTime(now));
      for (const c of status.containerStatuses ?? []) c.ready = true;
      await this.writeStatus(pod, status);
    }
    return this.nextDeadline(pod, startedAt);
  }

  private nextDeadline(pod: Pod, startedAt: number): Action {
    const now = this.ctx.clock.now();
    const readyMs = this.readyDelayMs(pod);
    const runMs = this.runMs(pod);
    const due = [startedAt + readyMs, runMs === undefined ? Infinity : startedAt + runMs].filter((t) => t > now && Number.isFinite(t));
    return due.length === 0 ? Action.awaitChange() : Action.requeueAfter(Math.min(...due) - now);
  }

  /** How long the pod's containers run before they exit, if they do on their own (see `batchRunMs`). */
  private runMs(pod: Pod): number | undefined {
    const annotated = numberAnnotation(pod, annotations.runMs);
    if (annotated !== undefined || this.options.batchRunMs === undefined) return annotated;
    return (pod.spec.restartPolicy ?? "Always") === "Always" ? undefined : this.options.batchRunMs;
  }

  /** A container exited: restart it when the policy says so, else the pod finishes. */
  private async exit(pod: Pod, exitCode: number, reason: string): Promise<Action> {
    const policy = pod.spec.restartPolicy ?? "Always";
    const restart = policy === "Always" || (policy === "OnFailure" && exitCode !== 0);
    if (restart) {
      const restarts = (pod.status?.containerStatuses?.[0]?.restartCount ?? 0) + 1;
      const imageIds = (pod.status?.containerStatuses ?? []).map((s) => s.imageID ?? "");
      await this.writeStatus(pod, this.runningStatus(pod, [...(pod.spec.initContainers ?? []).map(() => ""), ...imageIds], restarts, false));
      this.launchProgram(pod);
      return Action.requeueAfter(0);
    }
    const now = formatTime(this.ctx.clock.now());
    const status = cloneJson(pod.status ?? {}) as PodStatus;
    status.phase = exitCode === 0 ? "Succeeded" : "Failed";
    status.conditions = podConditions(false, now);
    for (const c of status.containerStatuses ?? []) {
      c.ready = false;
      c.started = false;
      c.state = { terminated: { exitCode, reason: exitCode === 0 ? reason : "Error", startedAt: c.state?.running?.startedAt ?? now, finishedAt: now } };
    }
    await this.writeStatus(pod, status);
    return Action.awaitChange();
  }

  /** Containers from an earlier boot: restarted (Always/OnFailure) or failed (Never), as after a node reboot. */
  private afterReboot(pod: Pod): Promise<Action> {
    return this.exit(pod, 137, "NodeRebooted");
  }

  private async writeStatus(pod: Pod, status: PodStatus): Promise<void> {
    await this.ctx.client.updateStatus({ readOnly: true, object: { ...pod, status } as KubeObject });
  }

  /** Starts the program of the pod's first container, if it has one; its exit code finishes the pod. */
  private launchProgram(pod: Pod): void {
    const program = this.options.programs?.[parseImage(pod.spec.containers[0]?.image ?? "").repo];
    if (program === undefined) return;
    const uid = pod.metadata.uid ?? "";
    this.programs.get(uid)?.abort(new Error("restarted"));
    const abort = new AbortController();
    this.programs.set(uid, abort);
    const key = `${pod.metadata.namespace}/${pod.metadata.name}`;
    const owner = pod.metadata.ownerReferences?.find((o) => o.controller === true);
    const log = (line: string) => this.appendLog(key, owner === undefined ? undefined : `${owner.kind}/${owner.name}`, line);
    const context: ProgramContext = { pod, client: this.ctx.client, clock: this.ctx.clock, log, signal: abort.signal, external: (name) => this.ctx.external(name), rng: this.ctx.rng };
    program(context)
      .catch((error: unknown) => {
        if (!abort.signal.aborted && !isApiError(error)) throw error;
        return 1;
      })
      .then((exitCode) => (abort.signal.aborted ? undefined : this.finishProgram(pod, exitCode)))
      .catch((error: unknown) => this.fail(error));
  }

  private async finishProgram(pod: Pod, exitCode: number): Promise<void> {
    this.programs.delete(pod.metadata.uid ?? "");
    for (let attempt = 0; attempt < 10; attempt++) {
      try {
        const current = await this.ctx.client.get<Pod>({ ...podKind, namespace: pod.metadata.namespace, name: pod.metadata.name ?? "" });
        if (current.metadata.uid !== pod.metadata.uid || isTerminating(current) || isPodFinished(current)) return;
        await this.exit(current, exitCode, "Completed");
        return;
      } catch (error) {
        if (isNotFound(error)) return;
        if (!isApiError(error)) throw error;
        await this.ctx.clock.sleep(1000);
      }
    }
  }

  private async appendLog(key: string, owner: string | undefined, line: string): Promise<void> {
    await this.ctx.external<PodLogs>(podLogsCell).write((logs) => {
      const entry = logs[key] ?? { node: this.node, ...(owner === undefined ? {} : { owner }), lines: [] };
      entry.lines = [...entry.lines, line].slice(-logLinesMax);
      logs[key] = entry;
      const keys = Object.keys(logs);
      for (const old of keys.slice(0, Math.max(0, keys.length - logPodsMax))) delete logs[old];
      return logs;
    });
  }
}

function podConditions(ready: boolean, now: string): PodCondition[] {
  const status = ready ? "True" : "False";
  return [
    { type: "PodScheduled", status: "True", lastTransitionTime: now },
    { type: "Initialized", status: "True", lastTransitionTime: now },
    { type: "ContainersReady", status, lastTransitionTime: now },
    { type: "Ready", status, lastTransitionTime: now },
  ];
}

function waitingStatus(pod: Pod, reason: string, message: string): PodStatus {
  return {
    ...(pod.status ?? {}),
    phase: "Pending",
    containerStatuses: pod.spec.containers.map((c) => ({
      name: c.name,
      image: c.image ?? "",
      imageID: "",
      ready: false,
      restartCount: 0,
      state: { waiting: { reason, message } },
    })),
  };
}
