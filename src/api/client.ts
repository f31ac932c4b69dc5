// The `Client` every controller is written against. The simulator implements it over the store
// (every call is a scheduled step); `settle/kube` implements it over a real API server.
import type { KindRef, KubeObject, ObjectList, ObjectRef, WatchEvent } from "./object.ts";

export type GetOptions = ObjectRef;

export interface ListOptions extends KindRef {
  /** Omit for all namespaces (or for cluster-scoped kinds). */
  namespace?: string;
  /** Full label selector syntax: `a=b,c!=d,e in (f,g),!h`. */
  labelSelector?: string;
  /** `metadata.name=x,spec.nodeName=n1`; `=`, `==` and `!=` only, as on a real server. */
  fieldSelector?: string;
  /** Page size; the response carries `metadata.continue` when more items remain. */
  limit?: number;
  continue?: string;
  /**
   * Absent or "": a consistent read at the latest revision. "0": any revision the server has cached
   * (what informers ask for; in the simulator this is where stale reads come from).
   */
  resourceVersion?: string;
  /**
   * The caller promises never to change the objects it gets (an informer freezes them into its cache): a client
   * may then hand out shared, frozen objects instead of private copies. Never sent to a server. Default false.
   */
  readOnly?: boolean;
}

export interface WriteOptions {
  /** Validate and admit the request but store nothing. */
  dryRun?: boolean;
  fieldManager?: string;
  /**
   * The caller promises never to change the object it gets back (most writers never look at it): a client may then
   * return a shared, frozen object instead of a private copy. Never sent to a server. Default false.
   */
  readOnly?: boolean;
}

export interface CreateOptions<T extends KubeObject = KubeObject> extends WriteOptions {
  object: T;
}

export interface UpdateOptions<T extends KubeObject = KubeObject> extends WriteOptions {
  /** Carries `metadata.resourceVersion` for optimistic concurrency; without it the update is unconditional. */
  object: T;
}

/** `merge`: RFC 7386 JSON merge patch. `json`: RFC 6902 JSON patch. */
export type PatchType = "merge" | "json";

export interface PatchOptions extends ObjectRef, WriteOptions {
  patchType: PatchType;
  /** A merge patch object, or an array of JSON patch operations. */
  patch: unknown;
}

export type PropagationPolicy = "Background" | "Foreground" | "Orphan";

export interface DeleteOptions extends ObjectRef {
  preconditions?: { uid?: string; resourceVersion?: string };
  /** Pods only: 0 removes a terminating pod at once; absent uses the pod's grace period. */
  gracePeriodSeconds?: number;
  propagationPolicy?: PropagationPolicy;
  dryRun?: boolean;
  /** As `WriteOptions.readOnly`: the object returned may be shared and frozen. Default false. */
  readOnly?: boolean;
}

export interface WatchOptions extends KindRef {
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  /**
   * Start after this revision, replaying what happened since. Absent or "0": start now (a real server
   * first sends the current objects as ADDED when `resourceVersion` is absent; informers always list first).
   */
  resourceVersion?: string;
  /** Ask for BOOKMARK events carrying the latest revision. */
  allowBookmarks?: boolean;
  /** As `ListOptions.readOnly`: the events' objects may be shared and frozen. Default false. */
  readOnly?: boolean;
}

/**
 * A live watch. Iterate it for events in revision order. The iteration ends when the server closes the
 * watch normally (resume from the last revision seen); it throws an `ApiError` with code 410 when the
 * revision asked for is too old (relist), or another `ApiError` on failure.
 */
export interface Watch<T extends KubeObject = KubeObject> extends AsyncIterable<WatchEvent<T>> {
  /** Stops the watch; a pending iteration ends normally. Idempotent. */
  close(): void;
}

export interface Client {
  get<T extends KubeObject = KubeObject>(options: GetOptions): Promise<T>;
  list<T extends KubeObject = KubeObject>(options: ListOptions): Promise<ObjectList<T>>;
  create<T extends KubeObject = KubeObject>(options: CreateOptions<T>): Promise<T>;
  update<T extends KubeObject = KubeObject>(options: UpdateOptions<T>): Promise<T>;
  updateStatus<T extends KubeObject = KubeObject>(options: UpdateOptions<T>): Promise<T>;
  patch<T extends KubeObject = KubeObject>(options: PatchOptions): Promise<T>;
  patchStatus<T extends KubeObject = KubeObject>(options: PatchOptions): Promise<T>;
  /** Returns the object's last state: still present (terminating) when finalizers or a grace period hold it. */
  delete<T extends KubeObject = KubeObject>(options: DeleteOptions): Promise<T>;
  watch<T extends KubeObject = KubeObject>(options: WatchOptions): Watch<T>;
}
