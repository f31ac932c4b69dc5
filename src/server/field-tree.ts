// A field set as a tree of path elements (`FieldTree`), the form an apply's own fields take: a field costs a map
// entry under its parent, not the JSON text of its whole path. A long list's walk made ~95k path texts of ~100
// characters each and put them in a set; sorting and parsing them again for `fieldsV1` was another block as long.
// The tree gives what the set of texts gives (`fieldsOf`'s texts, in the same order), made only when something asks
// for a text; `fieldsV1` is written from it sorted node by node, an unchanged apply is recognized by comparing two
// trees, and the fields a live object no longer has are found by walking the tree down the object.
import { assert } from "../api/assert.ts";
import { isRecord, type JsonObject as Json } from "../api/json.ts";
import { setKey } from "./strategic.ts";
import { elementKey, ElementTables, fieldElementText, fieldsOf, PathText, pathDepthMax, unownedMeta, unownedTop } from "./fields.ts";
import type { FieldSet } from "./fields.ts";
import { childOf } from "./schema.ts";
import type { SchemaNode } from "./schema.ts";

/**
 * A node of a field tree: whether its path is a field itself, and the nodes below it in the order walked, each with
 * the JSON text of its path element (what a path's text and `fieldsV1` are written with, and sorted by). Arrays, not
 * maps: most nodes have one or two children, and a map each made a deeply nested object's tree several times
 * heavier than the object.
 */
export interface FieldNode {
  readonly own: boolean;
  readonly elements: readonly string[] | undefined;
  readonly kids: readonly FieldNode[] | undefined;
}

/** Every leaf field: owned, nothing below. Shared, as leaves never gain children (see `duplicate`). */
const leaf: FieldNode = Object.freeze({ own: true, elements: undefined, kids: undefined });

/**
 * A field set held as a tree. `size`, `has` and iteration answer as the `Set` of path texts `fieldsOf` makes
 * (the same texts, in the same order), which is made on the first `has` or iteration and kept.
 */
export class FieldTree implements FieldSet {
  #texts: Set<string> | undefined;

  constructor(
    readonly root: FieldNode,
    readonly size: number,
  ) {
    assert(root.own === false, "FieldTree: the root is not a field");
    assert(Number.isSafeInteger(size) && size >= 0, "FieldTree: size is a count");
  }

  has(path: string): boolean {
    return this.#paths().has(path);
  }

  [Symbol.iterator](): Iterator<string> {
    return this.#paths()[Symbol.iterator]();
  }

  #paths(): Set<string> {
    if (this.#texts === undefined) {
      this.#texts = new Set();
      addTexts(this.root, new PathText(), this.#texts);
      assert(this.#texts.size === this.size, "FieldTree: one text per field");
    }
    return this.#texts;
  }
}

function addTexts(node: FieldNode, path: PathText, out: Set<string>): void {
  const { elements, kids } = node;
  if (elements === undefined || kids === undefined) return;
  for (let i = 0; i < kids.length; i++) {
    path.pushText(elements[i]!);
    if (kids[i]!.own) out.add(path.text());
    addTexts(kids[i]!, path, out);
    path.pop();
  }
}

/** Children being gathered: elements and nodes side by side. */
interface Kids {
  elements: string[];
  kids: FieldNode[];
}

function addKid(into: Kids | undefined, element: string, kid: FieldNode): Kids {
  if (into === undefined) return { elements: [element], kids: [kid] };
  into.elements.push(element);
  into.kids.push(kid);
  return into;
}

function nodeOf(own: boolean, kids: Kids | undefined): FieldNode {
  return kids === undefined ? { own, elements: undefined, kids: undefined } : { own, elements: kids.elements, kids: kids.kids };
}

/** Thrown when a list holds two elements with one key: their fields' order in a set of texts is not a tree's. */
const duplicate = Symbol("duplicate list key");

/**
 * `fieldsOf(object, schema, include)` as a tree: the same fields, answering in the same order. A list that holds
 * two elements with the same key (which the walk meets as one element twice, adding the second one's new fields
 * after everything walked in between) gets the set of texts `fieldsOf` makes.
 */
export function fieldTreeOf(object: Json, schema: SchemaNode, include: (field: string) => boolean): FieldSet {
  const count = { fields: 0 };
  let root: Kids | undefined;
  try {
    for (const key of Object.keys(object)) {
      const value = object[key];
      if (unownedTop.has(key) || !include(key) || value === null || value === undefined) continue;
      let node: FieldNode | undefined;
      if (key === "metadata" && isRecord(value)) node = metadataNode(value, childOf(schema, key), count);
      else node = grow(value, childOf(schema, key), 1, count);
      if (node !== undefined) root = addKid(root, fieldElementText(key), node);
    }
  } catch (error) {
    if (error !== duplicate) throw error;
    return fieldsOf(object, schema, include);
  }
  return new FieldTree(nodeOf(false, root), count.fields);
}

function metadataNode(metadata: Json, schema: SchemaNode, count: { fields: number }): FieldNode | undefined {
  let kids: Kids | undefined;
  for (const key of Object.keys(metadata)) {
    const value = metadata[key];
    if (unownedMeta.has(key) || value === null || value === undefined) continue;
    const node = grow(value, childOf(schema, key), 2, count);
    if (node !== undefined) kids = addKid(kids, fieldElementText(key), node);
  }
  return kids === undefined ? undefined : nodeOf(false, kids);
}

/** The node of a value at `depth` (what `walk` adds below its path), or undefined when it adds no field. */
function grow(value: unknown, schema: SchemaNode, depth: number, count: { fields: number }): FieldNode | undefined {
  if (depth > pathDepthMax) return leafOf(count);
  if (Array.isArray(value)) {
    if (schema.t !== "list" || schema.listType === "atomic") return leafOf(count);
    let kids: Kids | undefined;
    const seen = new Set<string>();
    if (schema.listType === "set") {
      for (const item of value) {
        const element = JSON.stringify(`v:${JSON.stringify(item)}`);
        // The same value twice is one field, where it first was.
        if (seen.has(element)) continue;
        seen.add(element);
        kids = addKid(kids, element, leafOf(count));
      }
    } else {
      for (const item of value) {
        if (!isRecord(item)) continue;
        const element = JSON.stringify(elementKey(item, schema));
        if (seen.has(element)) throw duplicate;
        seen.add(element);
        count.fields++;
        kids = addKid(kids, element, nodeOf(true, mapKids(item, schema.item, depth + 1, count)));
      }
    }
    return kids === undefined ? undefined : nodeOf(false, kids);
  }
  if (!isRecord(value) || ((schema.t === "struct" || schema.t === "map") && schema.atomic === true)) return leafOf(count);
  const kids = mapKids(value, schema, depth, count);
  if (kids !== undefined) return nodeOf(false, kids);
  // A map with no members is a field; one whose members are all null adds nothing.
  return Object.keys(value).length === 0 ? leafOf(count) : undefined;
}

function mapKids(value: Json, schema: SchemaNode, depth: number, count: { fields: number }): Kids | undefined {
  let kids: Kids | undefined;
  for (const key of Object.keys(value)) {
    const child = value[key];
    if (child === null || child === undefined) continue;
    const node = grow(child, childOf(schema, key), depth + 1, count);
    if (node !== undefined) kids = addKid(kids, fieldElementText(key), node);
  }
  return kids;
}

function leafOf(count: { fields: number }): FieldNode {
  count.fields++;
  return leaf;
}

/**
 * `fieldsV1Text` of a tree's fields: each node's children sorted by their elements' JSON texts, which is the order
 * the sorted path texts put them in (two paths differ first inside the texts of their first differing elements, and
 * a path sorts after the paths below it, `,` before `]`), so the output is byte for byte the same.
 */
export function fieldTreeV1Text(tree: FieldTree): string {
  return kidsText(tree.root, false);
}

/** The object of a node's children; a field with fields below it has its own mark after them, inside it. */
function kidsText(node: FieldNode, ownMark: boolean): string {
  let text = "{";
  const { elements, kids } = node;
  if (elements !== undefined && kids !== undefined) {
    for (const i of sortedOrder(elements)) {
      const element = elements[i]!;
      const kid = kids[i]!;
      text += `${text.length > 1 ? "," : ""}${element}:`;
      if (kid.kids === undefined) text += kid.own && element.startsWith('"k:') ? '{".":{}}' : "{}";
      else text += kidsText(kid, kid.own);
    }
  }
  return ownMark ? `${text},".":{}}` : `${text}}`;
}

const inOrder: readonly number[][] = [[], [0]];

/** The indices of `elements` in the order of their texts. */
function sortedOrder(elements: readonly string[]): readonly number[] {
  if (elements.length < 2) return inOrder[elements.length]!;
  const order = elements.map((_, i) => i);
  return order.sort((a, b) => (elements[a]! < elements[b]! ? -1 : elements[a]! > elements[b]! ? 1 : 0));
}

/** `toFieldsV1` of a tree's fields: the same tree of objects, members in the same order. */
export function fieldTreeV1(tree: FieldTree): Json {
  return v1Node(tree.root);
}

function v1Node(node: FieldNode): Json {
  const out: Json = {};
  const { elements, kids } = node;
  if (elements === undefined || kids === undefined) return out;
  for (const i of sortedOrder(elements)) {
    const kid = kids[i]!;
    const element = elementOfText(elements[i]!);
    const inner = kid.kids === undefined ? {} : v1Node(kid);
    if (kid.own && (kid.kids !== undefined || element.startsWith("k:"))) setKey(inner, ".", {});
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
  return a.size === b.size && sameNodes(a.root, b.root);
}

function sameNodes(a: FieldNode, b: FieldNode): boolean {
  if (a === b) return true;
  if (a.own !== b.own || a.kids?.length !== b.kids?.length) return false;
  if (a.elements === undefined || b.elements === undefined || a.kids === undefined || b.kids === undefined) return true;
  for (let i = 0; i < a.kids.length; i++) {
    if (a.elements[i] !== b.elements[i] || !sameNodes(a.kids[i]!, b.kids[i]!)) return false;
  }
  return true;
}

/**
 * The texts of the fields of `tree` that `other` does not hold, in `tree`'s order: only those texts are made (an
 * apply that drops no field makes none).
 */
export function fieldTreeMinus(tree: FieldTree, other: FieldTree): string[] {
  const out: string[] = [];
  minus(tree.root, other.root, new PathText(), out);
  return out;
}

function minus(node: FieldNode, other: FieldNode | undefined, path: PathText, out: string[]): void {
  const { elements, kids } = node;
  if (elements === undefined || kids === undefined) return;
  for (let i = 0; i < kids.length; i++) {
    const kid = kids[i]!;
    const otherKid = other === undefined ? undefined : kidOf(other, elements[i]!);
    path.pushText(elements[i]!);
    if (kid.own && otherKid?.own !== true) out.push(path.text());
    if (kid.kids !== undefined) minus(kid, otherKid, path, out);
    path.pop();
  }
}

/** Children of a node past which a lookup goes through a table of them rather than a search. */
const kidTableLengthMin = 16;
const kidTables = new WeakMap<FieldNode, Map<string, FieldNode>>();

/** The child of `node` at `element`, or undefined. */
function kidOf(node: FieldNode, element: string): FieldNode | undefined {
  const { elements, kids } = node;
  if (elements === undefined || kids === undefined) return undefined;
  if (elements.length < kidTableLengthMin) {
    const at = elements.indexOf(element);
    return at < 0 ? undefined : kids[at];
  }
  let table = kidTables.get(node);
  if (table === undefined) {
    table = new Map();
    for (let i = 0; i < elements.length; i++) table.set(elements[i]!, kids[i]!);
    kidTables.set(node, table);
  }
  return table.get(element);
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
  return present(tree.root, object, schema, tables);
}

function present(node: FieldNode, value: unknown, schema: SchemaNode, tables: ElementTables): boolean {
  const { elements, kids } = node;
  if (elements === undefined || kids === undefined) return true;
  for (let i = 0; i < kids.length; i++) {
    const text = elements[i]!;
    const kid = kids[i]!;
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
    if (kid.kids !== undefined && !present(kid, next, nextSchema, tables)) return false;
  }
  return true;
}
