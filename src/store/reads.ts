// Read-side helpers: selectors compiled against a kind's field labels, continue tokens, revision checks.
import { ApiError, badRequest, expired } from "../api/errors.ts";
import type { KubeObject } from "../api/object.ts";
import type { ResourceType } from "../api/resources.ts";
import { matchesFields, matchesLabels, parseFieldSelector, parseLabelSelector } from "../api/selectors.ts";
import type { KindState } from "./registry.ts";
import { objectAt } from "./version.ts";

export interface CompiledSelector {
  /** undefined when the selectors select everything. */
  matches: ((object: KubeObject) => boolean) | undefined;
  /** The value of a `metadata.name=` requirement: lets a watch be indexed by name. */
  name: string | undefined;
  /**
   * Requirements of the form "this label (`l:key`) or field (`f:field`) equals one value", which any matching
   * object meets: a list may start from the objects an index holds for one of them instead of every object.
   */
  equalities: ReadonlyArray<{ index: string; value: string }>;
}

/** Every selectable field of one object: `metadata.name`, `metadata.namespace` and the kind's field labels. */
export function fieldValues(object: KubeObject, resource: ResourceType): Record<string, string> {
  const fields = resource.fieldsOf?.(object) ?? {};
  fields["metadata.name"] = object.metadata.name ?? "";
  fields["metadata.namespace"] = object.metadata.namespace ?? "";
  return fields;
}

/**
 * Compiled selectors per resource and selector text: controllers and properties list with the same few, and every
 * node-local actor with one of its own (a kubelet's `spec.nodeName=<node>`, a daemon's `metadata.name=<node>`). The
 * bound is above the largest fleet a run simulates, so a fleet's selectors stay compiled instead of being cleared and
 * compiled again round after round; a run that makes up more texts than that starts the cache over.
 */
const compiled = new WeakMap<ResourceType, Map<string, CompiledSelector>>();
const compiledPerResourceMax = 16_384;

/** Parses both selectors (400 on bad syntax or an unsupported field label) into one predicate, once per text. */
export function compileSelectors(resource: ResourceType, labelSelector?: string, fieldSelector?: string): CompiledSelector {
  if (labelSelector === undefined && fieldSelector === undefined) return compileUncached(resource, undefined, undefined);
  let byText = compiled.get(resource);
  if (byText === undefined) compiled.set(resource, (byText = new Map()));
  const key = `${labelSelector ?? ""}\u0000${fieldSelector ?? ""}`;
  let selector = byText.get(key);
  if (selector === undefined) {
    selector = compileUncached(resource, labelSelector, fieldSelector);
    if (byText.size >= compiledPerResourceMax) byText.clear();
    byText.set(key, selector);
  }
  return selector;
}

function compileUncached(resource: ResourceType, labelSelector?: string, fieldSelector?: string): CompiledSelector {
  const labels = labelSelector !== undefined && labelSelector.trim() !== "" ? parseLabelSelector(labelSelector) : undefined;
  const fields = fieldSelector !== undefined && fieldSelector.trim() !== "" ? parseFieldSelector(fieldSelector) : undefined;
  for (const requirement of fields ?? []) {
    const field = requirement.field;
    if (field !== "metadata.name" && field !== "metadata.namespace" && !resource.fieldLabels.includes(field)) {
      throw badRequest(`field label not supported: ${field}`);
    }
  }
  const name = fields?.find((r) => r.field === "metadata.name" && r.operator === "=")?.value;
  const useLabels = labels !== undefined && labels.requirements.length > 0 ? labels : undefined;
  const useFields = fields !== undefined && fields.length > 0 ? fields : undefined;
  if (useLabels === undefined && useFields === undefined) return { matches: undefined, name, equalities: [] };
  const equalities: Array<{ index: string; value: string }> = [];
  for (const r of useLabels?.requirements ?? []) {
    if ((r.operator === "Equals" || r.operator === "In") && r.values.length === 1) equalities.push({ index: `l:${r.key}`, value: r.values[0]! });
  }
  for (const r of useFields ?? []) if (r.operator === "=" && r.field !== "metadata.namespace") equalities.push({ index: `f:${r.field}`, value: r.value });
  const matches = (object: KubeObject): boolean => {
    if (useLabels !== undefined && !matchesLabels(useLabels, object.metadata.labels)) return false;
    return useFields === undefined || matchesFields(useFields, fieldValues(object, resource));
  };
  return { matches, name, equalities };
}

/** How an equality index reads an object: its label or its field value, by the index name `compileSelectors` gives. */
export function indexValue(index: string, resource: ResourceType): (object: KubeObject) => string | undefined {
  const key = index.slice(2);
  if (index.startsWith("l:")) return (object) => object.metadata.labels?.[key];
  // A field the object does not have compares as the empty string (see `matchesFields`).
  return (object) => fieldValues(object, resource)[key] ?? "";
}

interface ContinueToken {
  rv: number;
  start: string;
}

export function encodeContinue(rv: number, start: string): string {
  return Buffer.from(JSON.stringify({ v: "meta.k8s.io/v1", rv, start }), "utf8").toString("base64url");
}

export function decodeContinue(token: string): ContinueToken {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(token, "base64url").toString("utf8"));
  } catch {
    throw badRequest(`continue key is not valid: illegal base64 data or JSON in ${JSON.stringify(token)}`);
  }
  const record = parsed as Record<string, unknown> | null;
  if (record === null || typeof record !== "object" || typeof record.rv !== "number" || typeof record.start !== "string" || record.v !== "meta.k8s.io/v1") {
    throw badRequest("continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)");
  }
  return { rv: record.rv, start: record.start };
}

export const continueExpiredMessage =
  "The provided continue parameter is too old to display a consistent list result. You can start a new list " +
  "without the continue parameter, or use the continue token in this response to retrieve the remainder of the " +
  "results. Continuing with the provided token results in an inconsistent list - objects that were created, " +
  "modified, or deleted between the time the first chunk was returned and now may show up in the list.";

/** A read at `revision` must be neither compacted away (410) nor in the future (504, as the API server times out). */
export function checkReadRevision(revision: number, compacted: number, current: number): void {
  if (!Number.isInteger(revision) || revision < 0) throw badRequest(`invalid resource version: ${String(revision)}`);
  if (revision < compacted) throw expired(`too old resource version: ${revision} (${compacted})`);
  if (revision > current) {
    throw new ApiError("Timeout", 504, `Too large resource version: ${revision}, current: ${current}`, {
      causes: [{ reason: "ResourceVersionTooLarge", message: "Too large resource version" }],
      retryAfterSeconds: 1,
    });
  }
}

/** Objects that exist at `revision` under the keys from `start` on (those that begin with `prefix`). */
export function countLive(state: KindState, keys: readonly string[], start: number, prefix: string, revision: number): number {
  let count = 0;
  for (let i = start; i < keys.length; i++) {
    const key = keys[i]!;
    if (prefix !== "" && !key.startsWith(prefix)) break;
    if (objectAt(state.objects.get(key), revision) !== undefined) count++;
  }
  return count;
}
