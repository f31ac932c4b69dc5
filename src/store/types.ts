// The store's public shape: the API server's semantics as a pure, synchronous MVCC store.
// Objects it returns are deep-frozen and shared: callers clone before they change anything.
import type { KubeObject, ObjectList, ObjectRef, KindRef } from "../api/object.ts";
import type { DeleteOptions, PatchOptions, WriteOptions } from "../api/client.ts";
import type { ResourceType } from "../api/resources.ts";

export interface StoreOptions {
  /** The caller's clock in ms since the epoch, read on every write. Default: always 0. */
  now?: () => number;
  /** Revisions of history kept for watches and reads at an older revision. Default 100_000. */
  historyRevisionsMax?: number;
  /**
   * Bytes of history kept (each write counts its object's JSON size, a deletion a tombstone's): older revisions are
   * compacted beyond it, as etcd compacts, and watches or reads behind the compacted revision get 410 Gone. The
   * newest revision always stays. Default: no bound by bytes (`settle serve` sets 64 MiB; see `createServerStore`).
   */
  historyBytesMax?: number;
  /** Makes `metadata.uid` values. Default: deterministic, derived from a counter. */
  uid?: () => string;
  /** Mutating then validating admission on every write, in registration order (what webhooks do). */
  admission?: Admission[];
  /** Largest object accepted, in bytes of JSON. Default 1.5 MiB, as etcd's request limit. */
  objectBytesMax?: number;
  /**
   * Namespaces created as the store's first writes, as in a fresh cluster (so `revision` starts at their count).
   * Default: default, kube-system, kube-public, kube-node-lease.
   */
  namespaces?: readonly string[];
}

export type AdmissionOperation = "CREATE" | "UPDATE" | "DELETE";

export interface AdmissionRequest {
  operation: AdmissionOperation;
  /** "status" for status-subresource writes. */
  subresource?: "status";
  resource: ResourceType;
  /** The object about to be stored. Mutating admission may change it in place; frozen for validation. */
  object: KubeObject;
  /** The stored object for UPDATE and DELETE. */
  oldObject?: KubeObject;
  dryRun: boolean;
}

export interface Admission {
  name: string;
  /**
   * Whether the plugin may act on this kind of write at all. The store skips a plugin that says no, and a write that
   * concerns no plugin goes through as if the store had none (its object is not copied for mutation nor frozen for
   * validation). The answer must depend on the arguments only. Default: every write.
   */
  concerns?(operation: AdmissionOperation, resource: ResourceType, subresource: "status" | undefined): boolean;
  /** Changes `request.object` in place. */
  mutate?(request: AdmissionRequest): void;
  /** Throws an `ApiError` (usually Invalid or Forbidden) to deny the write. */
  validate?(request: AdmissionRequest): void;
}

export type StoreEventType = "ADDED" | "MODIFIED" | "DELETED";

/** One write, as recorded in the history. */
export interface StoreEvent {
  type: StoreEventType;
  /** The object after the write (for DELETED: its last state, with the deletion's revision). */
  object: KubeObject;
  revision: number;
}

export interface StoreListOptions extends KindRef {
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  limit?: number;
  continue?: string;
  /** Read as of this revision (a lagging cache); default the latest. Before the compaction point: 410. */
  revision?: number;
}

export interface StoreWatchOptions extends KindRef {
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  /** Deliver every matching event after this revision (replayed from history first). Before compaction: 410. */
  fromRevision: number;
  /**
   * The listener only keeps the events for later (the simulator's own watches queue them for delivery steps): it
   * runs no other code and settles no promise. While a watch without it is open, `selfContained` is false.
   */
  inert?: boolean;
}

export interface StoreWatcher {
  close(): void;
}

/**
 * The events a watcher sees: filtered by namespace and selectors, with an object that stops matching
 * turned into DELETED and one that starts matching into ADDED.
 */
export type StoreWatchListener = (event: StoreEvent) => void;

export interface Store {
  /** The global revision: bumped by every write, like etcd's. */
  readonly revision: number;
  /** The oldest revision a read or watch may start from. */
  readonly compactedRevision: number;

  /** Kinds known now: the built-ins plus those registered by CRDs. */
  resources(): ResourceType[];
  /** Looks a kind up; throws `ApiError` NotFound for an unknown kind. */
  resourceFor(kind: KindRef): ResourceType;
  /** Looks a REST resource up by group, version and plural (what an HTTP server routes on). */
  resourceForPlural(group: string, version: string, plural: string): ResourceType | undefined;

  get(ref: ObjectRef, options?: { revision?: number }): KubeObject;
  list(options: StoreListOptions): ObjectList;
  create(object: KubeObject, options?: WriteOptions): KubeObject;
  update(object: KubeObject, options?: WriteOptions): KubeObject;
  updateStatus(object: KubeObject, options?: WriteOptions): KubeObject;
  /**
   * The `namespaces/{name}/finalize` subresource: sets the namespace's spec.finalizers (which plain updates keep)
   * and nothing else; `resourceVersion`, when given, must be current. Optional: test fakes of a store leave it out.
   */
  finalizeNamespace?(name: string, finalizers: readonly string[], resourceVersion?: string): KubeObject;
  patch(options: PatchOptions): KubeObject;
  patchStatus(options: PatchOptions): KubeObject;
  delete(options: DeleteOptions): KubeObject;

  /** Replays matching history after `fromRevision` into `listener` before returning, then calls it on every later write. */
  watch(options: StoreWatchOptions, listener: StoreWatchListener): StoreWatcher;
  /** The raw history after `afterRevision`, oldest first. Throws 410 when it has been compacted away. */
  history(afterRevision: number): readonly StoreEvent[];

  /** True when the garbage collector has work: dependents of deleted owners, foreground/orphan finalizers. */
  hasGarbage(): boolean;
  /** Performs one garbage-collection action and describes it; undefined when there is nothing to do. */
  collectGarbage(): string | undefined;
  /**
   * True when a write runs nothing but the store's own code: no admission plugin, and every open watch `inert`.
   * The simulator then knows that a step which only writes leaves no microtask behind. Optional: a store without
   * it is never taken to be self-contained.
   */
  selfContained?(): boolean;
}
