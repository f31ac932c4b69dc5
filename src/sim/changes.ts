// What changed in the world between two moments, in the keys a property's reads are compared with: the kinds
// and objects the store wrote and the external cells the kernel wrote. The property monitor uses it to skip a
// predicate whose reads are untouched. A view without a change feed (a drill's live view) gets every predicate
// evaluated, as before.
import type { WorldView } from "./types.ts";

/** Where a change feed stood: the store's revision and the count of external writes so far. */
export interface ChangeCursor {
  readonly revision: number;
  readonly externalWrites: number;
}

/** The writes since a cursor. `everything` when they can no longer be told (compacted history, trimmed log). */
export interface WorldChanges {
  readonly everything: boolean;
  /** `kindKey` of every object written. */
  readonly kinds: readonly string[];
  /** `objectKey` of every object written. */
  readonly objects: readonly string[];
  /** Names of the external cells written. */
  readonly externals: readonly string[];
}

export interface ChangeFeed {
  cursor(): ChangeCursor;
  since(cursor: ChangeCursor): WorldChanges;
}

/** The symbol under which a simulator's `WorldView` carries its change feed (not part of the public shape). */
export const changeFeedKey: unique symbol = Symbol("settle.changeFeed");

export const everythingChanged: WorldChanges = Object.freeze({ everything: true, kinds: [], objects: [], externals: [] });

/** The change feed of a view, when it has one. */
export function changeFeedOf(view: WorldView): ChangeFeed | undefined {
  return (view as { [changeFeedKey]?: ChangeFeed })[changeFeedKey];
}

/** A kind as reads and writes name it: group and kind (the version does not matter, the objects are the same). */
export function kindKey(apiVersion: string, kind: string): string {
  return kindEntry(apiVersion, kind).key;
}

/**
 * An object as reads and writes name it. The namespace is left out on purpose: a cluster-scoped `get` may carry
 * one the store ignores, and two objects of one kind and name in different namespaces only cost a spare check.
 */
export function objectKey(apiVersion: string, kind: string, name: string | undefined): string {
  // Asked for every object a predicate reads and every object a step writes, with the same few names over and
  // over: remembered per kind, so that the sets they go into meet strings whose hash is already known.
  const entry = kindEntry(apiVersion, kind);
  const objectName = name ?? "";
  let key = entry.objects.get(objectName);
  if (key === undefined) {
    if (entry.objects.size >= objectKeysPerKindMax) entry.objects.clear();
    key = `${entry.key}|${objectName}`;
    entry.objects.set(objectName, key);
  }
  return key;
}

/** A kind's key and the object keys made for it so far (by name). */
interface KindEntry {
  readonly key: string;
  readonly objects: Map<string, string>;
}

function kindEntry(apiVersion: string, kind: string): KindEntry {
  // Asked after every step for every read and write, with a handful of distinct kinds: remembered, not rebuilt.
  let byKind = kindEntries.get(apiVersion);
  if (byKind === undefined) {
    if (kindEntries.size >= kindKeysMax) kindEntries.clear();
    kindEntries.set(apiVersion, (byKind = new Map()));
  }
  let entry = byKind.get(kind);
  if (entry === undefined) {
    const slash = apiVersion.indexOf("/");
    entry = { key: slash < 0 ? `/${kind}` : `${apiVersion.slice(0, slash)}/${kind}`, objects: new Map() };
    byKind.set(kind, entry);
  }
  return entry;
}

/** apiVersion -> kind -> its entry. Bounded: a scenario has a few dozen kinds; past the bound it starts again. */
const kindEntries = new Map<string, Map<string, KindEntry>>();
const kindKeysMax = 1024;
/** Object keys remembered per kind: a fleet of thousands of nodes keeps them all; past the bound it starts again. */
const objectKeysPerKindMax = 16_384;
