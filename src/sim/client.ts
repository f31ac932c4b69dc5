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
import { ApiError, badRequest, conflict, internalError, timeout, tooManyRequests } from "../api/errors.ts";
import { describeRef, type KubeObject, type ObjectList } from "../api/object.ts";
import { cloneJson } from "./clone.ts";
import type { ActorState, Kernel } from "./kernel.ts";
import { SimWatch } from "./watch.ts";

/** The error an injected request failure produces. */
export function injectedError(code: number, what: string): ApiError {
  if (code === 409) return conflict("objects", what, "the object has been modified; please apply your changes to the latest version and try again");
  if (code === 429) return tooManyRequests(`too many requests: ${what}`);
  if (code === 504) return timeout(`the request timed out: ${what}`);
  return internalError(`internal error: ${what}`);
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

export class SimClient implements Client {
  private readonly incarnation: number;

  constructor(
    private readonly kernel: Kernel,
    private readonly state: ActorState,
  ) {
    this.incarnation = state.incarnation;
  }

  /** One request: `apply` runs against the store in the request step; the outcome is delivered a step later. */
  private call<T>(verb: string, ref: string, write: boolean, apply: () => unknown): Promise<T> {
    const { kernel, state } = this;
    if (!kernel.checkCaller(state, this.incarnation)) return never();
    return new Promise<T>((resolve, reject) => {
      const label = `${verb} ${ref}`;
      kernel.enqueue({
        actor: state.name,
        kind: "request",
        label,
        ref,
        write,
        owner: state,
        run: () => {
          const { ok, value, result } = this.apply(ref, apply);
          kernel.enqueue({
            actor: state.name,
            kind: "response",
            label,
            ref,
            owner: state,
            run: () => {
              if (ok) resolve(cloneJson(value) as T);
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
    const armed = this.state.armed;
    if (armed.failCode !== undefined) {
      const code = armed.failCode;
      delete armed.failCode;
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
    if (armed.loseResponse === true) {
      delete armed.loseResponse;
      return { ok: false, value: timeout(`the response was lost: ${ref}`), result: `${outcome.result} (response lost)` };
    }
    return outcome;
  }

  /** The revision a `resourceVersion: "0"` read is served at: the latest, or older under a stale-read fault. */
  private cachedRevision(): number {
    const { armed } = this.state;
    const store = this.kernel.store;
    if (armed.staleLagRevisions === undefined) return store.revision;
    const lag = armed.staleLagRevisions;
    delete armed.staleLagRevisions;
    return Math.max(store.compactedRevision, store.revision - lag, 0);
  }

  get<T extends KubeObject = KubeObject>(options: GetOptions): Promise<T> {
    const ref = { ...options };
    return this.call("get", describeRef(ref), false, () => this.kernel.store.get(ref));
  }

  list<T extends KubeObject = KubeObject>(options: ListOptions): Promise<ObjectList<T>> {
    const { resourceVersion, ...rest } = options;
    const cached = resourceVersion === "0";
    const ref = describeKind(options) + (cached ? " rv=0" : "");
    return this.call("list", ref, false, () => {
      if (resourceVersion !== undefined && resourceVersion !== "" && !cached) {
        throw badRequest(`list at resourceVersion ${resourceVersion} is not supported by the simulator`);
      }
      const revision = cached ? this.cachedRevision() : undefined;
      return this.kernel.store.list(revision === undefined ? rest : { ...rest, revision });
    });
  }

  create<T extends KubeObject = KubeObject>(options: CreateOptions<T>): Promise<T> {
    const object = cloneJson(options.object);
    const { object: _, ...write } = options;
    return this.call("create", describeRef(objectRef(object)), true, () => this.kernel.store.create(object, write));
  }

  update<T extends KubeObject = KubeObject>(options: UpdateOptions<T>): Promise<T> {
    const object = cloneJson(options.object);
    const { object: _, ...write } = options;
    return this.call("update", describeRef(objectRef(object)), true, () => this.kernel.store.update(object, write));
  }

  updateStatus<T extends KubeObject = KubeObject>(options: UpdateOptions<T>): Promise<T> {
    const object = cloneJson(options.object);
    const { object: _, ...write } = options;
    return this.call("updateStatus", describeRef(objectRef(object)), true, () => this.kernel.store.updateStatus(object, write));
  }

  patch<T extends KubeObject = KubeObject>(options: PatchOptions): Promise<T> {
    const copy = cloneJson(options);
    return this.call("patch", describeRef(copy), true, () => this.kernel.store.patch(copy));
  }

  patchStatus<T extends KubeObject = KubeObject>(options: PatchOptions): Promise<T> {
    const copy = cloneJson(options);
    return this.call("patchStatus", describeRef(copy), true, () => this.kernel.store.patchStatus(copy));
  }

  delete<T extends KubeObject = KubeObject>(options: DeleteOptions): Promise<T> {
    const copy = cloneJson(options);
    return this.call("delete", describeRef(copy), true, () => this.kernel.store.delete(copy));
  }

  watch<T extends KubeObject = KubeObject>(options: WatchOptions): Watch<T> {
    const { kernel, state } = this;
    const what = describeKind(options);
    const watch = new SimWatch<T>(kernel, state, what);
    if (!kernel.checkCaller(state, this.incarnation)) return watch;
    const copy = cloneJson(options);
    kernel.enqueue({
      actor: state.name,
      kind: "request",
      label: `watch ${watch.id} ${what}`,
      ref: what,
      write: false,
      owner: state,
      run: () => this.openWatch(watch, copy),
    });
    return watch;
  }

  /** The watch request step: registers with the store, or fails the watch (410, injected faults). */
  private openWatch(watch: SimWatch<KubeObject>, options: WatchOptions): string {
    const { armed } = this.state;
    const injected =
      armed.failCode !== undefined ? injectedError(armed.failCode, watch.id) : armed.loseResponse ? timeout(`the response was lost: ${watch.id}`) : undefined;
    delete armed.failCode;
    delete armed.loseResponse;
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
    const { resourceVersion, allowBookmarks: _, ...filter } = options;
    const store = this.kernel.store;
    let fromRevision: number;
    if (resourceVersion === undefined || resourceVersion === "" || resourceVersion === "0") {
      // A real server starts such a watch with the current objects as synthetic ADDED events.
      fromRevision = resourceVersion === "0" ? this.cachedRevision() : store.revision;
      for (const object of store.list({ ...filter, revision: fromRevision }).items) {
        watch.push({ type: "ADDED", object, revision: fromRevision });
      }
    } else {
      if (!/^\d+$/.test(resourceVersion)) throw badRequest(`invalid resourceVersion "${resourceVersion}"`);
      fromRevision = Number(resourceVersion);
    }
    watch.attach(store.watch({ ...filter, fromRevision }, (event) => watch.push(event)));
  }
}

function objectRef(object: KubeObject): { kind: string; namespace?: string | undefined; name?: string | undefined } {
  return { kind: object.kind, namespace: object.metadata?.namespace, name: object.metadata?.name ?? object.metadata?.generateName };
}
