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
  // Asked after every step for every read and write, with a handful of distinct kinds: remembered, not rebuilt.
  let byKind = kindKeys.get(apiVersion);
  if (byKind === undefined) {
    if (kindKeys.size >= kindKeysMax) kindKeys.clear();
    kindKeys.set(apiVersion, (byKind = new Map()));
  }
  let key = byKind.get(kind);
  if (key === undefined) {
    const slash = apiVersion.indexOf("/");
    key = slash < 0 ? `/${kind}` : `${apiVersion.slice(0, slash)}/${kind}`;
    byKind.set(kind, key);
  }
  return key;
}

/** apiVersion -> kind -> `kindKey`. Bounded: a scenario has a few dozen kinds; past the bound it starts again. */
const kindKeys = new Map<string, Map<string, string>>();
const kindKeysMax = 1024;

/**
 * An object as reads and writes name it. The namespace is left out on purpose: a cluster-scoped `get` may carry
 * one the store ignores, and two objects of one kind and name in different namespaces only cost a spare check.
 */
export function objectKey(apiVersion: string, kind: string, name: string | undefined): string {
  return `${kindKey(apiVersion, kind)}|${name ?? ""}`;
}
