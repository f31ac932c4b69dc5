// Watches over HTTP: newline-delimited JSON events on a chunked 200 response whose headers go out at once.
//
// A client whose first Accept choice is protobuf (client-go's typed clients) watching a built-in kind gets a protobuf
// stream instead: `application/vnd.kubernetes.protobuf;stream=watch`, length-prefixed `WatchEvent` frames.
//
// A watch is a small state machine: `Opening` (checks, the initial list when asked, the store watcher, events
// buffered until the headers are out) -> `Streaming` -> `Closed`. It ends on the client's close, `timeoutSeconds`,
// server shutdown, or a 410: a revision compacted away (sent as an ERROR event, then close, as kube-apiserver
// does) or a consumer too slow to keep its bounded buffer under `bufferBytesMax`.
import type { ServerResponse } from "node:http";
import type { Clock, Timer } from "../api/clock.ts";
import { ApiError, badRequest, invalid } from "../api/errors.ts";
import type { KubeObject } from "../api/object.ts";
import { formatApiVersion } from "../api/object.ts";
import type { StoreEvent, StoreWatcher } from "../store/index.ts";
import { isBuiltinKind } from "../store/index.ts";
import { jsonContentType, prefersProtobuf } from "./http.ts";
import { onWatchConversionFailure, watchWaitsForConversion } from "./crd-conversion.ts";
import { encodeProtobuf, encodeWatchFrame, messageFor, protobufContentType } from "./encoding/protobuf.ts";
import { boolParam, intParam, listOptions, staleRevision } from "./resources.ts";
import type { ResourceRequest } from "./resources.ts";
import { includeObjectOf } from "./encoding/table.ts";
import type { IncludeObject } from "./encoding/table.ts";

export interface WatchLimits {
  clock: Clock;
  /** Bytes a watch may have queued but unsent before it is cut off with 410. */
  bufferBytesMax: number;
  /** Longest watch, and the length of one that names no `timeoutSeconds`. */
  timeoutSecondsMax: number;
  /** Interval of BOOKMARK events on watches that allow them. */
  bookmarkIntervalMs: number;
}

/** Serialized objects, shared by every watch that sends the same event (objects from the store are frozen). */
const serialized = new WeakMap<object, string>();

function eventLine(type: string, object: KubeObject): string {
  let json = serialized.get(object);
  if (json === undefined) {
    json = JSON.stringify(object);
    serialized.set(object, json);
  }
  return `{"type":"${type}","object":${json}}\n`;
}

/** Protobuf bodies of stored objects, shared by every protobuf watch that sends them, as `serialized` is for JSON. */
const encoded = new WeakMap<object, Uint8Array>();

function eventFrame(type: string, object: KubeObject, message: string): Uint8Array {
  let body = encoded.get(object);
  if (body === undefined) {
    body = encodeProtobuf(object as unknown as Record<string, unknown>, message);
    encoded.set(object, body);
  }
  return encodeWatchFrame(type, body);
}

/** What goes on the wire: NDJSON text, or protobuf frames. */
type Chunk = string | Uint8Array;

function joined(chunks: readonly Chunk[]): Chunk {
  if (chunks.every((c) => typeof c === "string")) return chunks.join("");
  return Buffer.concat(chunks.map((c) => (typeof c === "string" ? Buffer.from(c) : c)));
}

type WatchState = "opening" | "streaming" | "closed";

export class WatchStream {
  #state: WatchState = "opening";
  #pending: Chunk[] = [];
  /** The revision the watch started after. */
  #from = 0;
  #watcher: StoreWatcher | undefined;
  #timers: Timer[] = [];
  #held: { until: number; timer: Timer } | undefined;
  #heldBytes = 0;
  readonly #apiVersion: string;
  readonly #include: IncludeObject;
  /** The kind's protobuf message when the stream is protobuf; undefined for JSON. */
  readonly #message: string | undefined;

  constructor(
    readonly r: ResourceRequest,
    readonly limits: WatchLimits,
    readonly onClosed: (stream: WatchStream) => void,
  ) {
    this.#apiVersion = formatApiVersion(r.resource);
    this.#include = r.tables === undefined ? "Object" : includeObjectOf(r.query);
    const protobuf = r.tables === undefined && isBuiltinKind(r.resource) && prefersProtobuf(r.req.headers.accept);
    this.#message = protobuf ? messageFor(this.#apiVersion, r.resource.kind) : undefined;
  }

  /** What the watch is on, for watch faults. */
  get target(): { resource: string; namespace: string | undefined; name: string | undefined } {
    return { resource: this.r.route.plural, namespace: this.r.route.namespace, name: this.r.route.name };
  }

  get closed(): boolean {
    return this.#state === "closed";
  }

  /**
   * Opens the watch; checks that fail before any event is sent answer with a plain Status. A watch from a revision
   * the store has not reached opens at once (kube-apiserver's watch cache lets the client wait for the events), but
   * a WatchList (`sendInitialEvents=true`) waits for its revision first, up to the server's wait, then 504.
   */
  async open(): Promise<void> {
    const q = this.r.query;
    const rv = q.get("resourceVersion") ?? "";
    const bookmarks = boolParam(q, "allowWatchBookmarks");
    const sendInitial = q.has("sendInitialEvents") ? boolParam(q, "sendInitialEvents") : undefined;
    const timeoutSeconds = intParam(q, "timeoutSeconds");
    if (timeoutSeconds !== undefined && timeoutSeconds < 0) throw badRequest("timeoutSeconds must not be negative");
    checkWatchList(q.get("resourceVersionMatch"), sendInitial, bookmarks, rv);
    if (rv !== "" && (!/^\d+$/.test(rv) || !Number.isSafeInteger(Number(rv)))) throw badRequest(`invalid resource version: ${JSON.stringify(rv)}`);
    // Legacy semantics: no resourceVersion (or "0") starts with the current objects as ADDED.
    const initial = sendInitial ?? (rv === "" || rv === "0");
    let from = rv === "" ? this.r.store.revision : Number(rv);
    if (initial && from > this.r.store.revision) await this.r.untilRevision(from);
    if (this.#state === "closed" || this.r.res.writableEnded) return;
    this.#from = from;
    if (initial) {
      const stale = this.r.lagRevisions === undefined ? {} : { revision: staleRevision(this.r.store, this.r.lagRevisions) };
      const list = this.r.store.list({ ...listOptions(this.r), ...stale });
      for (const item of list.items) this.#pending.push(this.#line("ADDED", item));
      from = Number(list.metadata.resourceVersion);
      if (sendInitial === true) this.#pending.push(this.#bookmarkLine(from, true));
    }
    try {
      this.#watcher = this.r.store.watch({ ...listOptions(this.r), fromRevision: from }, (event) => this.#send(event));
      onWatchConversionFailure(this.#watcher, (error) => this.#fail(error));
    } catch (error) {
      if (!(error instanceof ApiError && error.code === 410)) throw error;
      this.#startStream();
      return this.#fail(error);
    }
    this.#startStream();
    // 0, like absent, means the server's default (kube-apiserver's min-request-timeout window).
    const asked = timeoutSeconds === undefined || timeoutSeconds === 0 ? this.limits.timeoutSecondsMax : timeoutSeconds;
    const seconds = Math.min(asked, this.limits.timeoutSecondsMax);
    this.#timers.push(this.limits.clock.setTimer(seconds * 1000, () => this.close()));
    if (bookmarks) this.#scheduleBookmark();
  }

  #startStream(): void {
    const res = this.r.res;
    res.on("close", () => this.close());
    const contentType = this.#message === undefined ? jsonContentType : `${protobufContentType};stream=watch`;
    res.writeHead(200, { "Content-Type": contentType, "Cache-Control": "no-cache, private", "Transfer-Encoding": "chunked" });
    res.flushHeaders();
    this.#state = "streaming";
    const pending = this.#pending;
    this.#pending = [];
    if (pending.length > 0) this.#write(joined(pending));
  }

  #bookmarkLine(revision: number, initialEventsEnd: boolean): Chunk {
    const metadata: Record<string, unknown> = { resourceVersion: String(revision) };
    if (initialEventsEnd) metadata.annotations = { "k8s.io/initial-events-end": "true" };
    const object = { kind: this.r.resource.kind, apiVersion: this.#apiVersion, metadata };
    if (this.#message !== undefined) return encodeWatchFrame("BOOKMARK", encodeProtobuf(object, this.#message));
    return `${JSON.stringify({ type: "BOOKMARK", object })}\n`;
  }

  #scheduleBookmark(): void {
    const timer = this.limits.clock.setTimer(this.limits.bookmarkIntervalMs, () => {
      if (this.#state !== "streaming") return;
      if (this.#held !== undefined || watchWaitsForConversion(this.#watcher)) {
        // Held events (or events waiting for their conversion by a CRD's webhook) lie before the store's revision: a
        // bookmark now would skip them. Try again later.
        this.#timers = this.#timers.filter((t) => t !== timer);
        return this.#scheduleBookmark();
      }
      // Every event up to the store's revision was delivered synchronously already: the bookmark is safe. A watch
      // from a revision the store has not reached yet gets none until it does (a bookmark must not go back).
      if (this.r.store.revision >= this.#from) this.#write(this.#bookmarkLine(this.r.store.revision, false));
      this.#timers = this.#timers.filter((t) => t !== timer);
      this.#scheduleBookmark();
    });
    this.#timers.push(timer);
  }

  /** A watch event: the object (a line or a frame), or a one-row Table of it when the client asked for Tables. */
  #line(type: string, object: KubeObject): Chunk {
    if (this.#message !== undefined) return eventFrame(type, object, this.#message);
    const tables = this.r.tables;
    if (tables === undefined) return eventLine(type, object);
    return `${JSON.stringify({ type, object: tables.fromObject(this.r.resource, object, this.#include) })}\n`;
  }

  #send(event: StoreEvent): void {
    const line = this.#line(event.type, event.object);
    if (this.#state === "opening") this.#pending.push(line);
    else if (this.#held !== undefined) {
      this.#pending.push(line);
      this.#heldBytes += typeof line === "string" ? line.length : line.byteLength;
      if (this.#heldBytes > this.limits.bufferBytesMax) {
        this.#held.timer.cancel();
        this.#held = undefined;
        this.#fail(new ApiError("Expired", 410, "the watch was closed: too many events were held back while it was delayed; resume from the last revision seen or relist"));
      }
    } else if (this.#state === "streaming") this.#write(line);
  }

  /**
   * A delay-watch fault: events arriving in the next `ms` are held and then delivered together, in order (a watch
   * is late, never reordered or lossy). A delay that ends later than one in force extends it.
   */
  delay(ms: number): void {
    if (this.#state !== "streaming") return;
    const until = this.limits.clock.now() + ms;
    if (this.#held !== undefined && this.#held.until >= until) return;
    this.#held?.timer.cancel();
    const timer = this.limits.clock.setTimer(ms, () => {
      this.#held = undefined;
      this.#heldBytes = 0;
      if (this.#state !== "streaming") return;
      const pending = this.#pending;
      this.#pending = [];
      if (pending.length > 0) this.#write(joined(pending));
    });
    this.#held = { until, timer };
    this.#timers.push(timer);
  }

  #write(chunk: Chunk): void {
    const res = this.r.res;
    res.write(chunk);
    if (res.writableLength > this.limits.bufferBytesMax) {
      this.#fail(new ApiError("Expired", 410, "the watch was closed: its consumer fell too far behind; resume from the last revision seen or relist"));
    }
  }

  /** A watch fault of the simulator's wire: the watch fails mid-stream with `error` (an ERROR event, then the end). */
  fail(error: ApiError): void {
    this.#fail(error);
  }

  /** Sends an ERROR event carrying the Status, then ends the watch. */
  #fail(error: ApiError): void {
    if (this.#state !== "streaming") return;
    if (this.#message !== undefined) {
      this.r.res.write(encodeWatchFrame("ERROR", encodeProtobuf(error.status as unknown as Record<string, unknown>, "meta/v1.Status")));
    } else this.r.res.write(`${JSON.stringify({ type: "ERROR", object: error.status })}\n`);
    this.close();
  }

  close(): void {
    if (this.#state === "closed") return;
    this.#state = "closed";
    this.#watcher?.close();
    for (const timer of this.#timers) timer.cancel();
    this.#timers = [];
    this.#pending = [];
    if (!this.r.res.writableEnded) this.r.res.end();
    this.onClosed(this);
  }
}

/**
 * WatchList (`sendInitialEvents=true`) must come with `resourceVersionMatch=NotOlderThan` and bookmarks allowed;
 * `resourceVersionMatch` means nothing else on a watch. 422 otherwise, as kube-apiserver's validation answers.
 */
function checkWatchList(match: string | null, sendInitial: boolean | undefined, bookmarks: boolean, rv: string): void {
  const fail = (field: string, message: string) => invalid("ListOptions", "", [{ field, type: "FieldValueForbidden", message }]);
  if (sendInitial === undefined) {
    if (match !== null && match !== "") throw fail("resourceVersionMatch", "Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided");
    return;
  }
  if (match !== "NotOlderThan") throw fail("resourceVersionMatch", `Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan`);
  if (sendInitial && !bookmarks) throw fail("allowWatchBookmarks", "Forbidden: sendInitialEvents requires setting allowWatchBookmarks to true");
  if (!sendInitial && rv === "") throw fail("resourceVersion", "Forbidden: sendInitialEvents=false requires a resourceVersion");
}
