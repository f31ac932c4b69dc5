// The options every `Client` method takes, checked at the boundary: a mistake in a call is a programmer error
// that names itself here (`create: options.object is required ...`) instead of failing deep inside the store or
// the HTTP layer as `Cannot read properties of undefined`. Both clients (the simulator's and `settle/kube`)
// call `checkClientOptions` first thing in each method, so the same call fails the same way in both.

export type ClientMethod = "get" | "list" | "create" | "update" | "updateStatus" | "patch" | "patchStatus" | "delete" | "watch";

const propagationPolicies = ["Background", "Foreground", "Orphan"];

function describe(value: unknown): string {
  if (value === null || value === undefined) return String(value);
  if (Array.isArray(value)) return "an array";
  if (typeof value !== "object") return `${typeof value} ${JSON.stringify(value) ?? String(value)}`.slice(0, 80);
  const keys = Object.keys(value);
  return keys.length === 0 ? "an empty object" : `an object with ${keys.slice(0, 6).join("/")}${keys.length > 6 ? "/..." : ""}`;
}

function fail(method: ClientMethod, message: string): never {
  throw new TypeError(`${method}: ${message}`);
}

/** Where a required string sits: in a reference (the options themselves) or in `options.object`. */
type StringPlace = "reference" | "object";

/** What to add to a missing-field message: said only on failure, so the valid case computes nothing. */
function placeHint(place: StringPlace, options: Record<string, unknown>): string {
  if (place === "object") return " in options.object";
  return "metadata" in options ? ": pass a reference { apiVersion, kind, namespace, name }, not the object" : "";
}

function requireString(method: ClientMethod, options: Record<string, unknown>, field: string, place: StringPlace): void {
  const value = options[field];
  if (typeof value === "string" && value.length > 0) return;
  const got = value === undefined ? `got ${describe(options)}` : `got ${describe(value)}`;
  fail(method, `options.${field} is required, a non-empty string (${got}${placeHint(place, options)})`);
}

function optionalString(method: ClientMethod, options: Record<string, unknown>, field: string): void {
  const value = options[field];
  if (value !== undefined && typeof value !== "string") fail(method, `options.${field} must be a string when given (got ${describe(value)})`);
}

const isName = (value: unknown): boolean => typeof value === "string" && value.length > 0;
const isOptionalString = (value: unknown): boolean => value === undefined || typeof value === "string";

/**
 * The common, valid reference, read by fixed property names: every client call passes here, with options of many
 * shapes, and field-by-field checks by computed name cost a lookup each.
 */
function isValidRef(options: Record<string, unknown>, named: boolean): boolean {
  return isName(options.apiVersion) && isName(options.kind) && isOptionalString(options.namespace) && (!named || isName(options.name));
}

/** apiVersion and kind, and (for one object) name; `metadata` here means an object was passed for a reference. */
function checkRef(method: ClientMethod, options: Record<string, unknown>, named: boolean): void {
  if (isValidRef(options, named)) return;
  requireString(method, options, "apiVersion", "reference");
  requireString(method, options, "kind", "reference");
  optionalString(method, options, "namespace");
  if (named) requireString(method, options, "name", "reference");
}

function checkObject(method: ClientMethod, options: Record<string, unknown>): void {
  const object = options.object;
  if (typeof object !== "object" || object === null || Array.isArray(object)) {
    const hint = "apiVersion" in options || "kind" in options ? ": pass { object }" : "";
    fail(method, `options.object is required (got ${object === undefined ? describe(options) : describe(object)}${hint})`);
  }
  const fields = object as Record<string, unknown>;
  const metadata = fields.metadata;
  if (isName(fields.apiVersion) && isName(fields.kind) && typeof metadata === "object" && metadata !== null) return;
  requireString(method, fields, "apiVersion", "object");
  requireString(method, fields, "kind", "object");
  if (typeof metadata !== "object" || metadata === null) fail(method, `options.object.metadata is required (got ${describe(metadata)})`);
}

function checkPatch(method: ClientMethod, options: Record<string, unknown>): void {
  const { patchType, patch } = options;
  if (patchType !== "merge" && patchType !== "json") fail(method, `options.patchType must be "merge" or "json" (got ${describe(patchType)})`);
  if (patchType === "json" && !Array.isArray(patch)) fail(method, `a "json" patch is an array of RFC 6902 operations (got ${describe(patch)})`);
  if (patchType === "merge" && (typeof patch !== "object" || patch === null || Array.isArray(patch))) {
    fail(method, `a "merge" patch is an object (got ${describe(patch)})`);
  }
}

/** After `checkRef`, which has checked `namespace`. */
function checkSelectors(method: ClientMethod, options: Record<string, unknown>): void {
  const { labelSelector, fieldSelector, resourceVersion, limit } = options;
  if (isOptionalString(labelSelector) && isOptionalString(fieldSelector) && isOptionalString(resourceVersion) && (limit === undefined || (Number.isInteger(limit) && (limit as number) >= 0))) return;
  optionalString(method, options, "labelSelector");
  optionalString(method, options, "fieldSelector");
  optionalString(method, options, "resourceVersion");
  if (limit !== undefined && (!Number.isInteger(limit) || (limit as number) < 0)) fail(method, `options.limit must be a non-negative integer (got ${describe(limit)})`);
}

function checkDelete(method: ClientMethod, options: Record<string, unknown>): void {
  const grace = options.gracePeriodSeconds;
  if (grace !== undefined && (!Number.isInteger(grace) || (grace as number) < 0)) fail(method, `options.gracePeriodSeconds must be a non-negative integer (got ${describe(grace)})`);
  const policy = options.propagationPolicy;
  if (policy !== undefined && !propagationPolicies.includes(policy as string)) {
    fail(method, `options.propagationPolicy must be one of ${propagationPolicies.join(", ")} (got ${describe(policy)})`);
  }
}

/** Throws a TypeError naming the method, the option and what was passed, when `options` cannot be right. */
export function checkClientOptions(method: ClientMethod, options: unknown): void {
  if (typeof options !== "object" || options === null || Array.isArray(options)) fail(method, `expects one options object (got ${describe(options)})`);
  const o = options as Record<string, unknown>;
  switch (method) {
    case "get":
      return checkRef(method, o, true);
    case "list":
    case "watch":
      checkRef(method, o, false);
      return checkSelectors(method, o);
    case "create":
    case "update":
    case "updateStatus":
      return checkObject(method, o);
    case "patch":
    case "patchStatus":
      checkRef(method, o, true);
      return checkPatch(method, o);
    case "delete":
      checkRef(method, o, true);
      return checkDelete(method, o);
  }
}
