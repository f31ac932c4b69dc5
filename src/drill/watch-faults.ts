// Unobserved states in a drill: the watch-stream faults of the shared model (`api/faults.ts`), applied by the proxy
// to the controller's watches of one resource. A real watcher that falls behind does not see every event: after a
// relist it sees each object's last state only, one informer's cache may lag another's, and a delete followed by a
// create under the same name may reach it as the create alone. The `WatchShaper` is the one owner of that state
// for a run: the streams it shapes, what it holds, and what it did (for the point's report line).
//
// It only reshapes JSON watch streams (newline-delimited events); a run with such a point asks the server for JSON
// (see `acceptJson`), which a real API server may answer with as well.
import { realClock } from "../api/clock.ts";
import type { Timer } from "../api/clock.ts";
import { drillFaultModelParams, drillFaultParam, drillFaults, faultParamError, type DrillFaultKind, type WatchStreamFaultKind } from "../api/faults.ts";

/** Lines kept back per stream at most; past it the stream is delivered as it is (never an unbounded buffer). */
const heldEventsMax = 10_000;

/** The REST resource (plural) a request path names, or undefined for a path that names none. */
export function resourceOfPath(path: string): string | undefined {
  const parts = path.split("?")[0]!.split("/").filter((p) => p.length > 0);
  let rest: string[];
  if (parts[0] === "api" && parts.length >= 2) rest = parts.slice(2);
  else if (parts[0] === "apis" && parts.length >= 3) rest = parts.slice(3);
  else return undefined;
  if (rest[0] === "watch") rest = rest.slice(1);
  if (rest[0] === "namespaces" && rest.length >= 3) rest = rest.slice(2);
  return rest[0];
}

/** The Accept header a shaped watch is sent with: JSON, so that its events can be read one by one. */
export const acceptJson = "application/json";

export interface ParsedEvent {
  type: string;
  /** `namespace/name` of the object, as an informer keys it. */
  key: string;
  object: unknown;
  text: string;
}

interface Stream {
  resource: string;
  send(text: string): void;
  partial: string;
  held: ParsedEvent[];
  closed: boolean;
}

function parseEvent(text: string): ParsedEvent | undefined {
  try {
    const parsed = JSON.parse(text) as { type?: unknown; object?: { metadata?: { namespace?: string; name?: string } } };
    if (typeof parsed.type !== "string") return undefined;
    const meta = parsed.object?.metadata;
    return { type: parsed.type, key: `${meta?.namespace ?? ""}/${meta?.name ?? ""}`, object: parsed.object, text: `${text}\n` };
  } catch {
    return undefined;
  }
}

/**
 * What a watcher that relists sees of the held events: each object's last state, as ADDED if it was new to it,
 * DELETED if it is gone, MODIFIED otherwise (a delete and a create again included); an object both created and
 * deleted within the window is never seen.
 */
export function coalesceEvents(events: readonly ParsedEvent[]): ParsedEvent[] {
  const first = new Map<string, ParsedEvent>();
  const last = new Map<string, { event: ParsedEvent; at: number }>();
  events.forEach((event, at) => {
    if (event.type !== "ADDED" && event.type !== "MODIFIED" && event.type !== "DELETED") return;
    if (!first.has(event.key)) first.set(event.key, event);
    last.set(event.key, { event, at });
  });
  const out: Array<{ event: ParsedEvent; at: number }> = [];
  for (const [key, { event, at }] of last) {
    const wasNew = first.get(key)!.type === "ADDED";
    if (event.type === "DELETED") {
      if (!wasNew) out.push({ event, at });
      continue;
    }
    const type = wasNew ? "ADDED" : "MODIFIED";
    out.push({ event: type === event.type ? event : { ...event, type, text: `${JSON.stringify({ type, object: event.object })}\n` }, at });
  }
  return out.sort((a, b) => a.at - b.at).map((o) => o.event);
}

export interface WatchShaperOptions {
  fault: DrillFaultKind;
  resource: string;
  /** Called when events start being held (true) and when nothing is held any more (false): quiet waits meanwhile. */
  onHolding(holding: boolean): void;
  /** Parameters of the fault's model kind other than the drill's (tests: shorter windows); checked against the model. */
  params?: Readonly<Record<string, number>>;
}

/** The watch-stream fault of one drill point, on the controller's watches of one resource. */
export class WatchShaper {
  readonly resource: string;
  private readonly kind: WatchStreamFaultKind;
  private readonly onHolding: (holding: boolean) => void;
  private readonly streams = new Set<Stream>();
  /** `idle` before the point, `active` from it (for coalesce and delay: until their release), `spent` after. */
  private phase: "idle" | "active" | "spent" = "idle";
  private timer: Timer | undefined;
  private holdingNow = false;
  /** delay-past-write: an event of another resource has been delivered since the point. */
  private otherDelivered = false;
  private readonly counts = { held: 0, delivered: 0, hiddenDeletes: 0, lateDeletes: 0 };
  private readonly recreateTimers = new Map<Stream, Timer>();
  private readonly params: Readonly<Record<string, number>>;

  constructor(options: WatchShaperOptions) {
    const model = drillFaults[options.fault].model;
    if (model !== "coalesce-watch" && model !== "delay-past-write" && model !== "hide-recreate") throw new Error(`drill: ${options.fault} is not a watch-stream fault`);
    this.kind = model;
    this.resource = options.resource;
    this.onHolding = options.onHolding;
    const params: Record<string, number> = {};
    for (const param of drillFaultModelParams(options.fault)) {
      const given = options.params?.[param.name];
      const error = given === undefined ? undefined : faultParamError(param, given, param.name);
      if (error !== undefined) throw new RangeError(`drill: ${options.fault}: ${error.field}: ${error.message}`);
      params[param.name] = given ?? drillFaultParam(options.fault, param.name);
    }
    this.params = params;
  }

  private param(name: string): number {
    return this.params[name]!;
  }

  /** The point is reached: the fault starts. */
  arm(): void {
    if (this.phase !== "idle") return;
    this.phase = "active";
    if (this.kind === "coalesce-watch") {
      this.timer = realClock.setTimer(this.param("windowMs"), () => this.release());
      this.updateHolding();
    } else if (this.kind === "delay-past-write") {
      this.timer = realClock.setTimer(this.param("maxDelayMs"), () => this.release());
      this.updateHolding();
    }
  }

  /** The controller sent a write request: a delay past another resource's write ends once the controller acted on it. */
  controllerWrote(): void {
    if (this.kind === "delay-past-write" && this.phase === "active" && this.otherDelivered) this.release();
  }

  /** A new watch of the controller; returns what the proxy feeds its upstream body into. */
  attach(resource: string, send: (text: string) => void): { push(chunk: Buffer): void; close(): void } {
    const stream: Stream = { resource, send, partial: "", held: [], closed: false };
    this.streams.add(stream);
    return {
      push: (chunk) => this.push(stream, chunk.toString("utf8")),
      close: () => {
        stream.closed = true;
        stream.held = [];
        this.recreateTimers.get(stream)?.cancel();
        this.recreateTimers.delete(stream);
        this.streams.delete(stream);
        this.updateHolding();
      },
    };
  }

  /** What the fault did, for the point's line. */
  describe(): string {
    const { held, delivered, hiddenDeletes, lateDeletes } = this.counts;
    if (this.phase === "idle") return `the point was never reached, so no ${this.resource} event was reshaped`;
    if (this.kind === "hide-recreate") {
      const late = lateDeletes > 0 ? `; ${lateDeletes} delete(s) with no create after them delivered ${this.param("windowMs")} ms late` : "";
      return hiddenDeletes === 0 ? `no ${this.resource} object was deleted and created again after the point, so no delete was hidden${late}` : `hid ${hiddenDeletes} ${this.resource} delete(s) followed by a create under the same name${late}`;
    }
    if (held === 0) return `no ${this.resource} event came while the fault held them, so nothing was reshaped`;
    if (this.kind === "coalesce-watch") return `held ${held} ${this.resource} event(s) for ${this.param("windowMs")} ms and delivered ${delivered}: each object's last state`;
    return `held ${held} ${this.resource} event(s) ${this.otherDelivered ? "past an event of another resource and the controller's next write" : `for ${this.param("maxDelayMs")} ms (no other resource changed)`}`;
  }

  private push(stream: Stream, text: string): void {
    const lines = (stream.partial + text).split("\n");
    stream.partial = lines.pop()!;
    for (const line of lines) {
      if (line.length === 0) continue;
      this.onLine(stream, line);
    }
  }

  private onLine(stream: Stream, line: string): void {
    const event = parseEvent(line);
    const shaped = stream.resource === this.resource && event !== undefined && event.type !== "ERROR" && stream.held.length < heldEventsMax;
    if (!shaped) {
      // An error ends the stream: whatever is held goes first. An overfull buffer is given up on.
      this.flush(stream);
      stream.send(`${line}\n`);
      if (stream.resource !== this.resource && event !== undefined && event.type !== "BOOKMARK" && this.phase === "active") this.otherDelivered = true;
      return;
    }
    if (this.phase === "active" && this.kind !== "hide-recreate") {
      if (event.type !== "BOOKMARK") this.counts.held++;
      stream.held.push(event);
      return this.updateHolding();
    }
    if (this.phase === "active" && this.kind === "hide-recreate") return this.hideRecreate(stream, event);
    stream.send(event.text);
  }

  /** Holds a delete until a create under the same name comes (then only the create goes) or the window ends. */
  private hideRecreate(stream: Stream, event: ParsedEvent): void {
    if (stream.held.length === 0 && event.type !== "DELETED") return stream.send(event.text);
    const deleted = stream.held.findIndex((e) => e.type === "DELETED" && e.key === event.key);
    if (event.type === "ADDED" && deleted >= 0) {
      stream.held.splice(deleted, 1);
      this.counts.hiddenDeletes++;
      stream.held.push(event);
      if (!stream.held.some((e) => e.type === "DELETED")) this.flush(stream);
      return this.updateHolding();
    }
    stream.held.push(event);
    if (!this.recreateTimers.has(stream)) {
      this.recreateTimers.set(
        stream,
        realClock.setTimer(this.param("windowMs"), () => {
          this.recreateTimers.delete(stream);
          this.counts.lateDeletes += stream.held.filter((e) => e.type === "DELETED").length;
          this.flush(stream);
          this.updateHolding();
        }),
      );
    }
    this.updateHolding();
  }

  private flush(stream: Stream): void {
    this.recreateTimers.get(stream)?.cancel();
    this.recreateTimers.delete(stream);
    const held = stream.held;
    stream.held = [];
    if (held.length === 0 || stream.closed) return;
    const out = this.kind === "coalesce-watch" ? coalesceEvents(held) : held;
    for (const event of out) {
      if (event.type !== "BOOKMARK") this.counts.delivered++;
      stream.send(event.text);
    }
  }

  /** Coalesce and delay end: what was held goes out, and later events pass. */
  private release(): void {
    if (this.phase !== "active") return;
    this.phase = "spent";
    this.timer?.cancel();
    this.timer = undefined;
    for (const stream of this.streams) this.flush(stream);
    this.updateHolding();
  }

  private updateHolding(): void {
    const timed = this.phase === "active" && this.kind !== "hide-recreate";
    const holding = timed || [...this.streams].some((s) => s.held.length > 0);
    if (holding === this.holdingNow) return;
    this.holdingNow = holding;
    this.onHolding(holding);
  }

  /** Ends the fault (the run is over): timers cancelled, nothing more delivered. */
  stop(): void {
    this.timer?.cancel();
    for (const timer of this.recreateTimers.values()) timer.cancel();
    this.recreateTimers.clear();
  }
}
