// The fields of a custom resource its CRD's schema does not declare: the store prunes them (store/crd.ts), and
// kube-apiserver's decoder reports each first (`unknown field "spec.foo"`), a 400 with `fieldValidation=Strict` and a
// warning with `Warn` (the default). This walk follows the store's pruning rule by rule, collecting instead of
// deleting: fields kept by `x-kubernetes-preserve-unknown-fields` or `additionalProperties` are not unknown, and
// `apiVersion`, `kind` and `metadata` are never unknown at the root or in an embedded resource.
import { assert } from "../api/assert.ts";
import { isRecord } from "../api/json.ts";
import type { KubeObject } from "../api/object.ts";
import type { ResourceType } from "../api/resources.ts";
import type { Store } from "../store/index.ts";

/** The most unknown fields one request reports. */
const unknownFieldsMax = 100;

/** The paths of `object`'s fields its CRD's schema for `resource` does not declare; none without a schema. */
export function customUnknownFields(store: Store, resource: ResourceType, object: KubeObject): string[] {
  const schema = crdSchema(store, resource);
  if (schema === undefined) return [];
  const found: string[] = [];
  collect(object, schema, true, "", found);
  return found;
}

/** The `openAPIV3Schema` of the version `resource` names, from its CRD; undefined when there is none. */
function crdSchema(store: Store, resource: ResourceType): Record<string, unknown> | undefined {
  let crd: KubeObject;
  try {
    crd = store.get({ apiVersion: "apiextensions.k8s.io/v1", kind: "CustomResourceDefinition", name: `${resource.plural}.${resource.group}` });
  } catch {
    return undefined;
  }
  const versions = isRecord(crd.spec) && Array.isArray(crd.spec.versions) ? crd.spec.versions : [];
  const served = versions.find((v) => isRecord(v) && v.name === resource.version) as Record<string, unknown> | undefined;
  const schema = isRecord(served?.schema) ? served.schema.openAPIV3Schema : undefined;
  return isRecord(schema) ? schema : undefined;
}

function collect(value: unknown, schema: Record<string, unknown>, root: boolean, path: string, found: string[]): void {
  assert(root || path !== "", "unknown fields: every value below the root has a path");
  if (found.length >= unknownFieldsMax) return;
  if (Array.isArray(value)) {
    if (isRecord(schema.items)) value.forEach((item, i) => collect(item, schema.items as Record<string, unknown>, false, `${path}[${i}]`, found));
    return;
  }
  if (!isRecord(value)) return;
  const preserve = schema["x-kubernetes-preserve-unknown-fields"] === true;
  const embedded = root || schema["x-kubernetes-embedded-resource"] === true;
  const properties = isRecord(schema.properties) ? schema.properties : undefined;
  const additional = schema.additionalProperties;
  for (const key of Object.keys(value)) {
    if (embedded && (key === "apiVersion" || key === "kind" || key === "metadata")) continue;
    const child = path === "" ? key : `${path}.${key}`;
    const sub = properties?.[key];
    if (isRecord(sub)) collect(value[key], sub, false, child, found);
    else if (isRecord(additional)) collect(value[key], additional, false, child, found);
    else if (!preserve && additional !== true && found.length < unknownFieldsMax) found.push(child);
  }
}
