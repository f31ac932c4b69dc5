// The HTTP server: authentication, routing, content negotiation, and the lifecycle (listen, GC loop, watches,
// graceful close). Every answer that is not a success is a `Status`, whatever the client sent.
import { randomBytes } from "node:crypto";
import { createServer } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { Server as HttpsServer } from "node:https";
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { AddressInfo, Server as NetServer, Socket } from "node:net";
import type { Duplex } from "node:stream";
import { assert } from "../api/assert.ts";
import type { Clock } from "../api/clock.ts";
import type { ResourceType } from "../api/resources.ts";
import { realClock } from "../api/clock.ts";
import { ApiError, badRequest, tooManyRequests } from "../api/errors.ts";
import { createServerStore } from "./admission/admission.ts";
import { allowed, forbidden, impersonated, impersonates, isMaster, serverUser, setRequestUser, Tokens } from "./auth/rbac.ts";
import type { RequestAttributes, UserInfo } from "./auth/rbac.ts";
import { Auditor } from "./audit.ts";
import type { AuditedRequest } from "./audit.ts";
import { convertedResource } from "./conversion.ts";
import { untilConverted, webhookConvertedStore } from "./crd-conversion.ts";
import type { Store } from "../store/index.ts";
import { isBuiltinKind } from "../store/index.ts";
import { aggregatedContentType, aggregatedDiscovery, apiGroupList, apiGroupOf, apiResourceList, apiVersions, openapiDoc, openapiIndex, versionInfo, wantsAggregated } from "./discovery.ts";
import { ManagedFields } from "./apply/apply.ts";
import { expiredWatchError, faultIntegerParam } from "../api/faults.ts";
import { FaultTable, parseFaultSpecs } from "./faults.ts";
import type { ArmedFault, FaultSpec, FaultVerb } from "./faults.ts";
import { GcLoop } from "./gc-loop.ts";
import { QuotaStatusLoop } from "./admission/quota.ts";
import { ensureKubernetesService } from "./bootstrap.ts";
import type { BodyDeadline } from "./http.ts";
import { acceptsJson, decodeBody, notAcceptable, prefersProtobuf, readBody, sendJson, sendStatus, statusOf } from "./http.ts";
import { kubeconfigText, writeKubeconfig } from "./auth/kubeconfig.ts";
import { boolParam, handleResource, revisionWaitMsDefault, waitForRevision } from "./resources.ts";
import type { ResourceRequest } from "./resources.ts";
import { handleEviction, handleReview, handleTokenRequest, reviewOf, reviewResourceType } from "./auth/reviews.ts";
import { handleBinding, handleServedSubresource, isServedSubresource } from "./subresources.ts";
import { parseRoute, pathNotFound, requestTarget } from "./routes.ts";
import type { ResourceRoute, Route } from "./routes.ts";
import { Tables, wantsTable } from "./encoding/table.ts";
import { polyglotListener, selfSignedCertificate } from "./auth/tls.ts";
import { clientCertificateUser, tlsServerOptions } from "./auth/client-cert.ts";
import type { ServingTls } from "./auth/client-cert.ts";
import { WatchStream } from "./watch.ts";
import { bodyTimeoutMsDefault, Connections, headerTimeoutMsDefault, idleTimeoutMsDefault, timeoutMsMax } from "./connections.ts";

export interface ServerOptions {
  /**
   * The store to serve. Default: a new store on `clock`, with the namespaces of a fresh cluster and the server's
   * defaulting and Service allocation (`createServerStore`); a store given here has them only if it was made so.
   */
  store?: Store;
  /** Time for the store's timestamps, watch timeouts, bookmarks and the GC loop. Default `realClock`. */
  clock?: Clock;
  /** Address to listen on. Default "127.0.0.1"; anything but loopback is warned about loudly. */
  host?: string;
  /** Port; 0 picks a free one. Default 0. */
  port?: number;
  /** The bearer token every request must carry. Default: 32 random bytes, hex. */
  token?: string;
  /** Largest request body. Default 3 MiB (kube-apiserver's limit). */
  bodyBytesMax?: number;
  /** Unsent bytes a watch may queue before it is cut off with 410. Default 16 MiB. */
  watchBufferBytesMax?: number;
  /** Longest watch (and the length of one without `timeoutSeconds`). Default 1800. */
  watchTimeoutSecondsMax?: number;
  /** Interval of BOOKMARK events for watches that allow them. Default 60_000, as kube-apiserver. */
  bookmarkIntervalMs?: number;
  /** Concurrent watches; more get 429. Default 10_000. */
  watchesMax?: number;
  /** Delay before the GC loop retries actions that made no progress. Default 1000. */
  gcRetryDelayMs?: number;
  /** Receives warnings and notable events, one line each. Default: standard error. */
  log?: (line: string) => void;
  /** Writes audit events of the requests its policy selects (`--audit-log-path`, audit.ts). Default none. */
  audit?: Auditor;
  /** Faults armed from the start (see `injectFaults`). Default none. */
  faults?: readonly FaultSpec[];
  /**
   * How long a read at a `resourceVersion` the store has not reached waits for it (on `clock`) before its 504 Too
   * large resource version. Default 3000, as kube-apiserver's watch cache.
   */
  revisionWaitMs?: number;
  /**
   * How long a connection may take to send the headers of its first request (from its first byte; a connection
   * that sends nothing, and a TLS handshake, get as long too) before it is closed without an answer. Default 32_000,
   * as kube-apiserver. See connections.ts.
   */
  headerTimeoutMs?: number;
  /**
   * How long a keep-alive connection may wait after an answer for the headers of its next request before it is
   * closed. Default 90_000, as kube-apiserver. A request being answered (a watch streaming) has no such deadline.
   */
  idleTimeoutMs?: number;
  /**
   * How long a request's body may take to arrive once its headers have, before the request is answered 504 Timeout
   * and its connection closed. Default 60_000, kube-apiserver's request timeout (which bounds a whole request there).
   */
  bodyTimeoutMs?: number;
  /**
   * How a long request (a server-side apply) lets other requests run between its phases. Default: until the event
   * loop's next turn (`setImmediate`), after the I/O ready by then (another connection's `/healthz`).
   */
  phasePause?: () => Promise<void>;
  /** The TLS side's certificate and client authorities (envtest's `--cert-dir`, `--client-ca-file`). Default: self-signed, no client certificates. */
  tls?: ServingTls;
}

/**
 * Hooks of a server that listens nowhere and is handed its connections (`createInProcessServer`): the simulator's
 * wire decides per request which faults apply, and learns of each watch stream so it can close or delay it.
 */
export interface InProcessHooks {
  /** The faults for one request, decided by the caller (a stale cached read). */
  onRequest?(req: IncomingMessage): { lagRevisions?: number };
  /** A watch stream opened for `req`. */
  onWatch?(stream: WatchStream, req: IncomingMessage): void;
}

export interface SettleServer {
  /** `http://host:port`; the same port also speaks TLS (`https://`, a self-signed certificate), which kubeconfigs use. */
  readonly url: string;
  readonly host: string;
  readonly port: number;
  readonly token: string;
  /** The self-signed certificate (PEM) the server's TLS side presents; `--cluster` publishes it as the cluster's CA. */
  readonly certificate: string;
  readonly store: Store;
  /** Garbage-collection actions taken so far. */
  readonly gcActions: number;
  /** Watches open now. */
  readonly watches: number;
  /**
   * Ends every open watch normally, as a real server does on restart or timeout: clients resume from the last
   * revision they saw (or relist after a 410). Returns how many were closed.
   */
  closeWatches(): number;
  /**
   * Arms faults from the simulator's fault model (also `POST /settle/faults`): request faults wait for the requests
   * they match; `close-watch` and `delay-watch` act on the matching open watches at once. Returns the armed faults.
   */
  injectFaults(specs: readonly FaultSpec[]): ArmedFault[];
  /** Disarms every request fault not yet spent; returns how many. */
  clearFaults(): number;
  /** Request faults armed and not yet spent. */
  readonly faults: readonly ArmedFault[];
  /**
   * A kubeconfig for this server: `https://` (so kubectl sends the token as a header, and `kubectl proxy` works)
   * with `insecure-skip-tls-verify`, and the token as the user's.
   */
  kubeconfig(): string;
  /** Writes the kubeconfig atomically, mode 600. */
  writeKubeconfig(path: string): void;
  /** Stops accepting requests, ends every watch, and resolves once every connection is closed. */
  close(): Promise<void>;
}

const loopbackHosts = new Set(["127.0.0.1", "::1", "localhost"]);

export function isLoopback(host: string): boolean {
  return loopbackHosts.has(host) || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

interface Resolved {
  store: Store;
  clock: Clock;
  host: string;
  port: number;
  token: string;
  bodyBytesMax: number;
  watchBufferBytesMax: number;
  watchTimeoutSecondsMax: number;
  bookmarkIntervalMs: number;
  watchesMax: number;
  gcRetryDelayMs: number;
  log: (line: string) => void;
  faults: readonly FaultSpec[];
  revisionWaitMs: number;
  headerTimeoutMs: number;
  idleTimeoutMs: number;
  bodyTimeoutMs: number;
  phasePause: () => Promise<void>;
  tls: ServingTls | undefined;
  audit: Auditor | undefined;
  /** Set for an in-process server: no listener, no TLS, no GC or quota loops (the simulator collects garbage). */
  inProcess?: InProcessHooks;
}

function resolveOptions(options: ServerOptions): Resolved {
  const clock = options.clock ?? realClock;
  const resolved: Resolved = {
    clock,
    store: options.store ?? createServerStore({ now: () => clock.now() }),
    host: options.host ?? "127.0.0.1",
    port: options.port ?? 0,
    token: options.token ?? randomBytes(32).toString("hex"),
    bodyBytesMax: options.bodyBytesMax ?? 3 * 1024 * 1024,
    watchBufferBytesMax: options.watchBufferBytesMax ?? 16 * 1024 * 1024,
    watchTimeoutSecondsMax: options.watchTimeoutSecondsMax ?? 1800,
    bookmarkIntervalMs: options.bookmarkIntervalMs ?? 60_000,
    watchesMax: options.watchesMax ?? 10_000,
    gcRetryDelayMs: options.gcRetryDelayMs ?? 1000,
    log: options.log ?? ((line) => void process.stderr.write(`${line}\n`)),
    faults: parseFaultSpecs(options.faults ?? []),
    revisionWaitMs: options.revisionWaitMs ?? revisionWaitMsDefault,
    headerTimeoutMs: options.headerTimeoutMs ?? headerTimeoutMsDefault,
    idleTimeoutMs: options.idleTimeoutMs ?? idleTimeoutMsDefault,
    bodyTimeoutMs: options.bodyTimeoutMs ?? bodyTimeoutMsDefault,
    phasePause: options.phasePause ?? nextTurn,
    tls: options.tls,
    audit: options.audit,
  };
  assert(Number.isInteger(resolved.port) && resolved.port >= 0 && resolved.port <= 65535, "port is 0..65535");
  assert(resolved.token.length >= 1 && /^[\x21-\x7e]+$/.test(resolved.token), "token is printable ASCII");
  assert(resolved.bodyBytesMax > 0, "bodyBytesMax > 0");
  assert(resolved.watchBufferBytesMax > 0, "watchBufferBytesMax > 0");
  assert(resolved.bookmarkIntervalMs > 0, "bookmarkIntervalMs > 0");
  assert(Number.isFinite(resolved.revisionWaitMs) && resolved.revisionWaitMs >= 0, "revisionWaitMs >= 0");
  assert(resolved.headerTimeoutMs > 0 && resolved.headerTimeoutMs <= timeoutMsMax, "headerTimeoutMs in 1..2^31-1");
  assert(resolved.idleTimeoutMs > 0 && resolved.idleTimeoutMs <= timeoutMsMax, "idleTimeoutMs in 1..2^31-1");
  assert(resolved.bodyTimeoutMs > 0 && resolved.bodyTimeoutMs <= timeoutMsMax, "bodyTimeoutMs in 1..2^31-1");
  return resolved;
}

function unauthorized(): ApiError {
  return new ApiError("Unauthorized", 401, "Unauthorized");
}

/** A raw `Status` for requests node's parser rejects before any handler runs (bad request line, huge headers). */
function rawStatus(socket: Socket, code: number, message: string): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const body = JSON.stringify(new ApiError("BadRequest", code, message).status);
  socket.end(`HTTP/1.1 ${code} Bad Request\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
}

/** Stands for the listener that keeps a client gone mid-response from being an unhandled 'error' event. */
function ignoreError(): void {}

/**
 * A request to a resource as its handlers see it. A class rather than an object of closures: one is made per request,
 * and its body is read once, when a handler first asks for it.
 */
class ServedRequest implements ResourceRequest {
  readonly store: Store;
  readonly route: ResourceRoute;
  readonly resource: ResourceType;
  readonly query: URLSearchParams;
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly managed: ManagedFields;
  readonly tables: Tables | undefined;
  readonly pause: (() => Promise<void>) | undefined;
  lagRevisions?: number;
  readonly #bodyBytesMax: number;
  readonly #loops: Loops;
  #body: Promise<Buffer> | undefined;

  constructor(fields: Omit<ResourceRequest, "body" | "wrote" | "lagRevisions" | "untilRevision">, bodyBytesMax: number, loops: Loops) {
    this.store = fields.store;
    this.route = fields.route;
    this.resource = fields.resource;
    this.query = fields.query;
    this.req = fields.req;
    this.res = fields.res;
    this.managed = fields.managed;
    this.tables = fields.tables;
    this.#bodyBytesMax = bodyBytesMax;
    this.#loops = loops;
    this.pause = loops.pause;
  }

  body(): Promise<Buffer> {
    this.#body ??= readBody(this.req, this.#bodyBytesMax, this.#loops.bodyDeadline);
    return this.#body;
  }

  /** After every successful write: garbage collection and quota status may have work. */
  wrote(): void {
    this.#loops.gc.kick();
    this.#loops.quotas.kick();
  }

  untilRevision(revision: number): Promise<void> {
    if (this.store.revision >= revision) return Promise.resolve();
    // A client that hangs up ends the wait: nobody is left to answer.
    const gone = new AbortController();
    const onClose = () => gone.abort();
    this.res.once("close", onClose);
    const { clock, revisionWaitMs } = this.#loops;
    return waitForRevision(this.store, clock, revision, revisionWaitMs, gone.signal).finally(() => this.res.off("close", onClose));
  }
}

/** Resolves on the event loop's next turn, after the I/O that is ready (another connection's `/healthz`). */
function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** The control-plane loops that run beside the server on its store, and the clock and wait reads at a revision use. */
interface Loops {
  gc: GcLoop;
  quotas: QuotaStatusLoop;
  clock: Clock;
  revisionWaitMs: number;
  /** How long a request body may take to arrive; none in process (no timer runs there). */
  bodyDeadline: BodyDeadline | undefined;
  /** How a long request lets others run between its phases; none in process (a request is one simulator step). */
  pause: (() => Promise<void>) | undefined;
}

class ApiServer {
  readonly #o: Resolved;
  readonly #gc: GcLoop;
  readonly #quotas: QuotaStatusLoop;
  readonly #loops: Loops;
  readonly #managed: ManagedFields;
  readonly #tables: Tables;
  readonly #faults = new FaultTable();
  readonly #routes = new RouteCache();
  readonly #watches = new Set<WatchStream>();
  readonly #http: Server;
  /** Connections and their deadlines (connections.ts); none in process. */
  readonly #connections: Connections | undefined;
  readonly #https: HttpsServer | undefined;
  /** The listener: hands each connection to #http or #https by its first byte (none in process). */
  readonly #listener: NetServer | undefined;
  /** Closes the listener's connections that have not sent a byte yet (no HTTP server knows of them). */
  readonly #closeSilent: () => void = () => {};
  /** The server's token and the service account tokens it signs (rbac.ts). */
  readonly #tokens: Tokens;
  readonly #certificate: string;
  #port = 0;

  constructor(options: Resolved) {
    this.#o = options;
    this.#quotas = new QuotaStatusLoop(options.store, options.clock);
    // What the collector deletes no longer counts against quotas.
    this.#gc = new GcLoop(options.store, options.clock, { retryDelayMs: options.gcRetryDelayMs, log: () => this.#quotas.kick() });
    // In process, the simulator's own garbage-collection steps do what the GC loop does, and no timer may run (nor
    // may a read wait for a revision: the simulation's store is never behind a client).
    this.#loops = options.inProcess === undefined
      ? { gc: this.#gc, quotas: this.#quotas, clock: options.clock, revisionWaitMs: options.revisionWaitMs, bodyDeadline: { clock: options.clock, ms: options.bodyTimeoutMs }, pause: options.phasePause }
      : { gc: inertLoop, quotas: inertLoop, clock: options.clock, revisionWaitMs: 0, bodyDeadline: undefined, pause: undefined };
    this.#tables = new Tables(options.store, options.clock);
    this.#managed = new ManagedFields(options.clock, (ref, uid) => {
      try {
        return options.store.get(ref).metadata.uid === uid;
      } catch {
        return false;
      }
    });
    this.injectFaults(options.faults);
    this.#tokens = new Tokens(options.token, options.store, () => options.clock.now());
    // Node's own keep-alive timeout is off for a listening server: connections.ts bounds idle connections, on the
    // server's clock. The in-process server keeps Node's default (5 s, sent as `Keep-Alive: timeout=5`), which its
    // clients' agents turn into a socket timer of theirs: the simulator's traces (and committed replay files) hold it.
    const keepAliveTimeout = options.inProcess === undefined ? 0 : 5_000;
    this.#http = createServer({ keepAlive: true, keepAliveTimeout }, (req, res) => void this.#handle(req, res));
    if (options.inProcess !== undefined) {
      this.#connections = undefined;
      // No Date header: Node caches its text under a real timer, so a module could read another run's instant.
      this.#http.prependListener("request", (_req: IncomingMessage, res: ServerResponse) => {
        res.sendDate = false;
      });
      this.#http.on("clientError", (error: Error & { code?: string }, socket: Socket) => {
        rawStatus(socket, error.code === "HPE_HEADER_OVERFLOW" ? 431 : 400, `malformed HTTP request: ${error.code ?? error.message}`);
      });
      this.#certificate = "";
      return;
    }
    const tls = options.tls ?? selfSignedCertificate(options.clock.now());
    this.#certificate = tls.cert;
    this.#https = createHttpsServer({ keepAlive: true, keepAliveTimeout: 0, handshakeTimeout: options.headerTimeoutMs, ...tlsServerOptions(tls) }, (req, res) => void this.#handle(req, res));
    const onClientError = (error: Error & { code?: string }, socket: Socket) => {
      rawStatus(socket, error.code === "HPE_HEADER_OVERFLOW" ? 431 : 400, `malformed HTTP request: ${error.code ?? error.message}`);
    };
    this.#http.on("clientError", onClientError);
    this.#https.on("clientError", onClientError);
    this.#connections = new Connections({ clock: options.clock, headerTimeoutMs: options.headerTimeoutMs, idleTimeoutMs: options.idleTimeoutMs });
    this.#trackConnections(this.#connections);
    // A TLS handshake that fails (a client refusing the certificate, or one too slow) only ends that connection.
    this.#https.on("tlsClientError", (_error: Error, socket: Socket) => socket.destroy());
    const polyglot = polyglotListener(this.#http, this.#https, options.clock, options.headerTimeoutMs);
    this.#listener = polyglot.listener;
    this.#closeSilent = polyglot.closeSilent;
  }

  /** In process: serves one connection (any Duplex) as if it had been accepted. */
  connect(socket: Duplex): void {
    this.#http.emit("connection", socket);
  }

  async listen(): Promise<void> {
    const listener = this.#listener;
    assert(listener !== undefined, "only a server with a listener listens");
    const { host, port, log } = this.#o;
    if (!isLoopback(host)) {
      log(`\n!!! WARNING: settle serve is listening on ${host}, not loopback: anyone who can reach this address and learns the token can change every object. !!!\n`);
    }
    await new Promise<void>((resolve, reject) => {
      listener.once("error", reject);
      listener.listen(port, host, () => {
        listener.off("error", reject);
        resolve();
      });
    });
    this.#port = (listener.address() as AddressInfo).port;
    // The slice is IPv4: a loopback, unspecified or IPv6 listening address is named by 127.0.0.1.
    ensureKubernetesService(this.#o.store, /^\d+\.\d+\.\d+\.\d+$/.test(host) && host !== "0.0.0.0" ? host : "127.0.0.1", this.#port);
    this.#gc.kick();
  }

  facade(): SettleServer {
    const self = this;
    const o = this.#o;
    const hostForUrl = o.host.includes(":") ? `[${o.host}]` : o.host;
    return {
      get url() {
        return `http://${hostForUrl}:${self.#port}`;
      },
      host: o.host,
      get port() {
        return self.#port;
      },
      token: o.token,
      certificate: this.#certificate,
      store: o.store,
      get gcActions() {
        return self.#gc.actions;
      },
      get watches() {
        return self.#watches.size;
      },
      kubeconfig: () => kubeconfigText(`https://${hostForUrl}:${self.#port}`, o.token),
      writeKubeconfig: (path) => writeKubeconfig(path, `https://${hostForUrl}:${self.#port}`, o.token),
      closeWatches: () => self.closeWatches(),
      injectFaults: (specs) => self.injectFaults(parseFaultSpecs(specs)),
      clearFaults: () => self.#faults.clear(),
      get faults() {
        return self.#faults.armed;
      },
      close: () => self.close(),
    };
  }

  injectFaults(specs: readonly FaultSpec[]): ArmedFault[] {
    const { immediate, armed } = this.#faults.arm(specs);
    for (const fault of immediate) {
      let hit = 0;
      for (const watch of [...this.#watches]) {
        if (hit >= (fault.count ?? Number.MAX_SAFE_INTEGER) || watch.closed || !FaultTable.concerns(fault, watch.target)) continue;
        if (fault.kind === "close-watch" && fault.expired === 1) watch.fail(expiredWatchError({ wording: "server", resource: watch.target.resource }));
        else if (fault.kind === "close-watch") watch.close();
        else watch.delay(fault.delayMs ?? faultIntegerParam("delay-watch", "delayMs").default);
        hit++;
      }
      fault.hits = hit;
      this.#o.log(`settle serve: fault ${fault.kind} hit ${hit} watch(es)`);
    }
    for (const fault of armed) this.#o.log(`settle serve: fault ${fault.kind} armed (id ${fault.id})`);
    return [...immediate, ...armed];
  }

  async #faultsEndpoint(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const list = () => ({ kind: "FaultList", apiVersion: "settle.dev/v1", items: this.#faults.armed });
    if (req.method === "GET") return sendJson(res, 200, list());
    if (req.method === "DELETE") return sendJson(res, 200, { kind: "FaultList", apiVersion: "settle.dev/v1", cleared: this.#faults.clear(), items: [] });
    if (req.method !== "POST") throw new ApiError("MethodNotAllowed", 405, `the server does not allow this method on /settle/faults (${req.method ?? ""})`);
    const specs = parseFaultSpecs(decodeBody(req.headers["content-type"], await readBody(req, this.#o.bodyBytesMax), "the faults"));
    return sendJson(res, 201, { kind: "FaultList", apiVersion: "settle.dev/v1", applied: this.injectFaults(specs), items: this.#faults.armed });
  }

  closeWatches(): number {
    const open = [...this.#watches];
    for (const watch of open) watch.close();
    return open.length;
  }

  async close(): Promise<void> {
    this.#gc.stop();
    this.#quotas.stop();
    const listener = this.#listener;
    const closed = new Promise<void>((resolve) => (listener === undefined ? resolve() : listener.close(() => resolve())));
    for (const watch of [...this.#watches]) watch.close();
    this.#connections?.close();
    this.#closeSilent();
    await closed;
  }

  /**
   * Connections come to #http and #https through the polyglot listener, not through a listen() of their own, so
   * Node's connection tracking (its header timeout, `closeIdleConnections`) never starts for them: `connections`
   * tracks them instead, a plain one from its first byte and a TLS one from the end of its handshake.
   */
  #trackConnections(connections: Connections): void {
    this.#http.on("connection", (socket: Socket) => connections.add(socket));
    this.#https!.on("secureConnection", (socket: Socket) => connections.add(socket));
    // One listener for every response (a response closes once): no closure per request.
    const onResponseClose = function (this: ServerResponse): void {
      connections.finished(this.req.socket);
    };
    const onRequest = (req: IncomingMessage, res: ServerResponse) => {
      connections.started(req.socket);
      res.on("close", onResponseClose);
    };
    this.#http.on("request", onRequest);
    this.#https!.on("request", onRequest);
  }

  /**
   * Who sent a request: the server's token, by `Authorization: Bearer <token>` or by the path prefix `/token/<token>`,
   * is the administrator; a service account token this server minted is that account (rbac.ts); without a token, a
   * client certificate an authority of `tls.clientCa` signed is the user it names (client-cert.ts); anything else is
   * nobody (undefined). The prefix exists because kubectl (client-go) never sends credentials to a plain-HTTP
   * server: the kubeconfig's server URL carries it, and every client joins its request paths onto that URL.
   */
  #authenticate(req: IncomingMessage, pathname: string): { path: string; user: UserInfo | undefined } {
    const match = pathname.startsWith("/token/") ? /^\/token\/([^/]+)(\/.*)?$/.exec(pathname) : null;
    if (match !== null) {
      const user = this.#tokens.user(match[1]!);
      return { path: match[2] ?? "/", user: user === serverUser ? user : undefined };
    }
    const token = bearerToken(req.headers.authorization);
    return { path: pathname, user: token === undefined ? clientCertificateUser(req) : this.#tokens.user(token) };
  }

  /** Refuses what RBAC does not allow `user` (anyone but `system:masters`) to do with this route. */
  #authorize(user: UserInfo, route: Route, path: string, query: URLSearchParams, req: IncomingMessage): void {
    if (isMaster(user)) return;
    let attributes: RequestAttributes;
    if (route.type === "resource") {
      const watch = route.watchPath || boolParam(query, "watch");
      const verb = reviewOf(route) !== undefined ? "create" : verbOf(req.method, route, watch);
      // A Namespace is in itself, as kube-apiserver reads its path: a RoleBinding in `ns` may grant reading `ns`.
      const namespace = route.namespace ?? (route.group === "" && route.plural === "namespaces" ? route.name : undefined);
      // A list or watch selecting one name by field is asked about that name, as kube-apiserver asks.
      const name = route.name ?? (verb === "list" || verb === "watch" ? selectedName(query.get("fieldSelector")) : undefined);
      attributes = { verb, resource: { group: route.group, plural: route.plural, subresource: route.subresource, namespace, name } };
    } else attributes = { verb: req.method === "HEAD" ? "get" : (req.method ?? "GET").toLowerCase(), path };
    if (!allowed(this.#o.store, user, attributes)) throw forbidden(user, attributes);
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    // A client gone mid-response must not become an unhandled 'error' event.
    res.on("error", ignoreError);
    req.on("error", ignoreError);
    const trail = this.#o.audit?.begin(req, res);
    try {
      const { pathname, query } = requestTarget(req.url ?? "/");
      const { path, user } = this.#authenticate(req, pathname);
      const route = this.#routes.get(path);
      if (route.type !== "health") {
        if (user === undefined) throw unauthorized();
        const acting = impersonates(req) ? impersonated(req, user, this.#o.store) : user;
        setRequestUser(req, acting);
        trail?.identify(audited(route, query, req, path, user, acting));
        this.#authorize(acting, route, path, query, req);
      } else trail?.identify(audited(route, query, req, path, user ?? anonymousUser, undefined));
      await this.#dispatch(route, query, req, res);
    } catch (error) {
      trail?.failed(statusOf(error).status);
      // The rest of a body too large or too slow is not read: the connection cannot carry another request.
      const code = statusOf(error).code;
      if (code === 413 || (code === 504 && !req.complete)) res.setHeader("Connection", "close");
      sendStatus(res, error, req.headers.accept);
    }
  }

  /**
   * Not async, as the handlers it leads to need not be: a request that is answered at once (a read) skips a promise
   * per layer. `#handle` awaits the answer and catches what is thrown either way.
   */
  #dispatch(route: Route, query: URLSearchParams, req: IncomingMessage, res: ServerResponse): Promise<void> | void {
    const store = this.#o.store;
    if (route.type === "resource") return this.#resource(route, query, req, res);
    if (route.type === "faults") return this.#faultsEndpoint(req, res);
    if (req.method !== "GET" && req.method !== "HEAD") throw new ApiError("MethodNotAllowed", 405, `the server does not allow this method on the requested resource (${req.method ?? ""})`);
    // kubectl asks for OpenAPI v2 in protobuf only: it must see the 404, not a 406.
    if (route.type === "openapiV2") throw pathNotFound();
    if (!acceptsJson(req.headers.accept)) throw notAcceptable();
    switch (route.type) {
      case "version":
        return sendJson(res, 200, versionInfo());
      case "health":
        res.writeHead(200, { "Content-Type": "text/plain" });
        return void res.end("ok");
      case "apiVersions":
        if (wantsAggregated(req.headers.accept)) return sendJson(res, 200, aggregatedDiscovery(store, true), aggregatedContentType);
        return sendJson(res, 200, apiVersions(`${this.#o.host}:${this.#port}`));
      case "apiGroups":
        if (wantsAggregated(req.headers.accept)) return sendJson(res, 200, aggregatedDiscovery(store, false), aggregatedContentType);
        return sendJson(res, 200, apiGroupList(store));
      case "apiGroup":
        return sendJson(res, 200, apiGroupOf(store, route.group));
      case "resourceList":
        return sendJson(res, 200, apiResourceList(store, route.group, route.version));
      case "openapiIndex":
        return sendJson(res, 200, openapiIndex(store));
      case "openapiDoc":
        return sendJson(res, 200, openapiDoc(store, route.group, route.version));
    }
  }

  #resource(route: ResourceRoute, query: URLSearchParams, req: IncomingMessage, res: ServerResponse): Promise<void> | void {
    const review = reviewOf(route);
    const stored = review === undefined ? this.#o.store.resourceForPlural(route.group, route.version, route.plural) : undefined;
    // A version served as a conversion of the stored one (autoscaling/v1 HPAs) reads and writes through its view.
    const converted = review === undefined && stored === undefined ? convertedResource(this.#o.store, route.group, route.version, route.plural) : undefined;
    const resource = stored ?? converted?.served;
    if (resource === undefined && review === undefined) throw pathNotFound();
    // A version of a custom resource its CRD converts through a webhook: its handler runs until each conversion it needs is made.
    const webhookConverted = stored === undefined ? undefined : webhookConvertedStore(this.#o.store, stored);
    const table = resource !== undefined && wantsTable(req.headers.accept);
    // Protobuf answers built-in objects, lists and watch streams; custom resources have no protobuf form.
    if (!table && !acceptsJson(req.headers.accept) && !(prefersProtobuf(req.headers.accept) && (resource === undefined || isBuiltinKind(resource)))) throw notAcceptable();
    const r = new ServedRequest(
      { store: converted?.store ?? webhookConverted ?? this.#o.store, route, resource: resource ?? reviewResourceType(review!), query, req, res, managed: this.#managed, tables: table ? this.#tables : undefined },
      this.#o.bodyBytesMax,
      this.#loops,
    );
    if (review !== undefined) return review.kind === "Binding" ? handleBinding(r, this.#o.clock) : handleReview(r, review, this.#tokens);
    if (isServedSubresource(route)) return handleServedSubresource(r, this.#o.clock);
    if (route.group === "" && route.plural === "pods" && route.subresource === "eviction" && route.name !== undefined) return handleEviction(r);
    if (route.group === "" && route.plural === "serviceaccounts" && route.subresource === "token" && route.name !== undefined) return handleTokenRequest(r, this.#o.clock, this.#tokens);
    const watch = route.watchPath || boolParam(query, "watch");
    const faults = this.#faults.onRequest({ verb: verbOf(req.method, route, watch), resource: route.plural, namespace: route.namespace, name: route.name }, query.get("resourceVersion") === "0");
    if (faults.lagRevisions !== undefined) r.lagRevisions = faults.lagRevisions;
    const decided = this.#o.inProcess?.onRequest?.(req);
    if (decided?.lagRevisions !== undefined) r.lagRevisions = decided.lagRevisions;
    if (faults.loseResponse === true) loseResponse(req, res);
    if (!watch) return webhookConverted === undefined ? handleResource(r) : untilConverted(() => handleResource(r), res);
    if (req.method !== "GET" || route.subresource !== undefined) throw new ApiError("MethodNotAllowed", 405, "watch is only allowed with GET on a collection or an item");
    if (this.#watches.size >= this.#o.watchesMax) throw tooManyRequests(`too many watches open (${this.#o.watchesMax})`);
    if (route.name !== undefined) {
      // A watch on an item is a watch on the collection with a name selector, as client-go's legacy paths meant.
      const selector = query.get("fieldSelector");
      query.set("fieldSelector", selector === null || selector === "" ? `metadata.name=${route.name}` : `${selector},metadata.name=${route.name}`);
    }
    const limits = { clock: this.#o.clock, bufferBytesMax: this.#o.watchBufferBytesMax, timeoutSecondsMax: this.#o.watchTimeoutSecondsMax, bookmarkIntervalMs: this.#o.bookmarkIntervalMs };
    const stream = new WatchStream(r, limits, (s) => this.#watches.delete(s));
    this.#watches.add(stream);
    this.#o.inProcess?.onWatch?.(stream, req);
    const opened = webhookConverted === undefined ? stream.open() : untilConverted(() => stream.open(), res);
    return opened.catch((error: unknown) => {
      this.#watches.delete(stream);
      throw error;
    });
  }
}

/**
 * The token of an `Authorization` header as kube-apiserver reads it: the scheme `Bearer` in any case, one space, the
 * token (up to the next space); undefined for any other scheme or an empty token.
 */
export function bearerToken(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const parts = header.trim().split(" ");
  if (parts.length < 2 || parts[0]!.toLowerCase() !== "bearer" || parts[1] === "") return undefined;
  return parts[1];
}

/**
 * The name a field selector requires exactly (`metadata.name=x` or `==x`, alone or among other terms), when it is one
 * that could name an object in a path; else undefined.
 */
export function selectedName(selector: string | null): string | undefined {
  if (selector === null || selector === "" || selector.includes("\\")) return undefined;
  for (const term of selector.split(",")) {
    const match = /^\s*metadata\.name\s*==?\s*(.*?)\s*$/.exec(term);
    if (match === null) continue;
    const name = match[1]!;
    return name === "" || name === "." || name === ".." || /[/%]/.test(name) ? undefined : name;
  }
  return undefined;
}

/** Paths whose parsed routes are kept (the cache starts afresh when full), and the longest path kept. */
const cachedRoutesMax = 4096;
const cachedPathLengthMax = 512;

/**
 * Parsed routes by request path: clients ask for the same paths again and again (an informer's item, a controller's
 * status), and parsing one costs a few microseconds. A route is frozen, as every request with that path shares it; a
 * path that does not parse is not kept (it throws each time).
 */
class RouteCache {
  readonly #byPath = new Map<string, Route>();

  get(path: string): Route {
    let route = this.#byPath.get(path);
    if (route === undefined) {
      route = Object.freeze(parseRoute(path));
      if (path.length > cachedPathLengthMax) return route;
      if (this.#byPath.size >= cachedRoutesMax) this.#byPath.clear();
      this.#byPath.set(path, route);
    }
    return route;
  }
}

/** Who a health check without credentials is, as kube-apiserver names an anonymous request. */
const anonymousUser: UserInfo = { username: "system:anonymous", groups: ["system:unauthenticated"] };

/** A request as its audit events name it: the verb, the users, and the object a resource path names. */
function audited(route: Route, query: URLSearchParams, req: IncomingMessage, path: string, user: UserInfo, acting: UserInfo | undefined): AuditedRequest {
  const impersonated = acting === undefined || acting === user ? undefined : acting;
  if (route.type !== "resource") return { verb: req.method === "HEAD" ? "get" : (req.method ?? "GET").toLowerCase(), user, impersonated, path };
  let watch = route.watchPath;
  try {
    watch ||= boolParam(query, "watch");
  } catch {
    // A malformed watch parameter fails the request later, with its own message; the event names the plain verb.
  }
  const verb = reviewOf(route) !== undefined ? "create" : verbOf(req.method, route, watch);
  const { group, version, plural, namespace, name, subresource } = route;
  return { verb, user, impersonated, path, resource: { group, version, plural, namespace, name, subresource } };
}

function verbOf(method: string | undefined, route: ResourceRoute, watch: boolean): FaultVerb {
  if (watch) return "watch";
  switch (method) {
    case "POST":
      return "create";
    case "PUT":
      return "update";
    case "PATCH":
      return "patch";
    case "DELETE":
      return route.name === undefined ? "deletecollection" : "delete";
    default:
      return route.name === undefined ? "list" : "get";
  }
}

/**
 * A lost-response fault: the request is carried out as usual, but instead of its answer the client sees the
 * connection drop, as when a response is lost on the network after the write was applied.
 */
function loseResponse(req: IncomingMessage, res: ServerResponse): void {
  res.writeHead = (() => res) as unknown as typeof res.writeHead;
  res.end = (() => {
    req.socket.destroy();
    return res;
  }) as unknown as typeof res.end;
}

/** A loop that never runs: the in-process server's GC and quota loops. */
const inertLoop = { kick(): void {} } as unknown as GcLoop & QuotaStatusLoop;

export interface InProcessServerOptions extends InProcessHooks {
  store: Store;
  /** The simulation's clock; the server sets no timer through it (no bookmarks, no watch timeouts). */
  clock: Clock;
  token: string;
}

export interface InProcessServer {
  /** Serves a connection: any Duplex, as if accepted by a listener. */
  connect(socket: Duplex): void;
}

/**
 * The request handling `settle serve` runs, over a given store, listening nowhere: the simulator hands it the
 * server ends of a module's in-process connections.
 */
export function createInProcessServer(options: InProcessServerOptions): InProcessServer {
  const { store, clock, token, onRequest, onWatch } = options;
  const hooks: InProcessHooks = {};
  if (onRequest !== undefined) hooks.onRequest = onRequest;
  if (onWatch !== undefined) hooks.onWatch = onWatch;
  const server = new ApiServer({ ...resolveOptions({ store, clock, token, log: () => {} }), inProcess: hooks });
  return { connect: (socket) => server.connect(socket) };
}

/** Starts a server and resolves once it listens. */
export async function startServer(options: ServerOptions = {}): Promise<SettleServer> {
  const server = new ApiServer(resolveOptions(options));
  await server.listen();
  return server.facade();
}
