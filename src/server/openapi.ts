// OpenAPI v3 documents, one per group version: schemas of the built-in kinds built from the wire table (types,
// list and map markers, patch merge keys and strategies, `+default` values), and of custom kinds from their CRD's
// `openAPIV3Schema`. `kubectl explain` reads them; kubectl's and helm's `--validate=strict` read the PATCH
// operations' `fieldValidation` parameter and then leave validation to the server. Descriptions are left out: the
// definitions' comment text is not ours to copy.
import type { ResourceType } from "../api/resources.ts";
import type { WireField } from "../api/wire-types.ts";
import { wireKinds } from "../api/generated/k8s-api.ts";
import type { Store } from "../store/index.ts";
import { isScalar, wireFields } from "./encoding/wire.ts";
import type { JsonObject } from "../api/json.ts";

/** The OpenAPI name of a wire message, as kube-openapi names Go types: `apps/v1.Deployment` -> `io.k8s.api.apps.v1.Deployment`. */
export function schemaName(message: string): string {
  const dot = message.indexOf(".");
  const pkg = message.slice(0, dot);
  const name = message.slice(dot + 1);
  const apimachinery: Record<string, string> = {
    "meta/v1": "io.k8s.apimachinery.pkg.apis.meta.v1",
    runtime: "io.k8s.apimachinery.pkg.runtime",
    resource: "io.k8s.apimachinery.pkg.api.resource",
    intstr: "io.k8s.apimachinery.pkg.util.intstr",
    schema: "io.k8s.apimachinery.pkg.runtime.schema",
  };
  return `${apimachinery[pkg] ?? `io.k8s.api.${pkg.replace("/", ".")}`}.${name}`;
}

/** Messages whose JSON form is not an object: their schemas are those of their JSON values. */
const valueSchemas: Readonly<Record<string, JsonObject>> = {
  "meta/v1.Time": { type: "string", format: "date-time" },
  "meta/v1.MicroTime": { type: "string", format: "date-time" },
  "meta/v1.Duration": { type: "string" },
  "resource.Quantity": { oneOf: [{ type: "string" }, { type: "number" }] },
  "resource.QuantityValue": { oneOf: [{ type: "string" }, { type: "number" }] },
  "intstr.IntOrString": { type: "string", format: "int-or-string", "x-kubernetes-int-or-string": true },
  "runtime.RawExtension": { type: "object" },
  "meta/v1.FieldsV1": { type: "object" },
};

function scalarSchema(type: string): JsonObject {
  switch (type) {
    case "bool":
      return { type: "boolean" };
    case "int32":
    case "sint32":
    case "uint32":
    case "fixed32":
    case "sfixed32":
      return { type: "integer", format: "int32" };
    case "int64":
    case "sint64":
    case "uint64":
    case "fixed64":
    case "sfixed64":
      return { type: "integer", format: "int64" };
    case "double":
    case "float":
      return { type: "number", format: "double" };
    case "bytes":
      return { type: "string", format: "byte" };
    default:
      return { type: "string" };
  }
}

const ref = (message: string): JsonObject => ({ $ref: `#/components/schemas/${schemaName(message)}` });

function markerDefault(text: string | undefined): unknown {
  if (text === undefined || text.startsWith("ref(")) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function valueSchema(type: string, needed: Set<string>): JsonObject {
  if (isScalar(type)) return scalarSchema(type);
  needed.add(type);
  // kube-openapi wraps a reference in allOf so that siblings (a default) may sit beside it.
  return { allOf: [ref(type)] };
}

function fieldSchema(field: WireField, needed: Set<string>): JsonObject {
  const value = valueSchema(field.type, needed);
  let schema: JsonObject;
  if (field.map !== undefined) schema = { type: "object", additionalProperties: value };
  else if (field.repeated === true) schema = { type: "array", items: value };
  else schema = value;
  const fallback = markerDefault(field.default);
  if (fallback !== undefined) schema.default = fallback;
  if (field.listType !== undefined) schema["x-kubernetes-list-type"] = field.listType;
  if (field.listMapKeys !== undefined) schema["x-kubernetes-list-map-keys"] = field.listMapKeys;
  if (field.patchMergeKey !== undefined) schema["x-kubernetes-patch-merge-key"] = field.patchMergeKey;
  if (field.patchStrategy !== undefined) schema["x-kubernetes-patch-strategy"] = field.patchStrategy;
  if (field.mapType !== undefined || field.structType !== undefined) schema["x-kubernetes-map-type"] = field.mapType ?? field.structType;
  return schema;
}

/**
 * Properties of a message, with Go-inlined structs flattened into their parent as in JSON (their required fields
 * become the parent's, as kube-openapi flattens them); the names of required fields go to `required`, in field order,
 * as kube-openapi lists them.
 */
function properties(message: string, needed: Set<string>, into: JsonObject, required: string[]): void {
  for (const field of wireFields(message)) {
    if (field.inline === true) properties(field.type, needed, into, required);
    else {
      into[field.name] = fieldSchema(field, needed);
      if (field.required === true) required.push(field.name);
    }
  }
}

const kindOfMessage = new Map<string, { group: string; version: string; kind: string }[]>();
for (const k of wireKinds) {
  const gvk = { group: k.group, version: k.version, kind: k.kind };
  kindOfMessage.set(k.message, [...(kindOfMessage.get(k.message) ?? []), gvk]);
  if (k.list) kindOfMessage.set(`${k.message}List`, [{ ...gvk, kind: `${k.kind}List` }]);
}

const typeMetaProperties = { apiVersion: { type: "string" }, kind: { type: "string" } };

function messageSchema(message: string, needed: Set<string>): JsonObject {
  const special = valueSchemas[message];
  if (special !== undefined) return special;
  const props: JsonObject = {};
  const gvks = kindOfMessage.get(message);
  if (gvks !== undefined) Object.assign(props, typeMetaProperties);
  const required: string[] = [];
  properties(message, needed, props, required);
  const schema: JsonObject = { type: "object", properties: props };
  if (required.length > 0) schema.required = required;
  if (gvks !== undefined) schema["x-kubernetes-group-version-kind"] = gvks;
  return schema;
}

/** Schemas of `roots` and every message they reach, by OpenAPI name. */
export function schemasFrom(roots: readonly string[]): Record<string, JsonObject> {
  const schemas: Record<string, JsonObject> = {};
  const needed = new Set<string>(roots);
  const done = new Set<string>();
  while (needed.size > done.size) {
    for (const message of [...needed]) {
      if (done.has(message)) continue;
      done.add(message);
      schemas[schemaName(message)] = messageSchema(message, needed);
    }
  }
  return schemas;
}

/** The messages of a built-in group version's kinds and lists. */
export function builtinRoots(group: string, version: string): string[] {
  return wireKinds.filter((k) => k.group === group && k.version === version).flatMap((k) => (k.list ? [k.message, `${k.message}List`] : [k.message]));
}

/** The schema of a custom kind from its CRD, with its metadata as ObjectMeta and the kind's GVK extension. */
export function customSchemas(store: Store, resources: readonly ResourceType[]): Record<string, JsonObject> {
  const crds = store.list({ apiVersion: "apiextensions.k8s.io/v1", kind: "CustomResourceDefinition" }).items;
  const schemas: Record<string, JsonObject> = {};
  let meta = false;
  for (const r of resources) {
    const crd = crds.find((c) => (c.spec as JsonObject | undefined)?.group === r.group && ((c.spec as JsonObject).names as JsonObject | undefined)?.kind === r.kind);
    if (crd === undefined) continue;
    const versions = ((crd.spec as JsonObject).versions ?? []) as JsonObject[];
    const served = versions.find((v) => v.name === r.version);
    const declared = ((served?.schema as JsonObject | undefined)?.openAPIV3Schema ?? { type: "object", "x-kubernetes-preserve-unknown-fields": true }) as JsonObject;
    const props = { ...((declared.properties as JsonObject | undefined) ?? {}) };
    Object.assign(props, typeMetaProperties, { metadata: { allOf: [ref("meta/v1.ObjectMeta")] } });
    const name = `${r.group.split(".").reverse().join(".")}.${r.version}.${r.kind}`;
    schemas[name] = { ...declared, type: "object", properties: props, "x-kubernetes-group-version-kind": [{ group: r.group, version: r.version, kind: r.kind }] };
    meta = true;
  }
  return meta ? { ...schemasFrom(["meta/v1.ObjectMeta"]), ...schemas } : schemas;
}
