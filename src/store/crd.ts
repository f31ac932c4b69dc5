// CustomResourceDefinitions: validating a CRD, deriving the kind it registers, its status (what the
// apiextensions controllers write), and validating/pruning custom resources with `openAPIV3Schema` through ajv.
import { createRequire } from "node:module";
import type { Ajv, ErrorObject, ValidateFunction } from "ajv";
import { invalidValue, type FieldError } from "../api/errors.ts";
import type { KubeObject } from "../api/object.ts";
import { isDns1123Label, isDns1123Subdomain } from "../api/validation.ts";
import { cloneJson, isRecord } from "../api/json.ts";

export const crdCleanupFinalizer = "customresourcecleanup.apiextensions.k8s.io";

export interface CrdVersion {
  name: string;
  served: boolean;
  storage: boolean;
  statusSubresource: boolean;
  /** `subresources.scale`, when the version serves `/scale`. */
  scale?: { specReplicas: string; statusReplicas: string; labelSelector?: string };
  schema: Record<string, unknown>;
}

/** The kind a valid CRD registers. */
export interface CrdInfo {
  group: string;
  kind: string;
  plural: string;
  singular: string;
  listKind: string;
  shortNames: string[];
  /** `names.categories` (`all` puts the kind in `kubectl get all`). */
  categories: string[];
  namespaced: boolean;
  versions: CrdVersion[];
  storageVersion: string;
}

function required(field: string): FieldError {
  return { field, type: "FieldValueRequired", message: "Required value" };
}

function validateNames(spec: Record<string, unknown>): FieldError[] {
  const names = spec.names;
  if (!isRecord(names)) return [required("spec.names")];
  const errors: FieldError[] = [];
  const plural = names.plural;
  if (typeof plural !== "string" || plural === "") errors.push(required("spec.names.plural"));
  else for (const why of isDns1123Label(plural)) errors.push(invalidValue("spec.names.plural", plural, why));
  const kind = names.kind;
  if (typeof kind !== "string" || kind === "") errors.push(required("spec.names.kind"));
  else if (!/^[A-Za-z][A-Za-z0-9]*$/.test(kind)) {
    errors.push(invalidValue("spec.names.kind", kind, "must be a valid kind name (alphanumeric, starting with a letter)"));
  }
  if (names.singular !== undefined && typeof names.singular !== "string") {
    errors.push(invalidValue("spec.names.singular", names.singular, "must be a string"));
  }
  return errors;
}

function validateVersion(version: unknown, field: string): FieldError[] {
  if (!isRecord(version)) return [invalidValue(field, version, "must be an object")];
  const errors: FieldError[] = [];
  if (typeof version.name !== "string" || version.name === "") errors.push(required(`${field}.name`));
  else for (const why of isDns1123Label(version.name)) errors.push(invalidValue(`${field}.name`, version.name, why));
  const schema = isRecord(version.schema) ? version.schema.openAPIV3Schema : undefined;
  if (!isRecord(schema)) {
    errors.push({ field: `${field}.schema.openAPIV3Schema`, type: "FieldValueRequired", message: "Required value: schemas are required" });
  } else if (schema.type !== "object") {
    errors.push({
      field: `${field}.schema.openAPIV3Schema.type`,
      type: "FieldValueNotSupported",
      message: `Unsupported value: ${JSON.stringify(schema.type ?? "")}: supported values: "object"`,
    });
  }
  if (isRecord(version.subresources) && version.subresources.scale !== undefined) errors.push(...validateScale(version.subresources.scale, `${field}.subresources.scale`));
  return errors;
}

/** A simple field path under `.spec` or `.status` (no indices), as a CRD's scale subresource must name. */
function isFieldPathUnder(path: unknown, roots: readonly string[]): boolean {
  return typeof path === "string" && roots.some((root) => new RegExp(`^\\.${root}(\\.[^.\\[\\]]+)+$`).test(path));
}

function validateScale(scale: unknown, field: string): FieldError[] {
  if (!isRecord(scale)) return [invalidValue(field, scale, "must be an object")];
  const errors: FieldError[] = [];
  if (scale.specReplicasPath === undefined) errors.push(required(`${field}.specReplicasPath`));
  else if (!isFieldPathUnder(scale.specReplicasPath, ["spec"])) errors.push(invalidValue(`${field}.specReplicasPath`, scale.specReplicasPath, "should be a json path under .spec"));
  if (scale.statusReplicasPath === undefined) errors.push(required(`${field}.statusReplicasPath`));
  else if (!isFieldPathUnder(scale.statusReplicasPath, ["status"])) errors.push(invalidValue(`${field}.statusReplicasPath`, scale.statusReplicasPath, "should be a json path under .status"));
  if (scale.labelSelectorPath !== undefined && !isFieldPathUnder(scale.labelSelectorPath, ["spec", "status"])) {
    errors.push(invalidValue(`${field}.labelSelectorPath`, scale.labelSelectorPath, "should be a json path under either .spec or .status"));
  }
  return errors;
}

function validateVersions(spec: Record<string, unknown>): FieldError[] {
  const versions = spec.versions;
  if (!Array.isArray(versions) || versions.length === 0) {
    return [{ field: "spec.versions", type: "FieldValueInvalid", message: "Invalid value: must have exactly one version marked as storage version" }];
  }
  const errors = versions.flatMap((version, i) => validateVersion(version, `spec.versions[${i}]`));
  const storage = versions.filter((v) => isRecord(v) && v.storage === true).length;
  if (storage !== 1) {
    errors.push({ field: "spec.versions", type: "FieldValueInvalid", message: "Invalid value: must have exactly one version marked as storage version" });
  }
  const names = versions.map((v) => (isRecord(v) ? v.name : undefined));
  names.forEach((name, i) => {
    if (names.indexOf(name) !== i) errors.push({ field: `spec.versions[${i}].name`, type: "FieldValueDuplicate", message: `Duplicate value: ${JSON.stringify(name)}` });
  });
  return errors;
}

/** The `ConversionReview` versions kube-apiserver can send; a webhook must accept one of them. */
export const conversionReviewVersions: readonly string[] = ["v1", "v1beta1"];

/**
 * `spec.conversion` as kube-apiserver checks it: strategy `None` (every version is the stored object with its
 * apiVersion rewritten) or `Webhook`, which needs `webhook.clientConfig` naming a URL or a Service and a
 * `conversionReviewVersions` list holding a version the server speaks (the server calls it, src/server/crd-conversion.ts).
 */
function validateConversion(spec: Record<string, unknown>): FieldError[] {
  const conversion = spec.conversion;
  if (!isRecord(conversion)) return [];
  const strategy = conversion.strategy ?? "None";
  if (strategy !== "None" && strategy !== "Webhook") {
    return [{ field: "spec.conversion.strategy", type: "FieldValueNotSupported", message: `Unsupported value: ${JSON.stringify(strategy)}: supported values: "None", "Webhook"` }];
  }
  const webhook = conversion.webhook;
  if (strategy === "None") {
    return webhook === undefined || webhook === null ? [] : [{ field: "spec.conversion.webhook", type: "FieldValueForbidden", message: "Forbidden: should not be set when strategy is not set to Webhook" }];
  }
  if (spec.preserveUnknownFields === true) return [invalidValue("spec.conversion.strategy", strategy, "must be None if spec.preserveUnknownFields is true")];
  if (!isRecord(webhook)) return [{ field: "spec.conversion.webhook", type: "FieldValueRequired", message: "Required value: required when strategy is set to Webhook" }];
  const errors: FieldError[] = [];
  const reviews = Array.isArray(webhook.conversionReviewVersions) ? webhook.conversionReviewVersions : [];
  if (!reviews.some((version) => conversionReviewVersions.includes(version as string))) {
    errors.push({ field: "spec.conversion.webhook.conversionReviewVersions", type: "FieldValueRequired", message: `Required value: must include at least one of ${conversionReviewVersions.join(", ")}` });
  }
  const client = webhook.clientConfig;
  const hasUrl = isRecord(client) && typeof client.url === "string" && client.url !== "";
  const hasService = isRecord(client) && isRecord(client.service);
  if (hasUrl === hasService) errors.push({ field: "spec.conversion.webhook.clientConfig", type: "FieldValueRequired", message: "Required value: exactly one of url or service is required" });
  else if (hasUrl && !String(client.url).startsWith("https://")) errors.push(invalidValue("spec.conversion.webhook.clientConfig.url", client.url, "'https' is the only allowed URL scheme"));
  return errors;
}

/** The CRD rules the API server enforces on create and update (metadata is validated by the store). */
export function validateCrd(crd: KubeObject, old?: KubeObject): FieldError[] {
  const spec = crd.spec;
  if (!isRecord(spec)) return [required("spec")];
  const errors: FieldError[] = [];
  const group = spec.group;
  if (typeof group !== "string" || group === "") errors.push(required("spec.group"));
  else if (!group.includes(".")) errors.push(invalidValue("spec.group", group, "should be a domain with at least one dot"));
  else for (const why of isDns1123Subdomain(group)) errors.push(invalidValue("spec.group", group, why));
  if (spec.scope !== "Namespaced" && spec.scope !== "Cluster") {
    errors.push({ field: "spec.scope", type: "FieldValueNotSupported", message: `Unsupported value: ${JSON.stringify(spec.scope ?? "")}: supported values: "Cluster", "Namespaced"` });
  }
  errors.push(...validateNames(spec), ...validateVersions(spec), ...validateConversion(spec));
  const plural = isRecord(spec.names) ? spec.names.plural : undefined;
  const expected = `${String(plural)}.${String(group)}`;
  if (errors.length === 0 && crd.metadata.name !== expected) {
    errors.push(invalidValue("metadata.name", crd.metadata.name, 'must be spec.names.plural+"."+spec.group'));
  }
  if (old !== undefined && isRecord(old.spec) && old.spec.scope !== spec.scope) {
    errors.push(invalidValue("spec.scope", spec.scope, "field is immutable"));
  }
  if (old !== undefined && isRecord(old.spec) && old.spec.group !== spec.group) {
    errors.push(invalidValue("spec.group", spec.group, "field is immutable"));
  }
  return errors;
}

/** The kind of a CRD that passed `validateCrd`. */
export function crdInfo(crd: KubeObject): CrdInfo {
  const spec = crd.spec as Record<string, unknown>;
  const names = spec.names as Record<string, unknown>;
  const kind = names.kind as string;
  const versions = (spec.versions as Array<Record<string, unknown>>).map((v): CrdVersion => {
    const version: CrdVersion = {
      name: v.name as string,
      served: v.served !== false,
      storage: v.storage === true,
      statusSubresource: isRecord(v.subresources) && isRecord(v.subresources.status),
      schema: (v.schema as Record<string, unknown>).openAPIV3Schema as Record<string, unknown>,
    };
    const scale = isRecord(v.subresources) ? v.subresources.scale : undefined;
    if (isRecord(scale) && typeof scale.specReplicasPath === "string" && typeof scale.statusReplicasPath === "string") {
      version.scale = { specReplicas: scale.specReplicasPath, statusReplicas: scale.statusReplicasPath };
      if (typeof scale.labelSelectorPath === "string" && scale.labelSelectorPath !== "") version.scale.labelSelector = scale.labelSelectorPath;
    }
    return version;
  });
  return {
    group: spec.group as string,
    kind,
    plural: names.plural as string,
    singular: typeof names.singular === "string" && names.singular !== "" ? names.singular : kind.toLowerCase(),
    listKind: typeof names.listKind === "string" && names.listKind !== "" ? names.listKind : `${kind}List`,
    shortNames: Array.isArray(names.shortNames) ? names.shortNames.filter((s): s is string => typeof s === "string") : [],
    categories: Array.isArray(names.categories) ? names.categories.filter((s): s is string => typeof s === "string") : [],
    namespaced: spec.scope === "Namespaced",
    versions,
    storageVersion: versions.find((v) => v.storage)!.name,
  };
}

/** The status the apiextensions controllers give an accepted CRD: accepted names, conditions, stored versions. */
export function crdStatus(crd: KubeObject, info: CrdInfo, old: KubeObject | undefined, nowText: string): Record<string, unknown> {
  const oldStatus = isRecord(old?.status) ? old.status : {};
  const oldConditions = Array.isArray(oldStatus.conditions) ? (oldStatus.conditions as Array<Record<string, unknown>>) : [];
  const since = (type: string) => oldConditions.find((c) => c.type === type && c.status === "True")?.lastTransitionTime ?? nowText;
  const stored = Array.isArray(oldStatus.storedVersions) ? [...(oldStatus.storedVersions as string[])] : [];
  if (!stored.includes(info.storageVersion)) stored.push(info.storageVersion);
  const conditions: Array<Record<string, unknown>> = [
    { type: "NamesAccepted", status: "True", lastTransitionTime: since("NamesAccepted"), reason: "NoConflicts", message: "no conflicts found" },
    { type: "Established", status: "True", lastTransitionTime: since("Established"), reason: "InitialNamesAccepted", message: "the initial names have been accepted" },
  ];
  if (crd.metadata.deletionTimestamp !== undefined) {
    conditions.push({ type: "Terminating", status: "True", lastTransitionTime: since("Terminating"), reason: "InstanceDeletionInProgress", message: "CustomResource deletion is in progress" });
  }
  const acceptedNames: Record<string, unknown> = { plural: info.plural, singular: info.singular, kind: info.kind, listKind: info.listKind };
  if (info.shortNames.length > 0) acceptedNames.shortNames = info.shortNames;
  if (info.categories.length > 0) acceptedNames.categories = info.categories;
  return { conditions, acceptedNames, storedVersions: stored };
}

let sharedAjv: Ajv | undefined;

/**
 * The process-wide ajv, made on first use: ajv is about 70 files and 100 ms of start-up that neither `settle
 * serve` nor an explore worker should pay before the first CRD arrives. Inside a worker bundle (see
 * workerBundle in src/explore/load.ts) `require` exists and esbuild bundles the literal call, evaluated only
 * here; as an ES module (dist/ or the sources) node's `require` of the CommonJS package gives the instance an
 * `import` would.
 */
function ajv(): Ajv {
  if (sharedAjv === undefined) {
    const { Ajv: AjvClass } = (typeof require === "function" ? require("ajv") : createRequire(import.meta.url)("ajv")) as typeof import("ajv");
    sharedAjv = new AjvClass({ allErrors: true, strict: false, validateFormats: false });
  }
  return sharedAjv;
}

/**
 * Compiles CRD schemas. A compiled validator is pure, so one process-wide ajv and a cache keyed by the
 * schema's JSON serve every store: a simulation run creates the same CRDs again and again, and compiling
 * was most of its setup time.
 */
const compiledSchemas = new Map<string, ValidateFunction>();
const compiledSchemasMax = 1_000;

/** A compiler of CRD version schemas. It throws when ajv cannot compile one, and the store rejects that CRD. */
export function createSchemaCompiler(): (schema: Record<string, unknown>) => ValidateFunction {
  return (schema) => {
    const stripped = draft7Bounds(stripMetadata(schema));
    const key = JSON.stringify(stripped);
    let validate = compiledSchemas.get(key);
    if (validate === undefined) {
      if (compiledSchemas.size >= compiledSchemasMax) {
        compiledSchemas.clear();
        ajv().removeSchema();
      }
      validate = ajv().compile(stripped);
      compiledSchemas.set(key, validate);
    }
    return validate;
  };
}

/** The API server validates `metadata` itself; a CRD schema may only say `type: object` there. */
function stripMetadata(schema: Record<string, unknown>): Record<string, unknown> {
  if (!isRecord(schema.properties) || !("metadata" in schema.properties)) return schema;
  const { metadata: _ignored, ...properties } = schema.properties;
  return { ...schema, properties };
}

/**
 * OpenAPI 3.0, which CRD schemas follow, makes `exclusiveMinimum`/`exclusiveMaximum` booleans modifying
 * `minimum`/`maximum`; ajv reads JSON Schema draft 7, where they are the bounds themselves. Rewritten so
 * `{ minimum: 0, exclusiveMinimum: true }` means greater than 0, as the API server reads it.
 */
function draft7Bounds(schema: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...schema };
  for (const [flag, bound] of [["exclusiveMinimum", "minimum"], ["exclusiveMaximum", "maximum"]] as const) {
    if (typeof schema[flag] !== "boolean") continue;
    delete out[flag];
    if (schema[flag] && typeof schema[bound] === "number") {
      out[flag] = schema[bound];
      delete out[bound];
    }
  }
  const each = (value: unknown) => (isRecord(value) ? draft7Bounds(value) : value);
  for (const key of ["properties", "patternProperties"]) {
    const map = schema[key];
    if (isRecord(map)) out[key] = Object.fromEntries(Object.entries(map).map(([name, sub]) => [name, each(sub)]));
  }
  for (const key of ["items", "additionalProperties", "not"]) {
    if (isRecord(schema[key])) out[key] = draft7Bounds(schema[key]);
  }
  if (Array.isArray(schema.items)) out.items = schema.items.map(each);
  for (const key of ["allOf", "anyOf", "oneOf"]) {
    if (Array.isArray(schema[key])) out[key] = (schema[key] as unknown[]).map(each);
  }
  return out;
}

function fieldPath(instancePath: string): string {
  let field = "";
  for (const part of instancePath.split("/").slice(1)) {
    const name = part.replace(/~1/g, "/").replace(/~0/g, "~");
    field += /^\d+$/.test(name) ? `[${name}]` : field === "" ? name : `.${name}`;
  }
  return field;
}

function valueAt(object: unknown, instancePath: string): unknown {
  let node = object;
  for (const part of instancePath.split("/").slice(1)) {
    if (node === null || typeof node !== "object") return undefined;
    node = (node as Record<string, unknown>)[part.replace(/~1/g, "/").replace(/~0/g, "~")];
  }
  return node;
}

/** ajv's errors as the API server words schema violations: field path, cause type, message. */
export function schemaErrors(errors: readonly ErrorObject[], object: unknown): FieldError[] {
  return errors.map((error) => {
    const field = fieldPath(error.instancePath);
    if (error.keyword === "required") {
      const missing = String(error.params.missingProperty);
      return { field: field === "" ? missing : `${field}.${missing}`, type: "FieldValueRequired", message: "Required value" };
    }
    const value = JSON.stringify(valueAt(object, error.instancePath));
    if (error.keyword === "type") {
      const type = String(error.params.type);
      return { field, type: "FieldValueTypeInvalid", message: `Invalid value: ${value}: ${field} in body must be of type ${type}: ${value}` };
    }
    if (error.keyword === "enum") {
      const allowed = (error.params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(", ");
      return { field, type: "FieldValueNotSupported", message: `Unsupported value: ${value}: supported values: ${allowed}` };
    }
    return { field, type: "FieldValueInvalid", message: `Invalid value: ${value}: ${field} in body ${error.message ?? "is invalid"}` };
  });
}

/**
 * Drops fields the schema does not declare, as the API server prunes custom resources (structural schemas),
 * unless `x-kubernetes-preserve-unknown-fields` keeps them. `apiVersion`, `kind` and `metadata` stay at the root.
 */
export function pruneUnknown(value: unknown, schema: Record<string, unknown>, root: boolean): void {
  if (Array.isArray(value)) {
    if (isRecord(schema.items)) for (const item of value) pruneUnknown(item, schema.items, false);
    return;
  }
  if (!isRecord(value)) return;
  const preserve = schema["x-kubernetes-preserve-unknown-fields"] === true;
  const embedded = root || schema["x-kubernetes-embedded-resource"] === true;
  const properties = isRecord(schema.properties) ? schema.properties : undefined;
  const additional = schema.additionalProperties;
  for (const key of Object.keys(value)) {
    if (embedded && (key === "apiVersion" || key === "kind" || key === "metadata")) continue;
    const sub = properties?.[key];
    if (isRecord(sub)) pruneUnknown(value[key], sub, false);
    else if (isRecord(additional)) pruneUnknown(value[key], additional, false);
    else if (!preserve && additional !== true) delete value[key];
  }
}

/**
 * Fills in absent fields from the schema's `default`s, as the API server defaults custom resources (structural
 * defaulting): a property that is absent, or null where the schema does not allow null, gets a copy of its default,
 * then every value present is defaulted by its own schema, so a defaulted object gets its nested defaults too. At the
 * root `apiVersion`, `kind` and `metadata` are left alone. Frozen parts are the store's, defaulted when stored.
 */
export function applySchemaDefaults(value: unknown, schema: Record<string, unknown>, root: boolean): void {
  if (Object.isFrozen(value) || !declaresDefaults(schema)) return;
  if (Array.isArray(value)) {
    if (isRecord(schema.items)) for (const item of value) applySchemaDefaults(item, schema.items, false);
    return;
  }
  if (!isRecord(value)) return;
  const properties = isRecord(schema.properties) ? schema.properties : undefined;
  if (properties !== undefined) {
    for (const [key, sub] of Object.entries(properties)) {
      if (!isRecord(sub) || !("default" in sub) || (root && key === "metadata")) continue;
      const current = value[key];
      if (current === undefined || (current === null && sub.nullable !== true)) value[key] = cloneJson(sub.default);
    }
  }
  const additional = isRecord(schema.additionalProperties) ? schema.additionalProperties : undefined;
  for (const [key, child] of Object.entries(value)) {
    if (root && (key === "apiVersion" || key === "kind" || key === "metadata")) continue;
    const sub = properties?.[key] ?? additional;
    if (isRecord(sub)) applySchemaDefaults(child, sub, false);
  }
}

/** Per schema node: whether a `default` is declared in it or below (most schemas have none: no walk then). */
const defaultsBelow = new WeakMap<object, boolean>();

function declaresDefaults(schema: Record<string, unknown>): boolean {
  let known = defaultsBelow.get(schema);
  if (known === undefined) {
    // Assumed false while it is being computed, so a schema that refers to itself cannot recurse forever.
    defaultsBelow.set(schema, false);
    const children = [...(isRecord(schema.properties) ? Object.values(schema.properties) : []), schema.items, schema.additionalProperties];
    known = "default" in schema || children.some((child) => isRecord(child) && declaresDefaults(child));
    defaultsBelow.set(schema, known);
  }
  return known;
}
