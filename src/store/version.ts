// One write of one key as the revision log records it, and the two reads every layer makes of it. A module of its
// own, below the log, the kind registry and the watchers alike, so that none of them imports another to read a
// version (the registry and the watchers used to import each other for this). It names the kind of a version only
// by what the log does with it (`VersionKind`, which the registry's `KindState` implements), so it imports nothing
// of the store's above it either.
import type { KubeObject } from "../api/object.ts";
import type { StoreEvent } from "./types.ts";

/** One write of one key: the event as recorded, and the version it replaced (cut at compaction). */
export interface Version {
  readonly event: StoreEvent;
  prev: Version | undefined;
  readonly kind: VersionKind;
  readonly key: string;
  /** What this version counts for in the log's history byte bound (see `RevisionLog.commit`). */
  readonly bytes: number;
}

/**
 * A version's kind as the revision log sees it when it compacts: the kind's objects by key, which drop a deleted
 * key whose last version goes, and its own history of writes, which drops the version. (The kind's watchers are
 * handed to the watch hub with each write, not reached through its versions.)
 */
export interface VersionKind {
  /** "group/Kind": what a snapshot names the kind of each write by. */
  readonly id: string;
  readonly objects: Map<string, Version>;
  /** The log compacted `version`, the kind's oldest kept write. */
  compactVersion(version: Version): void;
  /** `key` left `objects`. */
  keyRemoved(key: string): void;
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
