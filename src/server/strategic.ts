// Strategic merge patch for the built-in kinds, driven by their schema (`schema.ts`): maps merge as in a JSON merge
// patch (null deletes); lists of objects with a `patchMergeKey` merge element by element on that key; primitive
// lists with `patchStrategy: merge` (finalizers) take the union; any other list is replaced. Directives:
//   `$patch: replace` (a map or a list element: replace the whole map / list), `$patch: delete` (a map: delete it;
//   a list element: delete the element with that key), `$patch: merge` (the default),
//   `$retainKeys: [...]` (drop every other key of the map after merging: the `retainKeys` strategy),
//   `$setElementOrder/<list>: [...]` (the order of the merged list), `$deleteFromPrimitiveList/<list>: [...]`.
// This is what `kubectl apply` (client-side), `kubectl edit`, `label`, `annotate`, `cordon` and `drain` send.
import { badRequest } from "../api/errors.ts";
import { isRecord, jsonEqual, setKey, type JsonObject } from "../api/json.ts";
import { anyNode, childOf } from "./schema.ts";
import type { ListNode, SchemaNode } from "./schema.ts";

function fail(message: string): never {
  throw badRequest(`invalid strategic merge patch: ${message}`);
}

/**
 * Returns the patched document (a new object); `original` is not modified. `schema` describes the kind (default:
 * no known fields). Throws 400 on a malformed patch.
 */
export function applyStrategicPatch(original: unknown, patch: unknown, schema: SchemaNode = anyNode): JsonObject {
  if (!isRecord(patch)) fail("the patch must be a JSON object");
  return mergeMap(isRecord(original) ? original : {}, patch, schema) ?? {};
}

function withoutDirectives(value: unknown): unknown {
  if (Array.isArray(value)) return value.filter((item) => !(isRecord(item) && item.$patch === "delete")).map(withoutDirectives);
  if (!isRecord(value)) return value;
  const out: JsonObject = {};
  for (const [key, child] of Object.entries(value)) {
    if (key.startsWith("$") || child === null) continue;
    setKey(out, key, withoutDirectives(child));
  }
  return out;
}

function mergeMap(original: JsonObject, patch: JsonObject, schema: SchemaNode): JsonObject | undefined {
  const directive = patch.$patch;
  if (directive === "delete") return undefined;
  if (directive === "replace") return withoutDirectives(patch) as JsonObject;
  if (directive !== undefined && directive !== "merge") fail(`unknown $patch ${JSON.stringify(directive)}`);
  const out: JsonObject = { ...original };
  for (const [key, value] of Object.entries(patch)) {
    if (key.startsWith("$")) continue;
    const child = childOf(schema, key);
    if (value === null) delete out[key];
    // `+patchStrategy=replace` on a struct field (a PodDisruptionBudget's selector): the patch's value replaces it.
    else if (isRecord(value) && child.t === "struct" && child.replace === true) setKey(out, key, withoutDirectives(value));
    else if (isRecord(value)) {
      const merged = mergeMap(isRecord(out[key]) ? (out[key] as JsonObject) : {}, value, child);
      if (merged === undefined) delete out[key];
      else setKey(out, key, merged);
    } else if (Array.isArray(value)) setKey(out, key, mergeList(out[key], value, child));
    else setKey(out, key, value);
  }
  for (const [key, value] of Object.entries(patch)) {
    if (key.startsWith("$deleteFromPrimitiveList/")) deleteFromList(out, key.slice("$deleteFromPrimitiveList/".length), value);
    else if (key.startsWith("$setElementOrder/")) orderList(out, key.slice("$setElementOrder/".length), value, childOf(schema, key.slice("$setElementOrder/".length)));
    else if (key.startsWith("$") && key !== "$patch" && key !== "$retainKeys") fail(`unknown directive ${JSON.stringify(key)}`);
  }
  const retain = patch.$retainKeys;
  if (retain !== undefined) {
    if (!Array.isArray(retain) || !retain.every((k) => typeof k === "string")) fail("$retainKeys must be a list of strings");
    const keep = new Set(retain);
    for (const key of Object.keys(out)) if (!keep.has(key)) delete out[key];
  }
  return out;
}

function mergeList(original: unknown, patch: unknown[], schema: SchemaNode): unknown[] {
  const base = Array.isArray(original) ? original : [];
  if (patch.some((item) => isRecord(item) && item.$patch === "replace")) return withoutDirectives(patch.filter((item) => !(isRecord(item) && item.$patch === "replace"))) as unknown[];
  if (schema.t !== "list" || schema.strategy !== "merge") return withoutDirectives(patch) as unknown[];
  if (schema.mergeKey === undefined) return [...base, ...patch.filter((item) => !base.some((b) => jsonEqual(b, item)))];
  return mergeByKey(base, patch, schema as ListNode & { mergeKey: string });
}

function mergeByKey(base: unknown[], patch: unknown[], schema: ListNode & { mergeKey: string }): unknown[] {
  const key = schema.mergeKey;
  const out = [...base];
  for (const item of patch) {
    if (!isRecord(item)) fail(`the elements of a list merged by ${JSON.stringify(key)} must be objects`);
    if (!(key in item)) fail(`map: ${JSON.stringify(withoutDirectives(item))} does not contain declared merge key: ${key}`);
    const index = out.findIndex((existing) => isRecord(existing) && jsonEqual(existing[key], item[key]));
    if (item.$patch === "delete") {
      if (index >= 0) out.splice(index, 1);
      continue;
    }
    if (index < 0) out.push(withoutDirectives(item));
    else out[index] = mergeMap(out[index] as JsonObject, item, schema.item) ?? out[index];
  }
  return out;
}

function deleteFromList(out: JsonObject, field: string, values: unknown): void {
  if (!Array.isArray(values)) fail(`$deleteFromPrimitiveList/${field} must be a list`);
  if (!Array.isArray(out[field])) return;
  setKey(out, field, (out[field] as unknown[]).filter((item) => !values.some((v) => jsonEqual(v, item))));
}

/**
 * Orders a merged list as `$setElementOrder` says. Elements it does not name (present only on the server) keep
 * their place relative to their neighbours: each follows the element it followed before.
 */
function orderList(out: JsonObject, field: string, order: unknown, schema: SchemaNode): void {
  if (!Array.isArray(order)) fail(`$setElementOrder/${field} must be a list`);
  const list = out[field];
  if (!Array.isArray(list)) return;
  const key = schema.t === "list" ? schema.mergeKey : undefined;
  const identity = (item: unknown): string => JSON.stringify(key !== undefined && isRecord(item) ? item[key] : item);
  const wanted = new Map(order.map((item, i) => [identity(item), i]));
  let rank = -1;
  const ranked = list.map((item, i) => {
    const r = wanted.get(identity(item));
    if (r !== undefined) rank = r;
    // Server-only elements sort right after the ordered element before them (ties keep the old order).
    return { item, r: r ?? rank + 0.5, i };
  });
  setKey(out, field, ranked.sort((a, b) => a.r - b.r || a.i - b.i).map((e) => e.item));
}
