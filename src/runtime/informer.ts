// An informer: lists then watches one kind, keeps a cache of it, and calls event handlers.
//
// Protocol (see `informer-state.ts`): list with `resourceVersion: "0"` (what client-go's reflector asks first),
// watch from the list's revision, resume from the last revision seen after a normal close, relist at once
// after a 410 (consistently this time), relist after a capped backoff on any other error. It never stops for
// good on an operating error: only `stop()` or a programmer error (a throwing handler, a failed assertion)
// ends it.
//
// A relist is applied like client-go's DeltaFIFO `Replace`: objects that vanished are deleted (handlers get
// `delete` with the last state known), changed ones updated, new ones added, unchanged ones left alone, so
// the cache never loses or duplicates an event across reconnections.
import { AssertionError, assert } from "../api/assert.ts";
import type { Client, ListOptions, Watch } from "../api/client.ts";
import type { Clock, Timer } from "../api/clock.ts";
import type { KindRef, KubeObject, WatchEvent } from "../api/object.ts";
import { isGone } from "../api/errors.ts";
import { Cache, objectKey } from "./cache.ts";
import type { IndexFunc, Lister } from "./cache.ts";
import { backoffDefaults, step } from "./informer-state.ts";
import type { BackoffOptions, InformerEffect, InformerInput, InformerState } from "./informer-state.ts";
import { silentLog } from "./log.ts";
import type { Log } from "./log.ts";

export interface EventHandler<T extends KubeObject = KubeObject> {
  add?(object: T): void;
  /** On a periodic resync `oldObject === newObject`. */
  update?(oldObject: T, newObject: T): void;
  /** The object's last state known (from the DELETED event, or from the cache when a relist found it gone). */
  delete?(object: T): void;
}

export interface InformerSelector {
  /** Omit for all namespaces. */
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
}

export interface InformerOptions extends InformerSelector {
  client: Client;
  clock: Clock;
  kind: KindRef;
  /** Period of resyncs (every cached object delivered as `update(o, o)`). Default 0: none. */
  resyncMs?: number;
  /** Extra cache indexes. */
  indexers?: Readonly<Record<string, IndexFunc>>;
  /** Page size of lists. Default 500 (client-go's). */
  listPageSize?: number;
  /** Default `backoffDefaults`: 800 ms doubling to 30 s. */
  backoff?: Partial<BackoffOptions>;
  log?: Log;
}

/** A list is at most this many pages; more means the server keeps handing out continue tokens. */
const listPagesMax = 100_000;

/** Wraps an exception thrown by an event handler, so it is told apart from list and watch failures. */
class HandlerFailure extends Error {
  constructor(readonly original: unknown) {
    super("an informer event handler threw");
  }
}

function isProgrammerError(error: unknown): boolean {
  return error instanceof HandlerFailure || error instanceof AssertionError;
}

export class Informer<T extends KubeObject = KubeObject> {
  readonly kind: KindRef;
  private readonly options: InformerOptions;
  private readonly backoff: BackoffOptions;
  private readonly log: Log;
  private readonly cache: Cache<T>;
  private readonly handlers: Array<EventHandler<T>> = [];
  private current: InformerState = { phase: "Empty" };
  private synced = false;
  private syncWaiters: Array<() => void> = [];
  private stopped = false;
  private readonly abort = new AbortController();
  private watch: Watch<T> | undefined;
  private resyncTimer: Timer | undefined;
  private running: Promise<void> | undefined;
  /** A programmer error raised outside the loop (in a resync), rethrown by the loop. */
  private fatal: { error: unknown } | undefined;
  private selectorOptions: Readonly<Omit<ListOptions, "resourceVersion" | "limit" | "continue">> | undefined;

  constructor(options: InformerOptions) {
    assert(options.kind.kind.length > 0, "informer-kind-named");
    assert((options.resyncMs ?? 0) >= 0, "informer-resync-not-negative");
    this.options = options;
    this.kind = options.kind;
    this.backoff = { ...backoffDefaults, ...(options.backoff ?? {}) };
    this.log = options.log ?? silentLog;
    this.cache = new Cache<T>({ indexers: options.indexers ?? {} });
  }

  /** The cache, read-only. */
  get lister(): Lister<T> {
    return this.cache;
  }

  get state(): InformerState {
    return this.current;
  }

  hasSynced(): boolean {
    return this.synced;
  }

  /** Resolves once the first list is in the cache (or at once when stopped before). */
  waitForSync(): Promise<void> {
    if (this.synced || this.stopped) return Promise.resolve();
    return new Promise((resolve) => this.syncWaiters.push(resolve));
  }

  /** Registers handlers; a handler added after objects are cached gets an `add` for each of them first. */
  addHandler(handler: EventHandler<T>): () => void {
    this.handlers.push(handler);
    for (const object of this.cache.list()) handler.add?.(object);
    return () => {
      const index = this.handlers.indexOf(handler);
      if (index >= 0) this.handlers.splice(index, 1);
    };
  }

  /** Starts the loop; the promise resolves after `stop()` and rejects only on a programmer error. */
  start(): Promise<void> {
    assert(this.running === undefined, "informer-started-once");
    this.running = this.run().finally(() => this.cancelResync());
    return this.running;
  }

  /** Idempotent. */
  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.current = step(this.current, { type: "stop" }, this.backoff).state;
    this.abort.abort(new Error("informer stopped"));
    this.watch?.close();
    this.cancelResync();
    this.resolveSyncWaiters();
  }

  private async run(): Promise<void> {
    let next = step(this.current, { type: "start" }, this.backoff);
    for (;;) {
      this.current = next.state;
      if (this.stopped) return;
      const input = await this.perform(next.effect);
      if (this.fatal !== undefined) throw this.fatal.error;
      if (this.stopped || input === undefined) return;
      next = step(this.current, input, this.backoff);
    }
  }

  private async perform(effect: InformerEffect): Promise<InformerInput | undefined> {
    try {
      switch (effect.type) {
        case "list":
          return await this.listAndReplace(effect.consistent);
        case "watch":
          return await this.watchFrom(effect.revision);
        case "sleep":
          await this.options.clock.sleep(effect.ms, { signal: this.abort.signal });
          return { type: "backoffDone" };
        case "none":
          assert(false, "informer-effect-none-only-when-stopped");
      }
    } catch (error) {
      if (error instanceof HandlerFailure) throw error.original;
      if (isProgrammerError(error)) throw error;
      if (this.stopped) return undefined;
      this.log("informer request failed", { kind: this.kind.kind, effect: effect.type, error: String(error) });
      const gone = isGone(error);
      return effect.type === "list" ? { type: "listFailed", gone } : { type: "watchFailed", gone };
    }
  }

  /** The kind and selectors every list and watch of this informer asks for, built once (they never change). */
  private selector(): Readonly<Omit<ListOptions, "resourceVersion" | "limit" | "continue">> {
    if (this.selectorOptions !== undefined) return this.selectorOptions;
    const { kind, namespace, labelSelector, fieldSelector } = this.options;
    this.selectorOptions = Object.freeze({
      apiVersion: kind.apiVersion,
      kind: kind.kind,
      ...(namespace === undefined ? {} : { namespace }),
      ...(labelSelector === undefined ? {} : { labelSelector }),
      ...(fieldSelector === undefined ? {} : { fieldSelector }),
    });
    return this.selectorOptions;
  }

  private async listAndReplace(consistent: boolean): Promise<InformerInput | undefined> {
    const limit = this.options.listPageSize ?? 500;
    const items: T[] = [];
    let revision: string | undefined;
    let continueToken: string | undefined;
    for (let page = 0; page < listPagesMax; page++) {
      // A continue token carries its own snapshot; the server refuses a resourceVersion beside it.
      const at = continueToken !== undefined ? { continue: continueToken } : consistent ? {} : { resourceVersion: "0" };
      // The cache freezes what it keeps, so the client need not copy: it may share its frozen objects.
      const list = await this.options.client.list<T>({ ...this.selector(), limit, ...at, readOnly: true });
      revision ??= list.metadata.resourceVersion;
      items.push(...list.items);
      continueToken = list.metadata.continue || undefined;
      if (continueToken === undefined) break;
    }
    assert(continueToken === undefined, "informer-list-pages-bounded");
    if (this.stopped) return undefined;
    assert(revision !== undefined && revision !== "", "informer-list-has-revision");
    this.replace(items);
    this.markSynced();
    return { type: "listed", revision };
  }

  /** Applies a full list: deletes what vanished, updates what changed, adds what is new. */
  private replace(items: readonly T[]): void {
    const seen = new Set<string>();
    for (const object of items) {
      const key = objectKey(object);
      seen.add(key);
      const old = this.cache.get(key);
      if (old !== undefined && old.metadata.resourceVersion === object.metadata.resourceVersion) continue;
      this.cache.upsert(object);
      if (old === undefined) this.deliver("add", object);
      else this.deliver("update", object, old);
    }
    for (const key of this.cache.keys()) {
      if (seen.has(key)) continue;
      const old = this.cache.remove(key) as T;
      this.deliver("delete", old);
    }
    assert(this.cache.size === seen.size, "informer-cache-equals-list-after-replace");
  }

  private async watchFrom(revision: string): Promise<InformerInput | undefined> {
    const watch = this.options.client.watch<T>({ ...this.selector(), resourceVersion: revision, allowBookmarks: true, readOnly: true });
    this.watch = watch;
    // A stop between the list and this watch must not leave the watch open.
    if (this.stopped) watch.close();
    try {
      for await (const event of watch) {
        if (this.stopped) break;
        this.apply(event);
        const eventRevision = event.object.metadata.resourceVersion;
        assert(eventRevision !== undefined, "informer-event-has-revision");
        this.current = step(this.current, { type: "event", revision: eventRevision }, this.backoff).state;
      }
    } finally {
      watch.close();
      this.watch = undefined;
    }
    return this.stopped ? undefined : { type: "watchClosed" };
  }

  private apply(event: WatchEvent<T>): void {
    if (event.type === "BOOKMARK") return;
    const object = event.object;
    if (event.type === "DELETED") {
      const old = this.cache.remove(objectKey(object));
      // A delete of an object never seen (it came and went between list and watch) has nothing to undo.
      if (old !== undefined) this.deliver("delete", object);
      return;
    }
    const old = this.cache.upsert(object);
    if (old === undefined) this.deliver("add", object);
    else this.deliver("update", object, old);
  }

  private deliver(type: "add" | "update" | "delete", object: T, old?: T): void {
    for (const handler of [...this.handlers]) {
      try {
        if (type === "add") handler.add?.(object);
        else if (type === "update") handler.update?.(old as T, object);
        else handler.delete?.(object);
      } catch (error) {
        throw new HandlerFailure(error);
      }
    }
  }

  private markSynced(): void {
    if (this.synced) return;
    this.synced = true;
    this.resolveSyncWaiters();
    this.scheduleResync();
  }

  private resolveSyncWaiters(): void {
    const waiters = this.syncWaiters;
    this.syncWaiters = [];
    for (const resolve of waiters) resolve();
  }

  private scheduleResync(): void {
    const resyncMs = this.options.resyncMs ?? 0;
    if (resyncMs <= 0 || this.stopped) return;
    this.resyncTimer = this.options.clock.setTimer(resyncMs, () => {
      if (this.stopped) return;
      try {
        for (const object of this.cache.list()) this.deliver("update", object, object);
      } catch (error) {
        this.fatal = { error: error instanceof HandlerFailure ? error.original : error };
        this.stop();
        return;
      }
      this.scheduleResync();
    });
  }

  private cancelResync(): void {
    this.resyncTimer?.cancel();
    this.resyncTimer = undefined;
  }
}
