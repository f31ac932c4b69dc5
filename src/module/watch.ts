// A watch on a module connection, as the kernel's watch faults see it (close, expire or fail it mid-stream, delay
// its next event, kill it with its incarnation). Its life is `stepWatch`'s (life.ts); this class carries out what a
// change of it calls for: the stream's close or failure, the incarnation's count of what it waits on.
import type { ApiError } from "../api/errors.ts";
import { assert } from "../api/assert.ts";
import type { Kernel, KernelWatch, ActorState } from "../sim/kernel.ts";
import type { WatchStream } from "../server/watch.ts";
import { initialWatch, stepWatch, type WatchInput, type WatchLife } from "./life.ts";

/** What a watch needs of the connection it is on. */
export interface WatchCarrier {
  /** A watch closed or failed by the server: the events not yet delivered are dropped (its end follows). */
  dropUndeliveredEvents(): void;
  /** The next watch delivery waits `ms`. */
  delayNext(ms: number): void;
}

export class WireWatch implements KernelWatch {
  readonly id: string;
  private stream: WatchStream | undefined;
  private life: WatchLife = initialWatch;

  constructor(
    private readonly carrier: WatchCarrier,
    private readonly kernel: Kernel,
    readonly owner: ActorState,
    /** The kind of the collection it follows (for per-kind time travel after it fails). */
    readonly kind: string | undefined,
  ) {
    this.id = kernel.registerWatch(owner, this);
  }

  get open(): boolean {
    return this.life.phase !== "ended";
  }

  /** Its life, read-only (tests, invariants). */
  get state(): WatchLife {
    return this.life;
  }

  private step(input: WatchInput): WatchLife {
    const before = this.life;
    this.life = stepWatch(before, input);
    return before;
  }

  /** The server opened the stream for this watch's request. */
  attach(stream: WatchStream): void {
    const { pending } = this.step({ type: "attach" });
    this.stream = stream;
    // A close-watch fault before the server opened it ends (or fails) it as soon as it is open.
    if (pending.type === "fail") queueMicrotask(() => stream.fail(pending.error as ApiError));
    else if (pending.type === "close") queueMicrotask(() => stream.close());
  }

  /** Its 200 head reached the wire: the module waits on it from now on. */
  opened(): void {
    this.step({ type: "opened" });
    this.kernel.waiting(this.owner, 1);
  }

  /** The request was answered without a stream (an error Status, an injected failure). */
  failed(): void {
    this.finished();
  }

  /** The end reached the client, or the connection went. */
  finished(): void {
    if (this.life.phase === "ended") return;
    const before = this.step({ type: "finished" });
    if (before.counted && this.kernel.isCurrent(this.owner, this.owner.life.incarnation)) this.kernel.waiting(this.owner, -1);
    this.kernel.releaseWatch(this.owner, this);
  }

  end(): void {
    if (this.life.phase === "ended") return;
    this.step({ type: "close" });
    this.carrier.dropUndeliveredEvents();
    this.stream?.close();
  }

  /**
   * Fault: the server fails the watch mid-stream, as kube-apiserver does: an ERROR event carrying the Status, then
   * the end of the response (undelivered events dropped). The client decides what follows (a relist, for client-go).
   */
  error(error: ApiError): void {
    if (this.life.phase === "ended") return;
    this.step({ type: "fail", error });
    this.carrier.dropUndeliveredEvents();
    this.stream?.fail(error);
  }

  delay(ms: number): void {
    assert(ms >= 0, "a watch is delayed by a duration");
    this.carrier.delayNext(ms);
  }

  kill(): void {
    // The kernel resets the incarnation's waiters itself.
    this.step({ type: "kill" });
    this.kernel.unregisterWatch(this.id);
  }
}
