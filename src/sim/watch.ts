// A watch as the simulator serves it: a server-side queue filled by the store, delivered to the client one
// event per step (in revision order), and a client-side buffer the actor's iteration reads from.
import type { Watch } from "../api/client.ts";
import type { KubeObject, WatchEvent } from "../api/object.ts";
import type { ApiError } from "../api/errors.ts";
import { describeRef } from "../api/object.ts";
import type { StoreEvent, StoreWatcher } from "../store/types.ts";
import type { TimerEntry } from "./clock.ts";
import { cloneJson } from "../api/json.ts";
import { assert } from "../api/assert.ts";
import type { ActorState, Kernel, Step } from "./kernel.ts";
import type { StepFacts } from "./trace.ts";

type Item = { type: "event"; event: StoreEvent } | { type: "end" } | { type: "error"; error: ApiError };

interface Waiter {
  resolve(result: IteratorResult<WatchEvent<KubeObject>>): void;
  reject(error: unknown): void;
}

export class SimWatch<T extends KubeObject = KubeObject> implements Watch<T> {
  readonly id: string;
  /** Undelivered, server side. */
  private queue: Item[] = [];
  /** Delivered, not yet read by the actor. */
  private readonly buffer: Item[] = [];
  private waiter: Waiter | undefined;
  private storeWatcher: StoreWatcher | undefined;
  private delivery: Step | undefined;
  private deliveryTimer: TimerEntry | undefined;
  private delayNextMs = 0;
  /** "ended": the server ended it (normally or with an error). "closed": the client closed it. */
  private state: "open" | "ended" | "closed" = "open";
  /** The actor has read the end or the error: iteration is over. */
  private finished = false;

  constructor(
    private readonly kernel: Kernel,
    /** The actor incarnation that opened it. */
    readonly owner: ActorState,
    private readonly what: string,
    /** The collection it follows: its deliveries do not commute with writes into it (src/sim/commute.ts). */
    private readonly collection: NonNullable<StepFacts["object"]>,
    /** The actor asked for `readOnly`: it gets the store's frozen objects instead of private copies. */
    private readonly shared = false,
  ) {
    this.id = kernel.registerWatch(owner, this);
  }

  /** The kind of the collection it follows. */
  get kind(): string {
    return this.collection.kind;
  }

  /** Server side: the store accepted the watch. */
  attach(watcher: StoreWatcher): void {
    if (this.state === "open") this.storeWatcher = watcher;
    else watcher.close();
  }

  /** Server side: an event for this watch (from the store's listener or a synthetic ADDED). */
  push(event: StoreEvent): void {
    if (this.state !== "open") return;
    if (this.queue.length >= this.kernel.watchQueueMax) {
      // A real API server terminates a watcher that cannot keep up; the client resumes from its last revision.
      this.end();
      return;
    }
    const last = this.queue[this.queue.length - 1];
    assert(last === undefined || last.type !== "event" || last.event.revision <= event.revision, "a watch queues events in revision order");
    this.queue.push({ type: "event", event });
    this.scheduleDelivery();
  }

  /** Server side: the watch fails (410, an injected error). */
  error(error: ApiError): void {
    if (this.state !== "open") return;
    this.stopServer();
    this.queue.push({ type: "error", error });
    this.scheduleDelivery();
  }

  /** Server side: the watch ends normally; undelivered events are dropped (the client resumes after its last). */
  end(): void {
    if (this.state !== "open") return;
    this.stopServer();
    this.queue = [{ type: "end" }];
    this.scheduleDelivery();
  }

  /** Fault: the next delivery waits `ms` of virtual time. */
  delay(ms: number): void {
    if (this.delivery !== undefined) {
      this.kernel.remove(this.delivery);
      this.delivery = undefined;
    }
    this.delayNextMs = Math.max(this.delayNextMs, ms);
    if (this.deliveryTimer === undefined) this.scheduleDelivery();
  }

  /** Open for faults: neither ended by the server nor closed by the client. */
  get open(): boolean {
    return this.state === "open";
  }

  private stopServer(): void {
    assert(this.state === "open", "only an open watch is stopped by the server");
    this.state = "ended";
    this.kernel.unregisterWatch(this.id);
    this.storeWatcher?.close();
    this.storeWatcher = undefined;
  }

  private scheduleDelivery(): void {
    if (this.queue.length === 0 || this.delivery !== undefined || this.deliveryTimer !== undefined) return;
    const label = `watch ${this.id} ${this.what}`;
    if (this.delayNextMs > 0) {
      const ms = this.delayNextMs;
      this.delayNextMs = 0;
      this.deliveryTimer = this.kernel.scheduleFor(this.owner, ms, () => this.deliverOne(), label, "watch", { facts: { watchId: this.id }, collection: this.collection });
      return;
    }
    const facts = { watchId: this.id };
    this.delivery = this.kernel.enqueue({ actor: this.owner.name, kind: "watch", label, facts, collection: this.collection, owner: this.owner, run: () => this.deliverOne() });
  }

  /** One step: the oldest queued item reaches the client. Returns the trace result. */
  private deliverOne(): string {
    this.delivery = undefined;
    this.deliveryTimer = undefined;
    const item = this.queue.shift();
    if (item === undefined) return "nothing";
    assert(this.state !== "closed", "a closed watch delivers nothing");
    this.buffer.push(item);
    if (this.waiter !== undefined) {
      const waiter = this.waiter;
      this.waiter = undefined;
      this.kernel.waiting(this.owner, -1);
      this.consume(waiter);
    }
    this.scheduleDelivery();
    return describeItem(item);
  }

  private consume(waiter: Waiter): void {
    const item = this.buffer.shift();
    if (item === undefined) return;
    if (item.type === "event") {
      const object = (this.shared ? item.event.object : cloneJson(item.event.object)) as T;
      waiter.resolve({ value: { type: item.event.type, object }, done: false });
      return;
    }
    this.finished = true;
    this.kernel.releaseWatch(this.owner, this);
    if (item.type === "end") waiter.resolve({ value: undefined, done: true });
    else waiter.reject(item.error);
  }

  close(): void {
    if (this.state === "closed") return;
    if (this.state === "open") this.stopServer();
    this.state = "closed";
    this.queue = [];
    if (this.delivery !== undefined) this.kernel.remove(this.delivery);
    if (this.deliveryTimer !== undefined) this.kernel.cancelTimer(this.owner, this.deliveryTimer);
    this.delivery = undefined;
    this.deliveryTimer = undefined;
    this.kernel.releaseWatch(this.owner, this);
    if (this.waiter !== undefined) {
      const waiter = this.waiter;
      this.waiter = undefined;
      this.kernel.waiting(this.owner, -1);
      waiter.resolve({ value: undefined, done: true });
    }
  }

  /** Crash: everything vanishes at once; the actor's pending iteration never settles. */
  kill(): void {
    if (this.state === "open") this.stopServer();
    this.state = "closed";
    this.queue = [];
    this.waiter = undefined;
    this.kernel.unregisterWatch(this.id);
  }

  private next(): Promise<IteratorResult<WatchEvent<T>>> {
    if (this.finished || (this.state === "closed" && this.buffer.length === 0)) {
      return Promise.resolve({ value: undefined, done: true });
    }
    return new Promise((resolve, reject) => {
      const waiter: Waiter = { resolve: resolve as Waiter["resolve"], reject };
      if (this.buffer.length > 0) return this.consume(waiter);
      if (this.waiter !== undefined) return reject(new Error(`watch ${this.id}: next() called while another is pending`));
      this.waiter = waiter;
      this.kernel.waiting(this.owner, 1);
    });
  }

  [Symbol.asyncIterator](): AsyncIterator<WatchEvent<T>> {
    return {
      next: () => this.next(),
      return: () => {
        this.close();
        return Promise.resolve({ value: undefined, done: true });
      },
    };
  }
}

function describeItem(item: Item): string {
  if (item.type === "end") return "END";
  if (item.type === "error") return `${item.error.code} ${item.error.reason}`;
  const object = item.event.object;
  return `${item.event.type} ${describeRef({ kind: object.kind, namespace: object.metadata.namespace, name: object.metadata.name })}@${item.event.revision}`;
}
