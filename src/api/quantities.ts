// Canonical quantities in built-in objects: every `resource.Quantity` field of a kind of the wire table (container
// requests and limits, node capacity, PVC storage, ResourceQuota hard/used, LimitRange, emptyDir sizeLimit, HPA
// targets...) rewritten to the string kube-apiserver stores, as its decoder does on every write. A controller that
// writes `0.5` and reads back `500m` then sees the perpetual diff it would see on a real cluster.
//
// The walk follows the wire definitions (src/api/generated/k8s-api.ts) and visits only fields from which a Quantity
// is reachable, so a write of a kind without quantities (a ConfigMap, a Lease) costs one map lookup. The lookups of
// src/server/encoding/wire.ts are repeated here in a few lines because the store, which runs this, may not import the server.
import { wireKinds, wireMessages } from "./generated/k8s-api.ts";
import type { WireField } from "./wire-types.ts";
import { assert } from "./assert.ts";
import { canonicalQuantity, quantityErrorMessages } from "./quantity.ts";
import { isRecord, type JsonObject } from "./json.ts";

/** The message id of Quantity in the wire table. */
const quantityMessage = "resource.Quantity";

/** A value in a Quantity field that is not a quantity: where it is, what it was, and the real parser's message. */
export interface QuantityProblem {
  /** The field path, Kubernetes style: `spec.containers[0].resources.limits[cpu]`. */
  path: string;
  value: unknown;
  message: string;
}

/** How a field holds what it holds. */
type Shape = "single" | "map" | "list";

interface PlannedField {
  name: string;
  shape: Shape;
  inline: boolean;
  /** The plan of the nested message to walk, or undefined when the field itself holds quantities. */
  nested: Plan | undefined;
}

/** What to walk in one message: the fields that hold quantities or lead to them (linked, so a walk looks up nothing). */
interface Plan {
  fields: PlannedField[];
}

function shapeOf(field: WireField): Shape {
  if (field.map !== undefined) return "map";
  return field.repeated === true ? "list" : "single";
}

/** The plan of each message from which a Quantity is reachable; other messages have none. */
let plans: Map<string, Plan> | undefined;

/**
 * Finds, once, the messages from which a Quantity is reachable: a fixed point over the table (a message nesting
 * itself through others is settled correctly, which a single depth-first pass with a cache would not do).
 */
function buildPlans(): Map<string, Plan> {
  const reaches = new Set<string>();
  let grew = true;
  while (grew) {
    grew = false;
    for (const [message, fields] of Object.entries(wireMessages)) {
      if (reaches.has(message)) continue;
      if (fields.some((f) => f.type === quantityMessage || reaches.has(f.type))) {
        reaches.add(message);
        grew = true;
      }
    }
  }
  const built = new Map<string, Plan>();
  for (const message of reaches) built.set(message, { fields: [] });
  for (const [message, plan] of built) {
    for (const field of wireMessages[message]!) {
      const nested = built.get(field.type);
      if (field.type !== quantityMessage && nested === undefined) continue;
      plan.fields.push({ name: field.name, shape: shapeOf(field), inline: field.inline === true, nested });
    }
  }
  return built;
}

function planOf(message: string): Plan | undefined {
  plans ??= buildPlans();
  return plans.get(message);
}

const kindMessages = new Map(wireKinds.map((k) => [`${k.group}/${k.version}/${k.kind}`, k.message]));

/**
 * The wire message of a built-in kind when some Quantity field is reachable from it, else undefined: the store asks
 * once per write and skips the walk for every other kind (and for custom resources, which keep strings as sent).
 */
export function quantityMessageOf(group: string, version: string, kind: string): string | undefined {
  const message = kindMessages.get(`${group}/${version}/${kind}`);
  return message !== undefined && planOf(message) !== undefined ? message : undefined;
}

/** Nesting beyond this is not walked; the wire table's messages nest far less deeply. */
const walkDepthMax = 64;

/**
 * A walk's state: the path so far as raw segments (a field name, a map key or a list index, each after its kind),
 * formatted only when a problem is found so that a clean walk allocates nothing for it; and the problems.
 */
interface Walk {
  path: Array<string | number>;
  /** The path's length: entries past it are stale (cutting an array's length costs a runtime call per field). */
  top: number;
  problems: QuantityProblem[];
}

const fieldSegment = 0;
const keySegment = 1;

function enter(walk: Walk, kind: number, segment: string | number): void {
  walk.path[walk.top] = kind;
  walk.path[walk.top + 1] = segment;
  walk.top += 2;
}

function formatPath(path: ReadonlyArray<string | number>, top: number): string {
  let text = "";
  for (let i = 0; i < top; i += 2) {
    const segment = path[i + 1]!;
    if (path[i] === fieldSegment) text += text === "" ? segment : `.${segment}`;
    else text += `[${segment}]`;
  }
  return text;
}

/**
 * Rewrites every Quantity field of `object`, a message of type `message` (see `quantityMessageOf`), to its
 * canonical string in place, and returns the values that are not quantities (left as they were). Frozen parts are
 * the store's own stored data, canonical since their own write, and are not entered.
 */
export function canonicalizeQuantities(object: Record<string, unknown>, message: string): QuantityProblem[] {
  const plan = planOf(message);
  if (plan === undefined) return [];
  const walk: Walk = { path: [], top: 0, problems: [] };
  walkMessage(object, plan, walk, 0);
  assert(walk.top === 0, "canonicalizeQuantities: the walk's path is back at its root");
  return walk.problems;
}

function walkMessage(value: JsonObject, plan: Plan, walk: Walk, depth: number): void {
  if (depth > walkDepthMax || Object.isFrozen(value)) return;
  for (const field of plan.fields) {
    if (field.inline) {
      if (field.nested !== undefined) walkMessage(value, field.nested, walk, depth + 1);
      continue;
    }
    const nested = value[field.name];
    if (nested === undefined || nested === null) continue;
    enter(walk, fieldSegment, field.name);
    if (field.shape === "map") walkMap(nested, field.nested, walk, depth);
    else if (field.shape === "list") walkList(nested, field.nested, walk, depth);
    else visit(value, field.name, field.nested, walk, depth);
    walk.top -= 2;
  }
}

function walkMap(map: unknown, nested: Plan | undefined, walk: Walk, depth: number): void {
  if (!isRecord(map) || Object.isFrozen(map)) return;
  for (const key in map) {
    enter(walk, keySegment, key);
    // Go decodes a null map value into a zero Quantity, which it writes back as "0".
    if (nested === undefined && map[key] === null) map[key] = "0";
    else visit(map, key, nested, walk, depth);
    walk.top -= 2;
  }
}

function walkList(list: unknown, nested: Plan | undefined, walk: Walk, depth: number): void {
  if (!Array.isArray(list) || Object.isFrozen(list)) return;
  for (let i = 0; i < list.length; i++) {
    enter(walk, keySegment, i);
    visit(list as unknown as JsonObject, i as unknown as string, nested, walk, depth);
    walk.top -= 2;
  }
}

/** One value held under `key` of `holder`: a quantity to rewrite, or a message to walk into. */
function visit(holder: JsonObject, key: string, nested: Plan | undefined, walk: Walk, depth: number): void {
  const value = holder[key];
  if (nested !== undefined) {
    if (isRecord(value)) walkMessage(value, nested, walk, depth + 1);
    return;
  }
  if (value === null || value === undefined) return;
  const canonical = canonicalQuantity(value);
  if (!canonical.ok) {
    walk.problems.push({ path: formatPath(walk.path, walk.top), value, message: quantityErrorMessages[canonical.error] });
    return;
  }
  if (canonical.value !== value) holder[key] = canonical.value;
}
