// Small pure helpers of the store: JSON cloning with a size, a comparison that skips top-level fields, and the
// deterministic sequences behind `uid` and `generateName`. Freezing, equality and `isRecord` are `api/json.ts`'s.
import { assert } from "../api/assert.ts";
import { jsonEqual } from "../api/json.ts";
import type { KubeObject, ObjectMeta } from "../api/object.ts";

/** Thrown inside `copyPlain` when a value is not plain JSON data: the caller falls back to a JSON round trip. */
const notPlain = Symbol("notPlain");

/**
 * Copies plain JSON data and adds up its size as JSON (exact for ASCII without escapes, close otherwise),
 * several times faster than a JSON round trip for the small objects controllers write.
 */
function copyPlain(value: unknown, size: { bytes: number }): unknown {
  switch (typeof value) {
    case "string":
      size.bytes += value.length + 2;
      return value;
    case "number":
      if (!Number.isFinite(value)) throw notPlain;
      size.bytes += 8;
      return value;
    case "boolean":
      size.bytes += 5;
      return value;
    case "object": {
      if (value === null) {
        size.bytes += 4;
        return null;
      }
      if (Array.isArray(value)) {
        size.bytes += 2 + value.length;
        const copy = new Array<unknown>(value.length);
        for (let i = 0; i < value.length; i++) {
          const item = value[i];
          copy[i] = item === undefined || typeof item === "function" ? null : copyPlain(item, size);
        }
        return copy;
      }
      const proto = Object.getPrototypeOf(value);
      if (proto !== Object.prototype && proto !== null) throw notPlain;
      const copy: Record<string, unknown> = {};
      size.bytes += 2;
      for (const key in value) {
        const item = (value as Record<string, unknown>)[key];
        if (item === undefined || typeof item === "function") continue;
        size.bytes += key.length + 4;
        copy[key] = copyPlain(item, size);
      }
      return copy;
    }
    default:
      throw notPlain;
  }
}

/**
 * Adds up the size of data the store froze when it stored it: plain JSON by construction (no `undefined`, no
 * functions, no class instances), so it is measured as it is, never copied.
 */
function measureStored(value: unknown, size: { bytes: number }): void {
  switch (typeof value) {
    case "string":
      size.bytes += value.length + 2;
      return;
    case "number":
      size.bytes += 8;
      return;
    case "boolean":
      size.bytes += 5;
      return;
    default:
      if (value === null) {
        size.bytes += 4;
      } else if (Array.isArray(value)) {
        size.bytes += 2 + value.length;
        for (let i = 0; i < value.length; i++) measureStored(value[i], size);
      } else {
        size.bytes += 2;
        const record = value as Record<string, unknown>;
        for (const key in record) {
          size.bytes += key.length + 4;
          measureStored(record[key], size);
        }
      }
  }
}

/**
 * The sizes `measureStored` found for stored subtrees: frozen, so their size never changes, and a write that shares
 * them (a patch, a status write) measures each again otherwise. Weak: a subtree no version keeps is forgotten.
 */
const storedSizes = new WeakMap<object, number>();

function storedBytes(value: object): number {
  let bytes = storedSizes.get(value);
  if (bytes === undefined) {
    const size = { bytes: 0 };
    measureStored(value, size);
    bytes = size.bytes;
    storedSizes.set(value, bytes);
  }
  return bytes;
}

/**
 * `copyPlain`'s twin for data nobody else holds: it makes the same value in place (dropping `undefined` and
 * functions, nulling them in arrays) and adds up the same size, so a handed-over object costs a walk, not a copy.
 * Frozen data is not ours to change: it counts as not plain and goes the JSON round trip's way, unless the caller
 * says that every frozen part is the store's own (`frozenIsStored`), which is measured as it is.
 */
function settlePlain(value: unknown, size: { bytes: number }, frozenIsStored: boolean): void {
  switch (typeof value) {
    case "string":
      size.bytes += value.length + 2;
      return;
    case "number":
      if (!Number.isFinite(value)) throw notPlain;
      size.bytes += 8;
      return;
    case "boolean":
      size.bytes += 5;
      return;
    case "object": {
      if (value === null) {
        size.bytes += 4;
        return;
      }
      if (Object.isFrozen(value)) {
        if (!frozenIsStored) throw notPlain;
        size.bytes += storedBytes(value);
        return;
      }
      if (Array.isArray(value)) {
        size.bytes += 2 + value.length;
        for (let i = 0; i < value.length; i++) {
          const item: unknown = value[i];
          if (item === undefined || typeof item === "function") value[i] = null;
          else settlePlain(item, size, frozenIsStored);
        }
        return;
      }
      const proto = Object.getPrototypeOf(value);
      if (proto !== Object.prototype && proto !== null) throw notPlain;
      const record = value as Record<string, unknown>;
      size.bytes += 2;
      for (const key in record) {
        const item = record[key];
        if (item === undefined || typeof item === "function") {
          delete record[key];
          continue;
        }
        size.bytes += key.length + 4;
        settlePlain(item, size, frozenIsStored);
      }
      return;
    }
    default:
      throw notPlain;
  }
}

/**
 * Clones JSON data (dropping `undefined`, as the wire does) and measures it in bytes of UTF-8 JSON: the store's
 * specialization of `api/json.ts`'s `cloneJson`, for its object size limit. It is a loop of its own because
 * counting while copying is what keeps a write at one walk of the object. With `owned`, the caller gave `value`
 * up (see `handOver`): it is made plain in place and returned as the clone, with the same result and size; with
 * `owned: "sharing-stored"` its frozen parts are the store's own frozen data (see `mergePatchSharing`), kept as they are.
 */
export function cloneMeasured<T>(value: T, exactAboveBytes = 0, owned: boolean | "sharing-stored" = false): { clone: T; bytes: number } {
  const size = { bytes: 0 };
  try {
    let clone = value;
    if (owned !== false) settlePlain(value, size, owned === "sharing-stored");
    else clone = copyPlain(value, size) as T;
    // Escapes (up to 6 bytes per character) make the estimate low: anywhere near a limit, measure exactly.
    if (exactAboveBytes === 0 || size.bytes * 6 < exactAboveBytes) return { clone, bytes: size.bytes };
    return { clone, bytes: Buffer.byteLength(JSON.stringify(value), "utf8") };
  } catch (error) {
    if (error !== notPlain) throw error;
  }
  const text = JSON.stringify(value);
  assert(typeof text === "string", "cloneMeasured: value is JSON");
  return { clone: JSON.parse(text) as T, bytes: Buffer.byteLength(text, "utf8") };
}

/**
 * Objects their maker handed to the store for good: the simulator's client copies a request's object when the
 * actor calls and nobody else ever sees that copy, so the store may take it as its own instead of copying again.
 */
const handedOver = new WeakSet<object>();

/** Marks a private copy as given up by its maker: the store's next write of it keeps it instead of copying it. */
export function handOver<T extends object>(object: T): T {
  handedOver.add(object);
  return object;
}

/** True (once) when `value` was handed over: the caller may change it in place. */
export function takeHandedOver(value: object): boolean {
  return handedOver.delete(value);
}

/**
 * True when every field `validateMetadata` checks is the same in `next` as in `stored`: equal strings, and labels,
 * annotations, finalizers and owner references that are the stored ones (which a patch that leaves them alone
 * shares) or hold the same data (an update sends copies of them). Comparing is much cheaper than validating again.
 */
export function sameCheckedMetadata(next: ObjectMeta, stored: ObjectMeta): boolean {
  return (
    next.name === stored.name &&
    next.namespace === stored.namespace &&
    sameData(next.labels, stored.labels) &&
    sameData(next.annotations, stored.annotations) &&
    sameData(next.finalizers, stored.finalizers) &&
    sameData(next.ownerReferences, stored.ownerReferences)
  );
}

/**
 * Equality of JSON data that, unlike `jsonEqual`, counts a key holding `undefined` in `a` as a difference: `a` may
 * come from a mutating admission plugin, and validation would have had its say on such a value. `b` is stored data.
 */
function sameData(a: unknown, b: unknown): boolean {
  return a === b || (jsonEqual(a, b) && !holdsUndefined(a));
}

/** True when an object anywhere in `value` has a key whose value is `undefined`. */
function holdsUndefined(value: unknown): boolean {
  if (value === null || typeof value !== "object") return false;
  if (Array.isArray(value)) return value.some(holdsUndefined);
  for (const key in value) {
    const member = (value as Record<string, unknown>)[key];
    if (member === undefined || holdsUndefined(member)) return true;
  }
  return false;
}

/** True when `a` and `b` differ anywhere outside the top-level keys in `ignored`. */
export function differsOutside(a: Record<string, unknown>, b: Record<string, unknown>, ignored: readonly string[]): boolean {
  for (const key in a) {
    if (ignored.includes(key)) continue;
    if (!jsonEqual(a[key], b[key])) return true;
  }
  for (const key in b) {
    if (ignored.includes(key)) continue;
    if (!(key in a) && b[key] !== undefined) return true;
  }
  return false;
}

/** A 32-bit integer mix (murmur3's finalizer): consecutive counters become random-looking numbers. */
function mix32(value: number): number {
  let h = value | 0;
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

function hex(value: number, digits: number): string {
  return value.toString(16).padStart(8, "0").slice(8 - digits);
}

/**
 * The first uids of the sequence, made once: every simulated run starts a store whose sequence starts again at 0,
 * so the same few uids are asked for in every run.
 */
const sequenceUidsKept: string[] = [];
const sequenceUidsKeptMax = 4096;

/** The n-th uid of the default sequence: a version-4-shaped UUID, different for every n, same on every run. */
export function sequenceUid(n: number): string {
  if (n < sequenceUidsKeptMax) return (sequenceUidsKept[n] ??= makeSequenceUid(n));
  return makeSequenceUid(n);
}

function makeSequenceUid(n: number): string {
  const a = mix32(n * 4 + 1);
  const b = mix32(n * 4 + 2);
  const c = mix32(n * 4 + 3);
  const d = mix32(n * 4 + 4);
  const variant = (8 + (c >>> 30)).toString(16);
  return `${hex(a, 8)}-${hex(b, 4)}-4${hex(b >>> 16, 3)}-${variant}${hex(c, 3)}-${hex(c >>> 12, 4)}${hex(d, 8)}`;
}

/** The alphabet the API server draws `generateName` suffixes from: no vowels, no 0/1/3, so no words appear. */
const suffixAlphabet = "bcdfghjklmnpqrstvwxz2456789";
export const generatedSuffixLength = 5;

/** The n-th `generateName` suffix: 5 characters that look random and never repeat within 27^5 draws per prefix. */
export function sequenceSuffix(n: number): string {
  let value = mix32(n + 0x9e3779b9);
  let suffix = "";
  for (let i = 0; i < generatedSuffixLength; i++) {
    suffix += suffixAlphabet[value % suffixAlphabet.length];
    value = Math.floor(value / suffixAlphabet.length);
  }
  return suffix;
}

/** Reads a string field; anything else counts as absent. */
export function stringOr(value: unknown, fallback: string): string {
  return typeof value === "string" ? value : fallback;
}

/** `ObjectMeta` without the `readonly` of its system fields: the store is the one that writes them. */
export type WritableMeta = { -readonly [K in keyof ObjectMeta]: ObjectMeta[K] };

export function writableMeta(object: KubeObject): WritableMeta {
  return object.metadata as WritableMeta;
}
