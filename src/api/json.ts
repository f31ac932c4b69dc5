// The one set of helpers for JSON data (plain objects, arrays, strings, finite numbers, booleans, null) that every
// layer shares: a type guard, a fast copy, setting a member whatever its name, deep freezing and structural equality.
//
// The rule for `undefined`, everywhere in this module, is JSON's: an object key whose value is `undefined` is the
// same as an absent key, because `JSON.stringify` drops it and the wire never carries it. Inside an array
// `undefined` has no such twin (`JSON.stringify` writes it as `null`), and no Kubernetes object holds one there,
// so it equals only `undefined`.
//
// Two specializations with their own reasons live next to their callers and build on this module: the store's copy
// that also counts bytes for its object size limit (`store/util.ts`), and the patch code's copy that rejects
// values JSON cannot carry with a message naming the input (`api/patch.ts`).

/** A JSON object (or any map of names to values) whose values are yet to be checked. */
export type JsonObject = Record<string, unknown>;

/**
 * A JSON object read without narrowing, for code that walks deep into objects of known kinds (the table printers,
 * the subresource bodies) where each level's check would say nothing the kind's schema does not. Prefer `JsonObject`.
 */
export type LooseJsonObject = Record<string, any>;

/** A JSON object, or any non-null, non-array object: the test every "is this a map?" check means. */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The elements of a list that are records (objects, not arrays); none when the value is not a list. */
export function records(value: unknown): Record<string, unknown>[] {
  return Array.isArray(value) ? value.filter(isRecord) : [];
}

/** A record whose prototype is `Object.prototype` or `null`: what a JSON parser makes, unlike class instances. */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (!isRecord(value)) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/**
 * Sets `object[key] = value` as an own, enumerable data property for every key, `__proto__` included: JSON data may
 * name a member `__proto__`, and on an ordinary object plain assignment would replace its prototype instead of adding
 * the member. Every other key assigns: `Object.prototype` has no other setter and no read-only member, so assignment
 * already makes an own property, and it is several times cheaper than defining one (server-side apply sets one per
 * field, tens of thousands in a big body). An existing member keeps its place among the keys.
 */
export function setKey(object: JsonObject, key: string, value: unknown): void {
  if (key === "__proto__") Object.defineProperty(object, key, { value, writable: true, enumerable: true, configurable: true });
  else object[key] = value;
}

/**
 * A deep copy of JSON data: own enumerable keys of objects, array elements, primitives as they are. A key whose
 * value is `undefined` is copied as such (which, by this module's rule, changes nothing). Hand-written loops,
 * several times faster than `structuredClone` for the small objects controllers read and write; this copy is on
 * the simulator's hot path (every request and response of every actor).
 */
export function cloneJson<T>(value: T): T {
  if (value === null || typeof value !== "object") return value;
  return cloneComposite(value) as T;
}

/**
 * `cloneJson` of an object or array. Most members are strings and numbers: they are taken as they are without a
 * call, which makes a typical object's copy about a quarter cheaper.
 */
function cloneComposite(value: object): unknown {
  if (Array.isArray(value)) {
    const out = new Array<unknown>(value.length);
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i];
      out[i] = typeof item === "object" && item !== null ? cloneComposite(item) : item;
    }
    return out;
  }
  const out: Record<string, unknown> = {};
  for (const key in value) {
    if (!Object.prototype.hasOwnProperty.call(value, key)) continue;
    const item = (value as Record<string, unknown>)[key];
    out[key] = typeof item === "object" && item !== null ? cloneComposite(item) : item;
  }
  return out;
}

/**
 * Freezes JSON data and everything in it, in place, and returns it. A subtree that is already frozen is skipped
 * whole: the store's versions share their unchanged subtrees, which an earlier version froze.
 */
export function deepFreeze<T>(value: T): T {
  if (value === null || typeof value !== "object" || Object.isFrozen(value)) return value;
  Object.freeze(value);
  if (Array.isArray(value)) {
    for (const item of value) deepFreeze(item);
  } else {
    for (const key in value) deepFreeze((value as Record<string, unknown>)[key]);
  }
  return value;
}

/**
 * Structural equality of JSON data. Key order does not matter (it does not on the wire), and a key whose value is
 * `undefined` equals an absent key (see the module comment). An array never equals an object.
 */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== "object" || typeof b !== "object") return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!jsonEqual(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const left = a as Record<string, unknown>;
  const right = b as Record<string, unknown>;
  // Counts the defined keys of `left` (each must equal its twin in `right`) against the defined keys of `right`:
  // equal counts then mean `right` has no defined key that `left` lacks.
  let definedKeys = 0;
  for (const key in left) {
    if (left[key] === undefined) continue;
    definedKeys++;
    if (!jsonEqual(left[key], right[key])) return false;
  }
  for (const key in right) if (right[key] !== undefined) definedKeys--;
  return definedKeys === 0;
}

/**
 * JSON with object keys in code-unit order and undefined members (with `omitNulls`, null ones too) left out: equal
 * data gives equal text whatever order its keys were set in (as Go encodes maps). Controllers call it on every reconcile, so it sorts only keys that are out of order
 * (most objects are built in the same order each time) and builds the text without intermediate entry arrays.
 */
export function canonicalJson(value: unknown, omitNulls = false): string {
  if (Array.isArray(value)) {
    let text = "[";
    // A hole or an element without JSON form (undefined, a function) leaves an empty slot, as `map` and `join` do.
    for (let i = 0; i < value.length; i++) text += (i === 0 ? "" : ",") + ((canonicalJson(value[i], omitNulls) as string | undefined) ?? "");
    return `${text}]`;
  }
  if (value !== null && typeof value === "object") {
    const record = value as Record<string, unknown>;
    const keys = sortedKeys(Object.keys(record));
    let text = "{";
    for (const key of keys) {
      const member = record[key];
      if (member === undefined || (omitNulls && member === null)) continue;
      text += `${text.length === 1 ? "" : ","}${JSON.stringify(key)}:${canonicalJson(member, omitNulls)}`;
    }
    return `${text}}`;
  }
  return JSON.stringify(value);
}

/** Keys in code-unit order (the default sort order of strings), sorting only when they are not in order already. */
function sortedKeys(keys: string[]): string[] {
  for (let i = 1; i < keys.length; i++) if (keys[i - 1]! > keys[i]!) return keys.sort();
  return keys;
}
