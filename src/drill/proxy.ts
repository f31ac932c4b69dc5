// The drill's window on the controller: an HTTP proxy between the controller process and the API server.
// It sees every request the process makes (the process knows only the proxy's address), counts its writes,
// notices when a watch is open, and can hold a write's response while the process group is killed, so the
// write is applied but the process never learns it was. Each start of the controller talks to its own lane,
// `/incarnation/<n>`, whose requests the proxy holds until the drill promotes that lane: a process started ahead of
// its turn (the restart after a kill, started while the killed process still runs; a point's first process, started
// before its point begins) reaches the server only once its turn comes.
//
// Invariants: the promoted lane only grows (promoting lane n lets every lane up to n through); held requests and the
// requests seen are bounded; requests in flight never go below zero; the watch shaper is set once, before any lane
// is let through.
import { Agent, createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { assert } from "../api/assert.ts";
import { acceptJson, resourceOfPath, type WatchShaper } from "./watch-faults.ts";

const writeMethods = new Set(["POST", "PUT", "PATCH", "DELETE"]);
/** Requests held for lanes not promoted yet; a client waiting for its first answer sends one or a few. */
const heldRequestsMax = 1_000;

export interface WriteSeen {
  /** 1-based, counting writes the server applied (2xx answers). */
  index: number;
  method: string;
  /** The request path without the token prefix (a drill never shows the token). */
  path: string;
  status: number;
  /** `metadata.resourceVersion` of the answer, when it was JSON: the store revision of the write. */
  revision?: number;
}

/** One request of the controller, for the timeline of a drill's report. */
export interface RequestSeen {
  /** Real ms since the Unix epoch when the answer (or the fault) came. */
  atMs: number;
  /** Which start of the controller made it: 0 the first, 1 the first restart, ... */
  incarnation: number;
  method: string;
  /** Without the token prefix and the query. */
  path: string;
  query: string;
  status: number;
  watch: boolean;
  /** The applied write's number, for writes the server applied. */
  write?: number;
  /** What the drill did to it: "held, group killed", "failed 500 (injected)", ... */
  note?: string;
}

/** A fault the proxy applies to the controller's next request of a kind (only the controller's requests pass it). */
export type ProxyFault = { kind: "fail-request"; code: 409 | 500 } | { kind: "lost-response" };

const requestsSeenMax = 5_000;

/** The path as the drill shows it: the `/token/<token>` prefix the server accepts instead of a header removed. */
export function redactPath(path: string): string {
  return path.replace(/^\/token\/[^/?]+/, "");
}

export interface ProxyHooks {
  /**
   * Called when the server has answered an applied write, before the answer goes to the process. While the
   * returned promise is pending the answer is held; resolve `"drop"` to never deliver it.
   */
  onWrite?(write: WriteSeen): Promise<"deliver" | "drop"> | "deliver" | "drop";
}

/**
 * A request of the controller that is not a watch: forwarded to the server (`start`), answered or cut (`end`), or a
 * write the server answered with an error status (`refused`, just before its `end`).
 */
export type RequestActivity = "start" | "end" | "refused";

export interface DrillProxy {
  /** `http://127.0.0.1:PORT`. */
  readonly url: string;
  /** Applied writes seen so far. */
  readonly writes: WriteSeen[];
  /** Watches the process has open now. */
  readonly watchesOpen: number;
  /** Watches opened so far, ever. */
  readonly watchOpens: number;
  /** Resolves once more than `after` watches have ever been opened (default 0: the first one). */
  waitForWatch(after?: number): Promise<void>;
  setHooks(hooks: ProxyHooks): void;
  /** Requests other than watches forwarded and not yet answered (held lanes not counted). */
  readonly requestsInFlight: number;
  /** Called as each request other than a watch is forwarded, refused and ends (the drill's quiet detection). */
  setActivityHook(hook: (activity: RequestActivity, write: boolean) => void): void;
  /** The path prefix of lane `n` (`/incarnation/<n>`): its requests are held until `promote(n)`. */
  lanePrefix(n: number): string;
  /** Lets lane `n`'s held and future requests through; requests without a lane prefix always pass. */
  promote(n: number): void;
  /** Every request the controller made, in answer order (bounded). */
  readonly requests: RequestSeen[];
  /** The incarnation requests without a lane are counted to (a process's own lane counts for its requests). */
  readonly incarnation: number;
  /** Counts requests without a lane to incarnation `n` from now on (the supervisor, as it activates a process). */
  countTo(n: number): void;
  /** Arms a fault for the controller's next write. */
  armFault(fault: ProxyFault): void;
  /** Faults armed and not yet applied (no write has come since). */
  readonly faultsArmed: number;
  /** Ends the controller's open watches normally, as a server restart does; returns how many. */
  closeWatches(): number;
  /** The watch-stream fault watches are fed through, if any (`setWatchShaper`). */
  readonly watchShaper: WatchShaper | undefined;
  /**
   * A watch-stream fault (`watch-faults.ts`): watches opened from now on are asked for JSON and fed through it.
   * Set once, before any lane is let through (a watch opened before would escape it).
   */
  setWatchShaper(shaper: WatchShaper): void;
  /** Ends every connection of the processes let through so far (after a kill, nothing of it may linger); held lanes keep theirs. */
  dropConnections(): void;
  close(): Promise<void>;
}

/**
 * The path and query of a request target, split at the first `?` and taken literally, as the server reads them
 * (`new URL` would resolve dot segments and show a path other than the one the server was asked for).
 */
function splitTarget(target: string): { path: string; query: string } {
  const mark = target.indexOf("?");
  return mark < 0 ? { path: target, query: "" } : { path: target.slice(0, mark), query: target.slice(mark) };
}

/** The values Go's strconv.ParseBool reads as true, as the server reads `watch` (Python's client sends `True`). */
const goTrue = new Set(["1", "t", "T", "TRUE", "true", "True"]);

function isWatch(req: IncomingMessage): boolean {
  if (req.method !== "GET") return false;
  const { path, query } = splitTarget(req.url ?? "/");
  const flag = new URLSearchParams(query).get("watch");
  return (flag !== null && goTrue.has(flag)) || path.includes("/watch/");
}

/** Starts a proxy to `upstream` on a free loopback port. */
export async function startProxy(upstream: string, now: () => number): Promise<DrillProxy> {
  const proxy = new LaneProxy(new URL(upstream), now);
  await proxy.listen();
  return proxy;
}

/** A lane's request waiting for its lane to be promoted. */
interface Held {
  lane: number;
  req: IncomingMessage;
  res: ServerResponse;
}

/**
 * The proxy of one drill run, the only writer of its state: the lanes (promoted, held requests), the watches (open,
 * opened, waiters), the requests in flight and seen, the applied writes, the armed faults and the watch shaper.
 */
class LaneProxy implements DrillProxy {
  readonly writes: WriteSeen[] = [];
  readonly requests: RequestSeen[] = [];
  #url = "";
  #hooks: ProxyHooks = {};
  #onActivity: (activity: RequestActivity, write: boolean) => void = () => {};
  #watchesOpen = 0;
  #watchOpens = 0;
  #watchWaiters: Array<{ after: number; wake: () => void }> = [];
  readonly #openWatches = new Set<ServerResponse>();
  readonly #sockets = new Set<Socket>();
  readonly #armed: ProxyFault[] = [];
  #incarnation = 0;
  #inFlight = 0;
  // No lane is promoted at first: even lane 0 (a run's first process) waits for its turn.
  #promoted = -1;
  #shaper: WatchShaper | undefined;
  readonly #held: Held[] = [];
  // Its own keep-alive pool, destroyed on close: connections left in the global pool would keep the server's
  // close waiting for their idle timeout (seconds per drilled point).
  readonly #agent = new Agent({ keepAlive: true });
  readonly #laneOf = new WeakMap<IncomingMessage, number>();
  readonly #socketLane = new WeakMap<Socket, number>();
  readonly #server: Server;
  private readonly target: URL;
  private readonly now: () => number;

  constructor(target: URL, now: () => number) {
    this.target = target;
    this.now = now;
    this.#server = createServer((req, res) => this.#admit(req, res));
    this.#server.on("connection", (socket) => {
      this.#sockets.add(socket);
      socket.once("close", () => this.#sockets.delete(socket));
    });
  }

  async listen(): Promise<void> {
    assert(this.#url === "", "a proxy listens once");
    await new Promise<void>((resolve) => this.#server.listen(0, "127.0.0.1", resolve));
    this.#url = `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  get url(): string {
    return this.#url;
  }
  get incarnation(): number {
    return this.#incarnation;
  }
  get watchesOpen(): number {
    return this.#watchesOpen;
  }
  get watchOpens(): number {
    return this.#watchOpens;
  }
  get requestsInFlight(): number {
    return this.#inFlight;
  }
  get watchShaper(): WatchShaper | undefined {
    return this.#shaper;
  }
  get faultsArmed(): number {
    return this.#armed.length;
  }

  countTo(n: number): void {
    assert(Number.isInteger(n) && n >= 0, "an incarnation is a lane number");
    this.#incarnation = n;
  }

  waitForWatch(after = 0): Promise<void> {
    return this.#watchOpens > after ? Promise.resolve() : new Promise<void>((wake) => this.#watchWaiters.push({ after, wake }));
  }

  setHooks(hooks: ProxyHooks): void {
    this.#hooks = hooks;
  }

  setActivityHook(hook: (activity: RequestActivity, write: boolean) => void): void {
    this.#onActivity = hook;
  }

  lanePrefix(n: number): string {
    return `/incarnation/${n}`;
  }

  promote(n: number): void {
    assert(Number.isInteger(n) && n >= 0, "a lane is a whole number");
    const before = this.#promoted;
    this.#promoted = Math.max(this.#promoted, n);
    assert(this.#promoted >= before, "the promoted lane only grows");
    const ready = this.#held.filter((h) => h.lane <= this.#promoted);
    this.#held.splice(0, this.#held.length, ...this.#held.filter((h) => h.lane > this.#promoted));
    for (const h of ready) this.#forward(h.req, h.res);
  }

  setWatchShaper(shaper: WatchShaper): void {
    assert(this.#shaper === undefined, "a run has one watch shaper");
    assert(this.#promoted < 0, "the watch shaper is set before any lane is let through");
    this.#shaper = shaper;
  }

  armFault(fault: ProxyFault): void {
    this.#armed.push(fault);
  }

  closeWatches(): number {
    const open = [...this.#openWatches];
    for (const res of open) res.end();
    return open.length;
  }

  dropConnections(): void {
    // A connection that has sent no request yet has no lane: if it was the killed process's, the kernel closed it
    // with the process; if it is the pre-started one's, it must stay.
    for (const socket of this.#sockets) {
      const lane = this.#socketLane.get(socket);
      if (lane !== undefined && lane <= this.#promoted) socket.destroy();
    }
  }

  close(): Promise<void> {
    return new Promise<void>((resolve) => {
      for (const socket of this.#sockets) socket.destroy();
      this.#agent.destroy();
      this.#server.close(() => resolve());
    });
  }

  #record(req: IncomingMessage, status: number, extra: Partial<RequestSeen> = {}): void {
    const { path, query } = splitTarget(redactPath(req.url ?? "/"));
    if (this.requests.length >= requestsSeenMax) this.requests.shift();
    this.requests.push({ atMs: this.now(), incarnation: this.#laneOf.get(req) ?? this.#incarnation, method: req.method ?? "", path, query, status, watch: isWatch(req), ...extra });
    assert(this.requests.length <= requestsSeenMax, "the requests seen are bounded");
  }

  /** Counts a request other than a watch in flight until its answer closes (the drill's quiet detection). */
  #activity(req: IncomingMessage, res: ServerResponse): void {
    if (isWatch(req)) return;
    const write = writeMethods.has(req.method ?? "");
    this.#inFlight++;
    if (write) this.#shaper?.controllerWrote();
    this.#onActivity("start", write);
    res.once("close", () => {
      // An error answer: the server's own (a 409 AlreadyExists, say) or an injected one.
      if (write && res.headersSent && res.statusCode >= 400) this.#onActivity("refused", write);
      this.#inFlight--;
      assert(this.#inFlight >= 0, "requests in flight never go below zero");
      this.#onActivity("end", write);
    });
  }

  /** Strips a lane prefix; holds the request if its lane is not promoted yet. */
  #admit(req: IncomingMessage, res: ServerResponse): void {
    const lane = /^\/incarnation\/(\d+)(\/.*)$/.exec(req.url ?? "");
    if (lane !== null) {
      const n = Number(lane[1]);
      req.url = lane[2]!;
      this.#laneOf.set(req, n);
      this.#socketLane.set(req.socket, n);
      if (n > this.#promoted) {
        if (this.#held.length >= heldRequestsMax) return void res.destroy();
        this.#held.push({ lane: n, req, res });
        assert(this.#held.length <= heldRequestsMax, "held requests are bounded");
        return;
      }
    }
    this.#forward(req, res);
  }

  #forward(req: IncomingMessage, res: ServerResponse): void {
    if (res.destroyed) return;
    const watch = isWatch(req);
    const write = writeMethods.has(req.method ?? "");
    this.#activity(req, res);
    const fault = write ? this.#armed.shift() : undefined;
    if (watch && this.#shaper !== undefined) req.headers.accept = acceptJson;
    if (fault?.kind === "fail-request") return void failRequest(req, res, fault.code, (r, status, extra) => this.#record(r, status, extra));
    const { target } = this;
    const upstreamReq = httpRequest(
      { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: { ...req.headers, host: target.host }, agent: this.#agent },
      (upstreamRes) => void this.#answer(req, res, upstreamRes, watch, fault),
    );
    upstreamReq.on("error", () => res.destroy());
    req.pipe(upstreamReq);
  }

  async #answer(req: IncomingMessage, res: ServerResponse, upstreamRes: IncomingMessage, watch: boolean, fault: ProxyFault | undefined): Promise<void> {
    const status = upstreamRes.statusCode ?? 0;
    if (writeMethods.has(req.method ?? "") && status >= 200 && status < 300) return this.#answerWrite(req, res, upstreamRes, fault);
    // The fault waits for the next write the server applies.
    if (fault !== undefined) this.#armed.unshift(fault);
    this.#record(req, status);
    res.writeHead(status, upstreamRes.headers);
    if (watch && status === 200 && this.#watchOpened(req, res, upstreamRes)) return;
    upstreamRes.pipe(res);
  }

  /** An applied write: counted, then answered, held (a kill) or cut (a lost response). */
  async #answerWrite(req: IncomingMessage, res: ServerResponse, upstreamRes: IncomingMessage, fault: ProxyFault | undefined): Promise<void> {
    const status = upstreamRes.statusCode ?? 0;
    const body = await readAll(upstreamRes);
    // The answer's time, not the time the drill let it go (a kill holds it for the whole restart).
    const atMs = this.now();
    const incarnation = this.#laneOf.get(req) ?? this.#incarnation;
    const seen: WriteSeen = { index: this.writes.length + 1, method: req.method!, path: redactPath(req.url ?? ""), status };
    const revision = revisionOf(body, upstreamRes.headers["content-type"]);
    if (revision !== undefined) seen.revision = revision;
    this.writes.push(seen);
    if (fault?.kind === "lost-response") {
      this.#record(req, status, { atMs, incarnation, write: seen.index, note: "applied, response lost (injected)" });
      return void res.destroy();
    }
    const decision = (await this.#hooks.onWrite?.(seen)) ?? "deliver";
    this.#record(req, status, { atMs, incarnation, write: seen.index, ...(decision === "drop" ? { note: "applied, response held, process group killed" } : {}) });
    if (decision === "drop") return void res.destroy();
    res.writeHead(status, upstreamRes.headers);
    res.end(body);
  }

  /** A watch answered 200: counted open until it closes; true when the shaper took its stream over. */
  #watchOpened(req: IncomingMessage, res: ServerResponse, upstreamRes: IncomingMessage): boolean {
    this.#watchesOpen++;
    this.#watchOpens++;
    this.#openWatches.add(res);
    for (const waiter of this.#watchWaiters) if (this.#watchOpens > waiter.after) waiter.wake();
    this.#watchWaiters = this.#watchWaiters.filter((waiter) => this.#watchOpens <= waiter.after);
    res.once("close", () => {
      this.#watchesOpen--;
      assert(this.#watchesOpen >= 0, "open watches never go below zero");
      this.#openWatches.delete(res);
      upstreamRes.destroy();
    });
    const shaper = this.#shaper;
    const resource = resourceOfPath(redactPath(req.url ?? ""));
    if (shaper === undefined || resource === undefined || !(upstreamRes.headers["content-type"] ?? "").includes("json")) return false;
    shapeWatch(shaper, resource, upstreamRes, res);
    return true;
  }
}

/** Feeds a watch's events through the shaper instead of piping them. */
function shapeWatch(shaper: WatchShaper, resource: string, upstreamRes: IncomingMessage, res: ServerResponse): void {
  // The server sent its headers at once; so does the proxy, though the shaper may hold the first events back.
  res.flushHeaders();
  const stream = shaper.attach(resource, (text) => void (res.writableEnded ? undefined : res.write(text)));
  upstreamRes.on("data", (chunk: Buffer) => stream.push(chunk));
  upstreamRes.once("end", () => {
    stream.close();
    res.end();
  });
  upstreamRes.once("error", () => {
    stream.close();
    res.destroy();
  });
  res.once("close", () => stream.close());
}

/** Answers a write with an injected Status error instead of forwarding it: the write is not applied. */
function failRequest(req: IncomingMessage, res: ServerResponse, code: 409 | 500, record: (req: IncomingMessage, status: number, extra: Partial<RequestSeen>) => void): void {
  req.resume();
  const reason = code === 409 ? "Conflict" : "InternalError";
  const message = code === 409 ? "Operation cannot be fulfilled: the object has been modified; please apply your changes to the latest version and try again" : "Internal error occurred: injected by settle drill";
  record(req, code, { note: `failed ${code} (injected)` });
  res.writeHead(code, { "content-type": "application/json" });
  res.end(JSON.stringify({ kind: "Status", apiVersion: "v1", metadata: {}, status: "Failure", message, reason, code }));
}

function revisionOf(body: Buffer, contentType: string | undefined): number | undefined {
  if (contentType === undefined || !contentType.includes("json")) return undefined;
  try {
    const parsed = JSON.parse(body.toString("utf8")) as { metadata?: { resourceVersion?: string } };
    const revision = Number(parsed.metadata?.resourceVersion);
    return Number.isInteger(revision) && revision > 0 ? revision : undefined;
  } catch {
    return undefined;
  }
}

function readAll(stream: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    stream.on("data", (c: Buffer) => chunks.push(c));
    stream.on("end", () => resolve(Buffer.concat(chunks)));
    stream.on("error", reject);
  });
}
