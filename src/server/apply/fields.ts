// Field sets, the currency of server-side apply: the set of fields an object (or an applied configuration) sets,
// as paths of elements in `fieldsV1` notation: `f:<field>`, `k:<json of the key fields>` (an element of an
// associative list), `v:<json value>` (an element of a set). A path is stored as the JSON text of its element list.
// Leaves are scalars, atomic lists and structs, and empty maps; an associative-list element is a member itself too.
import { cloneJson, isRecord, jsonEqual, setKey, type JsonObject as Json } from "../../api/json.ts";
import { anyNode, childOf } from "../schema.ts";
import type { ListNode, SchemaNode } from "../schema.ts";

/**
 * A set of fields, each named by the JSON text of its path: a `Set` of the texts, or a `FieldTree` (field-tree.ts)
 * that makes them only when asked.
 */
export interface FieldSet extends Iterable<string> {
  readonly size: number;
  has(path: string): boolean;
}

/** Fields no manager owns: identity and server-set metadata. */
export const unownedTop: ReadonlySet<string> = new Set(["apiVersion", "kind"]);
export const unownedMeta: ReadonlySet<string> = new Set(["name", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink", "managedFields"]);

export const pathDepthMax = 64;

/** The key of an associative-list element: its key fields that are present (or defaulted), in key order. */
export function elementKey(item: Json, list: ListNode): string {
  const names = keyNameTexts(list);
  if (names === undefined) {
    const key: Json = {};
    for (const k of list.keys ?? []) {
      const value = item[k] ?? list.keyDefaults?.[k];
      if (value !== undefined && value !== null) setKey(key, k, value);
    }
    return `k:${JSON.stringify(key)}`;
  }
  // What serializing that object writes, without making it: its members in key order.
  let text = "k:{";
  let first = true;
  for (let i = 0; i < names.length; i++) {
    const k = list.keys![i]!;
    const value = item[k] ?? list.keyDefaults?.[k];
    if (value === undefined || value === null) continue;
    text += `${first ? "" : ","}${names[i]}:${JSON.stringify(value)}`;
    first = false;
  }
  return `${text}}`;
}

const keyNames = new WeakMap<ListNode, readonly string[] | null>();

/**
 * The JSON texts of a list's key field names, or undefined when an object of them would not serialize its members in
 * key order (a name that is an array index comes first in any object).
 */
function keyNameTexts(list: ListNode): readonly string[] | undefined {
  let names = keyNames.get(list);
  if (names === undefined) {
    const keys = list.keys ?? [];
    names = keys.some((k) => /^(0|[1-9][0-9]*)$/.test(k)) ? null : keys.map((k) => JSON.stringify(k));
    keyNames.set(list, names);
  }
  return names ?? undefined;
}

/** Lists shorter than this are searched for an element; longer ones get a table of their elements (`ElementTables`). */
const listTableLengthMin = 16;

/**
 * Finds the element of a list that a `k:` or `v:` path element names, as a search from the front would (the first
 * one with that key or JSON), in O(1) after one pass over the list: one search per lookup made server-side apply
 * quadratic in a list's length (4,000 env entries took over a minute). Tables live as long as this object; a caller
 * that changes a list in place after looking into it calls `forget`.
 */
export class ElementTables {
  readonly #byKey = new WeakMap<readonly unknown[], { list: ListNode; table: Map<string, unknown> }>();
  readonly #byJson = new WeakMap<readonly unknown[], Map<string, unknown>>();
  /** Elements put into tables so far: what the tests count to see that each list is walked once. */
  indexed = 0;

  withKey(items: readonly unknown[], list: ListNode, element: string): unknown {
    if (items.length < listTableLengthMin) return items.find((item) => isRecord(item) && elementKey(item, list) === element);
    let known = this.#byKey.get(items);
    if (known === undefined || known.list !== list) {
      const table = new Map<string, unknown>();
      for (const item of items) {
        if (!isRecord(item)) continue;
        const key = elementKey(item, list);
        if (!table.has(key)) table.set(key, item);
      }
      this.indexed += items.length;
      known = { list, table };
      this.#byKey.set(items, known);
    }
    return known.table.get(element);
  }

  withJson(items: readonly unknown[], wanted: string): unknown {
    if (items.length < listTableLengthMin) return items.find((item) => JSON.stringify(item) === wanted);
    let table = this.#byJson.get(items);
    if (table === undefined) {
      table = new Map();
      for (const item of items) {
        const text = JSON.stringify(item);
        if (!table.has(text)) table.set(text, item);
      }
      this.indexed += items.length;
      this.#byJson.set(items, table);
    }
    return table.get(wanted);
  }

  forget(items: readonly unknown[]): void {
    this.#byKey.delete(items);
    this.#byJson.delete(items);
  }
}

/** Every field `object` sets, below the top-level fields `include` allows. */
export function fieldsOf(object: Json, schema: SchemaNode, include: (field: string) => boolean): Set<string> {
  const out = new Set<string>();
  const path = new PathText();
  for (const [key, value] of Object.entries(object)) {
    if (unownedTop.has(key) || !include(key) || value === null || value === undefined) continue;
    if (key === "metadata" && isRecord(value)) {
      path.push("f:metadata");
      for (const [mk, mv] of Object.entries(value)) {
        if (unownedMeta.has(mk) || mv === null || mv === undefined) continue;
        path.push(`f:${mk}`);
        walk(mv, childOf(childOf(schema, key), mk), path, 2, out);
        path.pop();
      }
      path.pop();
    } else {
      path.push(`f:${key}`);
      walk(value, childOf(schema, key), path, 1, out);
      path.pop();
    }
  }
  return out;
}

/**
 * The path a walk is at, as the JSON texts of its elements between their brackets and commas; `text()` is
 * `JSON.stringify` of the elements. The text is made by one `join`, which gives a flat string: texts built by
 * appending an element per level are ropes, and the sets they go into hash and compare them by flattening each,
 * which made a big apply's set operations several times slower than the walk that made them.
 */
/** The texts of `f:` path elements by field name, for the fields walks meet again and again; cleared when full. */
const fieldElementTexts = new Map<string, string>();
const fieldElementTextsMax = 4096;

/** The JSON text of the path element `f:<field>`, made once per field name (a list's elements repeat them). */
export function fieldElementText(field: string): string {
  let text = fieldElementTexts.get(field);
  if (text === undefined) {
    if (fieldElementTexts.size >= fieldElementTextsMax) fieldElementTexts.clear();
    text = JSON.stringify(`f:${field}`);
    fieldElementTexts.set(field, text);
  }
  return text;
}

export class PathText {
  readonly #parts: string[] = ["["];

  push(element: string): void {
    if (this.#parts.length > 1) this.#parts.push(",");
    this.#parts.push(JSON.stringify(element));
  }

  /** `push(\`f:${field}\`)`, with the element's text made once per field name (a list's elements repeat them). */
  pushField(field: string): void {
    this.pushText(fieldElementText(field));
  }

  /** `push` of the element whose JSON text is `text`. */
  pushText(text: string): void {
    if (this.#parts.length > 1) this.#parts.push(",");
    this.#parts.push(text);
  }

  pop(): void {
    this.#parts.pop();
    if (this.#parts.length > 1) this.#parts.pop();
  }

  text(): string {
    this.#parts.push("]");
    const text = this.#parts.join("");
    this.#parts.pop();
    return text;
  }

  /** The text of the path with `element` added, the path itself left as it is. */
  textWith(element: string): string {
    this.push(element);
    const text = this.text();
    this.pop();
    return text;
  }
}

function walk(value: unknown, schema: SchemaNode, path: PathText, depth: number, out: Set<string>): void {
  if (depth > pathDepthMax) return void out.add(path.text());
  if (Array.isArray(value)) {
    if (schema.t !== "list" || schema.listType === "atomic") return void out.add(path.text());
    if (schema.listType === "set") {
      for (const item of value) out.add(path.textWith(`v:${JSON.stringify(item)}`));
      return;
    }
    for (const item of value) {
      if (!isRecord(item)) continue;
      path.push(elementKey(item, schema));
      out.add(path.text());
      walkMap(item, schema.item, path, depth + 1, out);
      path.pop();
    }
    return;
  }
  if (!isRecord(value) || Object.keys(value).length === 0 || ((schema.t === "struct" || schema.t === "map") && schema.atomic === true)) {
    return void out.add(path.text());
  }
  walkMap(value, schema, path, depth, out);
}

function walkMap(value: Json, schema: SchemaNode, path: PathText, depth: number, out: Set<string>): void {
  for (const key of Object.keys(value)) {
    const child = value[key];
    if (child === null || child === undefined) continue;
    path.pushField(key);
    walk(child, childOf(schema, key), path, depth + 1, out);
    path.pop();
  }
}

/** The fields `after` sets (`fieldsOf`), and those of them whose value differs from `before`'s at the same path. */
export interface FieldChanges {
  now: Set<string>;
  changed: Set<string>;
  /** The tables the walk looked list elements up in. */
  tables: ElementTables;
}

/**
 * `fieldsOf(after)`, and the fields whose value there differs (as `jsonEqual`) from the value at the same path in
 * `before` (every field when `before` is undefined): what `valueAt` on both objects per field would say, in one walk
 * down both objects instead of one lookup from the root per field. Each step resolves a path element as `valueAt`
 * does (an associative-list element is the first one with its key, a set element the first with its JSON), so a
 * list holding a key twice answers as the lookups would.
 */
export function fieldChanges(before: Json | undefined, after: Json, schema: SchemaNode, include: (field: string) => boolean): FieldChanges {
  const out: FieldChanges = { now: new Set(), changed: new Set(), tables: new ElementTables() };
  const all = before === undefined;
  const path = new PathText();
  // Keys, not entries: a write walks every member of the object, and entries would make a pair for each.
  for (const key of Object.keys(after)) {
    const value = after[key];
    if (unownedTop.has(key) || !include(key) || value === null || value === undefined) continue;
    const b = stepField(before, key);
    if (key === "metadata" && isRecord(value)) {
      path.push("f:metadata");
      for (const mk of Object.keys(value)) {
        const mv = value[mk];
        if (unownedMeta.has(mk) || mv === null || mv === undefined) continue;
        const j: Joint = { after: stepField(value, mk), before: stepField(b, mk), all };
        path.push(`f:${mk}`);
        walkJoint(mv, childOf(childOf(schema, key), mk), path, 2, j, out);
        path.pop();
      }
      path.pop();
    } else {
      path.push(`f:${key}`);
      walkJoint(value, childOf(schema, key), path, 1, { after: value, before: b, all }, out);
      path.pop();
    }
  }
  return out;
}

/** The values `valueAt` finds at the walked path in the after and before objects, and whether every field counts. */
interface Joint {
  after: unknown;
  before: unknown;
  all: boolean;
}

function stepField(node: unknown, field: string): unknown {
  return isRecord(node) && Object.hasOwn(node, field) ? node[field] : undefined;
}

function leaf(text: string, j: Joint, out: FieldChanges): void {
  out.now.add(text);
  if (j.all || !jsonEqual(j.before, j.after)) out.changed.add(text);
}

function walkJoint(value: unknown, schema: SchemaNode, path: PathText, depth: number, j: Joint, out: FieldChanges): void {
  if (depth > pathDepthMax) return leaf(path.text(), j, out);
  if (Array.isArray(value)) {
    if (schema.t !== "list" || schema.listType === "atomic") return leaf(path.text(), j, out);
    if (schema.listType === "set") {
      for (const item of value) {
        const element = `v:${JSON.stringify(item)}`;
        const wanted = element.slice(2);
        const after = Array.isArray(j.after) ? out.tables.withJson(j.after, wanted) : undefined;
        const before = Array.isArray(j.before) ? out.tables.withJson(j.before, wanted) : undefined;
        leaf(path.textWith(element), { after, before, all: j.all }, out);
      }
      return;
    }
    for (const item of value) {
      if (!isRecord(item)) continue;
      const key = elementKey(item, schema);
      const after = Array.isArray(j.after) ? out.tables.withKey(j.after, schema, key) : undefined;
      const before = Array.isArray(j.before) ? out.tables.withKey(j.before, schema, key) : undefined;
      const inner: Joint = { after, before, all: j.all };
      path.push(key);
      leaf(path.text(), inner, out);
      walkMapJoint(item, schema.item, path, depth + 1, inner, out);
      path.pop();
    }
    return;
  }
  if (!isRecord(value) || Object.keys(value).length === 0 || ((schema.t === "struct" || schema.t === "map") && schema.atomic === true)) {
    return leaf(path.text(), j, out);
  }
  walkMapJoint(value, schema, path, depth, j, out);
}

function walkMapJoint(value: Json, schema: SchemaNode, path: PathText, depth: number, j: Joint, out: FieldChanges): void {
  for (const key of Object.keys(value)) {
    const child = value[key];
    if (child === null || child === undefined) continue;
    path.pushField(key);
    walkJoint(child, childOf(schema, key), path, depth + 1, { after: stepField(j.after, key), before: stepField(j.before, key), all: j.all }, out);
    path.pop();
  }
}

/**
 * The value at a path, or undefined when the object does not set it. Lists are looked into through `tables`: a
 * caller that looks up many paths passes one set of tables for all of them.
 */
export function valueAt(object: unknown, path: readonly string[], schema: SchemaNode, tables: ElementTables = new ElementTables()): unknown {
  let node: unknown = object;
  let s = schema;
  for (const element of path) {
    if (element.startsWith("f:")) {
      if (!isRecord(node)) return undefined;
      const field = element.slice(2);
      node = Object.hasOwn(node, field) ? node[field] : undefined;
      s = childOf(s, field);
    } else if (element.startsWith("k:")) {
      if (!Array.isArray(node) || s.t !== "list") return undefined;
      const list = s;
      node = tables.withKey(node, list, element);
      s = list.item;
    } else {
      if (!Array.isArray(node)) return undefined;
      return tables.withJson(node, element.slice(2));
    }
    if (node === undefined) return undefined;
  }
  return node;
}

/**
 * `valueAt` for many paths of one object, given as their texts: each path is resolved from where the previous one
 * parted from it, so that a set's paths in walk order (siblings after one another) cost the elements they add, not a
 * parse of their whole text and a lookup from the root each (which was most of a big apply's time).
 */
export class PathCursor {
  /** The last path's text, the offset just past each of its elements, and the value after each element. */
  #text = "[]";
  readonly #ends: number[] = [];
  readonly #values: unknown[];
  readonly #schemas: SchemaNode[];
  /** Set from the element (index) whose step ended the lookup (`v:`, or a value not there); -1 when none did. */
  #stoppedAt = -1;
  /** Path elements stepped through so far: what the tests count. */
  steps = 0;

  constructor(
    object: unknown,
    schema: SchemaNode,
    readonly tables: ElementTables,
  ) {
    this.#values = [object];
    this.#schemas = [schema];
  }

  /** `valueAt(object, JSON.parse(text), schema, tables)`. */
  valueAt(text: string): unknown {
    const previous = this.#text;
    const ends = this.#ends;
    // Elements shared with the previous path: those whose text (closing quote included) lies in the common prefix.
    const limit = Math.min(previous.length, text.length);
    let common = 0;
    while (common < limit && previous.charCodeAt(common) === text.charCodeAt(common)) common++;
    let kept = 0;
    while (kept < ends.length && ends[kept]! <= common) kept++;
    ends.length = kept;
    this.#values.length = kept + 1;
    this.#schemas.length = kept + 1;
    if (this.#stoppedAt >= kept) this.#stoppedAt = -1;
    this.#text = text;
    let at = kept === 0 ? 1 : ends[kept - 1]! + 1;
    while (at < text.length - 1) {
      const end = stringEnd(text, at);
      ends.push(end);
      if (this.#stoppedAt < 0) this.#step(elementOf(text, at, end));
      else {
        this.#values.push(this.#values[this.#values.length - 1]);
        this.#schemas.push(anyNode);
      }
      at = end + 1;
    }
    return this.#values[this.#values.length - 1];
  }

  /** One element of `valueAt`'s loop, from the last value. */
  #step(element: string): void {
    this.steps++;
    const index = this.#values.length - 1;
    const node = this.#values[index];
    const s = this.#schemas[index]!;
    let next: unknown;
    let nextSchema: SchemaNode = anyNode;
    if (element.startsWith("f:")) {
      if (isRecord(node)) {
        const field = element.slice(2);
        next = Object.hasOwn(node, field) ? node[field] : undefined;
        nextSchema = childOf(s, field);
      }
    } else if (element.startsWith("k:")) {
      if (Array.isArray(node) && s.t === "list") {
        next = this.tables.withKey(node, s, element);
        nextSchema = s.item;
      }
    } else {
      // A set's element ends the lookup, whatever follows it.
      next = Array.isArray(node) ? this.tables.withJson(node, element.slice(2)) : undefined;
      this.#stoppedAt = index;
    }
    if (next === undefined) this.#stoppedAt = index;
    this.#values.push(next);
    this.#schemas.push(nextSchema);
  }
}

/** The offset just past the JSON string that starts at `start` (its opening quote) in `text`. */
function stringEnd(text: string, start: number): number {
  let i = start + 1;
  for (;;) {
    const c = text.charCodeAt(i);
    if (c === 0x5c) i += 2;
    else if (c === 0x22) return i + 1;
    else if (Number.isNaN(c)) return text.length;
    else i++;
  }
}

/** The element whose JSON text is `text[start, end)`: read as it is when it holds no escape. */
function elementOf(text: string, start: number, end: number): string {
  const inner = text.slice(start + 1, end - 1);
  return inner.includes("\\") ? (JSON.parse(text.slice(start, end)) as string) : inner;
}

/**
 * Removes the fields at `paths` from `object`, in place (its containers are the caller's own), as removing each in
 * turn would: a field leaves its map, an element the list (the first with its key or JSON). Elements leave their
 * lists after every lookup, one pass per list, so that n removals from one list cost O(n), not O(n) each.
 */
export function removeAll(object: Json, paths: ReadonlyArray<readonly string[]>, schema: SchemaNode, tables: ElementTables): void {
  const fromLists = new Map<unknown[], Set<unknown>>();
  for (const path of paths) {
    const parentPath = path.slice(0, -1);
    const last = path[path.length - 1]!;
    const parent = parentPath.length === 0 ? object : valueAt(object, parentPath, schema, tables);
    if (last.startsWith("f:")) {
      if (isRecord(parent)) delete parent[last.slice(2)];
      continue;
    }
    if (!Array.isArray(parent)) continue;
    const listSchema = parentPath.reduce<SchemaNode>((s, e) => (e.startsWith("f:") ? childOf(s, e.slice(2)) : s.t === "list" ? s.item : s), schema);
    let item: unknown;
    if (last.startsWith("k:")) item = listSchema.t === "list" ? tables.withKey(parent, listSchema, last) : undefined;
    else item = tables.withJson(parent, last.slice(2));
    if (item === undefined) continue;
    let leaving = fromLists.get(parent);
    if (leaving === undefined) fromLists.set(parent, (leaving = new Set()));
    leaving.add(item);
  }
  for (const [list, leaving] of fromLists) {
    let kept = 0;
    for (const item of list) if (!leaving.has(item)) list[kept++] = item;
    list.length = kept;
    tables.forget(list);
  }
}

/**
 * How much of a big body's walk runs between two pauses: a walk in steps (`mergeAppliedSteps`, `fieldTreeSteps`)
 * counts the members and elements it meets in the maps and lists near the top, and pauses when `unitsPerStep` are met.
 */
export interface StepBudget {
  left: number;
  readonly unitsPerStep: number;
}

/** Members and elements a walk in steps meets between two pauses: a few milliseconds of work. */
export const walkUnitsPerStep = 4000;
/** Depth to which a walk in steps looks for maps and lists to take a part at a time; deeper ones are taken whole. */
export const walkStepDepthMax = 8;

export function stepBudget(unitsPerStep = walkUnitsPerStep): StepBudget {
  return { left: unitsPerStep, unitsPerStep };
}

/** True when the budget is spent (and renewed): the walk pauses. */
export function spent(budget: StepBudget): boolean {
  if (--budget.left > 0) return false;
  budget.left = budget.unitsPerStep;
  return true;
}

/**
 * Merges an applied configuration into the live object: maps and structs field by field, associative lists
 * element by element on their keys, sets by union; atomic values are replaced. Returns new containers throughout:
 * what it keeps of `live` (which may be a frozen stored object) is copied, so the result is the caller's own to
 * change and to hand to the store; containers of `applied` it keeps are taken as they are. `mergeAppliedSteps`
 * driven to its end, without pausing.
 */
export function mergeApplied(live: unknown, applied: unknown, schema: SchemaNode): unknown {
  const steps = mergeAppliedSteps(live, applied, schema, stepBudget());
  for (;;) {
    const step = steps.next();
    if (step.done === true) return step.value;
  }
}

/**
 * `mergeApplied` in steps: a pause (`yield`) after every `budget.unitsPerStep` members and elements met in the maps
 * and lists of the top `walkStepDepthMax` levels (`depth` is the level of `live` and `applied`), so that a body with
 * a big map or list anywhere near the top is merged a part at a time; deeper levels count nothing and never pause.
 */
export function* mergeAppliedSteps(live: unknown, applied: unknown, schema: SchemaNode, budget: StepBudget, depth = 0): Generator<void, unknown, void> {
  if (applied === null || applied === undefined) return cloneJson(live);
  if (Array.isArray(applied)) {
    if (schema.t !== "list" || schema.listType === "atomic" || !Array.isArray(live)) return applied;
    if (schema.listType === "set") return mergeSet(live, applied);
    return yield* mergeListSteps(live, applied, schema, budget, depth);
  }
  if (!isRecord(applied)) return applied;
  if ((schema.t === "struct" || schema.t === "map") && schema.atomic === true) return applied;
  const pausing = depth < walkStepDepthMax;
  const out: Json = {};
  if (isRecord(live)) {
    // Live members in their order (as a spread keeps them); those the configuration sets are merged below.
    for (const key of Object.keys(live)) {
      const value = applied[key];
      setKey(out, key, value === null || value === undefined ? cloneJson(live[key]) : live[key]);
    }
  }
  for (const key of Object.keys(applied)) {
    if (pausing && spent(budget)) yield;
    const value = applied[key];
    if (value === null || value === undefined) continue;
    // A scalar replaces what was there: no walk of its own (nor a generator).
    setKey(out, key, typeof value === "object" ? yield* mergeAppliedSteps(out[key], value, childOf(schema, key), budget, depth + 1) : value);
  }
  return out;
}

/** The merge of an associative list (`listType: map`) at `depth`: element by element on their keys. */
function* mergeListSteps(live: readonly unknown[], applied: readonly unknown[], schema: ListNode, budget: StepBudget, depth: number): Generator<void, unknown[], void> {
  const pausing = depth < walkStepDepthMax;
  const out: unknown[] = [...live];
  // Each key's first index in `out` (as a search from the front finds it), kept as elements are added.
  const indexOf = new Map<string, number>();
  for (let i = out.length - 1; i >= 0; i--) {
    const l = out[i];
    if (isRecord(l)) indexOf.set(elementKey(l, schema), i);
  }
  const merged = new Set<number>();
  for (const item of applied) {
    if (pausing && spent(budget)) yield;
    if (!isRecord(item)) continue;
    const key = elementKey(item, schema);
    const index = indexOf.get(key);
    if (index === undefined) {
      indexOf.set(key, out.length);
      merged.add(out.length);
      out.push(yield* mergeAppliedSteps(undefined, item, schema.item, budget, depth + 1));
    } else {
      merged.add(index);
      out[index] = yield* mergeAppliedSteps(out[index], item, schema.item, budget, depth + 1);
    }
  }
  for (let i = 0; i < live.length; i++) if (!merged.has(i)) out[i] = cloneJson(out[i]);
  return out;
}

/**
 * A set's union: the live items (copied), then the applied ones no live item equals (as `jsonEqual`). Scalars are
 * found in a set of them; a container item is compared with the live containers only.
 */
function mergeSet(live: readonly unknown[], applied: readonly unknown[]): unknown[] {
  const scalars = new Set<unknown>();
  const containers: unknown[] = [];
  for (const l of live) {
    if (l !== null && typeof l === "object") containers.push(l);
    else scalars.add(l);
  }
  const added = applied.filter((item) => (item !== null && typeof item === "object" ? !containers.some((l) => jsonEqual(l, item)) : !scalars.has(item)));
  return [...live.map((l) => cloneJson(l)), ...added];
}

/** `.spec.template.spec.containers[name="web"].image`, as kube-apiserver names a field in a conflict. */
export function describePath(path: readonly string[]): string {
  let text = "";
  for (const element of path) {
    if (element.startsWith("f:")) text += `.${element.slice(2)}`;
    else if (element.startsWith("v:")) text += `[${element.slice(2)}]`;
    else {
      const key = JSON.parse(element.slice(2)) as Json;
      text += `[${Object.entries(key).map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(",")}]`;
    }
  }
  return text;
}

/** A field set as the `fieldsV1` tree of `managedFields`. */
export function toFieldsV1(fields: FieldSet): Json {
  const root: Json = {};
  for (const text of [...fields].sort()) {
    const path = JSON.parse(text) as string[];
    let node = root;
    for (const element of path) {
      if (!isRecord(node[element])) setKey(node, element, {});
      node = node[element] as Json;
    }
    if (Object.keys(node).length > 0 || path[path.length - 1]!.startsWith("k:")) setKey(node, ".", {});
  }
  return root;
}

/**
 * `JSON.stringify(toFieldsV1(fields))`, written as the sorted paths are read instead of building the tree: in sorted
 * order the paths below a node follow one another and end with the node's own (`,` sorts before `]`), so a node is
 * complete when a path outside it comes, and its `.` member (it is a field itself) comes after its children, where
 * `toFieldsV1` adds it. Building, then serializing, the tree of a big set was most of an apply's time. Path elements
 * are `f:`, `k:` or `v:` ones, as every field set holds: none is a bare `.`.
 */
export function fieldsV1Text(fields: FieldSet): string {
  let text = "{";
  // The elements of the nodes open now, and whether each has written a member yet (the root is `members[0]`).
  const open: string[] = [];
  const members: boolean[] = [false];
  const member = (name: string, value: string) => {
    text += `${members[members.length - 1] ? "," : ""}${JSON.stringify(name)}:${value}`;
    members[members.length - 1] = true;
  };
  for (const pathText of [...fields].sort()) {
    const path = JSON.parse(pathText) as string[];
    let shared = 0;
    while (shared < open.length && shared < path.length && open[shared] === path[shared]) shared++;
    for (; open.length > shared; open.pop(), members.pop()) text += "}";
    if (shared === path.length) {
      // The node is open: its children came first.
      member(".", "{}");
      continue;
    }
    for (let i = shared; i < path.length; i++) {
      member(path[i]!, "{");
      open.push(path[i]!);
      members.push(false);
    }
    if (path[path.length - 1]!.startsWith("k:")) member(".", "{}");
  }
  for (; open.length > 0; open.pop()) text += "}";
  return `${text}}`;
}

/**
 * A `fieldsV1` tree as a field set, the inverse of `toFieldsV1`: a node without children is a field, and so is a
 * node with children that holds the `.` member (a list element owned for itself). Undefined when the tree is not
 * one (a node that is not an object).
 */
export function fromFieldsV1(tree: unknown): Set<string> | undefined {
  const fields = new Set<string>();
  const walkTree = (node: unknown, path: string[]): boolean => {
    if (!isRecord(node)) return false;
    for (const [key, child] of Object.entries(node)) {
      if (key === ".") continue;
      if (!isRecord(child)) return false;
      const at = [...path, key];
      if (Object.keys(child).length === 0 || Object.hasOwn(child, ".")) fields.add(JSON.stringify(at));
      if (!walkTree(child, at)) return false;
    }
    return true;
  };
  return walkTree(tree, []) ? fields : undefined;
}

/** True when `path` is `prefix` or lies below it. */
export function isWithin(path: string, prefix: string): boolean {
  return path === prefix || (path.startsWith(prefix.slice(0, -1)) && path.charAt(prefix.length - 1) === ",");
}
