// Server-side apply (`PATCH` with `application/apply-patch+yaml`) and the field ownership it rests on.
//
// The store does not keep `metadata.managedFields` (it strips them on every write), so the server keeps them beside
// it, per object uid: one entry per (manager, operation, subresource), each with the set of fields it owns. Apply
// creates an absent object (201), refuses to change a field another manager owns with a different value (409 naming
// the managers and fields) unless `force=true` (then it takes the fields), and removes the fields its manager set
// last time but no longer sets and nobody else owns. Every other write through the server (create, update, patch)
// is recorded as an `Update` by its `fieldManager` (or the client's User-Agent program): the fields it changed
// become that manager's, and no one else's. Writes that bypass the server (a simulator driving the store) are not
// seen; ownership of a field that no longer exists is dropped when it is next read.
import { ApiError, badRequest, invalid } from "../../api/errors.ts";
import type { KubeObject, ObjectRef } from "../../api/object.ts";
import type { ResourceType } from "../../api/resources.ts";
import type { Clock } from "../../api/clock.ts";
import { deepFreeze, isRecord, jsonEqual } from "../../api/json.ts";
import { describePath, ElementTables, fieldChanges, fieldsV1Text, fromFieldsV1, mergeAppliedSteps, PathCursor, removeAll, stepBudget, toFieldsV1, valueAt } from "./fields.ts";
import type { FieldSet } from "./fields.ts";
import { FieldTree, fieldTreeMinus, fieldTreeSteps, fieldTreeV1, fieldTreeV1Text, hasEveryField, sameFieldTrees } from "./field-tree.ts";
import { schemaOf } from "../schema.ts";
import { forgivenConflicts, refreshLastApplied } from "./last-applied.ts";
import type { SchemaNode } from "../schema.ts";

export interface ManagedEntry {
  manager: string;
  operation: "Apply" | "Update";
  apiVersion: string;
  time: string;
  subresource?: "status";
  fields: FieldSet;
}

/** Objects tracked before the table sweeps entries of objects that no longer exist. */
const trackedObjectsSweepAt = 50_000;
const managerLengthMax = 128;

/**
 * What the table holds for one object: its entries (never changed in place), and their wire form and its JSON text,
 * each made on first use.
 */
interface Tracked {
  ref: ObjectRef;
  entries: ManagedEntry[];
  view?: readonly Record<string, unknown>[];
  viewJson?: string;
  /**
   * The decorated answer of the last stored object asked for with these entries: repeated reads of an unchanged
   * object share one answer instead of rebuilding it. One per object, on the entry rather than in a map keyed by
   * the stored object, so that a write (which makes a new stored object) costs no map insertion.
   */
  answer?: Decorated;
}

/** A stored object's decorated answer: the object, its JSON text, or both, as asked for. */
interface Decorated {
  stored: KubeObject;
  object?: KubeObject;
  json?: string;
}

export class ManagedFields {
  readonly #byUid = new Map<string, Tracked>();
  #sweepAt = trackedObjectsSweepAt;
  #second = Number.NaN;
  #secondText = "";

  constructor(
    readonly clock: Clock,
    readonly exists: (ref: ObjectRef, uid: string) => boolean,
  ) {}

  entries(uid: string | undefined): ManagedEntry[] {
    return uid === undefined ? [] : (this.#byUid.get(uid)?.entries ?? []);
  }

  set(object: KubeObject, entries: ManagedEntry[]): void {
    const uid = object.metadata.uid;
    if (uid === undefined) return;
    const kept = entries.filter((e) => e.fields.size > 0);
    const held = this.#byUid.get(uid);
    // A write that left every entry as it was (the same fields, in the same second) keeps what the table holds, and
    // with it the wire form and the decorated answers made from it.
    if (held !== undefined && sameEntries(held.entries, kept)) return;
    if (kept.length === 0) this.#byUid.delete(uid);
    else this.#byUid.set(uid, { ref: refOfObject(object), entries: kept });
    if (this.#byUid.size >= this.#sweepAt) this.#sweep();
  }

  forget(uid: string | undefined): void {
    if (uid !== undefined) this.#byUid.delete(uid);
  }

  get size(): number {
    return this.#byUid.size;
  }

  #sweep(): void {
    for (const [uid, { ref }] of this.#byUid) if (!this.exists(ref, uid)) this.#byUid.delete(uid);
    this.#sweepAt = Math.max(trackedObjectsSweepAt, this.#byUid.size * 2);
  }

  /** The time of an entry: whole seconds, as managedFields carry it (formatted once per second). */
  now(): string {
    const second = Math.floor(this.clock.now() / 1000);
    if (second !== this.#second) {
      this.#second = second;
      this.#secondText = new Date(second * 1000).toISOString().replace(/\.\d{3}Z$/, "Z");
    }
    return this.#secondText;
  }

  /**
   * The object as a client sees it: with `metadata.managedFields`, in the order kube-apiserver keeps them. The
   * answer is frozen and may be shared by later reads of the same stored object.
   */
  decorate(object: KubeObject): KubeObject {
    const tracked = this.#trackedOf(object);
    if (tracked === undefined) return object;
    const d = answerOf(tracked, object);
    d.object ??= Object.freeze({ ...object, metadata: Object.freeze({ ...object.metadata, managedFields: viewOf(tracked) }) }) as unknown as KubeObject;
    return d.object;
  }

  /**
   * The JSON text of `decorate(object)`, or undefined when the table holds no entries for it (the object answers as
   * it is). Made from the object's members and the entries' text, kept while the entries are: a write serializes
   * its new object once and its managed fields not at all, and repeated reads share the text.
   */
  decoratedJson(object: KubeObject): string | undefined {
    const tracked = this.#trackedOf(object);
    if (tracked === undefined) return undefined;
    const d = answerOf(tracked, object);
    if (d.json === undefined) {
      tracked.viewJson ??= viewJsonOf(tracked);
      d.json = decoratedJsonText(object, tracked.viewJson) ?? JSON.stringify(this.decorate(object));
    }
    return d.json;
  }

  /** The entries held for an object, or undefined when there are none. */
  #trackedOf(object: KubeObject): Tracked | undefined {
    const uid = object.metadata.uid;
    return uid === undefined ? undefined : this.#byUid.get(uid);
  }
}

/**
 * What `decorate` answers for `object` once the table holds `entries` for it, made without the table: the answer of
 * a write whose entries the table no longer holds (a later write came in before it was sent).
 */
export function decoratedWith(object: KubeObject, entries: readonly ManagedEntry[]): KubeObject {
  const kept = entries.filter((e) => e.fields.size > 0);
  if (kept.length === 0) return object;
  return Object.freeze({ ...object, metadata: Object.freeze({ ...object.metadata, managedFields: Object.freeze(kept.map(wireEntryOf)) }) }) as unknown as KubeObject;
}

/** The cached answers of a stored object for the entries held now (kept only for a frozen, stored object). */
function answerOf(tracked: Tracked, object: KubeObject): Decorated {
  if (tracked.answer?.stored === object) return tracked.answer;
  const d: Decorated = { stored: object };
  if (Object.isFrozen(object)) tracked.answer = d;
  return d;
}

function viewOf(tracked: Tracked): readonly Record<string, unknown>[] {
  tracked.view ??= Object.freeze(tracked.entries.map(wireEntryOf));
  return tracked.view;
}

/**
 * What `JSON.stringify({ ...object, metadata: { ...object.metadata, managedFields } })` writes, given the text of
 * `managedFields`: the members in the object's order (those JSON leaves out left out), and the entries last in
 * `metadata`, as the spread puts them. Undefined when `metadata` has a `managedFields` member of its own (the
 * spread would keep its place) or is not a plain object; the caller serializes the decorated object then.
 */
export function decoratedJsonText(object: KubeObject, managedFieldsJson: string): string | undefined {
  const metadata: unknown = object.metadata;
  const members = object as unknown as Record<string, unknown>;
  if (!isRecord(metadata) || Object.hasOwn(metadata, "managedFields") || typeof metadata.toJSON === "function" || typeof members.toJSON === "function") return undefined;
  let text = "{";
  for (const key of Object.keys(members)) {
    let json: string | undefined;
    if (key === "metadata") {
      const own = JSON.stringify(metadata);
      json = own === "{}" ? `{"managedFields":${managedFieldsJson}}` : `${own.slice(0, -1)},"managedFields":${managedFieldsJson}}`;
    } else json = JSON.stringify(members[key]);
    // JSON leaves out members whose value it cannot write (undefined, functions, symbols).
    if (json === undefined) continue;
    text += `${text.length === 1 ? "" : ","}${JSON.stringify(key)}:${json}`;
  }
  return `${text}}`;
}

/**
 * The `fieldsV1` tree of each field set, made once: a set is never changed once an entry holds it (an update that
 * leaves an entry's fields as they were keeps the same set, see `recordUpdate`), so a write that only moves an
 * entry's time does not rebuild its tree. Frozen, as it is shared by every answer that shows it.
 */
const fieldsV1Trees = new WeakMap<FieldSet, Record<string, unknown>>();

function fieldsV1Of(fields: FieldSet): Record<string, unknown> {
  let tree = fieldsV1Trees.get(fields);
  if (tree === undefined) {
    tree = deepFreeze(fields instanceof FieldTree ? fieldTreeV1(fields) : toFieldsV1(fields));
    fieldsV1Trees.set(fields, tree);
  }
  return tree;
}

function sameEntries(a: readonly ManagedEntry[], b: readonly ManagedEntry[]): boolean {
  return a.length === b.length && a.every((e, i) => e === b[i]);
}

/** The frozen wire form of each entry, made once: an entry is never changed, and an update keeps those it leaves alone. */
const wireEntries = new WeakMap<ManagedEntry, Readonly<Record<string, unknown>>>();

function wireEntryOf(e: ManagedEntry): Readonly<Record<string, unknown>> {
  let wire = wireEntries.get(e);
  if (wire === undefined) {
    wire = Object.freeze(wireEntry(e));
    wireEntries.set(e, wire);
  }
  return wire;
}

function wireEntry(e: ManagedEntry): Record<string, unknown> {
  const wire: Record<string, unknown> = { manager: e.manager, operation: e.operation, apiVersion: e.apiVersion, time: e.time, fieldsType: "FieldsV1", fieldsV1: fieldsV1Of(e.fields) };
  if (e.subresource !== undefined) wire.subresource = e.subresource;
  return wire;
}

/**
 * The JSON text of the entries' wire form, as `JSON.stringify(viewOf(tracked))` writes it. When no answer has needed
 * the wire objects yet (a new object's first answer, most writes' only one), the text is made from the entries and
 * each field set's tree text (kept per set, as the trees are) without making, freezing and keeping wire objects.
 */
function viewJsonOf(tracked: Tracked): string {
  if (tracked.view !== undefined) return JSON.stringify(tracked.view);
  return `[${tracked.entries.map(wireEntryJson).join(",")}]`;
}

/** `JSON.stringify(wireEntry(e))`: the members in the same order, the tree's text from the set's cache. */
function wireEntryJson(e: ManagedEntry): string {
  const head = JSON.stringify({ manager: e.manager, operation: e.operation, apiVersion: e.apiVersion, time: e.time, fieldsType: "FieldsV1" });
  const tail = e.subresource === undefined ? "" : `,"subresource":${JSON.stringify(e.subresource)}`;
  return `${head.slice(0, -1)},"fieldsV1":${fieldsV1Json(e.fields)}${tail}}`;
}

const fieldsV1Texts = new WeakMap<FieldSet, string>();

function fieldsV1Json(fields: FieldSet): string {
  let text = fieldsV1Texts.get(fields);
  if (text === undefined) {
    const tree = fieldsV1Trees.get(fields);
    if (tree !== undefined) text = JSON.stringify(tree);
    else text = fields instanceof FieldTree ? fieldTreeV1Text(fields) : fieldsV1Text(fields);
    fieldsV1Texts.set(fields, text);
  }
  return text;
}

function refOfObject(object: KubeObject): ObjectRef {
  const ref: ObjectRef = { apiVersion: object.apiVersion, kind: object.kind, name: object.metadata.name ?? "" };
  if (object.metadata.namespace !== undefined) ref.namespace = object.metadata.namespace;
  return ref;
}

/** The manager of a write that names none: the program part of the User-Agent, as kube-apiserver takes it. */
export function managerOf(fieldManager: string | undefined, userAgent: string | undefined): string {
  if (fieldManager !== undefined && fieldManager !== "") return fieldManager;
  // A client sends the same User-Agent on every request: the last one's program is kept.
  if (userAgent === lastUserAgent) return lastProgram;
  const program = (userAgent ?? "").split("/")[0]!.trim();
  lastUserAgent = userAgent;
  lastProgram = (program === "" ? "unknown" : program).slice(0, managerLengthMax);
  return lastProgram;
}

let lastUserAgent: string | undefined;
let lastProgram = "unknown";

/** Which top-level fields a write to the main resource or to `status` may own. */
function includeFor(resource: ResourceType, subresource: "status" | undefined): (field: string) => boolean {
  if (subresource === "status") return onlyStatus;
  return resource.statusSubresource ? allButStatus : everyField;
}

const onlyStatus = (field: string) => field === "status";
const allButStatus = (field: string) => field !== "status";
const everyField = () => true;

/** Drops owned fields the object no longer has (changed by a writer the table did not see). */
function prune(entries: ManagedEntry[], live: KubeObject, schema: SchemaNode, tables: ElementTables): ManagedEntry[] {
  const cursor = new PathCursor(live, schema, tables);
  return entries.map((e) => {
    // An apply's fields, held as a tree, are checked in one walk down the object when the object still has them all.
    if (e.fields instanceof FieldTree && hasEveryField(e.fields, live, schema, tables)) return e;
    const fields = keptWhere(e.fields, (p) => cursor.valueAt(p) !== undefined);
    return fields === e.fields ? e : entryOf(e.manager, e.operation, e.apiVersion, e.time, e.subresource, fields);
  });
}

/**
 * The fields of a set that `keep` keeps, in its order; the same set when it keeps them all, so that an entry whose
 * fields did not change keeps its `fieldsV1` tree and text (made once per set) instead of making them again.
 */
function keptWhere(fields: FieldSet, keep: (path: string) => boolean): FieldSet {
  let kept: string[] | undefined;
  let seen = 0;
  for (const p of fields) {
    if (kept !== undefined) {
      if (keep(p)) kept.push(p);
    } else if (!keep(p)) kept = [...fields].slice(0, seen);
    seen++;
  }
  return kept === undefined ? fields : new Set(kept);
}

/** `next`, or `previous` when it holds the same fields in the same order (its wire form is made already). */
function sameOrNew(previous: FieldSet | undefined, next: FieldSet): FieldSet {
  if (previous === undefined || previous.size !== next.size) return next;
  if (previous instanceof FieldTree && next instanceof FieldTree) return sameFieldTrees(previous, next) ? previous : next;
  const order = next[Symbol.iterator]();
  for (const p of previous) if (order.next().value !== p) return next;
  return previous;
}

/** The texts of a path's proper prefixes (`["f:a","f:b","f:c"]`: `["f:a"]`, `["f:a","f:b"]`), shortest first. */
function prefixTexts(path: readonly string[]): string[] {
  const texts: string[] = [];
  for (let n = 1; n < path.length; n++) texts.push(JSON.stringify(path.slice(0, n)));
  return texts;
}

/**
 * Whether a field is owned by some entry, as the field itself, a field within it or a field it lies within: one
 * pass over the entries builds the sets, then each question costs a path's prefixes, not a pass over every field.
 */
function ownership(entries: readonly ManagedEntry[]): (path: string) => boolean {
  const owned = new Set<string>();
  const ancestors = new Set<string>();
  for (const e of entries) {
    for (const q of e.fields) {
      owned.add(q);
      for (const prefix of prefixTexts(JSON.parse(q) as string[])) ancestors.add(prefix);
    }
  }
  return (p) => owned.has(p) || ancestors.has(p) || prefixTexts(JSON.parse(p) as string[]).some((prefix) => owned.has(prefix));
}

/**
 * Records a create, update or patch by `manager`: the fields it changed (or set, on create) become its own and leave
 * every other entry. Fields that disappeared leave every entry.
 */
export function recordUpdate(table: ManagedFields, resource: ResourceType, before: KubeObject | undefined, after: KubeObject, manager: string, subresource: "status" | undefined): void {
  const include = includeFor(resource, subresource);
  const walked = fieldChanges(before, after, schemaOf(resource), include);
  const changed = walked.changed;
  // The walk covers only what this write may change (`status` alone for a status write, all but `status` for a write
  // of a kind with that subresource): fields outside it are still set, and their owners keep them.
  const now = include === everyField ? walked.now : { has: (p: string) => walked.now.has(p) || !include(topFieldOf(p)) };
  const old = before === undefined ? [] : table.entries(before.metadata.uid);
  if (changed.size === 0 && old.length === 0) return;
  const time = table.now();
  // The writer's entry is the first of its manager, operation and subresource.
  let mine = false;
  // Entries are never changed: one the update leaves as it was is kept as the same object (see `ManagedFields.set`).
  const entries = old.map((e) => {
    if (mine || e.manager !== manager || e.operation !== "Update" || e.subresource !== subresource) {
      const fields = keptFields(e.fields, now, changed);
      return fields === e.fields ? e : entryOf(e.manager, e.operation, e.apiVersion, e.time, e.subresource, fields);
    }
    mine = true;
    const fields = writerFields(e.fields, now, changed);
    const entryTime = changed.size > 0 ? time : e.time;
    return fields === e.fields && entryTime === e.time ? e : entryOf(e.manager, e.operation, e.apiVersion, entryTime, e.subresource, fields);
  });
  if (!mine && changed.size > 0) entries.push(entryOf(manager, "Update", after.apiVersion, time, subresource, changed));
  table.set(after, entries);
}

/** Which fields the object sets after a write. */
type Present = Pick<FieldSet, "has">;

/** The top-level field a path's text starts with: `["f:spec","f:replicas"]` -> `spec`. */
function topFieldOf(path: string): string {
  const end = path.indexOf('"', 4);
  // A name with an escaped quote or backslash in it: read the text as what it is.
  if (!path.startsWith('["f:') || end < 0 || path.charCodeAt(end - 1) === 0x5c) return (JSON.parse(path) as string[])[0]!.slice(2);
  return path.slice(4, end);
}

/**
 * An entry built field by field rather than by spreading another (`{ ...e, fields }`): on Node 20 a literal that
 * spreads a plain object and adds fields takes V8's slow path, about a microsecond each, on every write.
 */
/**
 * The entries a client wrote into `metadata.managedFields`, which replace the object's before its own write is
 * recorded on top of them, as kube-apiserver lets clients set managed fields directly (`kubectl apply --server-side`
 * moves client-side ownership so). Undefined when it wrote none, an empty list, or a list that does not decode: the
 * real server then keeps the stored entries. A list of one empty entry decodes to no entries: it clears them.
 */
export function requestedEntries(managedFields: unknown, time: string): ManagedEntry[] | undefined {
  if (!Array.isArray(managedFields) || managedFields.length === 0) return undefined;
  const entries: ManagedEntry[] = [];
  for (const item of managedFields) {
    if (!isRecord(item)) return undefined;
    if (Object.keys(item).length === 0) continue;
    const { manager, operation, apiVersion, subresource, fieldsV1 } = item;
    if (typeof manager !== "string" || (operation !== "Apply" && operation !== "Update") || (subresource !== undefined && subresource !== "status")) return undefined;
    const fields = fromFieldsV1(fieldsV1 ?? {});
    if (fields === undefined) return undefined;
    entries.push(entryOf(manager, operation, typeof apiVersion === "string" ? apiVersion : "", typeof item.time === "string" ? item.time : time, subresource, fields));
  }
  return entries;
}

function entryOf(manager: string, operation: ManagedEntry["operation"], apiVersion: string, time: string, subresource: "status" | undefined, fields: FieldSet): ManagedEntry {
  const entry: ManagedEntry = { manager, operation, apiVersion, time, fields };
  if (subresource !== undefined) entry.subresource = subresource;
  return entry;
}

/**
 * Another manager's fields after an update: without those the object no longer sets and those the writer changed.
 * The same set when nothing leaves it, so that its wire form is not made again.
 */
function keptFields(fields: FieldSet, now: Present, changed: FieldSet): FieldSet {
  for (const p of fields) {
    if (!now.has(p) || changed.has(p)) return new Set([...fields].filter((q) => now.has(q) && !changed.has(q)));
  }
  return fields;
}

/**
 * The writer's own fields after an update: those it kept, then those it changed, in that order (the order conflicts
 * are reported in later). The same set when that is what it held already, as when it writes the same fields again.
 */
function writerFields(fields: FieldSet, now: Present, changed: FieldSet): FieldSet {
  const next = [...fields].filter((p) => now.has(p) && !changed.has(p));
  for (const p of changed) next.push(p);
  if (next.length === fields.size) {
    let i = 0;
    let same = true;
    for (const p of fields) same &&= next[i++] === p;
    if (same) return fields;
  }
  return new Set(next);
}

export interface ApplyRequest {
  resource: ResourceType;
  /** The live object, or undefined when absent. */
  live: KubeObject | undefined;
  /** The applied configuration, already checked to be an object of the route's kind and name. */
  applied: KubeObject;
  manager: string;
  force: boolean;
  subresource: "status" | undefined;
}

export interface ApplyResult {
  object: KubeObject;
  entries: ManagedEntry[];
}

/** Computes the object an apply produces and the managers' new field sets; throws 409 on conflicts. */
export function computeApply(table: ManagedFields, a: ApplyRequest): ApplyResult {
  const steps = applySteps(table, a);
  for (;;) {
    const step = steps.next();
    if (step.done === true) return step.value;
  }
}

/**
 * `computeApply` in steps, each proportional to the object (its fields; the live object's owned fields; the
 * conflicts; the merge; the removals; the new field set's `fieldsV1` text), and the walks of the body's fields and
 * of the merge themselves in steps of a bounded number of members (`walkUnitsPerStep`): a caller that lets other
 * work run between them does so at each `yield`, and
 * before it writes the result checks that the stored object is still `live` (a write changes both it and the table's
 * entries for it), computing again if not.
 */
export function* applySteps(table: ManagedFields, a: ApplyRequest): Generator<void, ApplyResult, void> {
  const schema = schemaOf(a.resource);
  const include = includeFor(a.resource, a.subresource);
  // One budget for the apply's walks in steps: each pauses where the last one's share was spent.
  const budget = stepBudget();
  const appliedFields = yield* fieldTreeSteps(a.applied, schema, include, budget);
  yield;
  const base = a.live === undefined ? { apiVersion: a.applied.apiVersion, kind: a.applied.kind, metadata: {} } : a.live;
  const tables = new ElementTables();
  let entries = a.live === undefined ? [] : prune(table.entries(a.live.metadata.uid), a.live, schema, tables);
  if (a.live !== undefined) yield;
  const isMine = (e: ManagedEntry) => e.manager === a.manager && e.operation === "Apply" && e.subresource === a.subresource;
  const conflicts: Array<{ entry: ManagedEntry; path: string }> = [];
  for (const entry of entries) {
    if (isMine(entry)) continue;
    for (const p of entry.fields) {
      if (!appliedFields.has(p)) continue;
      const path = JSON.parse(p) as string[];
      // An element of a list or set is owned for its existence alone: sharing it is never a conflict.
      if (!path[path.length - 1]!.startsWith("f:")) continue;
      if (!jsonEqual(valueAt(base, path, schema, tables), valueAt(a.applied, path, schema, tables))) conflicts.push({ entry, path: p });
    }
  }
  if (conflicts.length > 0 && !a.force) {
    // `kubectl apply --server-side` after client-side applies takes back what it applied before (last-applied.ts).
    const forgiven = forgivenConflicts(a.manager, a.live, a.applied.apiVersion, schema, include);
    const left = conflicts.filter((c) => !forgiven.has(c.path));
    if (left.length > 0) throw conflictError(left, a.resource);
  }
  const taken = new Set(conflicts.map((c) => c.path));
  const previousFields = entries.find(isMine)?.fields;
  const previous = previousFields ?? new Set<string>();
  entries = entries.filter((e) => !isMine(e)).map((e) => {
    const fields = taken.size === 0 ? e.fields : keptWhere(e.fields, (p) => !taken.has(p));
    return fields === e.fields ? e : entryOf(e.manager, e.operation, e.apiVersion, e.time, e.subresource, fields);
  });
  yield;
  const appliedBody = include("status") ? a.applied : { ...a.applied, status: undefined };
  const merged = (yield* mergeAppliedSteps(base, a.subresource === "status" ? { status: a.applied.status } : appliedBody, schema, budget)) as KubeObject;
  yield;
  const othersOwn = ownership(entries);
  // Shortest paths first: an element goes whole, and its fields (keys included) are not looked for again.
  const notApplied = previous instanceof FieldTree && appliedFields instanceof FieldTree ? fieldTreeMinus(previous, appliedFields) : [...previous].filter((p) => !appliedFields.has(p));
  const dropped = notApplied.filter((p) => !othersOwn(p)).sort((x, y) => x.length - y.length);
  const removed = new Set<string>();
  const removals: string[][] = [];
  for (const p of dropped) {
    const path = JSON.parse(p) as string[];
    if (prefixTexts(path).some((prefix) => removed.has(prefix))) continue;
    removals.push(path);
    removed.add(p);
  }
  removeAll(merged as unknown as Record<string, unknown>, removals, schema, tables);
  const fields = sameOrNew(previousFields, appliedFields);
  entries.push({ manager: a.manager, operation: "Apply", apiVersion: a.applied.apiVersion, time: table.now(), ...(a.subresource === undefined ? {} : { subresource: a.subresource }), fields });
  refreshLastApplied(a.manager, a.applied, merged);
  if (fields !== previousFields) {
    // The answer shows the new set's `fieldsV1`: written now, as a step of its own, not within the answer's.
    yield;
    fieldsV1Json(fields);
  }
  return { object: merged, entries };
}

function conflictError(conflicts: Array<{ entry: ManagedEntry; path: string }>, resource: ResourceType): ApiError {
  const byManager = new Map<string, string[]>();
  for (const { entry, path } of conflicts) {
    const who = `"${entry.manager}"${entry.apiVersion === "" ? "" : ` using ${entry.apiVersion}`}`;
    const list = byManager.get(who) ?? [];
    list.push(describePath(JSON.parse(path) as string[]));
    byManager.set(who, list);
  }
  const parts = [...byManager].map(([who, fields]) => (fields.length === 1 ? `conflict with ${who}: ${fields[0]}` : `conflicts with ${who}:\n${fields.map((f) => `- ${f}`).join("\n")}`));
  const n = conflicts.length;
  const message = `Apply failed with ${n} conflict${n === 1 ? "" : "s"}: ${parts.join("\n")}`;
  const causes = conflicts.map(({ entry, path }) => ({
    reason: "FieldManagerConflict",
    message: `conflict with "${entry.manager}"${entry.apiVersion === "" ? "" : ` using ${entry.apiVersion}`}`,
    field: describePath(JSON.parse(path) as string[]),
  }));
  return new ApiError("Conflict", 409, message, { group: resource.group, kind: resource.plural, causes });
}

/** The applied configuration's checks: an object, the route's kind, the URL's name; `fieldManager` is required. */
export function checkApplyRequest(fieldManager: string | null, force: boolean, decoded: unknown): void {
  if (fieldManager === null || fieldManager === "") {
    throw invalid("PatchOptions", "", [{ field: "fieldManager", type: "FieldValueRequired", message: "Required value: is required for apply patch" }], "meta.k8s.io");
  }
  if (fieldManager.length > managerLengthMax) {
    throw invalid("PatchOptions", "", [{ field: "fieldManager", type: "FieldValueTooLong", message: `Too long: may not be longer than ${managerLengthMax}` }], "meta.k8s.io");
  }
  if (!isRecord(decoded)) throw badRequest("the applied configuration must be an object");
  if (typeof decoded.apiVersion !== "string" || decoded.apiVersion === "") throw badRequest("invalid object type: apiVersion must be set in an applied configuration");
  if (typeof decoded.kind !== "string" || decoded.kind === "") throw badRequest("invalid object type: kind must be set in an applied configuration");
  void force;
}
