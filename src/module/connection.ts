// One in-process connection of a module incarnation: a pair of `WireSocket`s, the client end handed to the module's
// HTTP agent, the server end to the simulation's API server (through its hub). Both sides parse real HTTP/1.1; the
// connection turns the traffic into simulator steps:
//   - a complete request arriving at the server is a `request` step (the store write happens in it);
//   - a response is a `response` step (after the request's latency), its bytes delivered to the client at once;
//   - on a watch, the response head is a `response` step and each event line (and the end) a `watch` step.
// Faults are the kernel's, applied here: a failed request is answered with a Status without reaching the server, a
// lost response is applied and then the connection reset, a stale cached read is served behind, a closed watch ends
// its chunked response, a delayed watch holds its next event. Its life (open, closed, dropped; its delivery slot) is
// `stepConnection`'s (life.ts). What the server must know of a request (its stale-read lag, its watch) is handed over
// with the request itself: a ticket the hub keeps, named in a header of the request the server reads.
import { injectedRequestError } from "../api/faults.ts";
import { assert } from "../api/assert.ts";
import type { Kernel, ActorState, Step } from "../sim/kernel.ts";
import type { TimerEntry } from "../sim/clock.ts";
import type { StepFacts, Verb } from "../sim/trace.ts";
import { completeMessageLength, describeProtobufEvent, encodeChunk, isChunked, parseChunk, parseHead, LAST_CHUNK, type Head } from "./framing.ts";
import { WireSocket } from "./socket.ts";
import { WireWatch } from "./watch.ts";
import { createdName, describeEvent, describeRequest, responseResult, splitFrames, splitLines, statusResponse } from "./describe.ts";
import { initialConnection, stepConnection, type ConnectionInput, type ConnectionLife } from "./life.ts";
import { API_PORT, TICKET_HEADER } from "./wire.ts";

/** Requests buffered on one connection before the wire refuses it: a bound, not a limit a module meets. */
const PENDING_BYTES_MAX = 64 * 1024 * 1024;

/** What a connection needs of the incarnation that opened it. */
export interface WireOwner {
  readonly name: string;
  readonly kernel: Kernel;
  readonly state: ActorState;
  readonly incarnation: number;
  /** True while the incarnation lives. */
  current(): boolean;
  /** Marks the incarnation as the code running now (the patched agents look it up). */
  enter(): void;
  /** Its code threw out of a callback the wire called. */
  threw(error: unknown): void;
  /** It sent a watch request. */
  noteWatch(): void;
}

/** What the server's hooks learn of one request, by its ticket. */
export interface RequestData {
  /** Serve this cached read (or watch) that many revisions behind (a stale-read fault). */
  readonly lagRevisions?: number;
  /** The request is this watch: the stream the server opens for it is attached to it. */
  readonly watch?: WireWatch;
}

/** What a connection needs of the hub it belongs to (the one owner of the simulation's connections). */
export interface ConnectionHost {
  /** A client port for the connection's ends (a name only). */
  port(): number;
  /** Hands the server end to the in-process API server. */
  serve(socket: WireSocket): void;
  /** Keeps a request's data until it is answered; returns the ticket the request carries. */
  ticket(data: RequestData): number;
  /** The ticket's request is answered (or its connection went). */
  settle(ticket: number): void;
  /** The connection closed or was dropped: the host stops holding it. */
  gone(connection: Connection): void;
}

type Collection = NonNullable<StepFacts["object"]>;

type Delivery =
  | { type: "bytes"; bytes: Buffer; kind: "response" | "watch"; label: string; result: string; facts: StepFacts; latency: boolean; collection?: Collection }
  | { type: "end"; kind: "watch"; label: string; facts: StepFacts; collection?: Collection }
  | { type: "reset"; label: string; facts: StepFacts; latency: boolean };

interface InFlight {
  verb: Verb;
  label: string;
  /** What it is on, for people: `ConfigMap default`. */
  ref: string;
  facts: StepFacts;
  method: string;
  watch: WireWatch | undefined;
  /** Under a lost-response fault: the answer is dropped and the connection reset. */
  lose: boolean;
  /** Its ticket with the hub, once sent. */
  ticket: number | undefined;
  /** A watch answered in protobuf (client-go's default for built-in kinds): length-prefixed frames, no lines. */
  protobuf?: boolean;
}

/** The request's bytes with its ticket named in its head (before the blank line that ends it). */
function stamped(bytes: Buffer, head: Head, ticket: number): Buffer {
  return Buffer.concat([bytes.subarray(0, head.length - 2), Buffer.from(`${TICKET_HEADER}: ${ticket}\r\n\r\n`, "latin1"), bytes.subarray(head.length)]);
}

/** Closes the HTTP parser Node attached to a socket, without any event reaching the code that used it. */
function releaseParser(socket: WireSocket): void {
  const holder = socket as unknown as { parser?: { close?(): void; socket?: unknown } | null };
  const parser = holder.parser;
  if (parser === undefined || parser === null) return;
  holder.parser = null;
  parser.socket = null;
  try {
    parser.close?.();
  } catch {
    // Already closed.
  }
}

export class Connection {
  readonly client: WireSocket;
  readonly server: WireSocket;
  private life: ConnectionLife = initialConnection;
  private fromClient: Buffer = Buffer.alloc(0);
  private fromServer: Buffer = Buffer.alloc(0);
  /** Requests sent to the server and not yet answered, in order (HTTP/1.1 answers in order). */
  private readonly inFlight: InFlight[] = [];
  /** The response being read: its head once complete, and the watch whose body is being read. */
  private responseHead: Head | undefined;
  private streaming: InFlight | undefined;
  private readonly deliveries: Delivery[] = [];
  /** The kernel's handle of the delivery step while the slot is `enqueued`. */
  private deliveryStep: Step | undefined;
  private delayNextMs = 0;
  private idleMs = 0;
  private idleTimer: TimerEntry | undefined;

  constructor(
    readonly owner: WireOwner,
    private readonly host: ConnectionHost,
  ) {
    const port = host.port();
    this.client = new WireSocket(
      {
        data: (chunk) => this.clientData(chunk),
        end: () => this.server.push(null),
        destroyed: () => this.close(),
        idleTimeout: (ms) => this.armIdle(ms),
      },
      { local: port, remote: API_PORT },
    );
    this.server = new WireSocket({ data: (chunk) => this.serverData(chunk), end: () => this.serverEnd(), destroyed: () => this.serverEnd() }, { local: API_PORT, remote: port });
    host.serve(this.server);
  }

  /** Its life, read-only (tests, invariants). */
  get state(): ConnectionLife {
    return this.life;
  }

  private get closed(): boolean {
    return this.life.phase !== "open";
  }

  private step(input: ConnectionInput): void {
    this.life = stepConnection(this.life, input);
    assert((this.life.delivery === "enqueued") === (this.deliveryStep !== undefined), "the delivery slot and the kernel's step agree");
  }

  // ---- Client to server ------------------------------------------------------------------------------

  private clientData(chunk: Buffer): void {
    if (this.closed || !this.owner.current()) return;
    this.fromClient = this.fromClient.length === 0 ? chunk : Buffer.concat([this.fromClient, chunk]);
    if (this.fromClient.length > PENDING_BYTES_MAX) {
      this.owner.kernel.fail({ status: "sim-error", actor: this.owner.name, message: `module ${this.owner.name} sent a request over ${PENDING_BYTES_MAX} bytes` });
      return;
    }
    for (;;) {
      const head = parseHead(this.fromClient);
      if (head === undefined) return;
      const length = completeMessageLength(this.fromClient, head, false);
      if (length === undefined) return;
      const bytes = this.fromClient.subarray(0, length);
      this.fromClient = this.fromClient.subarray(length);
      this.request(head, Buffer.from(bytes));
    }
  }

  /** A complete request: a step that hands it to the server (or answers it with an injected fault). */
  private request(head: Head, bytes: Buffer): void {
    const { kernel, state } = this.owner;
    const [method = "GET", target = "/"] = head.firstLine.split(" ");
    const described = describeRequest(kernel, method, target);
    if (described.verb === "create" && described.object !== undefined && described.object.name === undefined) {
      const name = createdName(head, bytes);
      if (name !== undefined) {
        described.object.name = name;
        described.ref = `${described.ref}/${name}`;
      }
    }
    const facts: StepFacts = { verb: described.verb, access: described.write ? "write" : "read", requestSeq: kernel.nextRequestSeq() };
    if (described.object !== undefined) facts.object = described.object;
    if (described.cached) facts.cached = true;
    let watch: WireWatch | undefined;
    if (described.verb === "watch") {
      watch = new WireWatch(this, kernel, state, described.object?.kind);
      this.owner.noteWatch();
      facts.watchId = watch.id;
    }
    const label = watch === undefined ? `${described.verb} ${described.ref}` : `watch ${watch.id} ${described.ref}`;
    const flight: InFlight = { verb: described.verb, label, ref: described.ref, facts, method, watch, lose: false, ticket: undefined };
    const step: Omit<Step, "seq"> = { actor: state.name, kind: "request", label, ref: described.ref, facts, owner: state, run: () => this.send(flight, head, bytes, described.cached) };
    if (described.write) step.write = true;
    kernel.enqueue(step);
  }

  /** The request step. */
  private send(flight: InFlight, head: Head, bytes: Buffer, cached: boolean): string {
    if (this.closed) return "connection closed";
    this.owner.enter();
    const { kernel, state } = this.owner;
    const code = kernel.takeFailCode(state);
    if (code !== undefined) {
      const error = injectedRequestError(code, { wording: "simulator", resource: "objects", name: flight.label });
      flight.watch?.failed();
      this.deliver({ type: "bytes", bytes: statusResponse(code, error.status), kind: "response", label: flight.label, result: `${code} ${error.reason}`, facts: flight.facts, latency: true });
      return `${code} ${error.reason} (injected)`;
    }
    flight.lose = kernel.takeLoseResponse(state);
    let lagRevisions: number | undefined;
    if (cached) {
      // A time travel's catch-up hold (`catchUpMs`) is not modelled at the wire yet: the read is served back, the watch after it is current.
      const stale = kernel.takeStale(state, flight.facts.object?.kind ?? "");
      if (stale.atRevision !== undefined) lagRevisions = Math.max(0, kernel.store.revision - stale.atRevision);
      else lagRevisions = stale.lagRevisions;
    }
    const data: RequestData = { ...(lagRevisions === undefined ? {} : { lagRevisions }), ...(flight.watch === undefined ? {} : { watch: flight.watch }) };
    flight.ticket = this.host.ticket(data);
    this.inFlight.push(flight);
    this.server.push(stamped(bytes, head, flight.ticket));
    return flight.lose ? "sent (response will be lost)" : "sent";
  }

  // ---- Server to client ------------------------------------------------------------------------------

  private serverData(chunk: Buffer): void {
    if (this.closed) return;
    this.fromServer = this.fromServer.length === 0 ? chunk : Buffer.concat([this.fromServer, chunk]);
    this.frameResponses();
  }

  /** The oldest request in flight is answered: the server no longer needs its data. */
  private answered(): InFlight {
    const flight = this.inFlight.shift();
    assert(flight !== undefined, "a response answers a request in flight");
    assert(flight.ticket !== undefined, "a request in flight was sent with its ticket");
    this.host.settle(flight.ticket);
    this.responseHead = undefined;
    return flight;
  }

  private frameResponses(): void {
    for (;;) {
      if (this.streaming !== undefined) {
        if (!this.frameWatch(this.streaming)) return;
        continue;
      }
      const flight = this.inFlight[0];
      if (flight === undefined) return;
      const head = this.responseHead ?? parseHead(this.fromServer);
      if (head === undefined) return;
      this.responseHead = head;
      const status = Number(head.firstLine.split(" ")[1] ?? "0");
      if (flight.watch !== undefined && status === 200 && isChunked(head)) {
        if (!this.watchOpened(flight, head)) return;
        continue;
      }
      const length = completeMessageLength(this.fromServer, head, flight.method === "HEAD" || status === 204 || status === 304);
      if (length === undefined) return;
      const bytes = Buffer.from(this.fromServer.subarray(0, length));
      this.fromServer = this.fromServer.subarray(length);
      this.answered();
      flight.watch?.failed();
      if (flight.lose) this.deliver({ type: "reset", label: flight.label, facts: flight.facts, latency: true });
      else this.deliver({ type: "bytes", bytes, kind: "response", label: flight.label, result: responseResult(status, bytes, length - head.length), facts: flight.facts, latency: true });
    }
  }

  /** A watch's 200 head: the stream opens (or, under a lost response, the connection is reset). False to stop framing. */
  private watchOpened(flight: InFlight, head: Head): boolean {
    const headBytes = Buffer.from(this.fromServer.subarray(0, head.length));
    this.fromServer = this.fromServer.subarray(head.length);
    this.answered();
    this.streaming = flight;
    flight.protobuf = /protobuf/i.test(head.headers.get("content-type") ?? "");
    if (flight.lose) {
      this.deliver({ type: "reset", label: flight.label, facts: flight.facts, latency: true });
      return false;
    }
    this.deliver({ type: "bytes", bytes: headBytes, kind: "response", label: flight.label, result: "200 watching", facts: flight.facts, latency: true });
    flight.watch!.opened();
    return true;
  }

  /** One chunk of a watch body: each event line becomes its own delivery. Returns false while incomplete. */
  private frameWatch(flight: InFlight): boolean {
    const chunk = parseChunk(this.fromServer, 0);
    if (chunk === undefined) return false;
    this.fromServer = this.fromServer.subarray(chunk.next);
    const watch = flight.watch;
    assert(watch !== undefined, "a streamed response is a watch's");
    const facts: StepFacts = { watchId: watch.id };
    // The collection the watch follows: its deliveries do not commute with writes into it (src/sim/commute.ts).
    const collection = flight.facts.object;
    const label = `watch ${watch.id} ${flight.ref}`;
    if (chunk.last) {
      this.streaming = undefined;
      this.deliver({ type: "end", kind: "watch", label, facts, ...(collection === undefined ? {} : { collection }) });
      return true;
    }
    for (const line of flight.protobuf === true ? splitFrames(chunk.data) : splitLines(chunk.data)) {
      const result = flight.protobuf === true ? (describeProtobufEvent(line) ?? `${line.length} bytes`) : describeEvent(line);
      this.deliver({ type: "bytes", bytes: encodeChunk(line), kind: "watch", label, result, facts, latency: false, ...(collection === undefined ? {} : { collection }) });
    }
    return true;
  }

  /** The server ended the connection: the client sees the end after what is still to be delivered, in no step of its own. */
  private serverEnd(): void {
    if (this.life.serverEnded) return;
    this.step({ type: "server-end" });
    if (this.closed || !this.owner.current()) return;
    if (this.deliveries.length === 0 && this.life.delivery === "idle") this.client.push(null);
  }

  // ---- Deliveries: one step at a time per connection, in order ---------------------------------------

  private deliver(delivery: Delivery): void {
    if (this.closed || !this.owner.current()) return;
    this.deliveries.push(delivery);
    this.scheduleDelivery();
  }

  private scheduleDelivery(): void {
    if (this.life.delivery !== "idle") return;
    const next = this.deliveries[0];
    if (next === undefined) return;
    const { kernel, state } = this.owner;
    const kind = next.type === "reset" ? "response" : next.kind;
    let waitMs = next.type !== "end" && next.latency ? kernel.drawLatencyMs(state) : 0;
    if (this.delayNextMs > 0 && kind === "watch") {
      waitMs = this.delayNextMs;
      this.delayNextMs = 0;
    }
    const step: Omit<Step, "seq"> & { owner: ActorState } = { actor: state.name, kind, label: next.label, facts: next.facts, owner: state, run: () => this.deliverOne() };
    if (next.type !== "reset" && next.collection !== undefined) step.collection = next.collection;
    if (waitMs === 0) {
      this.deliveryStep = kernel.enqueue(step);
      this.step({ type: "enqueue" });
    } else {
      // A deferred step of the incarnation (a crash removes it); one that finds its connection closed does nothing.
      this.step({ type: "defer" });
      kernel.enqueueAfter(waitMs, step);
    }
  }

  /** The delivery step: the oldest delivery reaches the client. */
  private deliverOne(): string {
    this.deliveryStep = undefined;
    this.step({ type: "ran" });
    if (this.closed) return "connection closed";
    const delivery = this.deliveries.shift();
    if (delivery === undefined) return "nothing";
    this.owner.enter();
    this.touchIdle();
    let result: string;
    try {
      result = this.push(delivery);
    } catch (error) {
      this.owner.threw(error);
      result = "threw";
    }
    if (this.deliveries.length === 0 && this.life.serverEnded && !this.closed) this.client.push(null);
    this.scheduleDelivery();
    return result;
  }

  /** One delivery reaches the client end (module code runs in it). */
  private push(delivery: Delivery): string {
    switch (delivery.type) {
      case "bytes":
        this.client.push(delivery.bytes);
        return delivery.result;
      case "end": {
        this.client.push(LAST_CHUNK);
        const id = delivery.facts.watchId;
        const watch = id === undefined ? undefined : this.owner.kernel.watch(id);
        if (watch instanceof WireWatch) watch.finished();
        return "END";
      }
      case "reset":
        this.close();
        this.client.destroy(Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET", errno: -104, syscall: "read" }));
        return "connection reset (response lost)";
    }
  }

  /** Fault: the next watch delivery waits `ms`. */
  delayNext(ms: number): void {
    this.delayNextMs = Math.max(this.delayNextMs, ms);
    if (this.life.delivery === "enqueued") {
      this.owner.kernel.remove(this.deliveryStep!);
      this.deliveryStep = undefined;
      this.step({ type: "unschedule" });
      this.scheduleDelivery();
    }
  }

  /** Fault: a watch closed by the server drops the events not yet delivered (the end itself follows). */
  dropUndeliveredEvents(): void {
    for (let i = this.deliveries.length - 1; i >= 0; i--) {
      const delivery = this.deliveries[i]!;
      if (delivery.type === "bytes" && delivery.kind === "watch") this.deliveries.splice(i, 1);
    }
  }

  // ---- Idle timeout (socket.setTimeout), virtual ------------------------------------------------------

  private armIdle(ms: number): void {
    this.idleMs = ms;
    this.touchIdle();
  }

  private touchIdle(): void {
    const { kernel, state } = this.owner;
    if (this.idleTimer !== undefined) kernel.cancelTimer(state, this.idleTimer);
    this.idleTimer = undefined;
    if (this.idleMs <= 0 || this.closed || !this.owner.current()) return;
    this.idleTimer = kernel.scheduleFor(state, this.idleMs, () => {
      this.idleTimer = undefined;
      this.owner.enter();
      try {
        this.client.fireTimeout();
      } catch (error) {
        this.owner.threw(error);
      }
    }, `socket timeout ${this.idleMs}ms`);
  }

  // ---- Closing ---------------------------------------------------------------------------------------

  /** The requests in flight are over (the connection went): their tickets and watches with them. */
  private abandonFlights(): void {
    for (const flight of this.inFlight) {
      if (flight.ticket !== undefined) this.host.settle(flight.ticket);
    }
  }

  /** The client destroyed its end (or the wire reset it): the server side goes too, and nothing more is delivered. */
  close(): void {
    if (this.closed) return;
    const { kernel, state } = this.owner;
    if (this.deliveryStep !== undefined) kernel.remove(this.deliveryStep);
    this.deliveryStep = undefined;
    this.step({ type: "close" });
    this.deliveries.length = 0;
    if (this.idleTimer !== undefined && this.owner.current()) kernel.cancelTimer(state, this.idleTimer);
    this.idleTimer = undefined;
    for (const flight of this.inFlight) flight.watch?.finished();
    this.streaming?.watch?.finished();
    this.abandonFlights();
    this.server.destroy();
    this.host.gone(this);
  }

  /**
   * Crash, exit, or the end of the simulation: the server side goes; the module's end is left as it is (its code
   * never runs again). Node's HTTP parsers of both ends are closed here: an active parser is held by a global
   * handle, and with it the socket, the connection, the module instance and the whole simulation.
   */
  drop(): void {
    releaseParser(this.client);
    releaseParser(this.server);
    // An idle keep-alive socket sits in its agent's pool, and `http.globalAgent` (keep-alive since Node 19) is the
    // process's, not the incarnation's: the next incarnation's request, or the next simulation's, would take it and go
    // into a connection nobody serves (the request lost, the run depending on the one before it in the process).
    // Destroyed, the pool passes it over. Only an idle socket: no code of the module listens on it (Node removed the
    // request's listeners when it went idle), so nothing of the dead incarnation runs.
    if ((this.client as unknown as { _httpMessage?: unknown })._httpMessage === null) this.client.destroy();
    const wasOpen = !this.closed;
    this.step({ type: "drop" });
    this.host.gone(this);
    if (!wasOpen) return;
    this.deliveries.length = 0;
    this.abandonFlights();
    this.server.destroy();
  }
}
