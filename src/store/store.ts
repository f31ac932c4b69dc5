// The store: kube-apiserver's semantics over an in-memory etcd. Split as the two programs are: the revision log
// (revision-log.ts: revisions, each key's versions, history, compaction, the watchers' feed) records writes and
// knows nothing of the API; this layer decides what is written. Every write goes through one pipeline (clone,
// resolve the kind, preconditions, mutating admission, system fields, validation, validating admission, no-op
// detection, commit), so every write path gets the same rules and a failed write changes nothing. Around it: the
// kind registry (registry.ts) with the kinds CRDs define (custom-kinds.ts), the admission chain
// (admission-chain.ts), and the garbage collector (gc.ts) with what it sees of the store (gc-host.ts).
//
// Invariants:
// - Only the pipeline commits, through `RevisionLog.commit`, and only after every check passed: a write that
//   throws before its commit leaves the log as it was, and `#transaction` puts the uid and name sequences back.
// - What a commit means for the API (the uid index, CRD registration, the collector's work) is derived in the
//   commit itself (`#afterCommit`, called by the log before it publishes), so no watcher sees a write whose kind
//   registration or garbage the store has not taken in yet.
// - Reads start within the log's kept history (410 behind it, 504 ahead of it, `checkReadRevision`) and watches
//   not behind it (410); the log asserts the latter again (`log-watch-not-behind-compaction`).
import { assert } from "../api/assert.ts";
import type { DeleteOptions, PatchOptions, WriteOptions } from "../api/client.ts";
import { formatTimestamp } from "../api/clock.ts";
import { ApiError, alreadyExists, badRequest, internalError, invalid, isApiError, notFound, tooLarge } from "../api/errors.ts";
import type { FieldError } from "../api/errors.ts";
import type { KindRef, KubeObject, ObjectList, ObjectRef } from "../api/object.ts";
import { formatApiVersion } from "../api/object.ts";
import { applyJsonPatch, applyJsonPatchSharing, applyMergePatch, cloneJsonChecked, jsonPatchShareable, mergePatchSharing } from "../api/patch.ts";
import type { ResourceType } from "../api/resources.ts";
import { validateGenerateName } from "../api/validation.ts";
import type {
  Store,
  StoreEvent,
  StoreListOptions,
  StoreOptions,
  StoreWatcher,
  StoreWatchListener,
  StoreWatchOptions,
} from "./types.ts";
import { applySchemaDefaults, crdInfo, crdStatus, pruneUnknown, schemaErrors, validateCrd } from "./crd.ts";
import { celRuleErrors, hasCelRules } from "./cel.ts";
import { AdmissionChain, mutate, validate, type Subresource } from "./admission-chain.ts";
import { CustomKinds } from "./custom-kinds.ts";
import { StoreGcHost } from "./gc-host.ts";
import { checkDeletePreconditions, checkNamespaceOpen, checkUpdatePreconditions } from "./preconditions.ts";
import { apiVersionOf, factsOf } from "./resource-facts.ts";
import { isFinalized, planDelete } from "./delete.ts";
import { GarbageCollector, locOf } from "./gc.ts";
import { checkReadRevision, compileSelectors, continueExpiredMessage, countLive, decodeContinue, encodeContinue, indexValue } from "./reads.ts";
import { lowerBound } from "./sorted-keys.ts";
import type { CompiledSelector } from "./reads.ts";
import { KindState, Registry, objectKey } from "./registry.ts";
import type { IndexedKeys } from "./registry.ts";
import { RevisionLog, tombstoneBytes, versionsOfKey, type LoggedWrite } from "./revision-log.ts";
import { liveObject, objectAt, type Version } from "./version.ts";
import { deepFreeze, isPlainObject, isRecord, jsonEqual } from "../api/json.ts";
import { canonicalizeQuantities } from "../api/quantities.ts";
import { writableMeta, type WritableMeta, cloneMeasured, differsOutside, generatedSuffixLength, sameCheckedMetadata, sequenceSuffix, sequenceUid, takeHandedOver } from "./util.ts";
import { applyDefaults, prepareForCreate, validateKind, validateMetadata, validateMetadataUpdate } from "./validate.ts";
import { Watcher } from "./watch.ts";

const crdKindId = "apiextensions.k8s.io/CustomResourceDefinition";
const namespaceKindId = "/Namespace";
/** Namespaces the NamespaceLifecycle admission plugin refuses to delete. */
const immortalNamespaces = ["default", "kube-system", "kube-public"];
const generateNameAttemptsMax = 8;
const noErrors: readonly FieldError[] = Object.freeze([]);
const defaultNamespaces = ["default", "kube-system", "kube-public", "kube-node-lease"];
/** As etcd's request limit. */
const defaultObjectBytesMax = 1.5 * 1024 * 1024;

/**
 * The namespace writes of the last fresh store that could share them (see `#createNamespaces`), by its namespace
 * names. One entry: stores of one process nearly always start alike, and a real clock must not grow a cache.
 */
let freshWrites: { key: string; snapshot: StoreSnapshot } | undefined;

interface UpdateContext {
  sub: Subresource;
  options: WriteOptions;
  /** For patches: the object the request addressed; the patched object must still be that one. */
  target?: ObjectRef;
  /** For patches: what the registry answered for `target`'s kind, which the patched object most often keeps. */
  targetKind?: { state: KindState; resource: ResourceType };
  /** Writes by the store's own controllers (GC, namespace finalizer) may change what clients may not. */
  system?: boolean;
  /**
   * The input is the store's own already (a patch's result): it is checked and measured, not copied. With
   * "sharing-stored", its frozen parts are subtrees of the stored object (see `mergePatchSharing`).
   */
  owned?: boolean | "sharing-stored";
}

export class MemoryStore implements Store {
  readonly #now: () => number;
  /** The revisions, the history and its compaction, the watchers' feed: etcd's part. */
  readonly #log: RevisionLog;
  readonly #uidOption: (() => string) | undefined;
  readonly #admission: AdmissionChain;
  readonly #objectBytesMax: number;
  readonly #registry = new Registry();
  readonly #customKinds = new CustomKinds(this.#registry);
  readonly #gcHost: StoreGcHost;
  readonly #gc: GarbageCollector;
  readonly #namespaces: KindState;
  #uidCount = 0;
  #nameCount = 0;
  /** Open watches not opened `inert`: their listeners may run any code (see `selfContained`). */
  #activeWatches = 0;

  constructor(options: StoreOptions = {}) {
    this.#now = options.now ?? (() => 0);
    const bounds = { historyRevisionsMax: options.historyRevisionsMax, historyBytesMax: options.historyBytesMax };
    this.#log = new RevisionLog({ ...bounds, onCommit: (version, state) => this.#afterCommit(version, state) });
    this.#uidOption = options.uid;
    this.#admission = new AdmissionChain(options.admission ?? []);
    this.#objectBytesMax = options.objectBytesMax ?? defaultObjectBytesMax;
    assert(this.#objectBytesMax > 0, "objectBytesMax > 0");
    this.#namespaces = this.#registry.lookup({ apiVersion: "v1", kind: "Namespace" }).state;
    this.#gcHost = new StoreGcHost(this.#registry, this.#namespaces, {
      update: (next) => void this.#update(next, { sub: "main", options: {}, system: true }),
      delete: (options) => void this.delete(options),
    });
    this.#gc = new GarbageCollector(this.#gcHost);
    this.#createNamespaces(options.namespaces ?? defaultNamespaces);
  }

  /**
   * The store's first writes: its namespaces. Every simulated run starts a store, so a store whose writes depend
   * only on the names and the clock (no admission, no uid function, room for them in history and in size) commits
   * the very objects the last such store made, when its clock reads the same, instead of running each through the
   * write pipeline again; revisions, uids and timestamps come out the same, as with the setup cache's snapshots.
   */
  #createNamespaces(names: readonly string[]): void {
    const shareable =
      this.#admission.size === 0 &&
      this.#uidOption === undefined &&
      this.#log.historyRevisionsMax >= names.length &&
      this.#log.historyBytesMax === Infinity &&
      this.#objectBytesMax >= defaultObjectBytesMax;
    const key = names.join("\u0000");
    if (shareable && freshWrites?.key === key && this.restore(freshWrites.snapshot)) return;
    const nowMs = this.#now();
    for (const name of names) this.create({ apiVersion: "v1", kind: "Namespace", metadata: { name } });
    if (!shareable) return;
    const snapshot = this.snapshot({ revision: 0, uidCount: 0, nameCount: 0 });
    // A clock that moved during the writes (a real one) stamped them at more than one time: not one reading's writes.
    if (snapshot !== undefined && snapshot.nowMs === nowMs) freshWrites = { key, snapshot };
  }

  get revision(): number {
    return this.#log.revision;
  }

  get compactedRevision(): number {
    return this.#log.compactedRevision;
  }

  /** What the history kept for watches and older reads counts for against `historyBytesMax`. */
  get historyBytes(): number {
    return this.#log.historyBytes;
  }

  resources(): ResourceType[] {
    return this.#registry.resources();
  }

  resourceFor(kind: KindRef): ResourceType {
    return this.#registry.lookup(kind).resource;
  }

  resourceForPlural(group: string, version: string, plural: string): ResourceType | undefined {
    return this.#registry.forPlural(group, version, plural);
  }

  // ---- reads ----

  get(ref: ObjectRef, options: { revision?: number } = {}): KubeObject {
    const { state, resource } = this.#registry.lookup(ref);
    const key = this.#refKey(ref, resource);
    const revision = options.revision ?? this.#log.revision;
    checkReadRevision(revision, this.#log.compactedRevision, this.#log.revision);
    const object = objectAt(state.objects.get(key), revision);
    if (object === undefined) throw notFound(resource.plural, ref.name, resource.group);
    return this.#view(object, resource);
  }

  list(options: StoreListOptions): ObjectList {
    const { state, resource } = this.#registry.lookup(options);
    const selector = compileSelectors(resource, options.labelSelector, options.fieldSelector);
    let revision = options.revision ?? this.#log.revision;
    let after: string | undefined;
    if (options.continue !== undefined && options.continue !== "") {
      if (options.revision !== undefined) throw badRequest("specifying resource version is not allowed when using continue");
      const token = decodeContinue(options.continue);
      if (token.rv < this.#log.compactedRevision) throw new ApiError("Expired", 410, continueExpiredMessage);
      revision = token.rv;
      after = token.start;
    }
    checkReadRevision(revision, this.#log.compactedRevision, this.#log.revision);
    const namespace = resource.namespaced && options.namespace !== undefined && options.namespace !== "" ? options.namespace : undefined;
    const limit = options.limit !== undefined && options.limit > 0 ? Math.floor(options.limit) : Infinity;
    const keys = (revision === this.#log.revision ? this.#indexedKeys(state, resource, selector.equalities) : undefined) ?? state.sortedKeys();
    const prefix = namespace === undefined ? "" : `${namespace}/`;
    let i = lowerBound(keys, prefix);
    if (after !== undefined) i = Math.max(i, lowerBound(keys, `${after}\u0000`));
    const items: KubeObject[] = [];
    // `#view` for each item, with the version string looked up once per list instead of once per item.
    const apiVersion = apiVersionOf(resource);
    let more = false;
    let last = "";
    for (; i < keys.length; i++) {
      const key = keys[i]!;
      if (prefix !== "" && !key.startsWith(prefix)) break;
      const object = objectAt(state.objects.get(key), revision);
      if (object === undefined || (selector.matches !== undefined && !selector.matches(object))) continue;
      if (items.length >= limit) {
        more = true;
        break;
      }
      items.push(object.apiVersion === apiVersion ? object : Object.freeze({ ...object, apiVersion }));
      last = key;
    }
    const metadata: ObjectList["metadata"] = { resourceVersion: String(revision) };
    if (more) metadata.continue = encodeContinue(revision, last);
    // As etcd's count of the keys left in the range: only without a selector (a count of the keys would include
    // objects the selector leaves out, so kube-apiserver leaves the field out rather than answer wrongly).
    if (more && selector.matches === undefined) metadata.remainingItemCount = countLive(state, keys, i, prefix, revision);
    return { apiVersion, kind: resource.listKind, metadata, items };
  }

  /**
   * For a list at the latest revision whose selector requires one value of a label or field: the keys of the
   * objects that have it, in key order, from the kind's index (the smallest candidate set of the requirements).
   * Undefined when no requirement can use an index. The list still applies the whole selector to each object.
   */
  #indexedKeys(state: KindState, resource: ResourceType, equalities: CompiledSelector["equalities"]): readonly string[] | undefined {
    let best: IndexedKeys | undefined;
    for (const { index, value } of equalities) {
      const keys = state.indexed(index, indexValue(index, resource), value);
      if (keys !== undefined && (best === undefined || keys.size < best.size)) best = keys;
    }
    return best?.sorted();
  }

  watch(options: StoreWatchOptions, listener: StoreWatchListener): StoreWatcher {
    const { state, resource } = this.#registry.lookup(options);
    const selector = compileSelectors(resource, options.labelSelector, options.fieldSelector);
    const from = options.fromRevision;
    if (!Number.isInteger(from) || from < 0) throw badRequest(`invalid resource version: ${String(from)}`);
    const compacted = this.#log.compactedRevision;
    if (from < compacted) throw new ApiError("Expired", 410, `too old resource version: ${from} (${compacted})`);
    // A start ahead of the newest revision is a watch that skips the writes up to it (the server's watch from a
    // resourceVersion the store has not reached opens at once, as the watch cache's does).
    const namespace = resource.namespaced && options.namespace !== undefined && options.namespace !== "" ? options.namespace : undefined;
    const first = selector.equalities[0];
    const equality = first === undefined ? undefined : { ...first, read: indexValue(first.index, resource) };
    const filter = { namespace, name: selector.name, matches: selector.matches, view: (o: KubeObject) => this.#view(o, resource), equality };
    const watcher = new Watcher(state.watchers, filter, listener, from);
    if (options.inert !== true) {
      this.#activeWatches++;
      watcher.onClose = () => this.#activeWatches--;
    }
    state.watchers.add(watcher);
    const end = this.#log.revision;
    const one = filter.name !== undefined && (!resource.namespaced || namespace !== undefined);
    this.#log.replay(watcher, one ? versionsOfKey(state, objectKey(resource.namespaced, namespace, filter.name!), from, end) : state.versionsAfter(from, end));
    return watcher;
  }


  history(afterRevision: number): readonly StoreEvent[] {
    return this.#log.history(afterRevision);
  }

  // ---- writes ----

  create(input: KubeObject, options: WriteOptions = {}): KubeObject {
    return this.#transaction(() => {
      const counters = { uid: this.#uidCount, name: this.#nameCount };
      const { object, bytes } = this.#cloneInput(input);
      const { state, resource } = this.#resolve(object);
      if (state.terminating) {
        throw new ApiError("MethodNotAllowed", 405, "create not allowed while custom resource definition is terminating");
      }
      const meta = object.metadata;
      if (!resource.namespaced) delete meta.namespace;
      if (meta.resourceVersion !== undefined && meta.resourceVersion !== "") {
        throw internalError("resourceVersion should not be set on objects to be created");
      }
      const namespace = meta.namespace;
      if (resource.namespaced && typeof namespace === "string" && namespace !== "") {
        checkNamespaceOpen(this.#namespaces, namespace, resource, meta.name ?? meta.generateName ?? "");
      }
      const admission = this.#admission.concerned("CREATE", undefined, resource);
      mutate(admission, "CREATE", undefined, resource, object, undefined, options);
      this.#prepareCreate(object, state, resource);
      const name = this.#pickName(object, state, resource);
      const errors = [...validateMetadata(object, resource), ...this.#validateKind(object, undefined, state, resource)];
      if (errors.length > 0) throw invalid(resource.kind, name, errors, resource.group);
      this.#finishCrd(object, undefined);
      const key = objectKey(resource.namespaced, object.metadata.namespace, name);
      const existing = state.objects.get(key);
      if (liveObject(existing) !== undefined) throw alreadyExists(resource.plural, name, resource.group);
      validate(admission, "CREATE", undefined, resource, object, undefined, options);
      if (options.dryRun === true) {
        // A dry run draws a uid and a name like the real thing, but leaves the sequences where they were.
        this.#uidCount = counters.uid;
        this.#nameCount = counters.name;
        return this.#view(deepFreeze(object), resource);
      }
      const version = this.#log.commit(state, key, "ADDED", object, existing, bytes);
      return this.#view(version.event.object, resource);
    });
  }

  update(input: KubeObject, options: WriteOptions = {}): KubeObject {
    return this.#update(input, { sub: "main", options });
  }

  updateStatus(input: KubeObject, options: WriteOptions = {}): KubeObject {
    return this.#update(input, { sub: "status", options });
  }

  finalizeNamespace(name: string, finalizers: readonly string[], resourceVersion?: string): KubeObject {
    const current = this.get({ apiVersion: "v1", kind: "Namespace", name });
    const metadata = { ...current.metadata, ...(resourceVersion === undefined ? {} : { resourceVersion }) };
    const spec = { ...(current.spec as Record<string, unknown> | undefined), finalizers: [...finalizers] };
    // A system write: spec.finalizers is what plain updates may not change.
    return this.#update({ ...current, metadata, spec }, { sub: "main", options: {}, system: true });
  }

  patch(options: PatchOptions): KubeObject {
    return this.#patch(options, "main");
  }

  patchStatus(options: PatchOptions): KubeObject {
    return this.#patch(options, "status");
  }

  delete(options: DeleteOptions): KubeObject {
    return this.#transaction(() => {
      const { state, resource } = this.#registry.lookup(options);
      const key = this.#refKey(options, resource);
      const currentVersion = state.objects.get(key);
      const current = liveObject(currentVersion);
      if (current === undefined) throw notFound(resource.plural, options.name, resource.group);
      checkDeletePreconditions(options, current, resource);
      if (state.id === namespaceKindId && immortalNamespaces.includes(options.name)) {
        throw new ApiError("Forbidden", 403, `namespaces "${options.name}" is forbidden: this namespace may not be deleted`, {
          name: options.name,
          group: "",
          kind: "namespaces",
        });
      }
      validate(this.#admission.concerned("DELETE", undefined, resource), "DELETE", undefined, resource, current, current, { dryRun: options.dryRun === true });
      const plan = planDelete(current, state, options, this.#now());
      if (plan !== "remove") this.#finishCrd(plan, current);
      if (options.dryRun === true) return this.#view(plan === "remove" ? current : deepFreeze(plan), resource);
      if (plan === "remove") return this.#view(this.#log.commit(state, key, "DELETED", current, currentVersion, tombstoneBytes(key)).event.object, resource);
      if (jsonEqual(plan, current)) return this.#view(current, resource);
      return this.#view(this.#log.commit(state, key, "MODIFIED", plan, currentVersion, currentVersion!.bytes).event.object, resource);
    });
  }

  // ---- snapshots of a freshly built world ----

  /**
   * The writes this store committed after revision `fromRevision`, with its sequences, for `restore` into another
   * store made the same way: a run's setup objects built once per worker instead of through every write's checks.
   * Undefined when the store has compacted or has watchers (a snapshot is of a world nothing watches yet).
   */
  snapshot(from: StoreMark): StoreSnapshot | undefined {
    const logged = this.#log.writesAfter(from.revision);
    if (logged === undefined || this.#uidOption !== undefined) return undefined;
    return { from, ...logged, uidCount: this.#uidCount, nameCount: this.#nameCount, nowMs: this.#now() };
  }

  /** Where the store stands: a snapshot's starting point. */
  mark(): StoreMark {
    return { revision: this.#log.revision, uidCount: this.#uidCount, nameCount: this.#nameCount };
  }

  /**
   * Commits a snapshot's writes as they were (the same objects, revisions and sequences) and returns true, when
   * this store stands where the snapshot's store stood before them: the same revision, write, clock and sequences.
   * Otherwise it changes nothing and returns false.
   */
  restore(snapshot: StoreSnapshot): boolean {
    const { from } = snapshot;
    if (this.#log.revision !== from.revision || this.#uidCount !== from.uidCount || this.#nameCount !== from.nameCount) return false;
    if (this.#log.compactedRevision > 0 || this.#uidOption !== undefined || this.#now() !== snapshot.nowMs) return false;
    if (!this.#log.endsWith(from.revision, snapshot.baseEvent)) return false;
    this.#log.restoreWrites(snapshot.writes, (kindId) => this.#registry.byId(kindId));
    this.#uidCount = snapshot.uidCount;
    this.#nameCount = snapshot.nameCount;
    return true;
  }

  // ---- garbage collection ----

  selfContained(): boolean {
    return this.#activeWatches === 0 && this.#admission.size === 0;
  }

  hasGarbage(): boolean {
    return this.#gc.next() !== undefined;
  }

  collectGarbage(): string | undefined {
    const action = this.#gc.next();
    if (action === undefined) return undefined;
    try {
      action.run();
    } catch (error) {
      // The real collector retries with backoff; here the caller sees the failure and may step again.
      if (!isApiError(error)) throw error;
      return `${action.description}: failed: ${error.message}`;
    }
    return action.description;
  }

  // ---- the write pipeline ----

  /** Runs a write; on failure the name and uid sequences are restored, so a failed write changes nothing. */
  #transaction<T>(write: () => T): T {
    const revision = this.#log.revision;
    const uidCount = this.#uidCount;
    const nameCount = this.#nameCount;
    try {
      return write();
    } catch (error) {
      if (this.#log.revision === revision) {
        this.#uidCount = uidCount;
        this.#nameCount = nameCount;
      }
      throw error;
    }
  }

  #update(input: KubeObject, context: UpdateContext): KubeObject {
    return this.#transaction(() => {
      const { object, bytes } = this.#cloneInput(input, context.owned ?? false);
      const { target, targetKind } = context;
      // A lookup of the same apiVersion and kind answers the same (the registry does not change during a write).
      const sameKind = targetKind !== undefined && object.apiVersion === target?.apiVersion && object.kind === target.kind;
      const { state, resource } = sameKind ? targetKind : this.#resolve(object);
      if (context.sub === "status" && !resource.statusSubresource) {
        throw new ApiError("NotFound", 404, `the server could not find the requested resource (put ${resource.plural}/status)`);
      }
      const { key, name } = this.#inputKey(object, resource, context.target);
      const currentVersion = state.objects.get(key);
      const current = liveObject(currentVersion);
      if (current === undefined) throw notFound(resource.plural, name, resource.group);
      checkUpdatePreconditions(object, current, resource);
      let next = this.#mergeSubresource(object, current, state, resource, context);
      const admission = this.#admission.concerned("UPDATE", context.sub, resource);
      if (admission.some((a) => a.mutate !== undefined)) next = cloneMeasured(next).clone;
      mutate(admission, "UPDATE", context.sub, resource, next, current, context.options);
      this.#prepareUpdate(next, current, state, resource);
      // Metadata whose checked fields are the stored object's (a status write, a patch that leaves them alone, an
      // update that sends them back unchanged) passed these checks when it was stored: they would find nothing again.
      const metaErrors = sameCheckedMetadata(next.metadata, current.metadata) ? noErrors : validateMetadata(next, resource);
      const updateErrors = validateMetadataUpdate(next, current);
      const kindErrors = this.#validateKind(next, current, state, resource);
      if (metaErrors.length + updateErrors.length + kindErrors.length > 0) {
        throw invalid(resource.kind, name, [...metaErrors, ...updateErrors, ...kindErrors], resource.group);
      }
      this.#finishCrd(next, current);
      validate(admission, "UPDATE", context.sub, resource, next, current, context.options);
      if (jsonEqual(next, current)) return this.#view(current, resource);
      if (context.options.dryRun === true) return this.#view(deepFreeze(next), resource);
      if (!isFinalized(next)) return this.#view(this.#log.commit(state, key, "MODIFIED", next, currentVersion, bytes).event.object, resource);
      // Removing the last finalizer of a terminating object deletes it; watchers see its last stored state.
      const deleted = this.#log.commit(state, key, "DELETED", current, currentVersion, tombstoneBytes(key));
      const last = { ...next, metadata: { ...next.metadata, resourceVersion: String(deleted.event.revision) } };
      return this.#view(deepFreeze(last), resource);
    });
  }

  #patch(options: PatchOptions, sub: Subresource): KubeObject {
    const targetKind = this.#registry.lookup(options);
    const { state, resource } = targetKind;
    const key = this.#refKey(options, resource);
    const current = liveObject(state.objects.get(key));
    if (current === undefined) throw notFound(resource.plural, options.name, resource.group);
    if (options.patchType !== "merge" && options.patchType !== "json") {
      throw new ApiError(
        "UnsupportedMediaType",
        415,
        `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json`,
      );
    }
    const target = this.#view(current, resource);
    // A patch shares the subtrees it does not reach with the stored object, unless pruning against a schema
    // changed since that object was stored could have to cut into them (see `#mergeSubresource`).
    const merge = options.patchType === "merge";
    const sharing = (merge ? isPlainObject(options.patch) : jsonPatchShareable(options.patch)) && this.#customKinds.prunedAsNow(current, state);
    let patched: unknown;
    try {
      if (sharing) patched = merge ? this.#mergePatchSharing(target, options.patch as Record<string, unknown>) : jsonPatchSharing(target, options.patch);
      else patched = merge ? applyMergePatch(target, options.patch) : applyJsonPatch(target, options.patch);
    } catch (error) {
      if (isApiError(error)) throw error;
      throw badRequest(`the patch could not be applied: ${error instanceof Error ? error.message : String(error)}`);
    }
    if (!isRecord(patched)) throw badRequest("the patch must leave an object");
    if (this.#statusUnchanged(options, sub, patched, current, state, resource)) return this.#view(current, resource);
    const ref: ObjectRef = { apiVersion: options.apiVersion, kind: options.kind, name: options.name };
    if (resource.namespaced) ref.namespace = options.namespace;
    // The patch result is the store's own: new objects on the patched paths, and (when sharing) frozen stored ones.
    const context: UpdateContext = { sub, options, target: ref, targetKind, owned: sharing ? "sharing-stored" : true };
    return this.#update(patched as unknown as KubeObject, context);
  }

  /**
   * True for a merge patch of the status subresource that touches only `status` and leaves it as stored: the write
   * pipeline would end in its no-op answer (the stored object, no new revision), as for a controller that writes
   * the same status after every resync, and nothing on its way there could fail. That holds where the stored
   * object passed the same checks when written: no admission plugin concerned, and a built-in kind, or a custom kind whose
   * schema is the one it was stored under and has no CEL rules (a transition rule may reject an unchanged value).
   */
  #statusUnchanged(options: PatchOptions, sub: Subresource, patched: Record<string, unknown>, current: KubeObject, state: KindState, resource: ResourceType): boolean {
    if (sub !== "status" || options.patchType !== "merge" || !resource.statusSubresource || this.#admission.concerned("UPDATE", sub, resource).length > 0) return false;
    const patch = options.patch;
    if (!isPlainObject(patch) || !("status" in patch) || Object.keys(patch).length !== 1) return false;
    if (patched.apiVersion !== options.apiVersion || patched.kind !== options.kind || !jsonEqual(patched.status, current.status)) return false;
    if (state.custom === undefined) return true;
    const schema = state.custom.schemas.get(resource.version);
    return schema !== undefined && this.#customKinds.prunedAsNow(current, state) && !hasCelRules(schema);
  }

  /**
   * `applyMergePatch` (same checks of the patch, same result) over the stored object's frozen subtrees. The top level
   * and `metadata` are always new objects, because the write pipeline sets fields in both.
   */
  #mergePatchSharing(target: KubeObject, patch: Record<string, unknown>): Record<string, unknown> {
    const patched = mergePatchSharing(target as unknown as Record<string, unknown>, cloneJsonChecked(patch, "merge patch") as Record<string, unknown>);
    if (patched.metadata === target.metadata && isRecord(target.metadata)) patched.metadata = { ...target.metadata };
    return patched;
  }

  /**
   * Clones what the caller passed (the store never keeps a caller's reference) and checks its shape and size.
   * An input that is the store's own (`owned`) or was handed over (`handOver`) is made plain in place instead.
   */
  #cloneInput(input: unknown, owned: boolean | "sharing-stored" = false): { object: KubeObject; bytes: number } {
    if (!isRecord(input)) throw badRequest("the request body must be a JSON object");
    let cloned: { clone: KubeObject; bytes: number };
    try {
      cloned = cloneMeasured(input as KubeObject, this.#objectBytesMax, owned === false ? takeHandedOver(input) : owned);
    } catch (error) {
      throw badRequest(`the object is not valid JSON data: ${error instanceof Error ? error.message : String(error)}`);
    }
    if (cloned.bytes > this.#objectBytesMax) {
      throw tooLarge(`Request entity too large: limit is ${this.#objectBytesMax}`);
    }
    const object = cloned.clone;
    if (typeof object.kind !== "string" || object.kind === "") throw badRequest(`Object 'Kind' is missing in '${inputText(input)}'`);
    if (typeof object.apiVersion !== "string" || object.apiVersion === "") {
      throw badRequest(`Object 'apiVersion' is missing in '${inputText(input)}'`);
    }
    if (object.metadata === undefined) object.metadata = {};
    if (!isRecord(object.metadata)) {
      throw invalid(object.kind, "", [{ field: "metadata", type: "FieldValueInvalid", message: "Invalid value: must be an object" }]);
    }
    return { object, bytes: cloned.bytes };
  }

  #resolve(object: KubeObject): { state: KindState; resource: ResourceType } {
    return this.#registry.lookup({ apiVersion: object.apiVersion, kind: object.kind });
  }

  #refKey(ref: { namespace?: string | undefined; name: string }, resource: ResourceType): string {
    if (typeof ref.name !== "string" || ref.name === "") throw badRequest("name is required");
    if (resource.namespaced && (ref.namespace === undefined || ref.namespace === "")) {
      throw badRequest(`namespace is required for the namespaced resource ${resource.plural}`);
    }
    return objectKey(resource.namespaced, ref.namespace, ref.name);
  }

  #inputKey(object: KubeObject, resource: ResourceType, target: ObjectRef | undefined): { key: string; name: string } {
    const meta = object.metadata;
    if (!resource.namespaced) delete meta.namespace;
    const name = typeof meta.name === "string" ? meta.name : "";
    if (target !== undefined) {
      if (name !== target.name) throw badRequest(`the name of the object (${name}) does not match the name on the URL (${target.name})`);
      if (resource.namespaced && meta.namespace !== target.namespace) {
        throw badRequest("the namespace of the provided object does not match the namespace sent on the request");
      }
      if (object.kind !== target.kind || object.apiVersion !== target.apiVersion) {
        throw badRequest(`the API version in the data (${object.apiVersion}) does not match the expected API version (${target.apiVersion})`);
      }
    }
    const errors: FieldError[] = [];
    if (name === "") errors.push({ field: "metadata.name", type: "FieldValueRequired", message: "Required value: name is required" });
    if (resource.namespaced && (typeof meta.namespace !== "string" || meta.namespace === "")) {
      errors.push({ field: "metadata.namespace", type: "FieldValueRequired", message: "Required value" });
    }
    if (errors.length > 0) throw invalid(resource.kind, name, errors, resource.group);
    return { key: objectKey(resource.namespaced, meta.namespace, name), name };
  }

  /**
   * Main writes keep the stored `status`; status writes keep everything but `status`. A status write shares the
   * stored object's frozen parts (all but the top level and `metadata`, which the pipeline sets): nothing after this
   * writes into them. A custom kind's object is copied whole unless `CustomKinds.prunedAsNow`, because pruning against a schema
   * changed since it was stored may cut fields anywhere in it; pruning again with the same schema removes nothing.
   */
  #mergeSubresource(object: KubeObject, current: KubeObject, state: KindState, resource: ResourceType, context: UpdateContext): KubeObject {
    if (context.sub === "status") {
      const share = this.#customKinds.prunedAsNow(current, state);
      const next = share ? { ...current, metadata: { ...current.metadata } } : cloneMeasured(current).clone;
      if (object.status === undefined) delete next.status;
      else next.status = object.status;
      return next;
    }
    if (resource.statusSubresource) {
      if (current.status === undefined) delete object.status;
      else object.status = current.status;
    }
    // A Namespace's spec.finalizers change only through finalize (the namespace controller).
    if (resource.kind === "Namespace" && resource.group === "" && context.system !== true) object.spec = current.spec;
    return object;
  }

  #prepareCreate(object: KubeObject, state: KindState, resource: ResourceType): void {
    const meta = writableMeta(object);
    object.apiVersion = formatApiVersion({ group: resource.group, version: state.storageVersion });
    if (resource.statusSubresource && state.rules.statusOnCreate === "drop") delete object.status;
    dropSystemFields(meta, true);
    meta.uid = this.#uidOption !== undefined ? this.#uidOption() : sequenceUid(this.#uidCount++);
    meta.creationTimestamp = formatTimestamp(this.#now());
    meta.generation = 1;
    prepareForCreate(object, resource);
    applyDefaults(object, resource);
    if (state.custom === undefined) this.#decodeQuantities(object, resource);
    this.#pruneCustom(object, state, resource);
  }

  #prepareUpdate(next: KubeObject, current: KubeObject, state: KindState, resource: ResourceType): void {
    next.apiVersion = current.apiVersion;
    next.kind = current.kind;
    const meta = writableMeta(next);
    const old = current.metadata;
    meta.uid = old.uid;
    meta.creationTimestamp = old.creationTimestamp;
    meta.resourceVersion = old.resourceVersion;
    if (old.deletionTimestamp === undefined && old.deletionGracePeriodSeconds === undefined) dropSystemFields(meta, true);
    else {
      for (const field of ["deletionTimestamp", "deletionGracePeriodSeconds"] as const) {
        if (old[field] === undefined) delete meta[field];
        else (meta as Record<string, unknown>)[field] = old[field];
      }
      dropSystemFields(meta, false);
    }
    applyDefaults(next, resource);
    if (state.custom === undefined) this.#decodeQuantities(next, resource);
    this.#pruneCustom(next, state, resource);
    const changed = differsOutside(next as Record<string, unknown>, current as Record<string, unknown>, factsOf(resource).generationIgnores);
    meta.generation = (old.generation ?? 0) + (changed ? 1 : 0);
  }

  /** A custom resource as the API server stores it: fields its schema does not declare pruned, absent ones defaulted. */
  #pruneCustom(object: KubeObject, state: KindState, resource: ResourceType): void {
    const schema = state.custom?.schemas.get(resource.version);
    if (schema === undefined) return;
    pruneUnknown(object, schema, true);
    applySchemaDefaults(object, schema, true);
  }

  /**
   * A built-in kind's quantities as a real server stores them: its decoder rewrites every Quantity field to the
   * canonical string, and refuses a value that is not a quantity with a 400, before any validation. Custom resources
   * keep their strings as sent, as on a real server.
   */
  #decodeQuantities(object: KubeObject, resource: ResourceType): void {
    const message = factsOf(resource).quantityMessage;
    if (message === undefined) return;
    const problem = canonicalizeQuantities(object, message)[0];
    if (problem === undefined) return;
    throw badRequest(`${resource.kind} in version "${resource.version}" cannot be handled as a ${resource.kind}: ${problem.message}`);
  }

  /** `metadata.name` from `generateName` when absent: a 5-character suffix, redrawn while the name is taken. */
  #pickName(object: KubeObject, state: KindState, resource: ResourceType): string {
    const meta = object.metadata;
    if (typeof meta.name === "string" && meta.name !== "") return meta.name;
    const prefix = meta.generateName;
    if (typeof prefix !== "string" || prefix === "") return "";
    const errors = validateGenerateName(prefix, resource.nameRule);
    if (errors.length > 0) throw invalid(resource.kind, prefix, errors, resource.group);
    const base = prefix.slice(0, Math.max(0, (resource.nameRule === "dns1123-label" || resource.nameRule === "dns1035-label" ? 63 : 253) - generatedSuffixLength));
    for (let attempt = 0; attempt < generateNameAttemptsMax; attempt++) {
      const name = `${base}${sequenceSuffix(this.#nameCount)}`;
      this.#nameCount++;
      if (liveObject(state.objects.get(objectKey(resource.namespaced, meta.namespace, name))) === undefined) {
        meta.name = name;
        return name;
      }
    }
    throw alreadyExists(resource.plural, `${prefix}*`, resource.group);
  }

  #validateKind(object: KubeObject, old: KubeObject | undefined, state: KindState, resource: ResourceType): FieldError[] {
    if (state.id === crdKindId) return [...validateCrd(object, old), ...this.#customKinds.schemaErrors(object)];
    const validator = state.custom?.validators.get(resource.version);
    if (validator === undefined) return validateKind(object, old, resource);
    // The schema is written for the version the client speaks, so validate the object as it sent it.
    const asSent = { ...object, apiVersion: formatApiVersion(resource) };
    if (!validator(asSent)) return schemaErrors(validator.errors ?? [], asSent);
    // CEL rules run only on an object that fits its schema, so a rule can trust the types it reads.
    const schema = state.custom?.schemas.get(resource.version);
    return schema === undefined ? [] : celRuleErrors(schema, asSent, old === undefined ? undefined : { ...old, apiVersion: formatApiVersion(resource) });
  }

  /** A CRD's status is what the apiextensions controllers would write at once: names accepted, established. */
  #finishCrd(object: KubeObject, old: KubeObject | undefined): void {
    if (object.kind !== "CustomResourceDefinition" || !object.apiVersion.startsWith("apiextensions.k8s.io/")) return;
    if (validateCrd(object).length > 0) return;
    object.status = crdStatus(object, crdInfo(object), old, formatTimestamp(this.#now()));
  }

  // ---- what a commit means for the API ----

  /** What the API layer derives from each committed write (the log calls it before compaction and publication). */
  #afterCommit(version: Version, state: KindState): void {
    const { event, key } = version;
    // What is derived here reads the log's revision as this write's (a CRD's registration revision).
    assert(event.revision === this.#log.revision, "store-derives-from-the-newest-commit");
    const before = liveObject(version.prev);
    const after = liveObject(version);
    const uid = event.object.metadata.uid ?? "";
    this.#gcHost.indexUid(uid, state, key, before, after);
    if (state.id === crdKindId) this.#customKinds.sync(after ?? event.object, after === undefined, this.#log.revision);
    this.#gc.track(state, key, before, after);
  }

  /** Presents a stored object in the version a client asked for (custom resources with several versions). */
  #view(object: KubeObject, resource: ResourceType): KubeObject {
    const apiVersion = apiVersionOf(resource);
    if (object.apiVersion === apiVersion) return object;
    return Object.freeze({ ...object, apiVersion });
  }

}

export { locOf };

/** Where a store stood before the writes of a snapshot. */
export interface StoreMark {
  readonly revision: number;
  readonly uidCount: number;
  readonly nameCount: number;
}

/** What `MemoryStore.snapshot` takes and `restore` replays: committed writes, opaque to everyone else. */
export interface StoreSnapshot {
  readonly from: StoreMark;
  /** The last write before the snapshot's, which the restoring store must have made too. */
  readonly baseEvent: StoreEvent | undefined;
  readonly writes: readonly LoggedWrite[];
  readonly uidCount: number;
  readonly nameCount: number;
  readonly nowMs: number;
}

/**
 * Removes the metadata fields a client may not set: `selfLink` and `managedFields`, and with `deletion` the deletion
 * fields too. Each is deleted only when present: on Node 20 deleting a field an object lacks costs a runtime call,
 * several times what the `in` test costs, and nearly every write has none of them.
 */
function dropSystemFields(meta: WritableMeta, deletion: boolean): void {
  if (deletion) {
    if ("deletionTimestamp" in meta) delete meta.deletionTimestamp;
    if ("deletionGracePeriodSeconds" in meta) delete meta.deletionGracePeriodSeconds;
  }
  if ("selfLink" in meta) delete meta.selfLink;
  if ("managedFields" in meta) delete meta.managedFields;
}

/**
 * `applyJsonPatchSharing` of a stored object, with what the write pipeline needs of the result: a new top level
 * and `metadata` (it sets fields in both), which the patch left shared when no operation reached into `metadata`.
 */
function jsonPatchSharing(target: KubeObject, operations: unknown): unknown {
  const patched = applyJsonPatchSharing(target as unknown as Record<string, unknown>, operations);
  if (isRecord(patched) && isRecord(patched.metadata) && Object.isFrozen(patched.metadata)) patched.metadata = { ...patched.metadata };
  return patched;
}

/** The start of a rejected input, for its error message. */
function inputText(input: unknown): string {
  return JSON.stringify(input).slice(0, 80);
}
