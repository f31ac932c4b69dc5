// A small in-memory `Client` for the runtime's unit tests: one revision counter, a bounded history for
// watches (410 before the compaction point), equality-only label selectors, and hooks to inject failures and
// close watches. It is not the store: it models just enough of the API server to drive an informer.
import type {
  Client,
  CreateOptions,
  DeleteOptions,
  GetOptions,
  ListOptions,
  PatchOptions,
  UpdateOptions,
  Watch,
  WatchOptions,
} from "../../src/api/client.ts";
import { alreadyExists, conflict, expired, notFound } from "../../src/api/errors.ts";
import type { ApiError } from "../../src/api/errors.ts";
import type { KubeObject, ObjectList, WatchEvent } from "../../src/api/object.ts";

interface HistoryEntry {
  revision: number;
  event: WatchEvent;
}

type Method = "get" | "list" | "create" | "update" | "updateStatus" | "patch" | "patchStatus" | "delete" | "watch";

function storageKey(o: { kind: string; namespace?: string | undefined; name: string }): string {
  return `${o.kind}|${o.namespace ?? ""}|${o.name}`;
}

function clone<T>(value: T): T {
  return structuredClone(value);
}

function matchesLabels(selector: string | undefined, labels: Record<string, string> | undefined): boolean {
  if (selector === undefined || selector === "") return true;
  return selector.split(",").every((term) => {
    const [k, v] = term.split("=") as [string, string];
    return labels?.[k] === v;
  });
}

function matchesFields(selector: string | undefined, object: KubeObject): boolean {
  if (selector === undefined || selector === "") return true;
  return selector.split(",").every((term) => {
    const [k, v] = term.split("=") as [string, string];
    if (k === "metadata.name") return object.metadata.name === v;
    if (k === "metadata.namespace") return object.metadata.namespace === v;
    return false;
  });
}

function mergePatch(target: unknown, patch: unknown): unknown {
  if (patch === null || typeof patch !== "object" || Array.isArray(patch)) return clone(patch);
  const out: Record<string, unknown> =
    target !== null && typeof target === "object" && !Array.isArray(target) ? { ...(target as Record<string, unknown>) } : {};
  for (const [k, v] of Object.entries(patch as Record<string, unknown>)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

class FakeWatch implements Watch {
  private buffer: WatchEvent[] = [];
  private waiting: ((r: IteratorResult<WatchEvent>) => void) | undefined;
  private failWaiting: ((e: unknown) => void) | undefined;
  private ended = false;
  private error: unknown;

  constructor(
    readonly options: WatchOptions,
    private readonly onClose: (w: FakeWatch) => void,
  ) {}

  push(event: WatchEvent): void {
    if (this.ended) return;
    if (this.waiting) {
      const resolve = this.waiting;
      this.waiting = this.failWaiting = undefined;
      resolve({ value: clone(event), done: false });
    } else this.buffer.push(clone(event));
  }

  end(error?: unknown): void {
    if (this.ended) return;
    this.ended = true;
    this.error = error;
    this.onClose(this);
    if (this.waiting) {
      const resolve = this.waiting;
      const reject = this.failWaiting as (e: unknown) => void;
      this.waiting = this.failWaiting = undefined;
      if (error !== undefined) reject(error);
      else resolve({ value: undefined, done: true });
    }
  }

  close(): void {
    this.buffer = [];
    this.end();
  }

  [Symbol.asyncIterator](): AsyncIterator<WatchEvent> {
    return {
      next: () => {
        const event = this.buffer.shift();
        if (event !== undefined) return Promise.resolve({ value: event, done: false });
        if (this.ended) return this.error !== undefined ? Promise.reject(this.error) : Promise.resolve({ value: undefined, done: true });
        return new Promise((resolve, reject) => {
          this.waiting = resolve;
          this.failWaiting = reject;
        });
      },
      return: () => {
        this.close();
        return Promise.resolve({ value: undefined, done: true });
      },
    };
  }
}

export class FakeClient implements Client {
  revision = 100;
  compactedRevision = 100;
  private readonly objects = new Map<string, KubeObject>();
  private history: HistoryEntry[] = [];
  readonly watches = new Set<FakeWatch>();
  private uidCounter = 0;
  /** Calls by method, for assertions. */
  readonly calls: Array<{ method: Method; options: unknown }> = [];
  /** Errors to throw on the next calls of a method, in order. */
  readonly failures = new Map<Method, ApiError[]>();
  /** When set, lists asked with resourceVersion "0" are served at this (stale) revision. */
  staleListRevision: number | undefined;

  failNext(method: Method, error: ApiError): void {
    const list = this.failures.get(method) ?? [];
    list.push(error);
    this.failures.set(method, list);
  }

  /** Ends every open watch normally, as a server does on its timeout. */
  closeWatches(): void {
    for (const w of [...this.watches]) w.end();
  }

  /** Ends every open watch with an error. */
  failWatches(error: ApiError): void {
    for (const w of [...this.watches]) w.end(error);
  }

  /** Drops history up to the current revision: watches from before it fail with 410. */
  compact(): void {
    this.compactedRevision = this.revision;
    this.history = [];
  }

  count(method: Method): number {
    return this.calls.filter((c) => c.method === method).length;
  }

  /** All stored objects of a kind, cloned, sorted by key. */
  all(kind: string): KubeObject[] {
    return [...this.objects.entries()]
      .filter(([, o]) => o.kind === kind)
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([, o]) => clone(o));
  }

  private enter(method: Method, options: unknown): void {
    this.calls.push({ method, options });
    const pending = this.failures.get(method);
    const error = pending?.shift();
    if (error !== undefined) throw error;
  }

  private record(type: "ADDED" | "MODIFIED" | "DELETED", object: KubeObject): void {
    this.history.push({ revision: this.revision, event: { type, object: clone(object) } });
    for (const w of this.watches) if (this.watchMatches(w.options, object)) w.push({ type, object });
  }

  private watchMatches(options: WatchOptions | ListOptions, object: KubeObject): boolean {
    if (object.kind !== options.kind) return false;
    if (options.namespace !== undefined && object.metadata.namespace !== options.namespace) return false;
    return matchesLabels(options.labelSelector, object.metadata.labels) && matchesFields(options.fieldSelector, object);
  }

  async get<T extends KubeObject = KubeObject>(options: GetOptions): Promise<T> {
    this.enter("get", options);
    const found = this.objects.get(storageKey(options));
    if (found === undefined) throw notFound(options.kind.toLowerCase() + "s", options.name);
    return clone(found) as T;
  }

  async list<T extends KubeObject = KubeObject>(options: ListOptions): Promise<ObjectList<T>> {
    this.enter("list", options);
    let items = [...this.objects.values()].filter((o) => this.watchMatches(options, o));
    let revision = this.revision;
    if (options.resourceVersion === "0" && this.staleListRevision !== undefined) {
      revision = this.staleListRevision;
      items = this.stateAt(options, revision);
    }
    items.sort((a, b) => (storageKey(a as never) < storageKey(b as never) ? -1 : 1));
    return { apiVersion: "v1", kind: `${options.kind}List`, metadata: { resourceVersion: String(revision) }, items: clone(items) as T[] };
  }

  /** Rebuilds the state at an old revision by undoing later history (enough for stale-list tests). */
  private stateAt(options: ListOptions, revision: number): KubeObject[] {
    const state = new Map<string, KubeObject>();
    for (const entry of this.history) {
      if (entry.revision > revision) break;
      const o = entry.event.object;
      const key = storageKey({ kind: o.kind, namespace: o.metadata.namespace, name: o.metadata.name as string });
      if (entry.event.type === "DELETED") state.delete(key);
      else state.set(key, o);
    }
    return [...state.values()].filter((o) => this.watchMatches(options, o));
  }

  async create<T extends KubeObject = KubeObject>(options: CreateOptions<T>): Promise<T> {
    this.enter("create", options);
    const o = clone(options.object) as KubeObject;
    const key = storageKey({ kind: o.kind, namespace: o.metadata.namespace, name: o.metadata.name as string });
    if (this.objects.has(key)) throw alreadyExists(o.kind.toLowerCase() + "s", o.metadata.name as string);
    this.revision += 1;
    o.metadata = { ...o.metadata, uid: `uid-${++this.uidCounter}`, resourceVersion: String(this.revision), generation: 1 };
    this.objects.set(key, o);
    this.record("ADDED", o);
    return clone(o) as T;
  }

  private write(object: KubeObject, status: boolean): KubeObject {
    const key = storageKey({ kind: object.kind, namespace: object.metadata.namespace, name: object.metadata.name as string });
    const current = this.objects.get(key);
    if (current === undefined) throw notFound(object.kind.toLowerCase() + "s", object.metadata.name as string);
    const rv = object.metadata.resourceVersion;
    if (rv !== undefined && rv !== current.metadata.resourceVersion) {
      throw conflict(object.kind.toLowerCase() + "s", object.metadata.name as string, "the object has been modified");
    }
    const next = status ? { ...clone(current), status: clone(object["status"]) } : { ...clone(object), status: clone(current["status"]) };
    if (status && object["status"] === undefined) delete next["status"];
    if (!status && current["status"] === undefined) delete next["status"];
    const specChanged = JSON.stringify({ ...next, metadata: 0, status: 0 }) !== JSON.stringify({ ...current, metadata: 0, status: 0 });
    next.metadata = {
      ...(status ? current.metadata : object.metadata),
      uid: current.metadata.uid,
      generation: (current.metadata.generation ?? 1) + (specChanged ? 1 : 0),
    };
    this.revision += 1;
    next.metadata = { ...next.metadata, resourceVersion: String(this.revision) };
    this.objects.set(key, next);
    this.record("MODIFIED", next);
    return clone(next);
  }

  async update<T extends KubeObject = KubeObject>(options: UpdateOptions<T>): Promise<T> {
    this.enter("update", options);
    return this.write(options.object, false) as T;
  }

  async updateStatus<T extends KubeObject = KubeObject>(options: UpdateOptions<T>): Promise<T> {
    this.enter("updateStatus", options);
    return this.write(options.object, true) as T;
  }

  async patch<T extends KubeObject = KubeObject>(options: PatchOptions): Promise<T> {
    this.enter("patch", options);
    const current = await this.rawGet(options);
    const next = mergePatch(current, options.patch) as KubeObject;
    next.metadata = { ...next.metadata, resourceVersion: current.metadata.resourceVersion };
    return this.write(next, false) as T;
  }

  async patchStatus<T extends KubeObject = KubeObject>(options: PatchOptions): Promise<T> {
    this.enter("patchStatus", options);
    const current = await this.rawGet(options);
    const next = mergePatch(current, options.patch) as KubeObject;
    next.metadata = { ...next.metadata, resourceVersion: current.metadata.resourceVersion };
    return this.write(next, true) as T;
  }

  private async rawGet(options: GetOptions): Promise<KubeObject> {
    const found = this.objects.get(storageKey(options));
    if (found === undefined) throw notFound(options.kind.toLowerCase() + "s", options.name);
    return clone(found);
  }

  async delete<T extends KubeObject = KubeObject>(options: DeleteOptions): Promise<T> {
    this.enter("delete", options);
    const key = storageKey(options);
    const current = this.objects.get(key);
    if (current === undefined) throw notFound(options.kind.toLowerCase() + "s", options.name);
    this.revision += 1;
    const last = { ...clone(current), metadata: { ...current.metadata, resourceVersion: String(this.revision) } };
    this.objects.delete(key);
    this.record("DELETED", last);
    return clone(last) as T;
  }

  watch<T extends KubeObject = KubeObject>(options: WatchOptions): Watch<T> {
    this.calls.push({ method: "watch", options });
    const w = new FakeWatch(options, (closed) => this.watches.delete(closed));
    const pending = this.failures.get("watch")?.shift();
    if (pending !== undefined) {
      w.end(pending);
      return w as unknown as Watch<T>;
    }
    const from = Number(options.resourceVersion ?? this.revision);
    if (from < this.compactedRevision) {
      w.end(expired(`too old resource version: ${from} (${this.compactedRevision})`));
      return w as unknown as Watch<T>;
    }
    this.watches.add(w);
    for (const entry of this.history) {
      if (entry.revision > from && this.watchMatches(options, entry.event.object)) w.push(entry.event);
    }
    return w as unknown as Watch<T>;
  }
}
