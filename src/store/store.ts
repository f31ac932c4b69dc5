// The store: kube-apiserver + etcd semantics over plain memory. Every write goes through one pipeline
// (clone, resolve the kind, preconditions, mutating admission, system fields, validation, validating admission,
// no-op detection, commit), so every write path gets the same rules and a failed write changes nothing.
import { assert } from "../api/assert.ts";
import type { DeleteOptions, PatchOptions, WriteOptions, PropagationPolicy } from "../api/client.ts";
import { formatTimestamp } from "../api/clock.ts";
import { ApiError, alreadyExists, badRequest, conflict, internalError, invalid, isApiError, notFound, tooLarge } from "../api/errors.ts";
import type { FieldError } from "../api/errors.ts";
import type { KindRef, KubeObject, ObjectList, ObjectRef } from "../api/object.ts";
import { formatApiVersion } from "../api/object.ts";
import { applyJsonPatch, applyJsonPatchSharing, applyMergePatch, cloneJsonChecked, jsonPatchShareable, mergePatchSharing } from "../api/patch.ts";
import type { ResourceType } from "../api/resources.ts";
import { validateGenerateName } from "../api/validation.ts";
import type {
  Admission,
  AdmissionOperation,
  AdmissionRequest,
  Store,
  StoreEvent,
  StoreListOptions,
  StoreOptions,
  StoreWatcher,
  StoreWatchListener,
  StoreWatchOptions,
} from "./types.ts";
import { applySchemaDefaults, crdInfo, crdStatus, createSchemaCompiler, pruneUnknown, schemaErrors, validateCrd, type CrdInfo } from "./crd.ts";
import { celRuleDefinitionErrors, celRuleErrors, hasCelRules } from "./cel.ts";
import type { CustomSchemas } from "./registry.ts";
import { isFinalized, planDelete } from "./delete.ts";
import { GarbageCollector, isDeleting, locOf } from "./gc.ts";
import type { GcHost, Located } from "./gc.ts";
import { checkReadRevision, compileSelectors, continueExpiredMessage, decodeContinue, encodeContinue, indexValue, lowerBound } from "./reads.ts";
import type { CompiledSelector } from "./reads.ts";
import { KindState, Registry, objectKey } from "./registry.ts";
import type { IndexedKeys } from "./registry.ts";
import { RevisionLog, tombstoneBytes, versionsOfKey, type LoggedWrite } from "./revision-log.ts";
import { liveObject, objectAt, type Version } from "./version.ts";
import { deepFreeze, isPlainObject, isRecord, jsonEqual } from "../api/json.ts";
import { canonicalizeQuantities, quantityMessageOf } from "../api/quantities.ts";
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

type Subresource = "main" | "status";

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
  readonly #admission: readonly Admission[];
  readonly #admissionByResource = new WeakMap<ResourceType, Map<string, readonly Admission[]>>();
  readonly #objectBytesMax: number;
  readonly #registry = new Registry();
  readonly #compileSchema = createSchemaCompiler();
  readonly #uids = new Map<string, { state: KindState; key: string }>();
  readonly #gc: GarbageCollector;
  readonly #namespaces: KindState;
  /** Per custom kind (by id): the revision of the CRD write that last registered it, with the schemas now in force. */
  readonly #customRegisteredAt = new Map<string, number>();
  /** Where the namespace controller's scans of terminating namespaces stand (see `#firstInNamespace`). */
  readonly #namespaceScans = new Map<string, { stateId: string; key: string } | "done">();
  #uidCount = 0;
  #nameCount = 0;

  constructor(options: StoreOptions = {}) {
    this.#now = options.now ?? (() => 0);
    const bounds = { historyRevisionsMax: options.historyRevisionsMax, historyBytesMax: options.historyBytesMax };
    this.#log = new RevisionLog({ ...bounds, onCommit: (version) => this.#afterCommit(version) });
    this.#uidOption = options.uid;
    this.#admission = [...(options.admission ?? [])];
    this.#objectBytesMax = options.objectBytesMax ?? defaultObjectBytesMax;
    assert(this.#objectBytesMax > 0, "objectBytesMax > 0");
    this.#namespaces = this.#registry.lookup({ apiVersion: "v1", kind: "Namespace" }).state;
    this.#gc = new GarbageCollector(this.#gcHost());
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
      this.#admission.length === 0 &&
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
    // As a read's: 400 for a malformed start, 410 behind the compaction point, 504 ahead of the newest revision (the
    // server waits for a revision ahead before it asks; a watcher that started ahead would skip writes unseen).
    checkReadRevision(from, this.#log.compactedRevision, this.#log.revision);
    const namespace = resource.namespaced && options.namespace !== undefined && options.namespace !== "" ? options.namespace : undefined;
    const first = selector.equalities[0];
    const equality = first === undefined ? undefined : { ...first, read: indexValue(first.index, resource) };
    const filter = { namespace, name: selector.name, matches: selector.matches, view: (o: KubeObject) => this.#view(o, resource), equality };
    const watcher = new Watcher(state.watchers, filter, listener, from);
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
        this.#checkNamespaceOpen(namespace, resource, meta.name ?? meta.generateName ?? "");
      }
      const admission = this.#admitting("CREATE", undefined, resource);
      this.#mutate(admission, "CREATE", undefined, resource, object, undefined, options);
      this.#prepareCreate(object, state, resource);
      const name = this.#pickName(object, state, resource);
      const errors = [...validateMetadata(object, resource), ...this.#validateKind(object, undefined, state, resource)];
      if (errors.length > 0) throw invalid(resource.kind, name, errors, resource.group);
      this.#finishCrd(object, undefined);
      const key = objectKey(resource.namespaced, object.metadata.namespace, name);
      const existing = state.objects.get(key);
      if (liveObject(existing) !== undefined) throw alreadyExists(resource.plural, name, resource.group);
      this.#validating(admission, "CREATE", undefined, resource, object, undefined, options);
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
      this.#checkDeletePreconditions(options, current, resource);
      if (state.id === namespaceKindId && immortalNamespaces.includes(options.name)) {
        throw new ApiError("Forbidden", 403, `namespaces "${options.name}" is forbidden: this namespace may not be deleted`, {
          name: options.name,
          group: "",
          kind: "namespaces",
        });
      }
      this.#validating(this.#admitting("DELETE", undefined, resource), "DELETE", undefined, resource, current, current, { dryRun: options.dryRun === true });
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
      this.#checkUpdatePreconditions(object, current, resource);
      let next = this.#mergeSubresource(object, current, state, resource, context);
      const admission = this.#admitting("UPDATE", context.sub, resource);
      if (admission.some((a) => a.mutate !== undefined)) next = cloneMeasured(next).clone;
      this.#mutate(admission, "UPDATE", context.sub, resource, next, current, context.options);
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
      this.#validating(admission, "UPDATE", context.sub, resource, next, current, context.options);
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
    const sharing = (merge ? isPlainObject(options.patch) : jsonPatchShareable(options.patch)) && this.#prunedAsNow(current, state);
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
    if (sub !== "status" || options.patchType !== "merge" || !resource.statusSubresource || this.#admitting("UPDATE", sub, resource).length > 0) return false;
    const patch = options.patch;
    if (!isPlainObject(patch) || !("status" in patch) || Object.keys(patch).length !== 1) return false;
    if (patched.apiVersion !== options.apiVersion || patched.kind !== options.kind || !jsonEqual(patched.status, current.status)) return false;
    if (state.custom === undefined) return true;
    const schema = state.custom.schemas.get(resource.version);
    return schema !== undefined && this.#prunedAsNow(current, state) && !hasCelRules(schema);
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

  #checkNamespaceOpen(namespace: string, resource: ResourceType, name: string): void {
    const ns = liveObject(this.#namespaces.objects.get(namespace));
    if (ns === undefined) throw notFound("namespaces", namespace);
    if (ns.metadata.deletionTimestamp === undefined) return;
    const what = resource.group === "" ? resource.plural : `${resource.plural}.${resource.group}`;
    throw new ApiError(
      "Forbidden",
      403,
      `${what} "${name}" is forbidden: unable to create new content in namespace ${namespace} because it is being terminated`,
      {
        name,
        group: resource.group,
        kind: resource.plural,
        causes: [{ reason: "NamespaceTerminating", message: `namespace ${namespace} is being terminated`, field: "metadata.namespace" }],
      },
    );
  }

  #checkUpdatePreconditions(object: KubeObject, current: KubeObject, resource: ResourceType): void {
    const meta = object.metadata;
    const name = current.metadata.name ?? "";
    const uid = meta.uid;
    if (uid !== undefined && uid !== "" && uid !== current.metadata.uid) {
      const why = `Precondition failed: UID in precondition: ${uid}, UID in object meta: ${current.metadata.uid}`;
      throw conflict(resource.plural, name, why, resource.group);
    }
    const rv = meta.resourceVersion;
    if (rv === undefined || rv === "") return;
    if (typeof rv !== "string" || !/^[0-9]+$/.test(rv)) throw badRequest(`invalid resource version: ${JSON.stringify(rv)}`);
    if (rv !== current.metadata.resourceVersion) {
      const why = "the object has been modified; please apply your changes to the latest version and try again";
      throw conflict(resource.plural, name, why, resource.group);
    }
  }

  #checkDeletePreconditions(options: DeleteOptions, current: KubeObject, resource: ResourceType): void {
    const name = options.name;
    const uid = options.preconditions?.uid;
    if (uid !== undefined && uid !== current.metadata.uid) {
      const why = `Precondition failed: UID in precondition: ${uid}, UID in object meta: ${current.metadata.uid}`;
      throw conflict(resource.plural, name, why, resource.group);
    }
    const rv = options.preconditions?.resourceVersion;
    if (rv !== undefined && rv !== current.metadata.resourceVersion) {
      const why = `Precondition failed: ResourceVersion in precondition: ${rv}, ResourceVersion in meta: ${current.metadata.resourceVersion}`;
      throw conflict(resource.plural, name, why, resource.group);
    }
  }

  /**
   * Main writes keep the stored `status`; status writes keep everything but `status`. A status write shares the
   * stored object's frozen parts (all but the top level and `metadata`, which the pipeline sets): nothing after this
   * writes into them. A custom kind's object is copied whole unless `#prunedAsNow`, because pruning against a schema
   * changed since it was stored may cut fields anywhere in it; pruning again with the same schema removes nothing.
   */
  #mergeSubresource(object: KubeObject, current: KubeObject, state: KindState, resource: ResourceType, context: UpdateContext): KubeObject {
    if (context.sub === "status") {
      const share = this.#prunedAsNow(current, state);
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
    if (state.id === crdKindId) return [...validateCrd(object, old), ...this.#crdSchemaErrors(object)];
    const validator = state.custom?.validators.get(resource.version);
    if (validator === undefined) return validateKind(object, old, resource);
    // The schema is written for the version the client speaks, so validate the object as it sent it.
    const asSent = { ...object, apiVersion: formatApiVersion(resource) };
    if (!validator(asSent)) return schemaErrors(validator.errors ?? [], asSent);
    // CEL rules run only on an object that fits its schema, so a rule can trust the types it reads.
    const schema = state.custom?.schemas.get(resource.version);
    return schema === undefined ? [] : celRuleErrors(schema, asSent, old === undefined ? undefined : { ...old, apiVersion: formatApiVersion(resource) });
  }

  #crdSchemaErrors(crd: KubeObject): FieldError[] {
    if (validateCrd(crd).length > 0) return [];
    const errors: FieldError[] = [];
    crdInfo(crd).versions.forEach((version, i) => {
      try {
        this.#compileSchema(version.schema);
        errors.push(...celRuleDefinitionErrors(version.schema, `spec.versions[${i}].schema.openAPIV3Schema`));
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        errors.push({ field: `spec.versions[${i}].schema.openAPIV3Schema`, type: "FieldValueInvalid", message: `Invalid value: ${message}` });
      }
    });
    return errors;
  }

  /** A CRD's status is what the apiextensions controllers would write at once: names accepted, established. */
  #finishCrd(object: KubeObject, old: KubeObject | undefined): void {
    if (object.kind !== "CustomResourceDefinition" || !object.apiVersion.startsWith("apiextensions.k8s.io/")) return;
    if (validateCrd(object).length > 0) return;
    object.status = crdStatus(object, crdInfo(object), old, formatTimestamp(this.#now()));
  }

  /**
   * The admission plugins a write concerns, in registration order. Remembered per resource type (a custom kind
   * registered again gets a new one) and kind of write, as `Admission.concerns` answers from those alone.
   */
  #admitting(operation: AdmissionOperation, sub: Subresource | undefined, resource: ResourceType): readonly Admission[] {
    if (this.#admission.length === 0) return this.#admission;
    let byWrite = this.#admissionByResource.get(resource);
    if (byWrite === undefined) this.#admissionByResource.set(resource, (byWrite = new Map()));
    const key = sub === "status" ? `${operation}/status` : operation;
    let plugins = byWrite.get(key);
    if (plugins === undefined) {
      const status = sub === "status" ? "status" : undefined;
      plugins = this.#admission.filter((a) => a.concerns === undefined || a.concerns(operation, resource, status));
      byWrite.set(key, plugins);
    }
    return plugins;
  }

  #mutate(plugins: readonly Admission[], operation: AdmissionOperation, sub: Subresource | undefined, resource: ResourceType, object: KubeObject, old: KubeObject | undefined, options: WriteOptions): void {
    for (const admission of plugins) {
      if (admission.mutate === undefined) continue;
      admission.mutate(admissionRequest(operation, sub, resource, object, old, options));
    }
  }

  #validating(plugins: readonly Admission[], operation: AdmissionOperation, sub: Subresource | undefined, resource: ResourceType, object: KubeObject, old: KubeObject | undefined, options: WriteOptions): void {
    if (plugins.length === 0) return;
    deepFreeze(object);
    for (const admission of plugins) {
      if (admission.validate === undefined) continue;
      admission.validate(admissionRequest(operation, sub, resource, object, old, options));
    }
  }

  // ---- what a commit means for the API ----

  /** What the API layer derives from each committed write (the log calls it before compaction and publication). */
  #afterCommit(version: Version): void {
    const { event, kind: state, key } = version;
    const before = liveObject(version.prev);
    const after = liveObject(version);
    const uid = event.object.metadata.uid ?? "";
    if (after === undefined) this.#uids.delete(uid);
    else if (before === undefined) this.#uids.set(uid, { state, key });
    if (state.id === crdKindId) this.#syncCrdKind(after ?? event.object, after === undefined);
    this.#gc.track(state, key, before, after);
  }

  /** Registers, re-registers or unregisters the kind a CRD defines, after the CRD's write committed. */
  #syncCrdKind(crd: KubeObject, deleted: boolean): void {
    const info = crdRegistrations.get(crd.spec as object)?.info ?? crdInfo(crd);
    if (deleted) {
      const state = this.#registry.byId(`${info.group}/${info.kind}`);
      if (state !== undefined) this.#registry.unregister(state);
      return;
    }
    const state = this.#registry.registerCustom(info, this.#customSchemas(crd, info));
    state.terminating = crd.metadata.deletionTimestamp !== undefined;
    this.#customRegisteredAt.set(state.id, this.#log.revision);
  }

  /**
   * The schemas of a stored CRD's versions and their validators. A frozen `spec` (every stored CRD's) keeps them:
   * a setup snapshot restores the very same spec in every run, which then is parsed and compiled once.
   */
  #customSchemas(crd: KubeObject, info: CrdInfo): CustomSchemas {
    const crdName = crd.metadata.name ?? "";
    const known = crdRegistrations.get(crd.spec as object);
    if (known !== undefined && known.info === info) return { crdName, schemas: known.schemas, validators: known.validators };
    const custom: CustomSchemas = { crdName, schemas: new Map(), validators: new Map() };
    for (const version of info.versions) {
      custom.schemas.set(version.name, version.schema);
      custom.validators.set(version.name, this.#compileSchema(version.schema));
    }
    if (isRecord(crd.spec) && Object.isFrozen(crd.spec)) crdRegistrations.set(crd.spec, { info, schemas: custom.schemas, validators: custom.validators });
    return custom;
  }

  /**
   * True when pruning `current` again would remove nothing, so a write may share its frozen parts: always for a
   * built-in kind; for a custom kind, when it was stored after the CRD write that registered the schema in force
   * and the kind serves one version (with several, a write through another version prunes with another schema).
   */
  #prunedAsNow(current: KubeObject, state: KindState): boolean {
    if (state.custom === undefined) return true;
    const registeredAt = this.#customRegisteredAt.get(state.id);
    return registeredAt !== undefined && state.versions.size === 1 && Number(current.metadata.resourceVersion) > registeredAt;
  }

  /** Presents a stored object in the version a client asked for (custom resources with several versions). */
  #view(object: KubeObject, resource: ResourceType): KubeObject {
    const apiVersion = apiVersionOf(resource);
    if (object.apiVersion === apiVersion) return object;
    return Object.freeze({ ...object, apiVersion });
  }

  // ---- what the garbage collector sees ----

  #gcHost(): GcHost {
    const at = (state: KindState, key: string): Located | undefined => {
      const object = liveObject(state.objects.get(key));
      return object === undefined ? undefined : { state, key, object };
    };
    return {
      at: (loc) => {
        const bar = loc.indexOf("|");
        const state = this.#registry.byId(loc.slice(0, bar));
        return state === undefined ? undefined : at(state, loc.slice(bar + 1));
      },
      byUid: (uid) => {
        const where = this.#uids.get(uid);
        return where === undefined ? undefined : at(where.state, where.key);
      },
      firstInNamespace: (namespace, which) => this.#firstInNamespace(namespace, which),
      ofCrd: (crd) => {
        if (validateCrd(crd).length > 0) return [];
        const info = crdInfo(crd);
        const state = this.#registry.byId(`${info.group}/${info.kind}`);
        if (state === undefined) return [];
        return state.sortedKeys().map((key) => at(state, key)).filter((l): l is Located => l !== undefined);
      },
      knows: (apiVersion, kind) => {
        try {
          this.#registry.lookup({ apiVersion, kind });
          return true;
        } catch {
          return false;
        }
      },
      update: (next) => void this.#update(next, { sub: "main", options: {}, system: true }),
      remove: (target, policy: PropagationPolicy) => void this.delete({ ...this.#refOf(target.object), propagationPolicy: policy }),
      namespace: (name) => at(this.#namespaces, name),
      crdOf: (state) => {
        const name = state.custom?.crdName;
        return name === undefined ? undefined : at(this.#registry.lookup({ apiVersion: "apiextensions.k8s.io/v1", kind: "CustomResourceDefinition" }).state, name);
      },
    };
  }

  #refOf(object: KubeObject): ObjectRef {
    const ref: ObjectRef = { apiVersion: object.apiVersion, kind: object.kind, name: object.metadata.name ?? "" };
    if (object.metadata.namespace !== undefined) ref.namespace = object.metadata.namespace;
    return ref;
  }

  /**
   * `GcHost.firstInNamespace`. A terminating namespace only loses content: nothing may be created in it, and an
   * object being deleted stays so until it is gone. So the first answer of each kind can only move forward, and each
   * scan resumes where the last one for the same namespace (by uid) stopped: a namespace of n objects is emptied in
   * O(n) key visits, not O(n) per deletion (10,000 objects took 16 s).
   */
  #firstInNamespace(namespace: Located, which: "active" | "live"): Located | undefined {
    const meta = namespace.object.metadata;
    const terminating = meta.deletionTimestamp !== undefined && meta.deletionTimestamp !== null;
    const scanKey = `${meta.uid ?? ""}|${which}`;
    const from = terminating ? this.#namespaceScans.get(scanKey) : undefined;
    if (from === "done") return undefined;
    const prefix = `${meta.name ?? ""}/`;
    const states = this.#registry.all();
    // A kind gone since (its CRD deleted) had its objects deleted first: the scan starts over, which is only slower.
    const resume = from === undefined ? -1 : states.findIndex((state) => state.id === from.stateId);
    for (let s = Math.max(0, resume); s < states.length; s++) {
      const state = states[s]!;
      if (state.versions.values().next().value?.namespaced !== true) continue;
      const keys = state.sortedKeys();
      for (let i = lowerBound(keys, s === resume ? from!.key : prefix); i < keys.length && keys[i]!.startsWith(prefix); i++) {
        const key = keys[i]!;
        const object = liveObject(state.objects.get(key));
        if (object === undefined || (which === "active" && isDeleting(object))) continue;
        if (terminating) this.#namespaceScans.set(scanKey, { stateId: state.id, key });
        return { state, key, object };
      }
    }
    if (!terminating) return undefined;
    // Empty for good: the scans of this namespace are over (bounded by the namespaces terminating at once).
    if (which === "active") this.#namespaceScans.set(scanKey, "done");
    else {
      this.#namespaceScans.delete(scanKey);
      this.#namespaceScans.delete(`${meta.uid ?? ""}|active`);
    }
    return undefined;
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
 * What a frozen CRD `spec` registers, kept with the spec (see `#customSchemas`). Nothing changes these maps after
 * they are built, so stores share them; the registry shares the resource types made from `info` the same way.
 */
const crdRegistrations = new WeakMap<object, { info: CrdInfo; schemas: CustomSchemas["schemas"]; validators: CustomSchemas["validators"] }>();

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

/**
 * One admission's request, new for each admission so that none sees what another did to the request itself. Built
 * field by field in the order the spread form had (`subresource`, then `oldObject`, only when they apply): this runs
 * twice per write per admission.
 */
function admissionRequest(operation: AdmissionOperation, sub: Subresource | undefined, resource: ResourceType, object: KubeObject, old: KubeObject | undefined, options: WriteOptions): AdmissionRequest {
  const request: AdmissionRequest = { operation, resource, object, dryRun: options.dryRun === true };
  if (sub === "status") request.subresource = sub;
  if (old !== undefined) request.oldObject = old;
  return request;
}

/**
 * What the store derives from a resource type alone, built once per type: every read compares each object's
 * `apiVersion` with it, and every write of a built-in kind asks for its quantity message and compares the object
 * outside the same top-level fields. Building them per request (a string key, an array) was a measurable part of
 * a write.
 */
interface ResourceFacts {
  readonly apiVersion: string;
  /** `quantityMessageOf` for the type: undefined when no Quantity field is reachable from it. */
  readonly quantityMessage: string | undefined;
  /** The top-level fields whose changes do not bump `generation`. */
  readonly generationIgnores: readonly string[];
}

const resourceFacts = new WeakMap<ResourceType, ResourceFacts>();
const ignoresMetadata: readonly string[] = Object.freeze(["metadata"]);
const ignoresMetadataAndStatus: readonly string[] = Object.freeze(["metadata", "status"]);

function factsOf(resource: ResourceType): ResourceFacts {
  let facts = resourceFacts.get(resource);
  if (facts === undefined) {
    facts = {
      apiVersion: formatApiVersion(resource),
      quantityMessage: quantityMessageOf(resource.group, resource.version, resource.kind),
      generationIgnores: resource.statusSubresource ? ignoresMetadataAndStatus : ignoresMetadata,
    };
    resourceFacts.set(resource, facts);
  }
  return facts;
}

function apiVersionOf(resource: ResourceType): string {
  return factsOf(resource).apiVersion;
}

/** Objects that exist at `revision` under the keys from `start` on (those that begin with `prefix`). */
function countLive(state: KindState, keys: readonly string[], start: number, prefix: string, revision: number): number {
  let count = 0;
  for (let i = start; i < keys.length; i++) {
    const key = keys[i]!;
    if (prefix !== "" && !key.startsWith(prefix)) break;
    if (objectAt(state.objects.get(key), revision) !== undefined) count++;
  }
  return count;
}
