// The `Client` an actor gets: every call is a request step (applied to the store when chosen) followed by
// a separate response step (delivered when chosen), so a crash, a lost response or another actor's write
// can fall between them.
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
} from "../api/client.ts";
import { ApiError, badRequest, timeout } from "../api/errors.ts";
import { injectedRequestError } from "../api/faults.ts";
import { describeRef, type KubeObject, type ObjectList } from "../api/object.ts";
import { cloneJson } from "../api/json.ts";
import { assert } from "../api/assert.ts";
import type { ActorState, Kernel } from "./kernel.ts";
import type { StepFacts, Verb } from "./trace.ts";
import { SimWatch } from "./watch.ts";
import { checkClientOptions } from "../api/client-options.ts";
import { handOver } from "../store/util.ts";
import type { StoreListOptions } from "../store/types.ts";

/** The error an injected request failure produces: the fault model's mapping, in the simulator's words. */
export function injectedError(code: number, what: string): ApiError {
  return injectedRequestError(code, { wording: "simulator", resource: "objects", name: what });
}

function errorText(error: unknown): string {
  return error instanceof ApiError ? `${error.code} ${error.reason}` : String(error);
}

function never<T>(): Promise<T> {
  return new Promise<T>(() => {});
}

function describeKind(options: { kind: string; namespace?: string | undefined }): string {
  return options.namespace === undefined ? `${options.kind} *` : `${options.kind} ${options.namespace}`;
}

type Target = { kind: string; namespace?: string | undefined; name?: string | undefined };

/** The typed `object` fact of a step: kind, and namespace and name where given. */
function objectFact(target: Target): NonNullable<StepFacts["object"]> {
  const fact: NonNullable<StepFacts["object"]> = { kind: target.kind };
  if (target.namespace !== undefined) fact.namespace = target.namespace;
  if (target.name !== undefined) fact.name = target.name;
  return fact;
}

interface CallOptions {
  verb: Verb;
  target: Target;
  /** For people: `ConfigMap ns/a`, `ConfigMap ns rv=0`. */
  ref: string;
  write: boolean;
  /** A `resourceVersion: "0"` read, served from the watch cache. */
  cached?: boolean;
  /** The caller asked for `readOnly`: the response is the store's frozen objects, not a private copy. */
  shared?: boolean;
  /** Runs against the store in the request step; its value (or ApiError) is the response. */
  apply: () => unknown;
}

export class SimClient implements Client {
  private readonly incarnation: number;

  constructor(
    private readonly kernel: Kernel,
    private readonly state: ActorState,
  ) {
    this.incarnation = state.life.incarnation;
  }

  /** One request: `apply` runs against the store in the request step; the outcome is delivered a step later. */
  private call<T>(call: CallOptions): Promise<T> {
    const { kernel, state } = this;
    if (!kernel.checkCaller(state, this.incarnation)) return never();
    const { verb, ref, write, apply } = call;
    const label = `${verb} ${ref}`;
    const facts: StepFacts = { verb, object: objectFact(call.target), access: write ? "write" : "read", requestSeq: kernel.nextRequestSeq() };
    if (call.cached === true) facts.cached = true;
    return new Promise<T>((resolve, reject) => {
      kernel.enqueue({
        actor: state.name,
        kind: "request",
        label,
        ref,
        write,
        facts,
        owner: state,
        storeOnly: true,
        run: () => {
          const { ok, value, result } = this.apply(ref, apply);
          kernel.enqueueAfter(kernel.drawLatencyMs(state), {
            actor: state.name,
            kind: "response",
            label,
            ref,
            facts,
            owner: state,
            run: () => {
              if (ok) resolve((call.shared === true ? value : cloneJson(value)) as T);
              else reject(value);
              return ok ? "ok" : errorText(value);
            },
          });
          return result;
        },
      });
    });
  }

  /** Applies a request with the faults armed for this actor; a non-API error from the store is fatal. */
  private apply(ref: string, apply: () => unknown): { ok: boolean; value: unknown; result: string } {
    const code = this.kernel.takeFailCode(this.state);
    if (code !== undefined) {
      const error = injectedError(code, ref);
      return { ok: false, value: error, result: `${errorText(error)} (injected)` };
    }
    let outcome: { ok: boolean; value: unknown; result: string };
    try {
      outcome = { ok: true, value: apply(), result: "ok" };
    } catch (error) {
      if (!(error instanceof ApiError)) {
        const message = error instanceof Error ? error.message : String(error);
        this.kernel.fail({ status: "sim-error", actor: this.state.name, message: `store failed on ${ref}: ${message}` });
      }
      outcome = { ok: false, value: error, result: errorText(error) };
    }
    if (this.kernel.takeLoseResponse(this.state)) {
      return { ok: false, value: timeout(`the response was lost: ${ref}`), result: `${outcome.result} (response lost)` };
    }
    return outcome;
  }

  /** The revision a `resourceVersion: "0"` read is served at: the latest, or older under a stale-read fault. */
  private cachedRevision(kind: string): number {
    const store = this.kernel.store;
    const { lagRevisions, atRevision, catchUpMs } = this.kernel.takeStale(this.state, kind);
    const floor = Math.max(store.compactedRevision, 0);
    if (atRevision !== undefined) {
      const revision = Math.max(floor, Math.min(atRevision, store.revision));
      if (catchUpMs !== undefined && catchUpMs > 0) this.kernel.holdWatch(this.state, { kind, revision, ms: catchUpMs });
      return revision;
    }
    if (lagRevisions === undefined) return store.revision;
    assert(lagRevisions >= 0, "a stale read lags by a non-negative number of revisions");
    return Math.max(floor, store.revision - lagRevisions);
  }

  get<T extends KubeObject = KubeObject>(options: GetOptions): Promise<T> {
    checkClientOptions("get", options);
    const ref = { ...options };
    return this.call({ verb: "get", target: ref, ref: describeRef(ref), write: false, apply: () => this.kernel.store.get(ref) });
  }

  list<T extends KubeObject = KubeObject>(options: ListOptions): Promise<ObjectList<T>> {
    checkClientOptions("list", options);
    const { resourceVersion } = options;
    const cached = resourceVersion === "0";
    const ref = describeKind(options) + (cached ? " rv=0" : "");
    // What the store reads, taken when the actor calls (it may reuse its options object afterwards); one literal
    // rather than a rest copy and a spread, on the path of every list.
    const request = storeListOptions(options);
    return this.call({
      verb: "list",
      target: { kind: options.kind, namespace: options.namespace },
      ref,
      write: false,
      cached,
      shared: options.readOnly === true,
      apply: () => {
        if (resourceVersion !== undefined && resourceVersion !== "" && !cached) {
          throw badRequest(`list at resourceVersion ${resourceVersion} is not supported by the simulator`);
        }
        if (cached) request.revision = this.cachedRevision(options.kind);
        return this.kernel.store.list(request);
      },
    });
  }

  // A write's object is copied when the actor calls (the actor may change its own afterwards) and that private
  // copy is handed over to the store, which then takes it as it is instead of copying it a second time.
  create<T extends KubeObject = KubeObject>(options: CreateOptions<T>): Promise<T> {
    checkClientOptions("create", options);
    const object = handOver(cloneJson(options.object));
    const { object: _, readOnly, ...write } = options;
    const target = objectRef(object);
    return this.call({ verb: "create", target, ref: describeRef(target), write: true, shared: readOnly === true, apply: () => this.kernel.store.create(object, write) });
  }

  update<T extends KubeObject = KubeObject>(options: UpdateOptions<T>): Promise<T> {
    checkClientOptions("update", options);
    const object = handOver(cloneJson(options.object));
    const { object: _, readOnly, ...write } = options;
    const target = objectRef(object);
    return this.call({ verb: "update", target, ref: describeRef(target), write: true, shared: readOnly === true, apply: () => this.kernel.store.update(object, write) });
  }

  updateStatus<T extends KubeObject = KubeObject>(options: UpdateOptions<T>): Promise<T> {
    checkClientOptions("updateStatus", options);
    const object = handOver(cloneJson(options.object));
    const { object: _, readOnly, ...write } = options;
    const target = objectRef(object);
    return this.call({ verb: "updateStatus", target, ref: describeRef(target), write: true, shared: readOnly === true, apply: () => this.kernel.store.updateStatus(object, write) });
  }

  patch<T extends KubeObject = KubeObject>(options: PatchOptions): Promise<T> {
    checkClientOptions("patch", options);
    const copy = requestCopy(options);
    return this.call({ verb: "patch", target: copy, ref: describeRef(copy), write: true, shared: options.readOnly === true, apply: () => this.kernel.store.patch(copy) });
  }

  patchStatus<T extends KubeObject = KubeObject>(options: PatchOptions): Promise<T> {
    checkClientOptions("patchStatus", options);
    const copy = requestCopy(options);
    return this.call({ verb: "patchStatus", target: copy, ref: describeRef(copy), write: true, shared: options.readOnly === true, apply: () => this.kernel.store.patchStatus(copy) });
  }

  delete<T extends KubeObject = KubeObject>(options: DeleteOptions): Promise<T> {
    checkClientOptions("delete", options);
    const copy = requestCopy(options);
    return this.call({ verb: "delete", target: copy, ref: describeRef(copy), write: true, shared: options.readOnly === true, apply: () => this.kernel.store.delete(copy) });
  }

  watch<T extends KubeObject = KubeObject>(options: WatchOptions): Watch<T> {
    checkClientOptions("watch", options);
    const { kernel, state } = this;
    const what = describeKind(options);
    const collection = objectFact({ kind: options.kind, namespace: options.namespace });
    const watch = new SimWatch<T>(kernel, state, what, collection, options.readOnly === true);
    if (!kernel.checkCaller(state, this.incarnation)) return watch;
    const copy = cloneJson(options);
    const facts: StepFacts = { verb: "watch", object: collection, access: "read", watchId: watch.id, requestSeq: kernel.nextRequestSeq() };
    if (options.resourceVersion === "0") facts.cached = true;
    kernel.enqueue({
      actor: state.name,
      kind: "request",
      label: `watch ${watch.id} ${what}`,
      ref: what,
      write: false,
      facts,
      owner: state,
      storeOnly: true,
      run: () => this.openWatch(watch, copy),
    });
    return watch;
  }

  /** The watch request step: registers with the store, or fails the watch (410, injected faults). */
  private openWatch(watch: SimWatch<KubeObject>, options: WatchOptions): string {
    const { failCode, loseResponse } = this.kernel.takeRequestFaults(this.state);
    const injected = failCode !== undefined ? injectedError(failCode, watch.id) : loseResponse ? timeout(`the response was lost: ${watch.id}`) : undefined;
    if (injected !== undefined) {
      watch.error(injected);
      return `${errorText(injected)} (injected)`;
    }
    try {
      this.startWatch(watch, options);
      return "ok";
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      watch.error(error);
      return errorText(error);
    }
  }

  private startWatch(watch: SimWatch<KubeObject>, options: WatchOptions): void {
    const { resourceVersion } = options;
    const store = this.kernel.store;
    let fromRevision: number;
    if (resourceVersion === undefined || resourceVersion === "" || resourceVersion === "0") {
      // A real server starts such a watch with the current objects as synthetic ADDED events.
      fromRevision = resourceVersion === "0" ? this.cachedRevision(options.kind) : store.revision;
      const initial = storeListOptions(options);
      initial.revision = fromRevision;
      for (const object of store.list(initial).items) {
        watch.push({ type: "ADDED", object, revision: fromRevision });
      }
    } else {
      if (!/^\d+$/.test(resourceVersion)) throw badRequest(`invalid resourceVersion "${resourceVersion}"`);
      fromRevision = Number(resourceVersion);
    }
    assert(fromRevision <= store.revision, "a watch never starts after the store's revision");
    // After a per-kind stale list, the watch from its revision is served by the same lagging cache.
    const holdMs = this.kernel.takeWatchHold(this.state, options.kind, fromRevision);
    if (holdMs > 0) watch.delay(holdMs);
    const { apiVersion, kind, namespace, labelSelector, fieldSelector } = options;
    // Inert: `push` only queues the event for a delivery step of its own.
    watch.attach(store.watch({ apiVersion, kind, namespace, labelSelector, fieldSelector, fromRevision, inert: true }, (event) => watch.push(event)));
  }
}

/** The store's list options for a client's list or watch: the fields the store reads, the revision left to set. */
function storeListOptions(options: ListOptions | WatchOptions): StoreListOptions {
  const { apiVersion, kind, namespace, labelSelector, fieldSelector } = options;
  const limit = "limit" in options ? options.limit : undefined;
  const next = "continue" in options ? options.continue : undefined;
  return { apiVersion, kind, namespace, labelSelector, fieldSelector, limit, continue: next, revision: undefined };
}

/**
 * What the store gets of a patch or delete: a copy (the actor may reuse its options object), without `readOnly`,
 * which says what the caller does with the response and is never part of the request.
 */
function requestCopy<T extends { readOnly?: boolean }>(options: T): Omit<T, "readOnly"> {
  const copy = cloneJson(options);
  if (copy.readOnly !== undefined) delete copy.readOnly;
  return copy;
}

function objectRef(object: KubeObject): Target {
  return { kind: object.kind, namespace: object.metadata?.namespace, name: object.metadata?.name ?? object.metadata?.generateName };
}
