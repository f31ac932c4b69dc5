// Watchers: filtered by namespace and selectors, indexed so that a write reaches only the watchers that
// can care about it (a fleet of single-object watchers costs O(1) per event, not O(watchers)), and fed in
// revision order even when a listener writes to the store while it is being called.
//
// Invariants, asserted by name:
// - `hub-publishes-in-revision-order`: each published write is newer than the one before it, so a watcher's
//   position (`lastRevision`, the newest write it was given or skipped) only moves forward and skips nothing.
// - A watcher's position only moves forward: `deliver` gives it a write only when that is newer than its position
//   (a replay that overlaps the writes published meanwhile meets some twice), and only `deliver` moves it.
//
// Bounds: the hub's queue holds the writes made while one delivery runs (listeners that write), cleared after it.
import { assert } from "../api/assert.ts";
import type { KubeObject } from "../api/object.ts";
import type { StoreEvent, StoreWatcher, StoreWatchListener } from "./types.ts";
import type { Version } from "./version.ts";
import { liveObject } from "./version.ts";

export interface WatchFilter {
  /** Only this namespace; undefined for all. */
  namespace: string | undefined;
  /** From a `metadata.name=` field selector: the index key of single-object watchers. */
  name: string | undefined;
  /** The label and field selectors; undefined when there are none. */
  matches: ((object: KubeObject) => boolean) | undefined;
  /** Presents a stored object in the version the watcher asked for. */
  view: (object: KubeObject) => KubeObject;
  /**
   * One "label or field equals a value" requirement of the selectors (`index` as the store names it, `read` gets
   * an object's value): lets a watch of all namespaces be indexed by that value. Undefined when there is none.
   */
  equality?: { index: string; value: string; read: (object: KubeObject) => string | undefined } | undefined;
}

/** The object of a DELETED event made from a selector transition: the last matching state, at the event's revision. */
function atRevision(object: KubeObject, revision: number): KubeObject {
  return Object.freeze({ ...object, metadata: Object.freeze({ ...object.metadata, resourceVersion: String(revision) }) });
}

export class Watcher implements StoreWatcher {
  #closed = false;
  /** When it joined its index: watchers of all namespaces are called in this order. */
  order = 0;
  /** Events at or below this revision were delivered (or skipped) already. */
  #lastRevision: number;

  constructor(
    readonly index: WatchIndex,
    readonly filter: WatchFilter,
    readonly listener: StoreWatchListener,
    fromRevision: number,
  ) {
    this.#lastRevision = fromRevision;
  }

  /** The watcher's position: the newest revision it was given or skipped (at first, the one it started from). */
  get lastRevision(): number {
    return this.#lastRevision;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Called once, when it closes (the store's count of watches that are not inert). */
  onClose: (() => void) | undefined = undefined;

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.index.remove(this);
    this.onClose?.();
  }

  /** Delivers one recorded write, turned into what this watcher sees (or nothing). */
  deliver(version: Version): void {
    const event = version.event;
    if (this.#closed || event.revision <= this.#lastRevision) return;
    this.#lastRevision = event.revision;
    const filter = this.filter;
    const object = event.object;
    if (filter.namespace !== undefined && (object.metadata.namespace ?? "") !== filter.namespace) return;
    if (filter.name !== undefined && object.metadata.name !== filter.name) return;
    const seen = this.#transform(version);
    if (seen === undefined) return;
    const shown = filter.view(seen.object);
    this.listener(shown === seen.object ? seen : Object.freeze({ type: seen.type, object: shown, revision: seen.revision }));
  }

  #transform(version: Version): StoreEvent | undefined {
    const event = version.event;
    const matches = this.filter.matches;
    if (matches === undefined) return event;
    if (event.type === "DELETED") return matches(event.object) ? event : undefined;
    const now = matches(event.object);
    const before = liveObject(version.prev);
    const was = event.type === "MODIFIED" && before !== undefined && matches(before);
    if (now && was) return event;
    if (now) return event.type === "ADDED" ? event : { type: "ADDED", object: event.object, revision: event.revision };
    if (was) return { type: "DELETED", object: atRevision(before, event.revision), revision: event.revision };
    return undefined;
  }
}

function addTo(map: Map<string, Set<Watcher>>, key: string, watcher: Watcher): void {
  let set = map.get(key);
  if (set === undefined) map.set(key, (set = new Set()));
  set.add(watcher);
}

function removeFrom(map: Map<string, Set<Watcher>>, key: string, watcher: Watcher): void {
  const set = map.get(key);
  if (set === undefined) return;
  set.delete(watcher);
  if (set.size === 0) map.delete(key);
}

/** Watchers of all namespaces that select one value of one label or field, by that value. */
interface EqualityWatchers {
  readonly read: (object: KubeObject) => string | undefined;
  readonly byValue: Map<string, Set<Watcher>>;
}

/**
 * The watchers of one kind, indexed by object name, by namespace, by one selected label or field value (watches
 * of all namespaces, like every kubelet's `spec.nodeName=` pod watch), or none of these.
 */
export class WatchIndex {
  readonly #all = new Set<Watcher>();
  readonly #byNamespace = new Map<string, Set<Watcher>>();
  readonly #byName = new Map<string, Set<Watcher>>();
  readonly #byEquality = new Map<string, EqualityWatchers>();
  #added = 0;

  add(watcher: Watcher): void {
    const { name, namespace, equality } = watcher.filter;
    watcher.order = this.#added++;
    if (name !== undefined) addTo(this.#byName, name, watcher);
    else if (namespace !== undefined) addTo(this.#byNamespace, namespace, watcher);
    else if (equality !== undefined) {
      let watchers = this.#byEquality.get(equality.index);
      if (watchers === undefined) this.#byEquality.set(equality.index, (watchers = { read: equality.read, byValue: new Map() }));
      addTo(watchers.byValue, equality.value, watcher);
    } else this.#all.add(watcher);
  }

  remove(watcher: Watcher): void {
    const { name, namespace, equality } = watcher.filter;
    if (name !== undefined) removeFrom(this.#byName, name, watcher);
    else if (namespace !== undefined) removeFrom(this.#byNamespace, namespace, watcher);
    else if (equality !== undefined) {
      const watchers = this.#byEquality.get(equality.index);
      if (watchers !== undefined) removeFrom(watchers.byValue, equality.value, watcher);
    } else this.#all.delete(watcher);
  }

  get size(): number {
    let n = this.#all.size;
    for (const set of this.#byNamespace.values()) n += set.size;
    for (const set of this.#byName.values()) n += set.size;
    for (const watchers of this.#byEquality.values()) for (const set of watchers.byValue.values()) n += set.size;
    return n;
  }

  /** Calls `visit` for every watcher that may care about the version's object. */
  forEachCandidate(version: Version, visit: (watcher: Watcher) => void): void {
    this.#forEachOfAllNamespaces(version, visit);
    const metadata = version.event.object.metadata;
    if (this.#byNamespace.size > 0) {
      const set = this.#byNamespace.get(metadata.namespace ?? "");
      if (set !== undefined) for (const watcher of set) visit(watcher);
    }
    if (this.#byName.size > 0) {
      const set = this.#byName.get(metadata.name ?? "");
      if (set !== undefined) for (const watcher of set) visit(watcher);
    }
  }

  /**
   * The candidates among the watchers of all namespaces, in the order they joined (the order all of them were
   * called in before some were indexed by value, so traces do not change): the unindexed ones, and those whose
   * selected value the object has after the write or had before it (it may have stopped matching).
   */
  #forEachOfAllNamespaces(version: Version, visit: (watcher: Watcher) => void): void {
    const matched = this.#byEquality.size === 0 ? undefined : this.#matchedByValue(version);
    if (matched === undefined || matched.length === 0) {
      if (this.#all.size > 0) for (const watcher of this.#all) visit(watcher);
      return;
    }
    matched.sort((a, b) => a.order - b.order);
    let next = 0;
    for (const watcher of this.#all) {
      while (next < matched.length && matched[next]!.order < watcher.order) visit(matched[next++]!);
      visit(watcher);
    }
    while (next < matched.length) visit(matched[next++]!);
  }

  #matchedByValue(version: Version): Watcher[] {
    const now = version.event.object;
    const before = liveObject(version.prev);
    const matched: Watcher[] = [];
    for (const watchers of this.#byEquality.values()) {
      const value = watchers.read(now);
      const old = before === undefined ? undefined : watchers.read(before);
      if (value !== undefined) for (const watcher of watchers.byValue.get(value) ?? []) matched.push(watcher);
      if (old !== undefined && old !== value) for (const watcher of watchers.byValue.get(old) ?? []) matched.push(watcher);
    }
    return matched;
  }
}

/** What a publish runs before delivering its queue: nothing (one function for every write, not a new one each). */
const nothingFirst = (): void => {};

/**
 * Delivers recorded writes to watchers in revision order. A write made by a listener (or during a replay) is
 * queued and delivered after the current delivery, so every watcher sees revisions in increasing order.
 */
export class WatchHub {
  readonly #queue: Version[] = [];
  /** The watchers of each queued version's kind, at the same index (two arrays: no pair made per write). */
  readonly #queueWatchers: WatchIndex[] = [];
  #delivering = false;
  #errors: unknown[] = [];
  /** The revision of the last write published. */
  #published = 0;

  /** Delivers `version` to the candidates among `watchers`, the watchers of its kind. */
  publish(version: Version, watchers: WatchIndex): void {
    assert(version.event.revision > this.#published, "hub-publishes-in-revision-order");
    this.#published = version.event.revision;
    this.#queue.push(version);
    this.#queueWatchers.push(watchers);
    if (!this.#delivering) this.#run(nothingFirst);
  }

  /** Replays `versions` (oldest first) into one watcher, then delivers whatever the replay queued. */
  replay(watcher: Watcher, versions: Iterable<Version>): void {
    this.#run(() => {
      for (const version of versions) this.#call(watcher, version);
    });
  }

  #call(watcher: Watcher, version: Version): void {
    try {
      watcher.deliver(version);
    } catch (error) {
      this.#errors.push(error);
    }
  }

  #run(first: () => void): void {
    if (this.#delivering) return first();
    this.#delivering = true;
    try {
      first();
      for (let i = 0; i < this.#queue.length; i++) {
        const version = this.#queue[i]!;
        this.#queueWatchers[i]!.forEachCandidate(version, (watcher) => this.#call(watcher, version));
      }
    } finally {
      this.#queue.length = 0;
      this.#queueWatchers.length = 0;
      this.#delivering = false;
    }
    // A throwing listener is the caller's bug; every other watcher still got its events first. (The list is
    // replaced only then: this runs once per write, nearly always without errors.)
    if (this.#errors.length === 0) return;
    const errors = this.#errors;
    this.#errors = [];
    throw errors[0];
  }
}
