// One write of one key as the revision log records it, and the two reads every layer makes of it. A module of its
// own, below the log, the kind registry and the watchers alike, so that none of them imports another at run time
// to read a version (the registry and the watchers used to import each other for this).
import type { KubeObject } from "../api/object.ts";
import type { KindState } from "./registry.ts";
import type { StoreEvent } from "./types.ts";

/** One write of one key: the event as recorded, and the version it replaced (cut at compaction). */
export interface Version {
  readonly event: StoreEvent;
  prev: Version | undefined;
  readonly kind: KindState;
  readonly key: string;
  /** What this version counts for in the log's history byte bound (see `RevisionLog.commit`). */
  readonly bytes: number;
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
