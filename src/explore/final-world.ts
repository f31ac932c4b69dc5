// The world a finding ended in, for reports: the scenario's own summary line when it has one, otherwise a compact
// view of the objects the failing property read (its predicate evaluated once more on the final world through a
// view that records every read). Bounded: a few objects, each on one line cut to a fixed width.
import { describeRef, type KubeObject } from "../api/object.ts";
import type { Property } from "../check/properties.ts";
import { unknownStep } from "../check/properties.ts";
import { describeThrown, thrownLine } from "../check/thrown.ts";
import type { WorldView } from "../sim/types.ts";

/** Objects shown at most, over every get and list the property made. */
export const finalObjectsMax = 12;
/** Characters of one object's line at most. */
export const finalObjectCharsMax = 240;

/**
 * Lines describing the final world: `summary` (the scenario's) when given, else the objects `property` reads.
 * Empty when there is neither. Never throws: a summary or predicate that throws is described instead.
 */
export function finalWorld(view: WorldView, summary: ((view: WorldView) => string) | undefined, property: Property | undefined): string[] {
  if (summary !== undefined) {
    try {
      return [`summary: ${String(summary(view))}`];
    } catch (error) {
      return [`summary: ${thrownLine(describeThrown("the scenario's summary", error))}`];
    }
  }
  if (property === undefined) return [];
  const read = readObjects(view, property);
  if (read.objects.length === 0 && read.externals.length === 0) return [`${property.name} read no object`];
  const lines = [`objects ${JSON.stringify(property.name)} read:`];
  for (const object of read.objects.slice(0, finalObjectsMax)) lines.push(`  ${compactObject(object)}`);
  if (read.objects.length > finalObjectsMax) lines.push(`  ... ${read.objects.length - finalObjectsMax} more`);
  for (const [name, value] of read.externals) lines.push(`  ${cut(`external ${name}: ${json(value)}`)}`);
  for (const missing of read.missing) lines.push(`  ${missing}: absent`);
  return lines;
}

interface Read {
  objects: KubeObject[];
  missing: string[];
  externals: Array<[string, unknown]>;
}

/** Evaluates the predicate once on `view`, recording what it gets and lists (its value is not used). */
function readObjects(view: WorldView, property: Property): Read {
  const seen = new Set<string>();
  const read: Read = { objects: [], missing: [], externals: [] };
  const keep = (object: KubeObject) => {
    const key = `${object.apiVersion}/${refText(object)}`;
    if (seen.has(key)) return;
    seen.add(key);
    read.objects.push(object);
  };
  const recording: WorldView = {
    get revision() {
      return view.revision;
    },
    now: () => view.now(),
    get: (ref) => {
      const object = view.get(ref);
      if (object === undefined) {
        const missing = describeRef(ref);
        if (!read.missing.includes(missing)) read.missing.push(missing);
      } else keep(object);
      return object;
    },
    list: (options) => {
      const objects = view.list(options);
      for (const object of objects) keep(object);
      return objects;
    },
    external: <T>(name: string): T => {
      const value = view.external<T>(name);
      if (!read.externals.some(([n]) => n === name)) read.externals.push([name, value]);
      return value;
    },
  };
  try {
    property.predicate(recording, unknownStep);
  } catch {
    // What it read before it threw is still what it looked at.
  }
  return read;
}

/** One line: the object's ref, generation, and its spec, status and data as JSON, cut to a fixed width. */
export function compactObject(object: KubeObject): string {
  const parts = [refText(object)];
  if (object.metadata.generation !== undefined) parts.push(`generation ${object.metadata.generation}`);
  if (object.metadata.deletionTimestamp !== undefined) parts.push("deleting");
  const record = object as unknown as Record<string, unknown>;
  for (const field of ["spec", "status", "data"]) if (record[field] !== undefined) parts.push(`${field} ${json(record[field])}`);
  return cut(parts.join(" "));
}

function refText(object: KubeObject): string {
  return describeRef({ kind: object.kind, namespace: object.metadata.namespace, name: object.metadata.name });
}

function json(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

function cut(text: string): string {
  return text.length <= finalObjectCharsMax ? text : `${text.slice(0, finalObjectCharsMax - 3)}...`;
}
