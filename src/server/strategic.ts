// A subset of strategic merge patch, enough for what `kubectl apply` (client-side), `kubectl edit` and the
// `label`/`annotate` commands send for built-in kinds. Part 1 of `settle serve`: maps merge as in a JSON merge patch;
// lists of objects merge by the merge keys of the fields below (containers by name, ...); primitive lists with a
// merge strategy (finalizers) take the union; any other list is replaced. Directives understood: `$patch`
// (replace, delete, merge), `$retainKeys`, `$setElementOrder/<field>`, `$deleteFromPrimitiveList/<field>`.
// A field missing from the table is replaced whole: the full per-kind tables are part 2 (issue 12).
import { badRequest } from "../api/errors.ts";

/** Field name -> merge key, as the `patchMergeKey` tags of the core and apps types. */
const mergeKeys: Readonly<Record<string, string>> = {
  containers: "name",
  initContainers: "name",
  ephemeralContainers: "name",
  env: "name",
  volumes: "name",
  volumeMounts: "mountPath",
  volumeDevices: "devicePath",
  ports: "containerPort",
  imagePullSecrets: "name",
  hostAliases: "ip",
  topologySpreadConstraints: "topologyKey",
  conditions: "type",
  ownerReferences: "uid",
  resourceClaims: "name",
};

/** Primitive lists with `patchStrategy: merge`. */
const mergedPrimitiveLists = new Set(["finalizers"]);

type Json = Record<string, unknown>;

function isMap(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function setKey(object: Json, key: string, value: unknown): void {
  Object.defineProperty(object, key, { value, writable: true, enumerable: true, configurable: true });
}

/** Returns the patched document (a new object); `original` is not modified. Throws 400 on a malformed patch. */
export function applyStrategicPatch(original: unknown, patch: unknown): Json {
  if (!isMap(patch)) throw badRequest("invalid strategic merge patch: the patch must be a JSON object");
  const result = mergeMap(isMap(original) ? original : {}, patch);
  return result ?? {};
}

function withoutDirectives(patch: Json): Json {
  const out: Json = {};
  for (const [key, value] of Object.entries(patch)) {
    if (key.startsWith("$")) continue;
    setKey(out, key, isMap(value) ? withoutDirectives(value) : value);
  }
  return out;
}

function mergeMap(original: Json, patch: Json): Json | undefined {
  const directive = patch.$patch;
  if (directive === "delete") return undefined;
  if (directive === "replace") return withoutDirectives(patch);
  if (directive !== undefined && directive !== "merge") throw badRequest(`invalid strategic merge patch: unknown $patch ${JSON.stringify(directive)}`);
  const out: Json = { ...original };
  for (const [key, value] of Object.entries(patch)) {
    if (key.startsWith("$")) continue;
    if (value === null) delete out[key];
    else if (isMap(value)) {
      const merged = mergeMap(isMap(out[key]) ? (out[key] as Json) : {}, value);
      if (merged === undefined) delete out[key];
      else setKey(out, key, merged);
    } else if (Array.isArray(value)) setKey(out, key, mergeList(key, out[key], value));
    else setKey(out, key, value);
  }
  for (const [key, value] of Object.entries(patch)) {
    if (key.startsWith("$deleteFromPrimitiveList/")) deleteFromList(out, key.slice("$deleteFromPrimitiveList/".length), value);
    else if (key.startsWith("$setElementOrder/")) orderList(out, key.slice("$setElementOrder/".length), value);
  }
  if (Array.isArray(patch.$retainKeys)) {
    const keep = new Set(patch.$retainKeys.map(String));
    for (const key of Object.keys(out)) if (!keep.has(key)) delete out[key];
  }
  return out;
}

function mergeList(field: string, original: unknown, patch: unknown[]): unknown[] {
  const base = Array.isArray(original) ? original : [];
  if (patch.some((item) => isMap(item) && item.$patch === "replace")) return patch.filter((item) => !(isMap(item) && item.$patch === "replace"));
  if (mergedPrimitiveLists.has(field)) return [...base, ...patch.filter((item) => !base.includes(item))];
  const key = mergeKeys[field];
  if (key === undefined || !patch.every(isMap)) return patch.map((item) => (isMap(item) ? withoutDirectives(item) : item));
  const out = [...base];
  for (const item of patch as Json[]) {
    const index = out.findIndex((existing) => isMap(existing) && existing[key] === item[key]);
    if (item.$patch === "delete") {
      if (index >= 0) out.splice(index, 1);
      continue;
    }
    if (index < 0) out.push(withoutDirectives(item));
    else out[index] = mergeMap(out[index] as Json, item) ?? out[index];
  }
  return out;
}

function deleteFromList(out: Json, field: string, values: unknown): void {
  if (!Array.isArray(values) || !Array.isArray(out[field])) return;
  setKey(out, field, (out[field] as unknown[]).filter((item) => !values.includes(item)));
}

/** Orders a merged list as `$setElementOrder` says; elements it does not name keep their order, after it. */
function orderList(out: Json, field: string, order: unknown): void {
  const list = out[field];
  if (!Array.isArray(order) || !Array.isArray(list)) return;
  const key = mergeKeys[field];
  const identity = (item: unknown): unknown => (key !== undefined && isMap(item) ? item[key] : item);
  const wanted = order.map(identity);
  const rank = (item: unknown): number => {
    const i = wanted.indexOf(identity(item));
    return i < 0 ? wanted.length : i;
  };
  setKey(out, field, list.map((item, i) => ({ item, i })).sort((a, b) => rank(a.item) - rank(b.item) || a.i - b.i).map((e) => e.item));
}
