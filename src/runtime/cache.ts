// The informer's cache: objects by key (`namespace/name`), with indexes (client-go's `cache.Indexer`).
//
// Read-only to callers: every object is deep-frozen when it enters the cache, so a reconciler that changes
// a cached object in place fails loudly (ESM code runs in strict mode) instead of corrupting the cache.
// Clone (`structuredClone`) before changing anything. Only the informer writes, through `CacheWriter`.
import { assert } from "../api/assert.ts";
import { deepFreeze } from "../api/json.ts";
import { keyOf } from "../api/object.ts";
import type { KubeObject } from "../api/object.ts";
import { matchesLabels, parseLabelSelector } from "../api/selectors.ts";

/** Returns the index values of one object (none is fine: the object is then absent from that index). */
export type IndexFunc = (object: KubeObject) => readonly string[];

/** Built-in index names. */
export const indexNames = {
  /** `metadata.namespace`, "" for cluster-scoped objects. */
  namespace: "namespace",
  /** The `uid` of every owner in `metadata.ownerReferences`. */
  ownerUid: "owner-uid",
  /** `key=value` for every label. */
  label: "label",
} as const;

export const builtinIndexers: Readonly<Record<string, IndexFunc>> = {
  [indexNames.namespace]: (object) => [object.metadata.namespace ?? ""],
  [indexNames.ownerUid]: (object) => (object.metadata.ownerReferences ?? []).map((owner) => owner.uid),
  [indexNames.label]: (object) => Object.entries(object.metadata.labels ?? {}).map(([k, v]) => `${k}=${v}`),
};

export interface ListFilter {
  /** Only objects in this namespace. */
  namespace?: string;
  /** A label selector in the API's text syntax (`a=b,c in (d)`), or labels that must all match exactly. */
  labelSelector?: string | Readonly<Record<string, string>>;
}

/** The read side of a cache. Objects are deep-frozen. */
export interface Lister<T extends KubeObject = KubeObject> {
  /** By key: `namespace/name`, or `name` for cluster-scoped objects. */
  get(key: string): T | undefined;
  /** By name (and namespace for namespaced objects). */
  getByName(name: string, namespace?: string): T | undefined;
  /** In key order, so that iteration is deterministic. */
  list(filter?: ListFilter): T[];
  /** The objects whose `indexName` index function returned `value`, in key order. */
  byIndex(indexName: string, value: string): T[];
  keys(): string[];
  readonly size: number;
}

/** The write side, for the informer. */
export interface CacheWriter<T extends KubeObject = KubeObject> extends Lister<T> {
  /** Stores the object; returns the previous one under its key. */
  upsert(object: T): T | undefined;
  /** Removes by key; returns what was there. */
  remove(key: string): T | undefined;
}

export interface CacheOptions {
  /** Extra index functions by name, added to `builtinIndexers`. */
  indexers?: Readonly<Record<string, IndexFunc>>;
}

export function objectKey(object: KubeObject): string {
  return keyOf({ namespace: object.metadata.namespace, name: object.metadata.name });
}

/** One index: its function and its map from value to keys. */
interface IndexSlot {
  readonly name: string;
  readonly fn: IndexFunc;
  readonly keysByValue: Map<string, Set<string>>;
}

/**
 * An index function's values without repeats. Most lists are short and have none (label pairs never repeat):
 * those are checked pairwise and returned as they are, without a set.
 */
function distinctValues(values: readonly string[]): readonly string[] {
  if (values.length < 2) return values;
  if (values.length > 16) return [...new Set(values)];
  for (let i = 1; i < values.length; i++) {
    for (let j = 0; j < i; j++) if (values[i] === values[j]) return [...new Set(values)];
  }
  return values;
}

function sameValues(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

export class Cache<T extends KubeObject = KubeObject> implements CacheWriter<T> {
  private readonly objects = new Map<string, T>();
  /** In the order of the indexer names, built-ins first. */
  private readonly slots: readonly IndexSlot[];
  /** indexName -> value -> keys. */
  private readonly indexes = new Map<string, Map<string, Set<string>>>();
  /** key -> the values the object was filed under, one entry per slot (to unfile it on change). */
  private readonly filed = new Map<string, ReadonlyArray<readonly string[]>>();

  constructor(options: CacheOptions = {}) {
    const indexers = { ...builtinIndexers, ...(options.indexers ?? {}) };
    this.slots = Object.entries(indexers).map(([name, fn]) => ({ name, fn, keysByValue: new Map<string, Set<string>>() }));
    for (const slot of this.slots) this.indexes.set(slot.name, slot.keysByValue);
  }

  get size(): number {
    return this.objects.size;
  }

  get(key: string): T | undefined {
    return this.objects.get(key);
  }

  getByName(name: string, namespace?: string): T | undefined {
    return this.objects.get(keyOf({ namespace, name }));
  }

  keys(): string[] {
    return [...this.objects.keys()].sort();
  }

  list(filter: ListFilter = {}): T[] {
    const candidates =
      filter.namespace === undefined ? this.keys() : this.indexKeys(indexNames.namespace, filter.namespace);
    const objects = candidates.map((key) => this.objects.get(key) as T);
    const selector = filter.labelSelector;
    if (selector === undefined) return objects;
    if (typeof selector === "string") {
      const parsed = parseLabelSelector(selector);
      return objects.filter((object) => matchesLabels(parsed, object.metadata.labels));
    }
    const wanted = Object.entries(selector);
    return objects.filter((object) => wanted.every(([k, v]) => object.metadata.labels?.[k] === v));
  }

  byIndex(indexName: string, value: string): T[] {
    return this.indexKeys(indexName, value).map((key) => this.objects.get(key) as T);
  }

  upsert(object: T): T | undefined {
    assert(object.metadata.name !== undefined, "cache-object-has-name");
    const key = objectKey(object);
    const previous = this.objects.get(key);
    deepFreeze(object);
    this.objects.set(key, object);
    this.file(key, object);
    return previous;
  }

  remove(key: string): T | undefined {
    const previous = this.objects.get(key);
    if (previous === undefined) return undefined;
    this.unfile(key);
    this.objects.delete(key);
    assert(!this.filed.has(key), "cache-removed-key-unindexed");
    return previous;
  }

  private indexKeys(indexName: string, value: string): string[] {
    const index = this.indexes.get(indexName);
    assert(index !== undefined, "cache-index-exists");
    return [...(index.get(value) ?? [])].sort();
  }

  /**
   * Files `key` under the object's index values. An object filed before moves only in the indexes whose values
   * changed: most updates (a status write) change none, and then no index is touched.
   */
  private file(key: string, object: T): void {
    const before = this.filed.get(key);
    const after: Array<readonly string[]> = [];
    for (let i = 0; i < this.slots.length; i++) {
      const slot = this.slots[i]!;
      const values = distinctValues(slot.fn(object));
      const old = before?.[i];
      if (old !== undefined && sameValues(old, values)) {
        after.push(old);
        continue;
      }
      if (old !== undefined) unfileValues(slot.keysByValue, key, old);
      for (const value of values) {
        let set = slot.keysByValue.get(value);
        if (set === undefined) slot.keysByValue.set(value, (set = new Set()));
        set.add(key);
      }
      after.push(values);
    }
    this.filed.set(key, after);
  }

  private unfile(key: string): void {
    const values = this.filed.get(key);
    assert(values !== undefined, "cache-key-was-indexed");
    assert(values.length === this.slots.length, "cache-filed-one-entry-per-index");
    for (let i = 0; i < this.slots.length; i++) unfileValues(this.slots[i]!.keysByValue, key, values[i]!);
    this.filed.delete(key);
  }
}

function unfileValues(keysByValue: Map<string, Set<string>>, key: string, values: readonly string[]): void {
  for (const value of values) {
    const set = keysByValue.get(value);
    set?.delete(key);
    if (set?.size === 0) keysByValue.delete(value);
  }
}
