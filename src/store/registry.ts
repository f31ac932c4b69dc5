// The kinds a store serves and, per kind, its objects: each key points at its newest version, and versions
// chain backwards (`prev`) so that a read at an older revision walks back to the state of that revision.
//
// Invariants, asserted by name:
// - `kind-history-in-revision-order`: a kind's history (what its watches replay) is in increasing revision order.
// - A kind's history compacts oldest first, as the log's does ("a kind's history compacts oldest first").
import type { ValidateFunction } from "ajv";
import { ApiError } from "../api/errors.ts";
import { assert } from "../api/assert.ts";
import type { KindRef, KubeObject } from "../api/object.ts";
import { parseApiVersion } from "../api/object.ts";
import type { ResourceType } from "../api/resources.ts";
import type { Version, VersionKind } from "./version.ts";
import { liveObject } from "./version.ts";
import type { KindRules } from "./kinds.ts";
import { builtinKinds, customResourceRules } from "./kinds.ts";
import type { CrdInfo } from "./crd.ts";
import { WatchIndex } from "./watch.ts";
import { compareKeys, insertSorted, removeSorted } from "./sorted-keys.ts";

/** Custom-resource schema data of a kind registered by a CRD, per served version. */
export interface CustomSchemas {
  crdName: string;
  schemas: Map<string, Record<string, unknown>>;
  validators: Map<string, ValidateFunction>;
}

/** Everything the store keeps for one group+kind, across its versions and its registrations. */
export class KindState implements VersionKind {
  readonly id: string;
  /** The served versions by name; empty while the kind is not registered (a deleted CRD). */
  versions = new Map<string, ResourceType>();
  storageVersion = "";
  rules: KindRules;
  custom: CustomSchemas | undefined;
  /** Set while the defining CRD is being deleted: creates are refused. */
  terminating = false;
  readonly objects = new Map<string, Version>();
  /** The keys of `objects` in etcd key order: sorted on first use, then kept in order as keys come and go. */
  #sortedKeys: string[] | undefined;
  /** This kind's writes in revision order from `#historyHead` on, not yet compacted: what its watches replay. */
  #history: Array<Version | undefined> = [];
  #historyHead = 0;
  /** Equality indexes of the live objects, each built on its first use and kept up to date by `reindex`. */
  readonly #indexes = new Map<string, EqualityIndex>();
  readonly watchers = new WatchIndex();

  constructor(group: string, kind: string, rules: KindRules) {
    this.id = `${group}/${kind}`;
    this.rules = rules;
  }

  get registered(): boolean {
    return this.versions.size > 0;
  }

  get storage(): ResourceType {
    const resource = this.versions.get(this.storageVersion) ?? this.versions.values().next().value;
    if (resource === undefined) throw new ApiError("NotFound", 404, `the server could not find the requested resource (${this.id})`);
    return resource;
  }

  /** Appends a committed write of this kind to its history. */
  recordVersion(version: Version): void {
    const last = this.#history.length > this.#historyHead ? this.#history[this.#history.length - 1] : undefined;
    // `versionsAfter` binary-searches this history by revision.
    assert(last === undefined || last.event.revision < version.event.revision, "kind-history-in-revision-order");
    this.#history.push(version);
  }

  /** The store compacted `version`, this kind's oldest kept write: drop it from the history. */
  compactVersion(version: Version): void {
    assert(this.#history[this.#historyHead] === version, "a kind's history compacts oldest first");
    this.#history[this.#historyHead] = undefined;
    this.#historyHead++;
    if (this.#historyHead > 1024 && this.#historyHead * 2 > this.#history.length) {
      this.#history = this.#history.slice(this.#historyHead);
      this.#historyHead = 0;
    }
  }

  /** This kind's writes after revision `after` up to `end`, oldest first (found by binary search). */
  *versionsAfter(after: number, end: number): Generator<Version> {
    const history = this.#history;
    let lo = this.#historyHead;
    let hi = history.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (history[mid]!.event.revision <= after) lo = mid + 1;
      else hi = mid;
    }
    for (let i = lo; i < history.length; i++) {
      const version = history[i]!;
      if (version.event.revision > end) return;
      yield version;
    }
  }

  /** `key` is about to join `objects` (the caller checked it is new). */
  keyAdded(key: string): void {
    if (this.#sortedKeys !== undefined) insertSorted(this.#sortedKeys, key);
  }

  /** `key` left `objects`. */
  keyRemoved(key: string): void {
    if (this.#sortedKeys !== undefined) removeSorted(this.#sortedKeys, key);
  }

  /**
   * The keys of the live objects whose `value(object)` is `wanted`, from the index `name` (built now on first
   * use). Undefined when the kind has too many indexes already: the caller scans instead.
   */
  indexed(name: string, value: (object: KubeObject) => string | undefined, wanted: string): IndexedKeys | undefined {
    let index = this.#indexes.get(name);
    if (index === undefined) {
      if (this.#indexes.size >= indexesPerKindMax) return undefined;
      index = { value, keys: new Map() };
      for (const [key, version] of this.objects) addKey(index, key, liveObject(version));
      this.#indexes.set(name, index);
    }
    return index.keys.get(wanted) ?? noKeys;
  }

  /** Keeps the indexes current after a write of `key`: its live object went from `before` to `after`. */
  reindex(key: string, before: KubeObject | undefined, after: KubeObject | undefined): void {
    if (this.#indexes.size === 0) return;
    for (const index of this.#indexes.values()) {
      const old = before === undefined ? undefined : index.value(before);
      const now = after === undefined ? undefined : index.value(after);
      if (old === now) continue;
      if (old !== undefined) {
        const keys = index.keys.get(old)!;
        keys.delete(key);
        if (keys.size === 0) index.keys.delete(old);
      }
      addKey(index, key, after);
    }
  }

  /** The keys of `objects` in key order; the array is the kind's own, valid until its next write. */
  sortedKeys(): readonly string[] {
    if (this.#sortedKeys === undefined) this.#sortedKeys = [...this.objects.keys()].sort(compareKeys);
    return this.#sortedKeys;
  }
}

/**
 * The keys of the live objects with one value in one index. Lists read them in key order: that order is sorted on
 * the first list and then kept by each insert and removal, so a list costs no sort while the set does not change.
 */
export class IndexedKeys {
  readonly #keys = new Set<string>();
  #sorted: string[] | undefined;

  get size(): number {
    return this.#keys.size;
  }

  has(key: string): boolean {
    return this.#keys.has(key);
  }

  add(key: string): void {
    if (this.#keys.has(key)) return;
    this.#keys.add(key);
    if (this.#sorted !== undefined) insertSorted(this.#sorted, key);
  }

  delete(key: string): void {
    if (!this.#keys.delete(key)) return;
    if (this.#sorted !== undefined) removeSorted(this.#sorted, key);
  }

  /** The keys in key order; the array is the index's own, valid until the kind's next write. */
  sorted(): readonly string[] {
    if (this.#sorted === undefined) this.#sorted = [...this.#keys].sort(compareKeys);
    return this.#sorted;
  }
}

/** One equality index: the value it reads from an object, and the keys of the live objects per value. */
interface EqualityIndex {
  readonly value: (object: KubeObject) => string | undefined;
  readonly keys: Map<string, IndexedKeys>;
}

/** Indexes kept per kind: one per label key or field a list selected on; a bound against selectors made up on the fly. */
const indexesPerKindMax = 32;
/** What a value no live object has selects; never changed. */
const noKeys = new IndexedKeys();

function addKey(index: EqualityIndex, key: string, object: KubeObject | undefined): void {
  const value = object === undefined ? undefined : index.value(object);
  if (value === undefined) return;
  let keys = index.keys.get(value);
  if (keys === undefined) index.keys.set(value, (keys = new IndexedKeys()));
  keys.add(key);
}

export function objectKey(namespaced: boolean, namespace: string | undefined, name: string): string {
  return namespaced ? `${namespace ?? ""}/${name}` : name;
}

/** One built-in kind as every store starts with it: its served versions in table order and its rules. */
interface BuiltinEntry {
  readonly group: string;
  readonly kind: string;
  readonly rules: KindRules;
  readonly versions: ReadonlyMap<string, ResourceType>;
  readonly storageVersion: string;
}

/**
 * The built-in kinds by id, in the order of `builtinKinds`, and their REST paths: immutable, so built once per
 * process and shared by every store, which makes its own state of a built-in kind only when it first uses the kind.
 * (A store used to build all of them up front: maps and a watch index per kind, paid by every simulated run.)
 */
const builtinTable = new Map<string, BuiltinEntry>();
/**
 * A map keyed by a REST path's group, version and plural, as maps within maps: every request to `settle serve` looks
 * its resource up, and building a "group/version/plural" key (then hashing that new string) cost more than the
 * three lookups of strings whose hashes are already known.
 */
class PluralTable<V> {
  readonly #groups = new Map<string, Map<string, Map<string, V>>>();

  get(group: string, version: string, plural: string): V | undefined {
    return this.#groups.get(group)?.get(version)?.get(plural);
  }

  set(group: string, version: string, plural: string, value: V): void {
    let versions = this.#groups.get(group);
    if (versions === undefined) this.#groups.set(group, (versions = new Map()));
    let plurals = versions.get(version);
    if (plurals === undefined) versions.set(version, (plurals = new Map()));
    plurals.set(plural, value);
  }
}

const builtinByPlural = new PluralTable<ResourceType>();
for (const { resource, rules } of builtinKinds) {
  const id = `${resource.group}/${resource.kind}`;
  const entry = builtinTable.get(id);
  // Two versions of one kind share its state, with the first one's rules and the last one as storage version.
  const versions = new Map(entry?.versions ?? []).set(resource.version, resource);
  builtinTable.set(id, { group: resource.group, kind: resource.kind, rules: entry?.rules ?? rules, versions, storageVersion: resource.version });
  builtinByPlural.set(resource.group, resource.version, resource.plural, resource);
}

/**
 * The kind table: the built-ins, plus kinds registered by CRDs. It reads as if every built-in kind had its state
 * from the start: a built-in's state is made on first use (lookup, `byId`, a CRD of the same group and kind), and
 * listings keep the table's order, built-ins first, then custom kinds in the order they were first registered.
 */
export class Registry {
  /** The states made so far: built-in kinds used, and every kind a CRD registered. */
  readonly #kinds = new Map<string, KindState>();
  /** REST paths CRD registrations changed from the built-in table: the resource served now, or null for none. */
  readonly #pluralChanges = new PluralTable<ResourceType | null>();
  /**
   * Lookups answered so far, by `apiVersion` then kind: every store call looks its kind up, with the same few
   * pairs. Only served kinds are kept (so the map is bounded by them); a CRD that registers or unregisters a kind
   * clears it.
   */
  readonly #lookups = new Map<string, Map<string, { state: KindState; resource: ResourceType }>>();

  #state(group: string, kind: string, rules: KindRules): KindState {
    let state = this.byId(`${group}/${kind}`);
    if (state === undefined) {
      state = new KindState(group, kind, rules);
      this.#kinds.set(state.id, state);
    }
    return state;
  }

  /** The states made so far, in table order (a built-in kind without a state has no objects and no watchers). */
  all(): KindState[] {
    const states: KindState[] = [];
    for (const id of builtinTable.keys()) {
      const state = this.#kinds.get(id);
      if (state !== undefined) states.push(state);
    }
    for (const state of this.#kinds.values()) if (!builtinTable.has(state.id)) states.push(state);
    return states;
  }

  resources(): ResourceType[] {
    const resources: ResourceType[] = [];
    for (const [id, builtin] of builtinTable) resources.push(...(this.#kinds.get(id) ?? builtin).versions.values());
    for (const state of this.#kinds.values()) if (!builtinTable.has(state.id)) resources.push(...state.versions.values());
    return resources;
  }

  forPlural(group: string, version: string, plural: string): ResourceType | undefined {
    const changed = this.#pluralChanges.get(group, version, plural);
    if (changed !== undefined) return changed ?? undefined;
    return builtinByPlural.get(group, version, plural);
  }

  /** The kind state and the resource of the version asked for; NotFound when the kind or version is not served. */
  lookup(ref: KindRef): { state: KindState; resource: ResourceType } {
    const known = this.#lookups.get(ref.apiVersion)?.get(ref.kind);
    if (known !== undefined) return known;
    const found = Object.freeze(this.#lookupUncached(ref));
    let byKind = this.#lookups.get(ref.apiVersion);
    if (byKind === undefined) this.#lookups.set(ref.apiVersion, (byKind = new Map()));
    byKind.set(ref.kind, found);
    return found;
  }

  #lookupUncached(ref: KindRef): { state: KindState; resource: ResourceType } {
    const { group, version } = parseApiVersion(ref.apiVersion);
    const state = this.byId(`${group}/${ref.kind}`);
    const resource = state?.versions.get(version);
    if (state === undefined || resource === undefined) {
      throw new ApiError("NotFound", 404, `no matches for kind "${ref.kind}" in version "${ref.apiVersion}"`, {
        group,
        kind: ref.kind,
      });
    }
    return { state, resource };
  }

  /** Registers (or re-registers, after a CRD update) the kind of a CRD. */
  registerCustom(info: CrdInfo, custom: CustomSchemas): KindState {
    this.#lookups.clear();
    const state = this.#state(info.group, info.kind, customResourceRules);
    this.unregister(state);
    for (const v of info.versions) {
      if (!v.served) continue;
      const resource = customResourceType(info, v);
      state.versions.set(v.name, resource);
      this.#pluralChanges.set(info.group, v.name, info.plural, resource);
    }
    state.storageVersion = info.storageVersion;
    state.custom = custom;
    state.terminating = false;
    return state;
  }

  /** Stops serving a kind; its objects (all deleted by then) stay until compaction drops them. */
  unregister(state: KindState): void {
    this.#lookups.clear();
    for (const resource of state.versions.values()) {
      this.#pluralChanges.set(resource.group, resource.version, resource.plural, null);
    }
    state.versions.clear();
    state.custom = undefined;
  }

  /** The state of a kind by id ("group/Kind"), made now for a built-in kind on its first use. */
  byId(id: string): KindState | undefined {
    return this.#kinds.get(id) ?? this.#makeBuiltin(id);
  }

  #makeBuiltin(id: string): KindState | undefined {
    const builtin = builtinTable.get(id);
    if (builtin === undefined) return undefined;
    const state = new KindState(builtin.group, builtin.kind, builtin.rules);
    for (const [version, resource] of builtin.versions) state.versions.set(version, resource);
    state.storageVersion = builtin.storageVersion;
    this.#kinds.set(id, state);
    return state;
  }
}

/**
 * The resource types made from one `CrdInfo`, by version. The store keeps one `CrdInfo` per stored CRD spec, so
 * stores restored from one setup snapshot share these, and with them what is cached per resource type (compiled
 * selectors, `apiVersion` strings) instead of making it again in every run.
 */
const customResourceTypes = new WeakMap<CrdInfo, Map<string, ResourceType>>();

function customResourceType(info: CrdInfo, version: CrdInfo["versions"][number]): ResourceType {
  let byVersion = customResourceTypes.get(info);
  if (byVersion === undefined) customResourceTypes.set(info, (byVersion = new Map()));
  let resource = byVersion.get(version.name);
  if (resource !== undefined) return resource;
  resource = {
    group: info.group,
    version: version.name,
    kind: info.kind,
    plural: info.plural,
    singular: info.singular,
    listKind: info.listKind,
    namespaced: info.namespaced,
    statusSubresource: version.statusSubresource,
    shortNames: info.shortNames,
    fieldLabels: [],
    nameRule: "dns1123-subdomain",
  };
  if (info.categories.length > 0) resource.categories = info.categories;
  if (version.scale !== undefined) {
    resource.scaleSubresource = true;
    resource.scalePaths = version.scale;
  }
  byVersion.set(version.name, resource);
  return resource;
}
