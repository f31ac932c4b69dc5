// The revision log: what etcd's MVCC store is under kube-apiserver. One global revision, bumped by every committed
// write; each key's versions chained newest first; the history of every write kept for watches and reads at an older
// revision, compacted beyond its bounds (by revisions, and by bytes as etcd's quota keeps it); and the delivery of
// each committed write to the watchers. It knows nothing of the API's rules: the layer above (`MemoryStore`) decides
// what is written, the log records it.
//
// Invariants, asserted by name where they can break (each check is O(1) per write):
// - `log-revision-strictly-increasing`: a commit takes the next revision, after every version of its key.
// - `log-history-contiguous`: the history holds exactly the revisions after the compacted one, one slot each.
// - `log-history-within-revision-bound`: at most `historyRevisionsMax` revisions are kept after a commit.
// - `log-history-within-byte-bound`: the kept versions count at most `historyBytesMax` bytes, unless only the
//   newest revision is left (it always stays).
// - `log-compacted-monotone`: the compacted revision only moves forward, one revision at a time, never past the
//   newest.
// - `log-watch-not-behind-compaction`: a watcher starts at or after the compacted revision, so its replay has every
//   write after its start; and the hub publishes revisions in increasing order (`hub-publishes-in-revision-order`),
//   so a watcher's position only moves forward and it skips no write after its start. (A watcher may start ahead of
//   the newest revision: it skips the writes up to its start, as the server's watch from a future resourceVersion.)
//
// Bounds: the history holds at most `historyRevisionsMax` versions (and `historyBytesMax` bytes of them); a version
// behind the compaction point keeps no older one (`prev` is cut), so a key's chain is bounded by the same horizon.
import { assert } from "../api/assert.ts";
import { expired } from "../api/errors.ts";
import { deepFreeze, jsonEqual } from "../api/json.ts";
import type { KubeObject } from "../api/object.ts";
import type { KindState } from "./registry.ts";
import type { StoreEvent } from "./types.ts";
import { writableMeta } from "./util.ts";
import { liveObject, type Version } from "./version.ts";
import { WatchHub, type Watcher } from "./watch.ts";

export interface RevisionLogOptions {
  /** Revisions of history kept. Default 100_000 (as `StoreOptions.historyRevisionsMax`). */
  historyRevisionsMax?: number;
  /** Bytes of history kept. Default: no bound by bytes. */
  historyBytesMax?: number;
  /**
   * Called with each committed version after it is recorded (it is the newest, reachable by key) and before the
   * history is compacted and the version published to watchers: what the layer above derives from a write. `state`
   * is the version's kind.
   */
  onCommit?: (version: Version, state: KindState) => void;
}

/** One committed write as a snapshot carries it (see `RevisionLog.writesAfter`). */
export interface LoggedWrite {
  readonly kindId: string;
  readonly key: string;
  readonly event: StoreEvent;
  readonly bytes: number;
}

/**
 * What a deletion counts for in the history: its stored object shares every part of the last version's (counted
 * there), so about the key and the version record, as etcd's tombstone is a key and a revision.
 */
export function tombstoneBytes(key: string): number {
  return key.length + 64;
}

const doNothing = (): void => {};

export class RevisionLog {
  readonly historyRevisionsMax: number;
  readonly historyBytesMax: number;
  readonly #onCommit: (version: Version, state: KindState) => void;
  readonly #hub = new WatchHub();
  #revision = 0;
  #compacted = 0;
  /** Every write from `#historyHead` on (slots before it are cleared at compaction, so their objects can go). */
  #history: Array<Version | undefined> = [];
  #historyHead = 0;
  /** The `bytes` of the versions in `#history` from `#historyHead` on. */
  #historyBytes = 0;

  constructor(options: RevisionLogOptions = {}) {
    this.historyRevisionsMax = options.historyRevisionsMax ?? 100_000;
    this.historyBytesMax = options.historyBytesMax ?? Infinity;
    this.#onCommit = options.onCommit ?? doNothing;
    assert(Number.isInteger(this.historyRevisionsMax), "historyRevisionsMax is an integer");
    assert(this.historyRevisionsMax >= 1, "historyRevisionsMax >= 1");
    assert(this.historyBytesMax > 0, "historyBytesMax > 0");
  }

  /** The newest revision: bumped by every commit, as etcd's. */
  get revision(): number {
    return this.#revision;
  }

  /** The oldest revision a read or watch may start from. */
  get compactedRevision(): number {
    return this.#compacted;
  }

  /** What the kept history counts for against `historyBytesMax`. */
  get historyBytes(): number {
    return this.#historyBytes;
  }

  /** The recorded events after `afterRevision`, oldest first. Throws 410 when it has been compacted away. */
  history(afterRevision: number): readonly StoreEvent[] {
    if (afterRevision < this.#compacted) throw expired(`too old resource version: ${afterRevision} (${this.#compacted})`);
    const start = this.#historyHead + Math.max(0, afterRevision - this.#compacted);
    return this.#history.slice(start).map((version) => version!.event);
  }

  /**
   * Stores a write as the next revision: stamps and freezes the object, makes it the key's newest version, records
   * it in the history, then (after `onCommit`) compacts and publishes it. `bytes` is what the write counts for in the
   * byte bound: the object's size as the write pipeline measured its input (a few fields may change after that; an
   * estimate the pipeline had already, so the bound costs nothing per write), or a tombstone's for a deletion.
   */
  commit(state: KindState, key: string, type: StoreEvent["type"], object: KubeObject, prev: Version | undefined, bytes: number): Version {
    const revision = this.#revision + 1;
    assert(prev === undefined || prev.event.revision < revision, "log-revision-strictly-increasing");
    this.#revision = revision;
    const event: StoreEvent = Object.freeze({ type, object: stamped(type, object, revision), revision });
    const version: Version = { event, prev, kind: state, key, bytes };
    if (!state.objects.has(key)) state.keyAdded(key);
    state.objects.set(key, version);
    state.reindex(key, liveObject(prev), liveObject(version));
    this.#history.push(version);
    this.#historyBytes += bytes;
    state.recordVersion(version);
    assert(this.#history.length - this.#historyHead === revision - this.#compacted, "log-history-contiguous");
    this.#onCommit(version, state);
    this.#compact();
    this.#hub.publish(version, state.watchers);
    return version;
  }

  #compact(): void {
    // By revisions, and by bytes as etcd's compaction and quota keep its history: the newest revision always stays.
    while (
      this.#revision - this.#compacted > this.historyRevisionsMax ||
      (this.#historyBytes > this.historyBytesMax && this.#revision - this.#compacted > 1)
    ) {
      const version = this.#history[this.#historyHead]!;
      // The slot goes now, not at the next slice: a few hundred large writes would otherwise stay reachable.
      this.#history[this.#historyHead] = undefined;
      this.#historyHead++;
      this.#historyBytes -= version.bytes;
      version.kind.compactVersion(version);
      assert(version.event.revision === this.#compacted + 1, "log-compacted-monotone");
      this.#compacted = version.event.revision;
      // Versions older than the compaction point are never read again: cut the chain behind this one.
      version.prev = undefined;
      const state = version.kind;
      if (version.event.type === "DELETED" && state.objects.get(version.key) === version) {
        state.objects.delete(version.key);
        state.keyRemoved(version.key);
      }
    }
    assert(this.#historyBytes >= 0, "log-history-within-byte-bound");
    assert(this.#historyBytes <= this.historyBytesMax || this.#revision - this.#compacted <= 1, "log-history-within-byte-bound");
    assert(this.#revision - this.#compacted <= this.historyRevisionsMax, "log-history-within-revision-bound");
    if (this.#historyHead > 1024 && this.#historyHead * 2 > this.#history.length) {
      this.#history = this.#history.slice(this.#historyHead);
      this.#historyHead = 0;
    }
  }

  /**
   * Replays `versions` (oldest first, none newer than the log) into a new watcher, then goes on publishing to it. The
   * caller checked that its start is not compacted (a 410 for the client).
   */
  replay(watcher: Watcher, versions: Iterable<Version>): void {
    assert(watcher.lastRevision >= this.#compacted, "log-watch-not-behind-compaction");
    this.#hub.replay(watcher, versions);
  }

  // ---- snapshots of a freshly built world ----

  /**
   * The writes committed after `fromRevision`, and the event of the one before them, for `restoreWrites` into
   * another log: undefined once this log has compacted (a snapshot is of a whole history).
   */
  writesAfter(fromRevision: number): { baseEvent: StoreEvent | undefined; writes: LoggedWrite[] } | undefined {
    assert(fromRevision >= 0 && fromRevision <= this.#revision, "a snapshot starts at a revision the store has");
    if (this.#compacted > 0 || this.#historyHead !== 0) return undefined;
    const base = this.#history[fromRevision - 1];
    const writes = this.#history.slice(fromRevision).map((v) => ({ kindId: v!.kind.id, key: v!.key, event: v!.event, bytes: v!.bytes }));
    return { baseEvent: base?.event, writes };
  }

  /** True when the write before `revision + 1` is `baseEvent` (none for revision 0) in a log that never compacted. */
  endsWith(revision: number, baseEvent: StoreEvent | undefined): boolean {
    if (this.#revision !== revision || this.#compacted > 0) return false;
    const base = this.#history[revision - 1];
    return base === undefined || jsonEqual(base.event, baseEvent);
  }

  /** Commits a snapshot's writes as they were: the same objects at the same revisions. The caller checked `endsWith`. */
  restoreWrites(writes: readonly LoggedWrite[], kindOf: (kindId: string) => KindState | undefined): void {
    for (const { kindId, key, event, bytes } of writes) {
      const state = kindOf(kindId);
      assert(state !== undefined, "a snapshot's kinds are registered by its own writes in order");
      this.commit(state, key, event.type, event.object, state.objects.get(key), bytes);
      assert(this.#revision === event.revision, "a restored write keeps its revision");
    }
  }
}

/**
 * The object as stored at `revision`, frozen. A deletion's is its last state with the deletion's revision. Any other
 * is the pipeline's own object, stamped in place; one frozen by validating admission gets a new top level and
 * metadata to carry the revision; a snapshot's, being restored, carries it already and is shared as it is (frozen:
 * no store can change it).
 */
function stamped(type: StoreEvent["type"], object: KubeObject, revision: number): KubeObject {
  if (type === "DELETED") return Object.freeze({ ...object, metadata: Object.freeze({ ...object.metadata, resourceVersion: String(revision) }) });
  let stored: KubeObject;
  if (Object.isFrozen(object) || Object.isFrozen(object.metadata)) {
    const resourceVersion = String(revision);
    const carries = Object.isFrozen(object) && object.metadata.resourceVersion === resourceVersion;
    stored = carries ? object : { ...object, metadata: { ...object.metadata, resourceVersion } };
  } else {
    stored = object;
    writableMeta(stored).resourceVersion = String(revision);
  }
  return deepFreeze(stored);
}

/**
 * The versions of one key after revision `after` up to `end`, oldest first: what a watch of one object replays,
 * walked back along the key's chain instead of through every write of its kind. The caller checked compaction.
 */
export function versionsOfKey(state: KindState, key: string, after: number, end: number): Version[] {
  const versions: Version[] = [];
  for (let v = state.objects.get(key); v !== undefined && v.event.revision > after; v = v.prev) {
    if (v.event.revision <= end) versions.push(v);
  }
  return versions.reverse();
}
