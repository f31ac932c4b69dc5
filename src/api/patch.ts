// JSON merge patch (RFC 7386) and JSON patch (RFC 6902), with errors as the API server reports them.
//
// What kube-apiserver answers (endpoints/handlers/patch.go), and so what we answer:
// - merge patch: a body that is not a JSON object (null, a scalar) is 400 BadRequest; inside the object, RFC 7386.
// - JSON patch: a body that is not an array of objects is 400 BadRequest; more than 10,000 operations is 413;
//   any operation that cannot apply (unknown `op`, missing `path`/`value`/`from`, a path that does not exist, a
//   failed `test`) is 422 Invalid with the fixed message below and empty details. The server does not say which
//   operation failed; we keep the specific reason on the error's `cause` (never sent over the wire).
// - JSON patch paths through a member named `__proto__` (or `constructor/prototype`) are refused with 422:
//   fast-json-patch bans them to protect the process from prototype pollution. The real server would accept
//   `__proto__` as an ordinary key; no Kubernetes field has that name.
import fastJsonPatch from "fast-json-patch";
import type { Operation } from "fast-json-patch";
import { ApiError, badRequest, tooLarge } from "./errors.ts";
import { isPlainObject, isRecord, jsonEqual, setKey } from "./json.ts";

/** The API server rejects JSON patches with more operations than this (413). */
export const jsonPatchOperationsMax = 10_000;
/**
 * Nesting bound for documents and patches. Go's decoder in the API server allows 10,000 levels; we stop at 1,000
 * so that recursion stays far from the JavaScript stack limit (no Kubernetes object comes close to either).
 * Cyclic data hits this bound too.
 */
export const jsonDepthMax = 1_000;

export const jsonPatchRejectedMessage = "the server rejected our request due to an error in our request";

type JsonObject = { [key: string]: unknown };

interface CloneOptions {
  /** Objects of the copy have no prototype, so that a path like `/constructor` resolves only to own keys. */
  nullPrototype: boolean;
  /** Names the input in the BadRequest raised for data that is not JSON. */
  what: string;
}

/**
 * Deep-copies JSON data, rejecting anything JSON cannot carry (undefined, functions, NaN, class instances,
 * cycles, nesting deeper than `jsonDepthMax`) with a BadRequest that names the input (`what`): such values never
 * arrive over the wire, and accepting them here would let the simulator store objects a real server could not.
 * The checking specialization of `api/json.ts`'s `cloneJson`, for patch documents.
 */
export function cloneJsonChecked(value: unknown, what = "value"): unknown {
  return cloneValue(value, { nullPrototype: false, what }, 0);
}

function cloneValue(value: unknown, options: CloneOptions, depth: number): unknown {
  if (value === null || typeof value === "string" || typeof value === "boolean") return value;
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw badRequest(`${options.what} is not valid JSON: ${value} is not a JSON number`);
    return value;
  }
  if (depth >= jsonDepthMax) throw badRequest(`${options.what} is not valid JSON: nested deeper than ${jsonDepthMax} levels (or cyclic)`);
  if (Array.isArray(value)) {
    const copy: unknown[] = new Array(value.length);
    for (let i = 0; i < value.length; i++) copy[i] = cloneValue(value[i], options, depth + 1);
    return copy;
  }
  if (isPlainObject(value)) {
    const copy: JsonObject = options.nullPrototype ? Object.create(null) : {};
    for (const key of Object.keys(value)) setKey(copy, key, cloneValue(value[key], options, depth + 1));
    return copy;
  }
  throw badRequest(`${options.what} is not valid JSON: it holds a value of type ${describe(value)}`);
}

function describe(value: unknown): string {
  if (typeof value !== "object" || value === null) return typeof value;
  return value.constructor?.name ?? "object";
}

/**
 * Returns a new document; `target` is not modified and shares nothing with the result. Throws `ApiError`
 * BadRequest when `patch` is not a JSON object (as the API server does for a merge patch body) or not JSON data.
 * Inside the patch, RFC 7386: `null` deletes a key, an object merges into an object (or into `{}` when the
 * target holds something else), and anything else, arrays included, replaces.
 */
export function applyMergePatch(target: unknown, patch: unknown): unknown {
  if (!isPlainObject(patch)) {
    throw badRequest(`invalid merge patch: the patch must be a JSON object, got ${patch === null ? "null" : describe(patch)}`);
  }
  const patchCopy = cloneValue(patch, { nullPrototype: false, what: "merge patch" }, 0) as JsonObject;
  const base = isPlainObject(target) ? (cloneJsonChecked(target, "patch target") as JsonObject) : {};
  return mergeInto(base, patchCopy, false);
}

/**
 * RFC 7386 merge patch of a stored (frozen) object, with the same result, key order included, as
 * `applyMergePatch`, but sharing instead of copying: every object on a patched path is new and unfrozen, every
 * subtree the patch does not reach is the stored one, still frozen. `patch` must be a private plain copy (its values
 * are moved into the result). A status patch of a 5,000-node fleet then copies a few keys, not each node.
 */
export function mergePatchSharing(target: JsonObject, patch: JsonObject): JsonObject {
  return mergeInto(target, patch, true);
}

/**
 * Merges `patch` into `target`; patch values are moved, not copied (the patch is a private copy). Without `share`
 * the target is a private copy too and is merged in place; with it, each object on a patched path is copied one
 * level deep first, so the target's untouched subtrees are shared.
 */
function mergeInto(target: JsonObject, patch: JsonObject, share: boolean): JsonObject {
  let out = target;
  if (share) {
    out = {};
    for (const key of Object.keys(target)) setKey(out, key, target[key]);
  }
  for (const key of Object.keys(patch)) {
    const value = patch[key];
    if (value === null) {
      delete out[key];
    } else if (isRecord(value)) {
      const current = Object.hasOwn(out, key) ? out[key] : undefined;
      setKey(out, key, mergeInto(isRecord(current) ? current : {}, value, share));
    } else {
      setKey(out, key, value);
    }
  }
  return out;
}

/**
 * The merge patch that turns `from` into `to` (what controller-runtime's `MergeFrom` sends): removed keys become
 * `null`, changed values are sent whole (arrays included), unchanged keys are left out. `applyMergePatch(from,
 * createMergePatch(from, to))` equals `to` whenever `to` holds no `null` (RFC 7386 cannot set a key to null).
 */
export function createMergePatch(from: unknown, to: unknown): JsonObject {
  if (!isPlainObject(to)) throw badRequest("invalid merge patch: the desired document must be a JSON object");
  return diffObjects(isPlainObject(from) ? from : {}, to);
}

function diffObjects(from: JsonObject, to: JsonObject): JsonObject {
  const patch: JsonObject = {};
  for (const key of Object.keys(from)) {
    if (!Object.hasOwn(to, key)) setKey(patch, key, null);
  }
  for (const key of Object.keys(to)) {
    const before = Object.hasOwn(from, key) ? from[key] : undefined;
    const after = to[key];
    if (isRecord(before) && isRecord(after)) {
      const inner = diffObjects(before, after);
      if (Object.keys(inner).length > 0) setKey(patch, key, inner);
    } else if (before === undefined || !jsonEqual(before, after)) {
      setKey(patch, key, cloneJsonChecked(after, "merge patch"));
    }
  }
  return patch;
}

const rfc6902Operations = new Set(["add", "remove", "replace", "move", "copy", "test"]);

function rejected(reason: string): ApiError {
  const error = new ApiError("Invalid", 422, jsonPatchRejectedMessage, {});
  error.cause = reason;
  return error;
}

/** Checks what fast-json-patch does not: only RFC 6902 verbs (it also knows `_get`), and no move into itself. */
function checkOperation(operation: JsonObject, index: number): void {
  const op = operation["op"];
  if (typeof op !== "string" || !rfc6902Operations.has(op)) {
    throw rejected(`operation ${index}: unknown op ${JSON.stringify(op)}`);
  }
  const path = operation["path"];
  const from = operation["from"];
  if (op === "move" && typeof path === "string" && typeof from === "string" && path.startsWith(`${from}/`)) {
    throw rejected(`operation ${index}: cannot move ${from} into its own child ${path}`);
  }
}

/**
 * Returns a new document; `target` is not modified and shares nothing with the result. Throws `ApiError`:
 * BadRequest (400) when `operations` is not an array of objects, RequestEntityTooLarge (413) beyond
 * `jsonPatchOperationsMax` operations, Invalid (422) when an operation is malformed or cannot apply (missing
 * path, failed `test`) — the API server decodes only the array shape up front and reports the rest as 422.
 */
export function applyJsonPatch(target: unknown, operations: unknown): unknown {
  const ops = checkedOperations(operations);
  const document = cloneValue(target, { nullPrototype: true, what: "patch target" }, 0);
  let patched: unknown;
  try {
    patched = fastJsonPatch.applyPatch(document, ops as unknown as Operation[], true, true, true).newDocument;
  } catch (error) {
    throw patchFailure(error);
  }
  return cloneJsonChecked(patched, "patched document");
}

/** A private copy of a JSON patch, checked as `applyJsonPatch` documents (400, 413, 422 for a malformed operation). */
function checkedOperations(operations: unknown): JsonObject[] {
  if (!Array.isArray(operations)) throw badRequest("invalid JSON patch: the patch must be a JSON array of operations");
  if (operations.length > jsonPatchOperationsMax) {
    throw tooLarge(`The allowed maximum operations in a JSON patch is ${jsonPatchOperationsMax}, got ${operations.length}`);
  }
  const ops = cloneValue(operations, { nullPrototype: false, what: "JSON patch" }, 0) as unknown[];
  ops.forEach((operation, index) => {
    if (!isRecord(operation)) throw badRequest(`invalid JSON patch: operation ${index} is not a JSON object`);
    checkOperation(operation, index);
  });
  return ops as JsonObject[];
}

/** fast-json-patch's failures as the API server reports them; anything else is rethrown as it is. */
function patchFailure(error: unknown): unknown {
  // JsonPatchError for RFC failures; TypeError for `__proto__` paths and for writes into a primitive.
  if (error instanceof fastJsonPatch.JsonPatchError) {
    return rejected(`operation ${error.index ?? 0}: ${error.message.split("\n")[0] ?? error.name}`);
  }
  if (error instanceof TypeError) return rejected(error.message);
  return error;
}

/**
 * The operations `applyJsonPatchSharing` takes: those that change or read only what their own path names. `move`
 * and `copy` read another path, and `move` would carry a stored subtree to a new place (where, for a custom
 * resource, pruning might have to cut into it).
 */
const sharingOperations = new Set(["add", "remove", "replace", "test"]);

/** True when `applyJsonPatchSharing` takes `operations` (an array of those operations only). */
export function jsonPatchShareable(operations: unknown): boolean {
  return Array.isArray(operations) && operations.every((op) => isRecord(op) && sharingOperations.has(op["op"] as string));
}

/**
 * `applyJsonPatch` of a stored (frozen) object, with the same checks, errors and result (key order included), but
 * sharing instead of copying, as `mergePatchSharing` does for merge patches. Before each operation, the objects on
 * its path are copied one level deep (without a prototype, like `applyJsonPatch`'s whole copy, so that a path
 * such as `/constructor` finds only own keys), so it reads and changes only private objects; every subtree no
 * operation reaches is the stored one, still frozen. Copying the whole object twice was most of a JSON patch's
 * cost in the store. The caller checked `jsonPatchShareable`.
 */
export function applyJsonPatchSharing(target: JsonObject, operations: unknown): unknown {
  const ops = checkedOperations(operations);
  let document: unknown = shallowPrivate(target);
  try {
    for (let i = 0; i < ops.length; i++) {
      const op = ops[i]!;
      if (typeof op["path"] === "string") privatePath(document, op["path"]);
      document = fastJsonPatch.applyOperation(document, op as unknown as Operation, true, true, true, i).newDocument as unknown;
    }
  } catch (error) {
    throw patchFailure(error);
  }
  return plainPrivate(document);
}

/** A one-level copy of a stored container: an array, or an object without a prototype. */
function shallowPrivate(value: object): unknown {
  if (Array.isArray(value)) return [...(value as unknown[])];
  const copy: JsonObject = Object.create(null) as JsonObject;
  const source = value as JsonObject;
  for (const key of Object.keys(source)) setKey(copy, key, source[key]);
  return copy;
}

/**
 * Makes every container a JSON pointer passes through (all but its last segment) private, walking from `document`
 * (private already). Stored subtrees are frozen; anything unfrozen was made by this patch. The walk stops where the
 * path leaves the document, and at segments fast-json-patch rejects, which it then reports.
 */
function privatePath(document: unknown, path: string): void {
  const segments = path.split("/");
  let node = document;
  for (let i = 1; i < segments.length - 1; i++) {
    if (node === null || typeof node !== "object") return;
    let key: string | number = segments[i]!;
    if (key.includes("~")) key = key.replace(/~1/g, "/").replace(/~0/g, "~");
    if (key === "__proto__") return;
    const container = node as JsonObject & unknown[];
    if (Array.isArray(container)) {
      // An array index as fast-json-patch reads one: digits only (the empty string too), converted with `~~`.
      if (!/^[0-9]*$/.test(key)) return;
      key = ~~key;
    }
    const child: unknown = container[key as string];
    if (child === null || typeof child !== "object") return;
    if (Object.isFrozen(child)) {
      const copy = shallowPrivate(child);
      if (typeof key === "number") container[key] = copy;
      else setKey(container, key, copy);
      node = copy;
    } else {
      node = child;
    }
  }
}

/** The private objects of a shared patch result as plain objects again (own keys in order); frozen subtrees stay. */
function plainPrivate(value: unknown): unknown {
  if (value === null || typeof value !== "object" || Object.isFrozen(value)) return value;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) value[i] = plainPrivate(value[i]);
    return value;
  }
  const source = value as JsonObject;
  const copy: JsonObject = {};
  for (const key of Object.keys(source)) setKey(copy, key, plainPrivate(source[key]));
  return copy;
}
