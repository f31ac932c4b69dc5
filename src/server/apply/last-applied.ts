// Moving an object from client-side `kubectl apply` to `kubectl apply --server-side`, as kube-apiserver allows it.
//
// Client-side apply leaves the fields it set owned by an `Update` of the manager "kubectl-client-side-apply", and a
// copy of the configuration it applied in the last-applied annotation. When the manager "kubectl" then applies
// server-side, a real server forgives the conflicts on the fields that copy still holds at their live values (they
// are kubectl's own from before), so the switch needs no `--force-conflicts`; a field someone else has changed since
// still conflicts. After every apply by "kubectl" to an object that carries the annotation, the server rewrites the
// annotation to the configuration just applied, so that a later client-side apply diffs against it. Only the manager
// named "kubectl" gets either: another manager opts out by its name.
import type { KubeObject } from "../../api/object.ts";
import { canonicalJson, isRecord, jsonEqual } from "../../api/json.ts";
import { fieldsOf, valueAt } from "./fields.ts";
import type { SchemaNode } from "../schema.ts";

export const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration";

/** The one field manager the upgrade is for: `kubectl apply --server-side` without `--field-manager`. */
const upgradingManager = "kubectl";

/**
 * The fields `manager` may take from other managers without force when it applies over `live`: for "kubectl", those
 * the last-applied configuration (of the same API version) holds at their live values; for anyone else, none.
 */
export function forgivenConflicts(manager: string, live: KubeObject | undefined, apiVersion: string, schema: SchemaNode, include: (field: string) => boolean): Set<string> {
  const forgiven = new Set<string>();
  const last = manager === upgradingManager && live !== undefined ? lastApplied(live) : undefined;
  if (last === undefined || last.apiVersion !== apiVersion) return forgiven;
  for (const path of fieldsOf(last, schema, include)) {
    const segments = JSON.parse(path) as string[];
    if (jsonEqual(valueAt(last, segments, schema), valueAt(live, segments, schema))) forgiven.add(path);
  }
  return forgiven;
}

/** The last-applied configuration `object` carries, or undefined when it has none or it is not a JSON object. */
function lastApplied(object: KubeObject): Record<string, unknown> | undefined {
  const text = object.metadata.annotations?.[lastAppliedAnnotation];
  if (typeof text !== "string" || text === "") return undefined;
  try {
    const parsed: unknown = JSON.parse(text);
    return isRecord(parsed) ? parsed : undefined;
  } catch {
    return undefined;
  }
}

/**
 * After an apply by `manager` that produced `result` from `applied`: for "kubectl", when the result carries the
 * annotation, the annotation becomes the applied configuration without it, encoded as the real server encodes it
 * (keys sorted at every level, HTML characters escaped, a newline at the end). `result` is the apply's own new object: changed in place.
 */
export function refreshLastApplied(manager: string, applied: KubeObject, result: KubeObject): void {
  const annotations = result.metadata.annotations;
  if (manager !== upgradingManager || typeof annotations?.[lastAppliedAnnotation] !== "string" || annotations[lastAppliedAnnotation] === "") return;
  const configuration: Record<string, unknown> = { ...applied, metadata: { ...applied.metadata } };
  const metadata = configuration.metadata as Record<string, unknown>;
  if (isRecord(metadata.annotations)) {
    const { [lastAppliedAnnotation]: _dropped, ...rest } = metadata.annotations;
    metadata.annotations = rest;
  }
  result.metadata = { ...result.metadata, annotations: { ...annotations, [lastAppliedAnnotation]: `${goJson(configuration)}\n` } };
}

/**
 * JSON as Go's encoder writes a map by default: keys sorted, and `<`, `>`, `&`, U+2028 and U+2029 escaped (they occur
 * only in strings).
 */
function goJson(value: unknown): string {
  return canonicalJson(value).replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

