// Level-triggered controllers: `defineController` describes one, `runController` runs it over a `Client` and
// a `Clock` (kube-rs `Controller` + `Action` + `error_policy`; controller-runtime's builder and `Result`).
//
// The reconciler sees only the current object (from the cache) and never why it runs: every event on the
// primary kind, on owned objects (mapped to their controller owner) or on watched objects (mapped by a
// function) just enqueues the primary's key, and the work queue guarantees one reconcile per key at a time.
import { AssertionError, assert } from "../api/assert.ts";
import type { Client } from "../api/client.ts";
import type { Clock } from "../api/clock.ts";
import { ProcessExit } from "../api/exit.ts";
import { controllerOf, keyOf, parseApiVersion } from "../api/object.ts";
import type { KindRef, KubeObject } from "../api/object.ts";
import type { IndexFunc, Lister } from "./cache.ts";
import { createEventRecorder } from "./events.ts";
import type { EventRecorder } from "./events.ts";
import { Informer } from "./informer.ts";
import type { EventHandler, InformerSelector } from "./informer.ts";
import { LeaderElector } from "./leader.ts";
import type { LeaderElectionConfig } from "./leader.ts";
import { silentLog } from "./log.ts";
import type { Log } from "./log.ts";
import { WorkQueue, exponentialRateLimiter } from "./workqueue.ts";
import type { ExponentialRateLimiterOptions } from "./workqueue.ts";

/** Longest requeue a reconciler may ask for: 24 hours. Longer asks are clamped (a resync covers the rest). */
export const requeueAfterMsMax = 24 * 60 * 60 * 1000;

/** What a reconcile asks for next. Built only by `Action.requeueAfter` and `Action.awaitChange`. */
export type Action = { readonly type: "requeueAfter"; readonly ms: number } | { readonly type: "awaitChange" };

const awaitChangeAction: Action = Object.freeze({ type: "awaitChange" });

export const Action = {
  /** Reconcile again after `ms` (clamped to `requeueAfterMsMax`) even if nothing changes. */
  requeueAfter(ms: number): Action {
    assert(Number.isFinite(ms), "action-requeue-ms-finite");
    assert(ms >= 0, "action-requeue-ms-not-negative");
    return Object.freeze({ type: "requeueAfter", ms: Math.min(ms, requeueAfterMsMax) });
  },
  /** Reconcile again only when a watched object changes (or on resync). */
  awaitChange(): Action {
    return awaitChangeAction;
  },
};

/** An error retrying cannot fix (bad spec, refused by policy): logged, not retried until the object changes. */
export class TerminalError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "TerminalError";
  }
}

/** A kind to watch, optionally narrowed (a node daemon watches only its own Node). */
export interface Source extends KindRef, InformerSelector {
  /** Extra cache indexes for this kind. */
  indexers?: Readonly<Record<string, IndexFunc>>;
}

/** The key of a primary object: `{ namespace, name }`, or `{ name }` when it is cluster-scoped. */
export interface PrimaryRef {
  namespace?: string | undefined;
  name: string;
}

export interface WatchSource<W extends KubeObject = KubeObject> extends Source {
  /**
   * Which primary objects this object concerns. `ctx` reads the controller's caches, so a ConfigMap can be
   * mapped to the Widgets that reference it through an index of the Widget cache (controller-runtime's map
   * functions get a client for the same reason). It runs on every event: read caches, never the API.
   */
  map(object: W, ctx: MapContext): readonly PrimaryRef[];
}

/** What a `watches` mapping may read: the caches of the kinds the controller declared, nothing that waits. */
export interface MapContext {
  readonly controllerName: string;
  readonly log: Log;
  /** The cache of a kind this controller declared (`for`, `owns` or `watches`); throws naming any other kind. */
  lister<L extends KubeObject = KubeObject>(kind: KindRef): Lister<L>;
}

export interface ReconcileContext<X = undefined> extends MapContext {
  readonly client: Client;
  readonly clock: Clock;
  readonly events: EventRecorder;
  /**
   * What `RunOptions.context` was given: the handles of systems outside Kubernetes this controller talks to
   * (a registry client, a host agent; in the simulator, external-state handles). `undefined` when none.
   */
  readonly context: X;
}

/**
 * A controller over primary kind `T`. `X` is the type of `RunOptions.context`, the handles of outside systems its
 * reconciler uses (`ctx.context`); `undefined` for a controller that talks only to the API server.
 */
export interface ControllerSpec<T extends KubeObject = KubeObject, X = undefined> {
  name: string;
  for: Source;
  owns?: readonly Source[];
  watches?: readonly WatchSource[];
  /** Gets the primary object as cached (deep-frozen); returns what to do next. */
  reconcile(object: T, ctx: ReconcileContext<X>): Promise<Action> | Action;
  /** Decides what a thrown error leads to; `undefined` means the default: retry through the rate limiter. */
  errorPolicy?(error: unknown, object: T, ctx: ReconcileContext<X>): Action | undefined;
  /** Workers reconciling different keys at once. Default 1. */
  maxConcurrentReconciles?: number;
  /** Every object is reconciled again this often. Default 10 hours (controller-runtime's SyncPeriod); 0 = never. */
  resyncMs?: number;
  /** Default 5 ms doubling to 1000 s. */
  rateLimiter?: ExponentialRateLimiterOptions;
}

/** A validated, defaulted controller description. */
export interface Controller<T extends KubeObject = KubeObject, X = undefined>
  extends Readonly<Required<Omit<ControllerSpec<T, X>, "errorPolicy">>> {
  readonly errorPolicy: ControllerSpec<T, X>["errorPolicy"];
}

/** Workers a controller may run at once. */
export const maxConcurrentReconcilesMax = 1024;

export function defineController<T extends KubeObject = KubeObject, X = undefined>(spec: ControllerSpec<T, X>): Controller<T, X> {
  assert(spec.name.length > 0, "controller-named");
  assert(spec.for.kind.length > 0, "controller-for-kind-named");
  const maxConcurrentReconciles = spec.maxConcurrentReconciles ?? 1;
  assert(Number.isInteger(maxConcurrentReconciles), "controller-concurrency-integer");
  assert(maxConcurrentReconciles >= 1 && maxConcurrentReconciles <= maxConcurrentReconcilesMax, "controller-concurrency-in-range");
  const resyncMs = spec.resyncMs ?? 10 * 60 * 60 * 1000;
  assert(resyncMs >= 0, "controller-resync-not-negative");
  return Object.freeze({
    name: spec.name,
    for: spec.for,
    owns: spec.owns ?? [],
    watches: spec.watches ?? [],
    reconcile: spec.reconcile,
    errorPolicy: spec.errorPolicy,
    maxConcurrentReconciles,
    resyncMs,
    rateLimiter: spec.rateLimiter ?? {},
  });
}

export interface RunOptionsBase {
  client: Client;
  clock: Clock;
  log?: Log;
  /**
   * When given, workers run only while this candidate holds the Lease. Losing it ends the run as a real
   * controller process ends: `done` rejects with a `ProcessExit` (exit code 1), so the process (or the
   * simulator's actor) exits and is restarted, and the new incarnation campaigns again with empty caches.
   */
  leaderElection?: LeaderElectionConfig;
}

/**
 * How to run a controller. `context` (required when the controller's `X` does not admit `undefined`) is handed
 * to every reconcile as `ctx.context`: on a real cluster the clients of outside systems, in the simulator the
 * actor's external-state handles, so one reconciler runs in both.
 */
export type RunOptions<X = undefined> = RunOptionsBase & (undefined extends X ? { context?: X } : { context: X });

/** Why `done` resolved: only a `stop()` ends a run normally (a lost lease rejects with a `ProcessExit`). */
export type StopReason = "stopped";

export interface ControllerHandle {
  /** Stops informers and workers (in-flight reconciles finish). Idempotent. */
  stop(): void;
  /**
   * Resolves when `stop()` has stopped everything. Rejects with a `ProcessExit` when the controller lost its
   * leader-election lease (the process must exit and be restarted), or with the error of a programmer error.
   */
  readonly done: Promise<StopReason>;
  /** Resolves once every informer has listed (or when stopped first). */
  waitForSync(): Promise<void>;
  isLeader(): boolean;
  /** Reconciles finished (successfully or not), for tests and benchmarks. */
  reconcileCount(): number;
}

function sameKind(a: KindRef, b: KindRef): boolean {
  return a.kind === b.kind && parseApiVersion(a.apiVersion).group === parseApiVersion(b.apiVersion).group;
}

function sourceId(source: Source): string {
  const { apiVersion, kind, namespace, labelSelector, fieldSelector } = source;
  return JSON.stringify([apiVersion, kind, namespace ?? null, labelSelector ?? null, fieldSelector ?? null]);
}

export function runController<T extends KubeObject, X = undefined>(controller: Controller<T, X>, options: RunOptions<X>): ControllerHandle {
  return new ControllerRun<T, X>(controller, options).handle();
}

class ControllerRun<T extends KubeObject, X> {
  private readonly log: Log;
  private readonly queue: WorkQueue<string>;
  private readonly informers = new Map<string, Informer>();
  private readonly primary: Informer<T>;
  private readonly ctx: ReconcileContext<X>;
  private readonly mapContext: MapContext;
  private readonly elector: LeaderElector | undefined;
  private stopped = false;
  private leaseLost = false;
  private fatal: { error: unknown } | undefined;
  private reconciles = 0;
  private readonly done: Promise<StopReason>;

  constructor(
    private readonly controller: Controller<T, X>,
    private readonly options: RunOptions<X>,
  ) {
    this.log = options.log ?? silentLog;
    const rateLimiter = exponentialRateLimiter<string>(controller.rateLimiter);
    this.queue = new WorkQueue<string>({ clock: options.clock, rateLimiter });
    this.primary = this.informerFor(controller.for, controller.resyncMs) as Informer<T>;
    // Every informer exists before any handler is added: a mapping may read any declared cache from its first event.
    for (const source of controller.owns) this.informerFor(source, 0);
    for (const source of controller.watches) this.informerFor(source, 0);
    this.mapContext = Object.freeze({
      controllerName: controller.name,
      log: this.log,
      lister: <L extends KubeObject>(kind: KindRef) => this.listerFor<L>(kind),
    });
    this.primary.addHandler(this.primaryHandler());
    for (const source of controller.owns) this.informerFor(source, 0).addHandler(this.ownedHandler());
    for (const source of controller.watches) this.informerFor(source, 0).addHandler(this.mappedHandler(source));
    const events = createEventRecorder({ client: options.client, clock: options.clock, component: controller.name, log: this.log });
    this.ctx = Object.freeze({
      ...this.mapContext,
      client: options.client,
      clock: options.clock,
      events,
      context: options.context as X,
    });
    this.elector =
      options.leaderElection === undefined
        ? undefined
        : new LeaderElector({ ...options.leaderElection, client: options.client, clock: options.clock, log: this.log });
    this.done = this.run();
    // The handle's `done` is the place errors surface; this keeps an unobserved crash from going unhandled twice.
    this.done.catch(() => {});
  }

  handle(): ControllerHandle {
    return {
      stop: () => this.stop(),
      done: this.done,
      waitForSync: () => Promise.all([...this.informers.values()].map((i) => i.waitForSync())).then(() => {}),
      isLeader: () => (this.elector === undefined ? !this.stopped : this.elector.isLeader()),
      reconcileCount: () => this.reconciles,
    };
  }

  private informerFor(source: Source, resyncMs: number): Informer {
    const id = sourceId(source);
    const existing = this.informers.get(id);
    if (existing !== undefined) return existing;
    const informer = new Informer({
      client: this.options.client,
      clock: this.options.clock,
      kind: { apiVersion: source.apiVersion, kind: source.kind },
      ...(source.namespace === undefined ? {} : { namespace: source.namespace }),
      ...(source.labelSelector === undefined ? {} : { labelSelector: source.labelSelector }),
      ...(source.fieldSelector === undefined ? {} : { fieldSelector: source.fieldSelector }),
      ...(source.indexers === undefined ? {} : { indexers: source.indexers }),
      resyncMs,
      log: this.log,
    });
    this.informers.set(id, informer);
    return informer;
  }

  /** The first cache of `kind` in declaration order (`for`, then `owns`, then `watches`). */
  private listerFor<L extends KubeObject>(kind: KindRef): Lister<L> {
    for (const informer of this.informers.values()) {
      if (sameKind(informer.kind, kind)) return informer.lister as unknown as Lister<L>;
    }
    // Asking for an undeclared kind is a mistake in the controller, not an operating error: it must not be
    // retried through the rate limiter, so it is an AssertionError, worded for the author.
    const declared = [...this.informers.values()].map((i) => `${i.kind.apiVersion}/${i.kind.kind}`);
    const error = new AssertionError("controller-lister-only-for-declared-kinds");
    error.message =
      `controller ${this.controller.name}: no cache of ${kind.apiVersion}/${kind.kind}; lister() serves only ` +
      `the kinds declared in for, owns or watches (${[...new Set(declared)].join(", ")})`;
    throw error;
  }

  private primaryHandler(): EventHandler<T> {
    const enqueue = (object: KubeObject) => this.queue.add(keyOf(object.metadata));
    return { add: enqueue, update: (_old, object) => enqueue(object), delete: enqueue };
  }

  /** The key of an owned object's controller owner, if that owner is of the primary kind. */
  private ownerKey(object: KubeObject): string | undefined {
    const owner = controllerOf(object);
    if (owner === undefined || !sameKind(owner, this.controller.for)) return undefined;
    const namespace = object.metadata.namespace;
    const namespaced = keyOf({ namespace, name: owner.name });
    // A namespaced object may be owned by a cluster-scoped one; the primary cache tells which it is.
    if (this.primary.lister.get(namespaced) === undefined && this.primary.lister.get(owner.name) !== undefined) {
      return owner.name;
    }
    return namespaced;
  }

  private ownedHandler(): EventHandler {
    const enqueue = (object: KubeObject) => {
      const key = this.ownerKey(object);
      if (key !== undefined) this.queue.add(key);
    };
    // An update may move an object from one owner to another: both must look again.
    return { add: enqueue, update: (old, object) => (enqueue(old), enqueue(object)), delete: enqueue };
  }

  private mappedHandler(source: WatchSource): EventHandler {
    const enqueue = (object: KubeObject) => {
      for (const ref of source.map(object, this.mapContext)) this.queue.add(keyOf(ref));
    };
    return { add: enqueue, update: (old, object) => (enqueue(old), enqueue(object)), delete: enqueue };
  }

  private stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.queue.shutDown();
    this.elector?.stop();
    for (const informer of this.informers.values()) informer.stop();
  }

  private crash(error: unknown): void {
    this.fatal ??= { error };
    this.stop();
  }

  private async run(): Promise<StopReason> {
    const informerRuns = [...this.informers.values()].map((informer) => informer.start().catch((error) => this.crash(error)));
    const leadership = this.lead();
    await Promise.all([...informerRuns, leadership]);
    if (this.fatal !== undefined) throw this.fatal.error;
    if (this.leaseLost) {
      const lease = this.options.leaderElection?.lease;
      throw new ProcessExit(`controller ${this.controller.name}: lost the leader-election lease ${lease?.namespace}/${lease?.name}`);
    }
    return "stopped";
  }

  /** Runs workers (after acquiring the lease, when elected) until stopped or the lease is lost. */
  private async lead(): Promise<void> {
    const elector = this.elector;
    if (elector !== undefined && !(await elector.acquire())) return;
    // Renewal starts at once: a cache that takes long to sync must not let the lease lapse.
    const holding = elector === undefined ? Promise.resolve() : this.holdLease(elector);
    await Promise.all([...this.informers.values()].map((i) => i.waitForSync()));
    const workers = this.stopped ? [] : Array.from({ length: this.controller.maxConcurrentReconciles }, () => this.worker());
    if (workers.length > 0) this.log("controller: workers started", { controller: this.controller.name });
    await Promise.all([holding, ...workers]);
  }

  /** Renews until lost (then stops everything) or stopped (then frees the lease for a fast handover). */
  private async holdLease(elector: LeaderElector): Promise<void> {
    const result = await elector.hold();
    if (result === "lost") {
      // Workers stop taking keys at once; a reconcile in flight finishes, as in a process that is about to exit.
      this.leaseLost = true;
      this.stop();
      return;
    }
    // Workers may still be finishing a reconcile; the lease is freed only once they have.
    await this.queue.shutDownWithDrain();
    if (this.fatal === undefined) await elector.release();
  }

  private async worker(): Promise<void> {
    for (;;) {
      const key = await this.queue.get();
      if (key === undefined) return;
      try {
        await this.reconcileKey(key);
      } catch (error) {
        this.crash(error);
      } finally {
        this.queue.done(key);
      }
    }
  }

  private async reconcileKey(key: string): Promise<void> {
    const object = this.primary.lister.get(key);
    if (object === undefined) {
      // Gone from the cache: deleted. Level-based controllers clean up through finalizers or owner GC.
      this.queue.forget(key);
      return;
    }
    let action: Action | undefined;
    try {
      action = await this.controller.reconcile(object, this.ctx);
      assert(action !== undefined && (action.type === "requeueAfter" || action.type === "awaitChange"), "controller-reconcile-returns-action");
    } catch (error) {
      if (error instanceof AssertionError) throw error;
      action = this.onError(key, object, error);
    } finally {
      this.reconciles += 1;
    }
    if (action === undefined) return;
    this.queue.forget(key);
    if (action.type === "requeueAfter") this.queue.addAfter(key, action.ms);
  }

  /** The action after a failed reconcile; undefined when the key went through the rate limiter. */
  private onError(key: string, object: T, error: unknown): Action | undefined {
    const fields = { controller: this.controller.name, key, error: String(error) };
    if (error instanceof TerminalError) {
      this.log("reconcile failed terminally", fields);
      return Action.awaitChange();
    }
    const override = this.controller.errorPolicy?.(error, object, this.ctx);
    if (override !== undefined) return override;
    this.log("reconcile failed; retrying with backoff", { ...fields, requeues: this.queue.numRequeues(key) });
    this.queue.addRateLimited(key);
    return undefined;
  }
}
