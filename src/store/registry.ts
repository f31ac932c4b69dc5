// The kinds a store serves and, per kind, its objects: each key points at its newest version, and versions
// chain backwards (`prev`) so that a read at an older revision walks back to the state of that revision.
import type { ValidateFunction } from "ajv";
import { ApiError } from "../api/errors.ts";
import { assert } from "../api/assert.ts";
import type { KindRef, KubeObject } from "../api/object.ts";
import { parseApiVersion } from "../api/object.ts";
import type { ResourceType } from "../api/resources.ts";
import type { StoreEvent } from "./types.ts";
import type { KindRules } from "./kinds.ts";
import { builtinKinds, customResourceRules } from "./kinds.ts";
import type { CrdInfo } from "./crd.ts";
import { WatchIndex } from "./watch.ts";

/** One write of one key: the event as recorded, and the version it replaced (cut at compaction). */
export interface Version {
  readonly event: StoreEvent;
  prev: Version | undefined;
  readonly kind: KindState;
  readonly key: string;
}

/** The live object of a version, or undefined for a deletion. */
export function liveObject(version: Version | undefined): KubeObject | undefined {
  return version === undefined || version.event.type === "DELETED" ? undefined : version.event.object;
}

/** The state of one key as of `revision`: walks back along the chain (the caller checked compaction). */
export function objectAt(version: Version | undefined, revision: number): KubeObject | undefined {
  let v = version;
  while (v !== undefined && v.event.revision > revision) v = v.prev;
  return liveObject(v);
}

/** Custom-resource schema data of a kind registered by a CRD, per served version. */
export interface CustomSchemas {
  crdName: string;
  schemas: Map<string, Record<string, unknown>>;
  validators: Map<string, ValidateFunction>;
}

/** Everything the store keeps for one group+kind, across its versions and its registrations. */
export class KindState {
  readonly id: string;
  /** The served versions by name; empty while the kind is not registered (a deleted CRD). */
  versions = new Map<string, ResourceType>();
  storageVersion = "";
  rules: KindRules;
  custom: CustomSchemas | undefined;
  /** Set while the defining CRD is being deleted: creates are refused. */
  terminating = false;
  readonly objects = new Map<string, Version>();
  /** The keys of `objects` in etcd key order, rebuilt lazily after a key is added or removed. */
  #sortedKeys: string[] | undefined;
  /** This kind's writes in revision order from `#historyHead` on, not yet compacted: what its watches replay. */
  #history: Version[] = [];
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
    this.#history.push(version);
  }

  /** The store compacted `version`, this kind's oldest kept write: drop it from the history. */
  compactVersion(version: Version): void {
    assert(this.#history[this.#historyHead] === version, "a kind's history compacts oldest first");
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

  keysChanged(): void {
    this.#sortedKeys = undefined;
  }

  /**
   * The keys of the live objects whose `value(object)` is `wanted`, from the index `name` (built now on first
   * use). Undefined when the kind has too many indexes already: the caller scans instead.
   */
  indexed(name: string, value: (object: KubeObject) => string | undefined, wanted: string): ReadonlySet<string> | undefined {
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

  sortedKeys(): readonly string[] {
    if (this.#sortedKeys === undefined) {
      // Plain code-unit order is byte order for the ASCII names Kubernetes allows: etcd's key order.
      this.#sortedKeys = [...this.objects.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    }
    return this.#sortedKeys;
  }
}

/** One equality index: the value it reads from an object, and the keys of the live objects per value. */
interface EqualityIndex {
  readonly value: (object: KubeObject) => string | undefined;
  readonly keys: Map<string, Set<string>>;
}

/** Indexes kept per kind: one per label key or field a list selected on; a bound against selectors made up on the fly. */
const indexesPerKindMax = 32;
const noKeys: ReadonlySet<string> = new Set();

function addKey(index: EqualityIndex, key: string, object: KubeObject | undefined): void {
  const value = object === undefined ? undefined : index.value(object);
  if (value === undefined) return;
  let keys = index.keys.get(value);
  if (keys === undefined) index.keys.set(value, (keys = new Set()));
  keys.add(key);
}

export function objectKey(namespaced: boolean, namespace: string | undefined, name: string): string {
  return namespaced ? `${namespace ?? ""}/${name}` : name;
}

/** The kind table: built-ins at start, plus kinds registered by CRDs. */
export class Registry {
  readonly #kinds = new Map<string, KindState>();
  readonly #byPlural = new Map<string, ResourceType>();

  constructor() {
    for (const { resource, rules } of builtinKinds) {
      const state = this.#state(resource.group, resource.kind, rules);
      state.versions.set(resource.version, resource);
      state.storageVersion = resource.version;
      this.#byPlural.set(`${resource.group}/${resource.version}/${resource.plural}`, resource);
    }
  }

  #state(group: string, kind: string, rules: KindRules): KindState {
    let state = this.#kinds.get(`${group}/${kind}`);
    if (state === undefined) {
      state = new KindState(group, kind, rules);
      this.#kinds.set(state.id, state);
    }
    return state;
  }

  all(): KindState[] {
    return [...this.#kinds.values()];
  }

  resources(): ResourceType[] {
    return this.all().flatMap((state) => [...state.versions.values()]);
  }

  forPlural(group: string, version: string, plural: string): ResourceType | undefined {
    return this.#byPlural.get(`${group}/${version}/${plural}`);
  }

  /** The kind state and the resource of the version asked for; NotFound when the kind or version is not served. */
  lookup(ref: KindRef): { state: KindState; resource: ResourceType } {
    const { group, version } = parseApiVersion(ref.apiVersion);
    const state = this.#kinds.get(`${group}/${ref.kind}`);
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
    const state = this.#state(info.group, info.kind, customResourceRules);
    this.unregister(state);
    for (const v of info.versions) {
      if (!v.served) continue;
      const resource: ResourceType = {
        group: info.group,
        version: v.name,
        kind: info.kind,
        plural: info.plural,
        singular: info.singular,
        listKind: info.listKind,
        namespaced: info.namespaced,
        statusSubresource: v.statusSubresource,
        shortNames: info.shortNames,
        fieldLabels: [],
        nameRule: "dns1123-subdomain",
      };
      if (info.categories.length > 0) resource.categories = info.categories;
      state.versions.set(v.name, resource);
      this.#byPlural.set(`${info.group}/${v.name}/${info.plural}`, resource);
    }
    state.storageVersion = info.storageVersion;
    state.custom = custom;
    state.terminating = false;
    return state;
  }

  /** Stops serving a kind; its objects (all deleted by then) stay until compaction drops them. */
  unregister(state: KindState): void {
    for (const resource of state.versions.values()) {
      this.#byPlural.delete(`${resource.group}/${resource.version}/${resource.plural}`);
    }
    state.versions.clear();
    state.custom = undefined;
  }

  byId(id: string): KindState | undefined {
    return this.#kinds.get(id);
  }
}
