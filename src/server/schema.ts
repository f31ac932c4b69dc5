// The shape of the built-in kinds as far as merging needs it: which lists are associative (and by which keys),
// which are sets, which are atomic, and which structs and maps are atomic. Strategic merge patch reads the
// `patchMergeKey` / `patchStrategy` side (`mergeKey`, `strategy`); server-side apply reads the `listType` /
// `listMapKeys` side (`keys`, `listType`). Both come from the markers of the generated wire table
// (src/api/generated/k8s-api.ts); a kind the table does not hold (a custom resource) is `any` below `metadata`:
// maps merge key by key, lists are atomic.
import type { ResourceType } from "../api/resources.ts";
import { wireAtomicStructs, wireKinds } from "../api/generated/k8s-api.ts";
import type { WireField } from "../api/wire-types.ts";
import { isScalar, messageOfKind, wireFields } from "./encoding/wire.ts";

const atomicStructs = new Set(wireAtomicStructs);

export type SchemaNode =
  | { t: "any" }
  | { t: "struct"; fields: Readonly<Record<string, SchemaNode>>; atomic?: boolean; /** `+patchStrategy=replace` on the field: a strategic merge patch replaces it whole. */ replace?: boolean }
  | { t: "map"; value: SchemaNode; atomic?: boolean }
  | ListNode;

export interface ListNode {
  t: "list";
  item: SchemaNode;
  /** Strategic merge: the `patchMergeKey` (object lists), absent for primitive or atomic lists. */
  mergeKey?: string;
  /** Strategic merge: `merge` merges by key (objects) or takes the union (primitives); `replace` replaces. */
  strategy: "merge" | "replace";
  /** Server-side apply: `map` (associative, by `keys`), `set` (primitives, by value) or `atomic`. */
  listType: "map" | "set" | "atomic";
  keys?: readonly string[];
  /**
   * Key fields with a `+default` (a Service port's `protocol`: TCP): an element that leaves one out is keyed as if it
   * held the default, as structured-merge-diff matches elements, so `{port: 80}` applied meets the stored TCP 80.
   */
  keyDefaults?: Readonly<Record<string, unknown>>;
}

export const anyNode: SchemaNode = { t: "any" };

/** Message types whose JSON form is a scalar (a string or a number) or free JSON: leaves for merging. */
const leafMessages = new Set([
  "meta/v1.Time",
  "meta/v1.MicroTime",
  "meta/v1.Duration",
  "resource.Quantity",
  "resource.QuantityValue",
  "intstr.IntOrString",
  "runtime.RawExtension",
  "meta/v1.FieldsV1",
]);

const messageNodes = new Map<string, SchemaNode>();

function typeNode(type: string): SchemaNode {
  if (isScalar(type) || leafMessages.has(type)) return anyNode;
  return messageNode(type);
}

/** The struct node of a message, built once; a message met again while it is being built is `any` (no cycles). */
function messageNode(message: string): SchemaNode {
  const cached = messageNodes.get(message);
  if (cached !== undefined) return cached;
  messageNodes.set(message, anyNode);
  const fields: Record<string, SchemaNode> = {};
  for (const field of wireFields(message)) {
    const node = fieldNode(field);
    // A Go-inlined struct's fields are the parent's in JSON.
    if (field.inline === true && node.t === "struct") Object.assign(fields, node.fields);
    else fields[field.name] = node;
  }
  const node: SchemaNode = atomicStructs.has(message) ? { t: "struct", fields, atomic: true } : { t: "struct", fields };
  messageNodes.set(message, node);
  return node;
}

function fieldNode(field: WireField): SchemaNode {
  if (field.map !== undefined) {
    const value = typeNode(field.type);
    return field.mapType === "atomic" ? { t: "map", value, atomic: true } : { t: "map", value };
  }
  if (field.repeated !== true) {
    const node = typeNode(field.type);
    if (node.t !== "struct") return node;
    // `+structType=atomic` on the field itself (rather than on its type) makes this one use atomic.
    const atomic = field.structType === "atomic" ? { atomic: true } : {};
    const replace = (field.patchStrategy ?? "").split(",").includes("replace") ? { replace: true } : {};
    return field.structType === "atomic" || replace.replace === true ? { ...node, ...atomic, ...replace } : node;
  }
  const strategy = (field.patchStrategy ?? "").split(",").includes("merge") ? "merge" : "replace";
  // A list without `+listType` is atomic for server-side apply, whatever strategic merge does with it.
  const listType = field.listType === "map" || field.listType === "set" ? field.listType : "atomic";
  const list: ListNode = { t: "list", item: typeNode(field.type), strategy, listType };
  if (field.patchMergeKey !== undefined) list.mergeKey = field.patchMergeKey;
  if (listType === "map") {
    list.keys = field.listMapKeys ?? (field.patchMergeKey === undefined ? [] : [field.patchMergeKey]);
    const defaults = keyDefaultsOf(field.type, list.keys);
    if (defaults !== undefined) list.keyDefaults = defaults;
  }
  return list;
}

/** The `+default` values of an item message's key fields (JSON markers only), or undefined when none has one. */
function keyDefaultsOf(message: string, keys: readonly string[]): Record<string, unknown> | undefined {
  if (isScalar(message)) return undefined;
  let defaults: Record<string, unknown> | undefined;
  for (const field of wireFields(message)) {
    if (!keys.includes(field.name) || field.default === undefined) continue;
    try {
      (defaults ??= {})[field.name] = JSON.parse(field.default);
    } catch {
      // A `ref(...)` default names a Go constant: none of the list keys uses one.
    }
  }
  return defaults;
}

export const objectMeta = messageNode("meta/v1.ObjectMeta");

const cache = new Map<string, SchemaNode>();

/**
 * Built-in kinds outside the wire definitions (apiextensions lives in another repository): the CRD's status
 * conditions merge by `type`, as its Go type's markers say.
 */
const notInTable: Readonly<Record<string, SchemaNode>> = {
  "apiextensions.k8s.io/CustomResourceDefinition": {
    t: "struct",
    fields: {
      metadata: objectMeta,
      status: { t: "struct", fields: { conditions: { t: "list", item: anyNode, mergeKey: "type", strategy: "merge", listType: "map", keys: ["type"] } } },
    },
  },
};

/** The schema of a kind: from the wire table for built-ins, or `any` below `metadata` for other kinds. */
export function schemaOf(resource: Pick<ResourceType, "group" | "kind"> & { version?: string }): SchemaNode {
  const id = `${resource.group}/${resource.version ?? ""}/${resource.kind}`;
  let node = cache.get(id);
  if (node === undefined) {
    const message = builtinMessage(resource);
    node = message === undefined ? (notInTable[`${resource.group}/${resource.kind}`] ?? { t: "struct", fields: { metadata: objectMeta } }) : messageNode(message);
    cache.set(id, node);
  }
  return node;
}

/** The message of a built-in kind: of the version asked for, or of the kind's only stable version. */
function builtinMessage(resource: Pick<ResourceType, "group" | "kind"> & { version?: string }): string | undefined {
  if (resource.version !== undefined) return messageOfKind(resource.group, resource.version, resource.kind);
  const matches = wireKinds.filter((k) => k.group === resource.group && k.kind === resource.kind);
  return matches.at(-1)?.message;
}

/** The schema of `field` below `node` (`any` when unknown). */
export function childOf(node: SchemaNode, field: string): SchemaNode {
  if (node.t === "struct") return node.fields[field] ?? anyNode;
  if (node.t === "map") return node.value;
  return anyNode;
}
