// The real wire, in process: a module's HTTP connections are pairs of `WireSocket`s, the client end handed to its
// HTTP agent, the server end to the request handling `settle serve` runs, over the simulation's store. Both sides
// parse real HTTP/1.1. The wire turns the traffic into simulator steps:
//   - a complete request arriving at the server is a `request` step (the store write happens in it);
//   - a response is a `response` step (after the request's latency), its bytes delivered to the client at once;
//   - on a watch, the response head is a `response` step and each event line (and the end) a `watch` step.
// Faults are the kernel's, applied at the wire: a failed request is answered with a Status without reaching the
// server, a lost response is applied and then the connection reset, a stale cached read is served behind, a
// closed watch ends its chunked response, a delayed watch holds its next event, a crash drops every connection.
import { injectedRequestError } from "../api/faults.ts";
import type { ApiError } from "../api/errors.ts";
import { parseRoute, requestTarget } from "../server/routes.ts";
import type { InProcessServer, InProcessServerOptions } from "../server/server.ts";
import type { WatchStream } from "../server/watch.ts";
import type { Clock } from "../api/clock.ts";
import type { IncomingMessage } from "node:http";
import type { Kernel, KernelWatch, ActorState, Step } from "../sim/kernel.ts";
import type { TimerEntry } from "../sim/clock.ts";
import type { StepFacts, Verb } from "../sim/trace.ts";
import { completeMessageLength, describeProtobufEvent, encodeChunk, isChunked, parseChunk, parseHead, protobufObject, LAST_CHUNK, type Head } from "./framing.ts";
import { WireSocket } from "./socket.ts";

/** The API server's address as the module's kubeconfig names it; nothing else is reachable. */
export const API_HOST = "kubernetes.settle.sim";
export const API_PORT = 6443;
export const API_SERVER_URL = `http://${API_HOST}:${API_PORT}`;
/** The bearer token of the module's kubeconfig. */
export const API_TOKEN = "settle-simulated-module";

/** Requests buffered on one connection before the wire refuses it: a bound, not a limit a module meets. */
const PENDING_BYTES_MAX = 64 * 1024 * 1024;

/** The simulator's in-process API server for one simulation, shared by its module actors. */
export class WireHub {
  readonly server: InProcessServer;
  /** The server end of each connection, to find the connection of a request or watch. */
  readonly byServerSocket = new WeakMap<WireSocket, Connection>();
  /** Every connection not yet closed or dropped. */
  readonly connections = new Set<Connection>();
  private nextPort = 40000;

  constructor(readonly kernel: Kernel) {
    // One simulation runs at a time per process: a new one means the others are over. Their connections go, so
    // nothing of theirs stays reachable (see `Connection.drop`).
    for (const hub of liveHubs) hub.dispose();
    liveHubs.clear();
    liveHubs.add(this);
    const inert: Clock = {
      now: () => kernel.clock.now(),
      sleep: () => new Promise<void>(() => {}),
      // The simulator's watches have neither server-side timeouts nor bookmarks: no timer of the server runs.
      setTimer: () => ({ cancel() {} }),
    };
    if (createInProcessServer === undefined) throw new Error("settle: the module wire is used before loadWire() resolved");
    this.server = createInProcessServer({
      store: kernel.store,
      clock: inert,
      token: API_TOKEN,
      onRequest: (req) => this.connectionOf(req)?.takeLag() ?? {},
      onWatch: (stream, req) => this.connectionOf(req)?.attachStream(stream),
    });
  }

  /** Drops every connection (the simulation is over). */
  dispose(): void {
    for (const connection of [...this.connections]) connection.drop();
  }

  port(): number {
    return this.nextPort++;
  }

  private connectionOf(req: IncomingMessage): Connection | undefined {
    return this.byServerSocket.get(req.socket as unknown as WireSocket);
  }
}

const liveHubs = new Set<WireHub>();

/**
 * The server's request handling, loaded when the first module actor is made (`loadWire`, awaited before any run):
 * `settle/sim` exports `moduleActor`, and a simulation without modules should not load the whole server.
 */
let createInProcessServer: ((options: InProcessServerOptions) => InProcessServer) | undefined;

export function loadWire(): Promise<void> {
  if (createInProcessServer !== undefined) return Promise.resolve();
  return import("../server/server.ts").then((server) => {
    createInProcessServer = server.createInProcessServer;
  });
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

/** What a connection needs of the module incarnation that opened it. */
export interface WireOwner {
  readonly name: string;
  readonly kernel: Kernel;
  readonly state: ActorState;
  readonly incarnation: number;
  readonly hub: WireHub;
  /** True while the incarnation lives. */
  current(): boolean;
  /** Marks the module as the code running now (the patched agents look it up). */
  enter(): void;
  /** Module code threw out of a callback the wire called. */
  threw(error: unknown): void;
  forget(connection: Connection): void;
  /** The module sent a watch request. */
  noteWatch(): void;
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
  /** A watch answered in protobuf (client-go's default for built-in kinds): length-prefixed frames, no lines. */
  protobuf?: boolean;
}

/** One in-process connection of a module incarnation. */
export class Connection {
  readonly client: WireSocket;
  readonly server: WireSocket;
  private fromClient: Buffer = Buffer.alloc(0);
  private fromServer: Buffer = Buffer.alloc(0);
  /** Requests framed and not yet answered, in order. */
  private readonly inFlight: InFlight[] = [];
  /** The response being read: its head once complete, and in a watch the offset of the next chunk. */
  private responseHead: Head | undefined;
  private streaming: InFlight | undefined;
  private readonly deliveries: Delivery[] = [];
  private deliveryStep: Step | undefined;
  /** A delivery step waiting out a latency or a delay (the kernel promotes it when due). */
  private deliveryDeferred = false;
  private delayNextMs = 0;
  private lag: { lagRevisions?: number } | undefined;
  private idleTimer: TimerEntry | undefined;
  private closed = false;
  private serverEnded = false;

  constructor(private readonly owner: WireOwner) {
    const port = owner.hub.port();
    this.client = new WireSocket(
      {
        data: (chunk) => this.clientData(chunk),
        end: () => this.server.push(null),
        destroyed: () => this.close(),
        idleTimeout: (ms) => this.armIdle(ms),
      },
      { local: port, remote: API_PORT },
    );
    this.server = new WireSocket(
      {
        data: (chunk) => this.serverData(chunk),
        end: () => this.serverEnd(),
        destroyed: () => this.serverEnd(),
      },
      { local: API_PORT, remote: port },
    );
    owner.hub.byServerSocket.set(this.server, this);
    owner.hub.connections.add(this);
    owner.hub.server.connect(this.server);
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
    const requestSeq = kernel.nextRequestSeq();
    const facts: StepFacts = { verb: described.verb, access: described.write ? "write" : "read", requestSeq };
    if (described.object !== undefined) facts.object = described.object;
    if (described.cached) facts.cached = true;
    let watch: WireWatch | undefined;
    if (described.verb === "watch") {
      watch = new WireWatch(this, kernel, state, described.object?.kind);
      this.owner.noteWatch();
      facts.watchId = watch.id;
    }
    const label = watch === undefined ? `${described.verb} ${described.ref}` : `watch ${watch.id} ${described.ref}`;
    const flight: InFlight = { verb: described.verb, label, ref: described.ref, facts, method, watch, lose: false };
    const step: Omit<Step, "seq"> = {
      actor: state.name,
      kind: "request",
      label,
      ref: described.ref,
      facts,
      owner: state,
      run: () => this.send(flight, bytes, described.cached),
    };
    if (described.write) step.write = true;
    kernel.enqueue(step);
  }

  /** The request step. */
  private send(flight: InFlight, bytes: Buffer, cached: boolean): string {
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
    if (cached) {
      // A time travel's catch-up hold (`catchUpMs`) is not modelled at the wire yet: the read is served back, the watch after it is current.
      const { lagRevisions, atRevision } = kernel.takeStale(state, flight.facts.object?.kind ?? "");
      const store = kernel.store;
      if (atRevision !== undefined) this.lag = { lagRevisions: Math.max(0, store.revision - atRevision) };
      else if (lagRevisions !== undefined) this.lag = { lagRevisions };
    }
    this.inFlight.push(flight);
    this.server.push(bytes);
    return flight.lose ? "sent (response will be lost)" : "sent";
  }

  /** The stale-read lag of the request being handled, once. */
  takeLag(): { lagRevisions?: number } {
    const lag = this.lag ?? {};
    this.lag = undefined;
    return lag;
  }

  attachStream(stream: WatchStream): void {
    const flight = this.inFlight[0];
    flight?.watch?.attach(stream);
  }

  // ---- Server to client ------------------------------------------------------------------------------

  private serverData(chunk: Buffer): void {
    if (this.closed) return;
    this.fromServer = this.fromServer.length === 0 ? chunk : Buffer.concat([this.fromServer, chunk]);
    this.frameResponses();
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
        const headBytes = Buffer.from(this.fromServer.subarray(0, head.length));
        this.fromServer = this.fromServer.subarray(head.length);
        this.responseHead = undefined;
        this.inFlight.shift();
        this.streaming = flight;
        flight.protobuf = /protobuf/i.test(head.headers.get("content-type") ?? "");
        if (flight.lose) {
          this.deliver({ type: "reset", label: flight.label, facts: flight.facts, latency: true });
          return;
        }
        this.deliver({ type: "bytes", bytes: headBytes, kind: "response", label: flight.label, result: "200 watching", facts: flight.facts, latency: true });
        flight.watch.opened();
        continue;
      }
      const length = completeMessageLength(this.fromServer, head, flight.method === "HEAD" || status === 204 || status === 304);
      if (length === undefined) return;
      const bytes = Buffer.from(this.fromServer.subarray(0, length));
      this.fromServer = this.fromServer.subarray(length);
      this.responseHead = undefined;
      this.inFlight.shift();
      flight.watch?.failed();
      if (flight.lose) this.deliver({ type: "reset", label: flight.label, facts: flight.facts, latency: true });
      else this.deliver({ type: "bytes", bytes, kind: "response", label: flight.label, result: responseResult(status, bytes, length - head.length), facts: flight.facts, latency: true });
    }
  }

  /** One chunk of a watch body: each event line becomes its own delivery. Returns false while incomplete. */
  private frameWatch(flight: InFlight): boolean {
    const chunk = parseChunk(this.fromServer, 0);
    if (chunk === undefined) return false;
    this.fromServer = this.fromServer.subarray(chunk.next);
    const watch = flight.watch!;
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
    if (this.serverEnded) return;
    this.serverEnded = true;
    if (this.closed || !this.owner.current()) return;
    if (this.deliveries.length === 0 && this.deliveryStep === undefined && !this.deliveryDeferred) this.client.push(null);
  }

  // ---- Deliveries: one step at a time per connection, in order ---------------------------------------

  private deliver(delivery: Delivery): void {
    if (this.closed || !this.owner.current()) return;
    this.deliveries.push(delivery);
    this.scheduleDelivery();
  }

  private scheduleDelivery(): void {
    if (this.deliveryStep !== undefined || this.deliveryDeferred) return;
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
    if (waitMs === 0) this.deliveryStep = kernel.enqueue(step);
    else {
      // A deferred step of the incarnation (a crash removes it); one that finds its connection closed does nothing.
      kernel.enqueueAfter(waitMs, step);
      this.deliveryDeferred = true;
    }
  }

  /** The delivery step: the oldest delivery reaches the client. */
  private deliverOne(): string {
    this.deliveryStep = undefined;
    this.deliveryDeferred = false;
    if (this.closed) return "connection closed";
    const delivery = this.deliveries.shift();
    if (delivery === undefined) return "nothing";
    this.owner.enter();
    this.touchIdle();
    let result: string;
    try {
      switch (delivery.type) {
        case "bytes":
          this.client.push(delivery.bytes);
          result = delivery.result;
          break;
        case "end":
          this.client.push(LAST_CHUNK);
          this.streamingWatchEnded(delivery.facts.watchId);
          result = "END";
          break;
        case "reset":
          this.close();
          this.client.destroy(Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET", errno: -104, syscall: "read" }));
          result = "connection reset (response lost)";
          break;
      }
    } catch (error) {
      this.owner.threw(error);
      result = "threw";
    }
    if (this.deliveries.length === 0 && this.serverEnded && !this.closed) this.client.push(null);
    this.scheduleDelivery();
    return result;
  }

  private streamingWatchEnded(id: string | undefined): void {
    const watch = id === undefined ? undefined : this.owner.kernel.watch(id);
    if (watch instanceof WireWatch) watch.finished();
  }

  /** Fault: the next watch delivery waits `ms`. */
  delayNext(ms: number): void {
    this.delayNextMs = Math.max(this.delayNextMs, ms);
    if (this.deliveryStep !== undefined) {
      this.owner.kernel.remove(this.deliveryStep);
      this.deliveryStep = undefined;
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

  private idleMs = 0;

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

  /** The client destroyed its end (or the wire reset it): the server side goes too, and nothing more is delivered. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    const { kernel, state } = this.owner;
    if (this.deliveryStep !== undefined) kernel.remove(this.deliveryStep);
    this.deliveryStep = undefined;
    this.deliveries.length = 0;
    if (this.idleTimer !== undefined && this.owner.current()) kernel.cancelTimer(state, this.idleTimer);
    this.idleTimer = undefined;
    for (const flight of this.inFlight) flight.watch?.finished();
    this.streaming?.watch?.finished();
    this.server.destroy();
    this.owner.forget(this);
    this.owner.hub.connections.delete(this);
  }

  /**
   * Crash, exit, or the end of the simulation: the server side goes; the module's end is left as it is (its code
   * never runs again). Node's HTTP parsers of both ends are closed here: an active parser is held by a global
   * handle, and with it the socket, the connection, the module instance and the whole simulation.
   */
  drop(): void {
    releaseParser(this.client);
    releaseParser(this.server);
    this.owner.hub.connections.delete(this);
    // An idle keep-alive socket sits in its agent's pool, and `http.globalAgent` (keep-alive since Node 19) is the
    // process's, not the incarnation's: the next incarnation's request, or the next simulation's, would take it and go
    // into a connection nobody serves (the request lost, the run depending on the one before it in the process).
    // Destroyed, the pool passes it over. Only an idle socket: no code of the module listens on it (Node removed the
    // request's listeners when it went idle), so nothing of the dead incarnation runs.
    if ((this.client as unknown as { _httpMessage?: unknown })._httpMessage === null) this.client.destroy();
    if (this.closed) return;
    this.closed = true;
    this.deliveries.length = 0;
    this.server.destroy();
  }
}

/** A watch on a module connection, as the kernel's watch faults see it. */
export class WireWatch implements KernelWatch {
  readonly id: string;
  private stream: WatchStream | undefined;
  private state: "requested" | "open" | "ended" = "requested";
  private closeWanted = false;
  private failWanted: ApiError | undefined;
  /** Counted among the incarnation's waiters while open: the module waits on it like an actor on a watch. */
  private counted = false;

  constructor(
    private readonly connection: Connection,
    private readonly kernel: Kernel,
    readonly owner: ActorState,
    /** The kind of the collection it follows (for per-kind time travel after it fails). */
    readonly kind: string | undefined,
  ) {
    this.id = kernel.registerWatch(owner, this);
  }

  get open(): boolean {
    return this.state !== "ended";
  }

  attach(stream: WatchStream): void {
    this.stream = stream;
    // A close-watch fault before the server opened it ends (or fails) it as soon as it is open.
    if (this.failWanted !== undefined) {
      const error = this.failWanted;
      queueMicrotask(() => stream.fail(error));
    } else if (this.closeWanted) queueMicrotask(() => stream.close());
  }

  opened(): void {
    if (this.state !== "requested") return;
    this.state = "open";
    this.counted = true;
    this.kernel.waiting(this.owner, 1);
  }

  /** The request was answered without a stream (an error Status, an injected failure). */
  failed(): void {
    this.finished();
  }

  /** The end reached the client, or the connection went. */
  finished(): void {
    if (this.state === "ended") return;
    this.state = "ended";
    if (this.counted && this.kernel.isCurrent(this.owner, this.owner.life.incarnation)) this.kernel.waiting(this.owner, -1);
    this.counted = false;
    this.kernel.releaseWatch(this.owner, this);
  }

  end(): void {
    if (this.state === "ended") return;
    this.connection.dropUndeliveredEvents();
    if (this.stream !== undefined) this.stream.close();
    else this.closeWanted = true;
  }

  /**
   * Fault: the server fails the watch mid-stream, as kube-apiserver does: an ERROR event carrying the Status, then
   * the end of the response (undelivered events dropped). The client decides what follows (a relist, for client-go).
   */
  error(error: ApiError): void {
    if (this.state === "ended") return;
    this.connection.dropUndeliveredEvents();
    if (this.stream !== undefined) this.stream.fail(error);
    else this.failWanted = error;
  }

  delay(ms: number): void {
    this.connection.delayNext(ms);
  }

  kill(): void {
    // The kernel resets the incarnation's waiters itself.
    this.state = "ended";
    this.counted = false;
    this.kernel.unregisterWatch(this.id);
  }
}

interface Described {
  verb: Verb;
  ref: string;
  write: boolean;
  cached: boolean;
  object?: { kind: string; namespace?: string; name?: string };
}

/** What a request is, for its step's label and facts: the verb, the object or collection, a cached read. */
function describeRequest(kernel: Kernel, method: string, target: string): Described {
  let pathname: string;
  let query: URLSearchParams;
  try {
    ({ pathname, query } = requestTarget(target));
    // A client that sends the token as the path prefix the server accepts for plain HTTP (client-go: src/go/).
    if (pathname.startsWith("/token/")) pathname = pathname.replace(/^\/token\/[^/]+/, "");
  } catch {
    return { verb: method === "GET" ? "get" : "write", ref: `${method} ${target}`, write: method !== "GET", cached: false };
  }
  const write = method !== "GET" && method !== "HEAD";
  let route;
  try {
    route = parseRoute(pathname);
  } catch {
    return { verb: write ? "write" : "read", ref: `${method} ${pathname}`, write, cached: false };
  }
  if (route.type !== "resource") return { verb: write ? "write" : "read", ref: `${method} ${pathname}`, write, cached: false };
  const kind = kernel.store.resourceForPlural(route.group, route.version, route.plural)?.kind ?? route.plural;
  const object: { kind: string; namespace?: string; name?: string } = { kind };
  if (route.namespace !== undefined) object.namespace = route.namespace;
  if (route.name !== undefined) object.name = route.name;
  const watch = route.watchPath || /^(1|t|true)$/i.test(query.get("watch") ?? "");
  const status = route.subresource === "status";
  const verb: Verb = watch
    ? "watch"
    : method === "POST"
      ? "create"
      : method === "PUT"
        ? status ? "updateStatus" : "update"
        : method === "PATCH"
          ? status ? "patchStatus" : "patch"
          : method === "DELETE"
            ? "delete"
            : route.name === undefined ? "list" : "get";
  const cached = (verb === "list" || verb === "watch") && query.get("resourceVersion") === "0";
  const where = route.namespace === undefined ? (route.name === undefined ? "*" : route.name) : route.name === undefined ? route.namespace : `${route.namespace}/${route.name}`;
  const ref = `${kind} ${where}${cached ? " rv=0" : ""}${route.subresource !== undefined && !status ? ` /${route.subresource}` : ""}`;
  return { verb, ref, write, cached, object };
}

/** The name (or generateName) in a create's JSON body, for its label: chunked and non-JSON bodies go unnamed. */
function createdName(head: Head, bytes: Buffer): string | undefined {
  if (!isChunked(head) && /protobuf/i.test(head.headers.get("content-type") ?? "")) {
    const object = protobufObject(bytes.subarray(head.length));
    return object?.name || object?.generateName || undefined;
  }
  if (isChunked(head) || !/json/i.test(head.headers.get("content-type") ?? "")) return undefined;
  try {
    const body = JSON.parse(bytes.subarray(head.length).toString("utf8")) as { metadata?: { name?: unknown; generateName?: unknown } };
    const name = body.metadata?.name ?? body.metadata?.generateName;
    return typeof name === "string" ? name : undefined;
  } catch {
    return undefined;
  }
}

/** An answer the server never gave: an injected failure, as a real server words it. */
function statusResponse(code: number, status: unknown): Buffer {
  const body = Buffer.from(JSON.stringify(status));
  const reasons: Record<number, string> = { 409: "Conflict", 429: "Too Many Requests", 500: "Internal Server Error", 504: "Gateway Timeout" };
  const retry = code === 429 ? "Retry-After: 1\r\n" : "";
  return Buffer.concat([Buffer.from(`HTTP/1.1 ${code} ${reasons[code] ?? "Error"}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n${retry}\r\n`, "latin1"), body]);
}

function responseResult(status: number, bytes: Buffer, bodyLength: number): string {
  if (status >= 200 && status < 300) return `${status}`;
  // The Status's reason, when the body is one.
  try {
    const text = bytes.subarray(bytes.length - bodyLength).toString("utf8");
    const reason = (JSON.parse(text) as { reason?: string }).reason;
    return reason === undefined ? `${status}` : `${status} ${reason}`;
  } catch {
    return `${status}`;
  }
}

function splitLines(data: Buffer): Buffer[] {
  const lines: Buffer[] = [];
  let start = 0;
  for (let at = data.indexOf(10); at >= 0; at = data.indexOf(10, start)) {
    lines.push(data.subarray(start, at + 1));
    start = at + 1;
  }
  if (start < data.length) lines.push(data.subarray(start));
  return lines;
}

/** The length-prefixed frames of a protobuf watch chunk (a partial frame at its end stays whole, as received). */
function splitFrames(data: Buffer): Buffer[] {
  const frames: Buffer[] = [];
  let start = 0;
  while (start + 4 <= data.length) {
    const end = start + 4 + data.readUInt32BE(start);
    if (end > data.length) break;
    frames.push(data.subarray(start, end));
    start = end;
  }
  if (start < data.length) frames.push(data.subarray(start));
  return frames;
}

/** `ADDED ConfigMap ns/a@12` for a JSON event line; the frame's size otherwise. */
function describeEvent(line: Buffer): string {
  try {
    const event = JSON.parse(line.toString("utf8")) as { type: string; object?: { kind?: string; metadata?: { namespace?: string; name?: string; resourceVersion?: string } } };
    const m = event.object?.metadata;
    const name = m?.namespace === undefined ? (m?.name ?? "") : `${m.namespace}/${m.name ?? ""}`;
    return `${event.type} ${event.object?.kind ?? ""} ${name}@${m?.resourceVersion ?? ""}`;
  } catch {
    return `${line.length} bytes`;
  }
}
