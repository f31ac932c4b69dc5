// A field set as a tree of path elements (`FieldTree`), the form an apply's own fields take: a field costs an
// element in a flat array, not the JSON text of its whole path. A long list's walk made ~95k path texts of ~100
// characters each and put them in a set; sorting and parsing them again for `fieldsV1` was another block as long.
// The tree gives what the set of texts gives (`fieldsOf`'s texts, in the same order), made only when something asks
// for a text; `fieldsV1` is written from it sorted node by node, an unchanged apply is recognized by comparing two
// trees, and the fields a live object no longer has are found by walking the tree down the object.
import { assert } from "../../api/assert.ts";
import { isRecord, setKey, type JsonObject as Json } from "../../api/json.ts";
import { elementKey, ElementTables, fieldElementText, fieldsOf, PathText, pathDepthMax, spent, stepBudget, unownedMeta, unownedTop, walkStepDepthMax } from "./fields.ts";
import type { FieldSet, StepBudget } from "./fields.ts";
import { childOf } from "../schema.ts";
import type { ListNode, SchemaNode } from "../schema.ts";

/**
 * A field set held as a tree, flat: its nodes in walk order (a node, then the nodes below it), each with the JSON text
 * of its path element (what a path's text and `fieldsV1` are written with, and sorted by), whether its path is a field
 * itself, and the index just past the nodes below it. Arrays rather than an object per node (a deeply nested
 * object's tree of objects weighed several times what its path texts did), and typed ones where they can be. `size`, `has` and iteration answer as the
 * `Set` of path texts `fieldsOf` makes (the same texts, in the same order), made on the first `has` or iteration.
 */
export class FieldTree implements FieldSet {
  #texts: Set<string> | undefined;

  constructor(
    readonly elements: readonly string[],
    /** 1 where a node's path is a field itself. */
    readonly owns: Uint8Array,
    readonly ends: Int32Array,
    readonly size: number,
  ) {
    assert(elements.length <= owns.length && elements.length <= ends.length, "FieldTree: one element, mark and end per node");
    assert(Number.isSafeInteger(size) && size >= 0 && size <= elements.length, "FieldTree: size counts owned nodes");
  }

  has(path: string): boolean {
    return this.#paths().has(path);
  }

  [Symbol.iterator](): Iterator<string> {
    return this.#paths()[Symbol.iterator]();
  }

  /** True when node `i` has nothing below it. */
  isLeaf(i: number): boolean {
    return this.ends[i] === i + 1;
  }

  #paths(): Set<string> {
    if (this.#texts === undefined) {
      this.#texts = new Set();
      addTexts(this, 0, this.elements.length, new PathText(), this.#texts);
      assert(this.#texts.size === this.size, "FieldTree: one text per field");
    }
    return this.#texts;
  }
}

/** Adds the texts of the fields at nodes `from` to `to` (siblings and what lies below them) under `path`. */
function addTexts(tree: FieldTree, from: number, to: number, path: PathText, out: Set<string>): void {
  for (let i = from; i < to; i = tree.ends[i]!) {
    path.pushText(tree.elements[i]!);
    if (tree.owns[i]) out.add(path.text());
    addTexts(tree, i + 1, tree.ends[i]!, path, out);
    path.pop();
  }
}

/** A tree being grown: nodes are opened in walk order and closed once what lies below them is in. */
class Growing {
  readonly elements: string[] = [];
  owns = new Uint8Array(256);
  ends = new Int32Array(256);
  fields = 0;

  open(element: string, own: boolean): number {
    const at = this.elements.length;
    if (at === this.ends.length) this.#grow();
    this.elements.push(element);
    this.owns[at] = own ? 1 : 0;
    if (own) this.fields++;
    return at;
  }

  #grow(): void {
    const owns = new Uint8Array(this.owns.length * 2);
    owns.set(this.owns);
    this.owns = owns;
    const ends = new Int32Array(this.ends.length * 2);
    ends.set(this.ends);
    this.ends = ends;
  }

  leaf(element: string): void {
    const at = this.open(element, true);
    this.ends[at] = this.elements.length;
  }

  /** Closes node `at`; one that is no field and has nothing below it is taken out again. Whether it stays. */
  close(at: number): boolean {
    if (this.owns[at] === 0 && this.elements.length === at + 1) {
      this.elements.length = at;
      return false;
    }
    this.ends[at] = this.elements.length;
    return true;
  }
}

/** Thrown when a list holds two elements with one key: their fields' order in a set of texts is not a tree's. */
const duplicate = Symbol("duplicate list key");

/**
 * `fieldsOf(object, schema, include)` as a tree: the same fields, answering in the same order. A list that holds
 * two elements with the same key (which the walk meets as one element twice, adding the second one's new fields
 * after everything walked in between) gets the set of texts `fieldsOf` makes.
 */
export function fieldTreeOf(object: Json, schema: SchemaNode, include: (field: string) => boolean): FieldSet {
  const steps = fieldTreeSteps(object, schema, include, stepBudget());
  for (;;) {
    const step = steps.next();
    if (step.done === true) return step.value;
  }
}

/**
 * `fieldTreeOf` in steps: a pause (`yield`) after every `budget.unitsPerStep` members and elements met in the maps
 * and lists of the top `walkStepDepthMax` levels, so that a big map or list near the top is walked a part at a time.
 */
export function* fieldTreeSteps(object: Json, schema: SchemaNode, include: (field: string) => boolean, budget: StepBudget): Generator<void, FieldSet, void> {
  const tree = new Growing();
  try {
    for (const key of Object.keys(object)) {
      const value = object[key];
      if (unownedTop.has(key) || !include(key) || value === null || value === undefined) continue;
      if (key === "metadata" && isRecord(value)) {
        const at = tree.open(fieldElementText("metadata"), false);
        for (const member of Object.keys(value)) {
          if (unownedMeta.has(member) || value[member] === null || value[member] === undefined) continue;
          const below = grow(fieldElementText(member), value[member], childOf(childOf(schema, key), member), 2, tree, budget);
          if (below !== undefined) yield* below;
        }
        tree.close(at);
      } else {
        const below = grow(fieldElementText(key), value, childOf(schema, key), 1, tree, budget);
        if (below !== undefined) yield* below;
      }
    }
  } catch (error) {
    if (error !== duplicate) throw error;
    return fieldsOf(object, schema, include);
  }
  const nodes = tree.elements.length;
  return new FieldTree(tree.elements, tree.owns.slice(0, nodes), tree.ends.slice(0, nodes), tree.fields);
}

/**
 * Adds the node of a value at `depth` under `element`, with what `walk` adds below its path; nothing when that is
 * nothing. A leaf is added at once; for a map or list it answers the walk below it, to be run to its end (`yield*`):
 * one generator per container, so that a deep body costs one generator a level. In the top `walkStepDepthMax`
 * levels a map's members and an associative list's elements count against the budget, with a pause (`yield`) when
 * it is spent (see `fieldTreeSteps`); deeper levels count nothing and never pause.
 */
function grow(element: string, value: unknown, schema: SchemaNode, depth: number, tree: Growing, budget: StepBudget): Walk {
  if (depth <= pathDepthMax) {
    if (Array.isArray(value) && schema.t === "list" && schema.listType !== "atomic") return growList(element, value, schema, depth, tree, budget);
    const atomic = (schema.t === "struct" || schema.t === "map") && schema.atomic === true;
    if (isRecord(value) && !atomic) return growNode(element, false, value, schema, depth, tree, budget, depth < walkStepDepthMax);
  }
  tree.leaf(element);
  return undefined;
}

/** The walk below a map or list that `grow` answers, or nothing for a leaf. */
type Walk = Generator<void, void, void> | undefined;

/** A set's leaf per distinct value, or an associative list's node per element. */
function* growList(element: string, value: readonly unknown[], schema: ListNode, depth: number, tree: Growing, budget: StepBudget): Generator<void, void, void> {
  const pausing = depth < walkStepDepthMax;
  const at = tree.open(element, false);
  const seen = new Set<string>();
  for (const item of value) {
    if (schema.listType === "set") {
      const text = JSON.stringify(`v:${JSON.stringify(item)}`);
      // The same value twice is one field, where it first was.
      if (!seen.has(text)) tree.leaf(text);
      seen.add(text);
      continue;
    }
    if (pausing && spent(budget)) yield;
    if (!isRecord(item)) continue;
    const text = JSON.stringify(elementKey(item, schema));
    if (seen.has(text)) throw duplicate;
    seen.add(text);
    yield* growNode(text, true, item, schema.item, depth + 1, tree, budget, pausing);
  }
  tree.close(at);
}

/**
 * The node of a map (`owns` false) or of a list's element (`owns` true: it is a field for its existence alone) and
 * its members, counted against the budget when `pausing`.
 */
function* growNode(element: string, owns: boolean, value: Json, schema: SchemaNode, depth: number, tree: Growing, budget: StepBudget, pausing: boolean): Generator<void, void, void> {
  const at = tree.open(element, owns);
  for (const key of Object.keys(value)) {
    if (pausing && spent(budget)) yield;
    const child = value[key];
    if (child === null || child === undefined) continue;
    // A scalar is a leaf: no walk of its own (nor a generator).
    if (typeof child !== "object") {
      tree.leaf(fieldElementText(key));
      continue;
    }
    const below = grow(fieldElementText(key), child, childOf(schema, key), depth + 1, tree, budget);
    if (below !== undefined) yield* below;
  }
  // A map with no members is a field; one whose members are all null adds nothing.
  if (!tree.close(at) && !owns && Object.keys(value).length === 0) tree.leaf(element);
}

/**
 * `fieldsV1Text` of a tree's fields: each node's children sorted by their elements' JSON texts, which is the order
 * the sorted path texts put them in (two paths differ first inside the texts of their first differing elements, and
 * a path sorts after the paths below it, `,` before `]`), so the output is byte for byte the same.
 */
export function fieldTreeV1Text(tree: FieldTree): string {
  // Bytes: an element's UTF-8 form is at most three bytes per UTF-16 unit, and a node adds at most 11 of its own.
  let bytesMax = 2;
  for (const element of tree.elements) bytesMax += element.length * 3 + 11;
  const out = { bytes: Buffer.allocUnsafe(bytesMax), at: 0 };
  writeKids(tree, 0, tree.elements.length, false, out);
  assert(out.at <= bytesMax, "fieldTreeV1Text: within the bytes counted");
  return out.bytes.toString("utf8", 0, out.at);
}

/** The text being written: bytes, and how many are written. */
interface Written {
  bytes: Buffer;
  at: number;
}

/**
 * Writes the object of the nodes `from` to `to`; a field with fields below it has its own mark after them, inside
 * it. Written as bytes into one buffer: texts appended to, or returned and joined per node, left a deep tree of
 * string pieces that took longer to make and flatten than the walk.
 */
function writeKids(tree: FieldTree, from: number, to: number, ownMark: boolean, out: Written): void {
  out.bytes[out.at++] = 0x7b;
  // One child (a chain of nested maps) needs no sorting.
  const kids = from < to && tree.ends[from] === to ? [from] : sortedKids(tree, from, to);
  for (let k = 0; k < kids.length; k++) {
    const i = kids[k]!;
    const element = tree.elements[i]!;
    if (k > 0) out.bytes[out.at++] = 0x2c;
    writeText(element, out);
    out.bytes[out.at++] = 0x3a;
    if (tree.isLeaf(i)) writeText(element.startsWith('"k:') ? '{".":{}}' : "{}", out);
    else writeKids(tree, i + 1, tree.ends[i]!, tree.owns[i] === 1, out);
  }
  writeText(ownMark ? ',".":{}}' : "}", out);
}

/** Appends `text` as UTF-8: ASCII byte by byte (most elements), anything else through the encoder. */
function writeText(text: string, out: Written): void {
  const { bytes } = out;
  let at = out.at;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0x80) {
      out.at += bytes.write(text, out.at, "utf8");
      return;
    }
    bytes[at++] = c;
  }
  out.at = at;
}

/** The indices of the sibling nodes `from` to `to`, in the order of their elements' texts. */
function sortedKids(tree: FieldTree, from: number, to: number): number[] {
  const kids: number[] = [];
  for (let i = from; i < to; i = tree.ends[i]!) kids.push(i);
  if (kids.length < 2) return kids;
  const elements = tree.elements;
  return kids.sort((a, b) => (elements[a]! < elements[b]! ? -1 : elements[a]! > elements[b]! ? 1 : 0));
}

/** `toFieldsV1` of a tree's fields: the same tree of objects, members in the same order. */
export function fieldTreeV1(tree: FieldTree): Json {
  return v1Object(tree, 0, tree.elements.length);
}

function v1Object(tree: FieldTree, from: number, to: number): Json {
  const out: Json = {};
  for (const i of sortedKids(tree, from, to)) {
    const element = elementOfText(tree.elements[i]!);
    const inner = v1Object(tree, i + 1, tree.ends[i]!);
    if (tree.owns[i] && (!tree.isLeaf(i) || element.startsWith("k:"))) setKey(inner, ".", {});
    setKey(out, element, inner);
  }
  return out;
}

/** The path element whose JSON text is `text`: read as it is when it holds no escape. */
function elementOfText(text: string): string {
  return text.includes("\\") ? (JSON.parse(text) as string) : text.slice(1, -1);
}

/** True when both trees hold the same fields in the same order: what comparing their texts in order says. */
export function sameFieldTrees(a: FieldTree, b: FieldTree): boolean {
  if (a.size !== b.size || a.elements.length !== b.elements.length) return false;
  for (let i = 0; i < a.elements.length; i++) {
    if (a.elements[i] !== b.elements[i] || a.ends[i] !== b.ends[i] || a.owns[i] !== b.owns[i]) return false;
  }
  return true;
}

/**
 * The texts of the fields of `tree` that `other` does not hold, in `tree`'s order: only those texts are made (an
 * apply that drops no field makes none).
 */
export function fieldTreeMinus(tree: FieldTree, other: FieldTree): string[] {
  const out: string[] = [];
  minus({ tree, other, tables: new Map(), out }, 0, tree.elements.length, 0, other.elements.length, new PathText());
  return out;
}

interface Minus {
  tree: FieldTree;
  other: FieldTree;
  /** Tables of `other`'s children by element, for sibling runs long enough to need one (by their first index). */
  tables: Map<number, Map<string, number>>;
  out: string[];
}

/** Siblings in a run longer than this are found through a table of them rather than a search. */
const kidTableNodesMin = 32;

function minus(m: Minus, from: number, to: number, otherFrom: number, otherTo: number, path: PathText): void {
  const { tree, other } = m;
  for (let i = from; i < to; i = tree.ends[i]!) {
    const j = kidOf(m, otherFrom, otherTo, tree.elements[i]!);
    path.pushText(tree.elements[i]!);
    if (tree.owns[i] && (j < 0 || !other.owns[j])) m.out.push(path.text());
    if (!tree.isLeaf(i)) minus(m, i + 1, tree.ends[i]!, j < 0 ? 0 : j + 1, j < 0 ? 0 : other.ends[j]!, path);
    path.pop();
  }
}

/** The index of the node at `element` among `other`'s siblings `from` to `to`, or -1. */
function kidOf(m: Minus, from: number, to: number, element: string): number {
  const { elements, ends } = m.other;
  if (to - from < kidTableNodesMin) {
    for (let j = from; j < to; j = ends[j]!) if (elements[j] === element) return j;
    return -1;
  }
  let table = m.tables.get(from);
  if (table === undefined) {
    table = new Map();
    for (let j = from; j < to; j = ends[j]!) table.set(elements[j]!, j);
    m.tables.set(from, table);
  }
  return table.get(element) ?? -1;
}

/** The field names of `f:` elements' texts, as `fieldElementText` made them. */
const fieldNames = new Map<string, string>();
const fieldNamesMax = 4096;

function fieldNameOf(text: string): string {
  let name = fieldNames.get(text);
  if (name === undefined) {
    if (fieldNames.size >= fieldNamesMax) fieldNames.clear();
    name = elementOfText(text).slice(2);
    fieldNames.set(text, name);
  }
  return name;
}

/**
 * True when `object` has every field of the tree: what `valueAt(object, path) !== undefined` says for each, in one
 * walk down the object (list elements found through `tables`, as the lookups find them).
 */
export function hasEveryField(tree: FieldTree, object: unknown, schema: SchemaNode, tables: ElementTables): boolean {
  return present(tree, 0, tree.elements.length, object, schema, tables);
}

function present(tree: FieldTree, from: number, to: number, value: unknown, schema: SchemaNode, tables: ElementTables): boolean {
  for (let i = from; i < to; i = tree.ends[i]!) {
    const text = tree.elements[i]!;
    let next: unknown;
    let nextSchema: SchemaNode = schema;
    if (text.startsWith('"f:')) {
      const field = fieldNameOf(text);
      next = isRecord(value) && Object.hasOwn(value, field) ? value[field] : undefined;
      nextSchema = childOf(schema, field);
    } else if (text.startsWith('"k:')) {
      next = Array.isArray(value) && schema.t === "list" ? tables.withKey(value, schema, elementOfText(text)) : undefined;
      if (schema.t === "list") nextSchema = schema.item;
    } else {
      // A set's element ends a lookup: a path below one (a walk makes none) has the element's value.
      next = Array.isArray(value) ? tables.withJson(value, elementOfText(text).slice(2)) : undefined;
      if (next === undefined) return false;
      continue;
    }
    if (next === undefined) return false;
    if (!tree.isLeaf(i) && !present(tree, i + 1, tree.ends[i]!, next, nextSchema, tables)) return false;
  }
  return true;
}
