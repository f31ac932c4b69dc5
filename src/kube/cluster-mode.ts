// `settle serve --cluster`: the cluster library's actors (kubelets of fake nodes, scheduler, node lifecycle, the
// workload controllers, Endpoints and EndpointSlices) run in real time against the server they belong to, so that
// Deployments and StatefulSets get Pods, Pods get bound, an IP and reported Running and Ready, Services get endpoints,
// namespaces their `default` ServiceAccount and `kube-root-ca.crt` ConfigMap, claims a volume of the default
// StorageClass `standard`, HorizontalPodAutoscalers their status (there are no metrics), Jobs complete, and `kubectl rollout status` or `helm install --wait` finish.
//
// It is the real-time host of simulator actors, beside kube/run.ts, the real-time host of one controller: it joins
// layers the server must not depend on (the cluster actors, the runtime, the kube client), so it lives above them,
// and `settle serve` (src/cli/serve.ts) and the server's tests reach it without the command line. The actors talk to the server over loopback HTTP with the server's own kubeconfig, so
// they go through the same admission, defaulting, field ownership and faults as kubectl does.
import { createHash } from "node:crypto";
import { KubeConfig } from "@kubernetes/client-node";
import { assert } from "../api/assert.ts";
import type { Watch, WatchOptions } from "../api/client.ts";
import type { Clock, Timer } from "../api/clock.ts";
import type { KubeObject, WatchEvent } from "../api/object.ts";
import { cluster, clusterExternals, registryCell } from "../cluster/index.ts";
import { createKubeClient } from "../kube/client.ts";
import { serverVersion } from "../server/discovery.ts";
import { RESTART_DELAY_MS_DEFAULT } from "../sim/kernel.ts";
import { Rng } from "../sim/rng.ts";
import type { ActorContext, ActorDefinition, ExternalHandle } from "../sim/types.ts";
import { cloneJson } from "../api/json.ts";

export interface ClusterModeOptions {
  /** The server's kubeconfig text (`server.kubeconfig()`): the actors' client is a loopback client of it. */
  kubeconfig: string;
  /** The CA certificate (PEM) published in every namespace's `kube-root-ca.crt` ConfigMap: the server's. */
  certificate?: string;
  /** Fake nodes, named n1..nN, each Ready with a kubelet. Default 1. */
  nodes?: number;
  /** The real clock, or a test's. */
  clock: Clock;
  /** Told of actor failures and restarts (one line each). Default: nothing. */
  log?: (line: string) => void;
}

export interface ClusterMode {
  /** The actors' names, in start order. */
  readonly actors: readonly string[];
  /** Stops every actor: their timers are cancelled and their pending calls never settle (as a SIGKILL does). */
  stop(): void;
}

/** Starts every cluster actor. Call it once the server listens; `stop()` before closing the server. */
/** What each fake node reports it has: a modest machine, so `kubectl describe node` reads as on a real one. */
const fakeNodeCapacity = { cpu: "4", memory: "16Gi", pods: "110", "ephemeral-storage": "100Gi", "hugepages-1Gi": "0", "hugepages-2Mi": "0" };

export function startClusterMode(options: ClusterModeOptions): ClusterMode {
  const nodes = options.nodes ?? 1;
  assert(Number.isInteger(nodes), "cluster-mode-nodes-integer");
  assert(nodes >= 1, "cluster-mode-nodes-positive");
  const lifetime = new Lifetime(options.clock);
  const cells = new Map(Object.entries(clusterExternals({ nodes })));
  // Everything a real cluster runs for workloads: StatefulSets and Service endpoints too, and distinct pod IPs. The
  // fake nodes pull nothing, so a container starts and stops in half a second rather than the simulator's default
  // second: a rollout a user or a test waits on goes twice as fast, in the same order. The containers of a pod that
  // does not restart them (a Job's, a helm hook's) exit 0 after a second, since nothing runs their command.
  const actors = cluster({
    nodes,
    network: true,
    kubelet: { startMs: 500, stopMs: 500, batchRunMs: 1000, capacity: fakeNodeCapacity, kubeletVersion: serverVersion.gitVersion },
    with: ["statefulset-controller", "endpoints-controller", "endpointslice-controller", "serviceaccount-controller", "root-ca-cert-publisher", "volume-provisioner", "horizontal-pod-autoscaler"],
    ...(options.certificate === undefined ? {} : { rootCa: options.certificate }),
    revisionHistory: true,
    events: true,
  });
  const kubeconfig = new KubeConfig();
  kubeconfig.loadFromString(options.kubeconfig);
  for (const actor of actors) {
    // One client per actor, so the server's field managers name the actor (`settle-scheduler`, ...).
    const client = lifetime.wrapClient(createKubeClient({ kubeconfig, userAgent: `settle-${actor.name}` }));
    runActor(actor, { client, clock: lifetime.clock, cells, lifetime, log: options.log ?? (() => {}) }, 0);
  }
  return { actors: actors.map((actor) => actor.name), stop: () => lifetime.stop() };
}

interface RunContext {
  client: ActorContext["client"];
  clock: Clock;
  cells: Map<string, unknown>;
  lifetime: Lifetime;
  log: (line: string) => void;
}

/** Starts an actor; when it fails or returns, it starts again after its restart delay, as a supervised process. */
function runActor(actor: ActorDefinition, run: RunContext, incarnation: number): void {
  const ctx: ActorContext = {
    name: actor.name,
    incarnation,
    client: run.client,
    clock: run.clock,
    rng: new Rng(incarnation + 1),
    log: () => {},
    external: <T>(name: string) => externalHandle<T>(run.cells, name),
  };
  const restart = (why: string) => {
    if (run.lifetime.stopped) return;
    const delayMs = actor.restartDelayMs ?? RESTART_DELAY_MS_DEFAULT;
    run.log(`cluster: ${actor.name} ${why}; restarting in ${delayMs} ms`);
    run.clock.setTimer(delayMs, () => runActor(actor, run, incarnation + 1));
  };
  Promise.resolve()
    .then(() => actor.start(ctx))
    .then(
      () => restart("returned"),
      (error: unknown) => restart(`failed: ${error instanceof Error ? error.message : String(error)}`),
    );
}

/**
 * External state in memory. The registry answers every `repo:tag` with a digest derived from the name, because the
 * fake nodes pull nothing: any image a user names exists.
 */
function externalHandle<T>(cells: Map<string, unknown>, name: string): ExternalHandle<T> {
  if (name === registryCell) {
    const registry = new Proxy({}, { get: (_, key) => (typeof key === "string" ? fakeDigest(key) : undefined) });
    return { read: async () => registry as T, write: async () => {} };
  }
  if (!cells.has(name)) throw new Error(`cluster: unknown external state "${name}"`);
  return {
    read: async () => cloneJson(cells.get(name)) as T,
    write: async (value) => {
      const next = typeof value === "function" ? (value as (current: T) => T)(cloneJson(cells.get(name)) as T) : value;
      cells.set(name, cloneJson(next));
    },
  };
}

function fakeDigest(image: string): string {
  return `sha256:${createHash("sha256").update(image).digest("hex")}`;
}

/**
 * Ends the actors without their cooperation: after `stop()` every timer is cancelled, sleeps and client calls never
 * settle, so no actor code runs again and nothing keeps the event loop alive.
 */
class Lifetime {
  stopped = false;
  readonly #timers = new Set<Timer>();
  readonly #watches = new Set<Watch<KubeObject>>();
  readonly clock: Clock;

  constructor(base: Clock) {
    const track = (ms: number, fn: () => void): Timer => {
      if (this.stopped) return { cancel: () => {} };
      const timer: Timer = base.setTimer(ms, () => {
        this.#timers.delete(timer);
        fn();
      });
      this.#timers.add(timer);
      return { cancel: () => (timer.cancel(), this.#timers.delete(timer)) };
    };
    this.clock = {
      now: () => base.now(),
      setTimer: track,
      sleep: (ms, options) =>
        new Promise<void>((resolve, reject) => {
          const signal = options?.signal;
          if (signal?.aborted) return reject(signal.reason);
          const timer = track(ms, () => {
            signal?.removeEventListener("abort", onAbort);
            resolve();
          });
          const onAbort = () => {
            timer.cancel();
            reject(signal?.reason);
          };
          signal?.addEventListener("abort", onAbort, { once: true });
        }),
    };
  }

  /** A client whose calls (and watch streams) stop settling once the lifetime ends. */
  wrapClient(client: ActorContext["client"]): ActorContext["client"] {
    const gate = <R>(promise: Promise<R>): Promise<R> =>
      new Promise<R>((resolve, reject) => {
        promise.then(
          (value) => (this.stopped ? undefined : resolve(value)),
          (error: unknown) => (this.stopped ? undefined : reject(error)),
        );
      });
    return new Proxy(client, {
      get: (target, key, receiver) => {
        const value = Reflect.get(target, key, receiver);
        if (typeof value !== "function") return value;
        if (key === "watch") return (options: WatchOptions) => this.#gateWatch(target.watch(options), gate);
        return (...args: unknown[]) => {
          const result = value.apply(target, args);
          return result instanceof Promise ? gate(result) : result;
        };
      },
    });
  }

  /** A watch whose events stop with the lifetime; it is closed at `stop()` so its connection ends. */
  #gateWatch<T extends KubeObject>(inner: Watch<T>, gate: <R>(promise: Promise<R>) => Promise<R>): Watch<T> {
    this.#watches.add(inner);
    const close = () => {
      this.#watches.delete(inner);
      inner.close();
    };
    return {
      close,
      [Symbol.asyncIterator]: () => {
        const iterator = inner[Symbol.asyncIterator]();
        return {
          next: async () => {
            const result = await gate(iterator.next());
            if (result.done === true) this.#watches.delete(inner);
            return result;
          },
          return: async (value?: unknown) => {
            close();
            return { done: true as const, value: value as WatchEvent<T> };
          },
        };
      },
    };
  }

  stop(): void {
    this.stopped = true;
    for (const timer of this.#timers) timer.cancel();
    this.#timers.clear();
    for (const watch of this.#watches) watch.close();
    this.#watches.clear();
  }
}
