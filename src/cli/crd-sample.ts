// Values that satisfy a CRD's structural schema, for the object `settle init --crd` writes and the change its
// workload makes: patterns (strings generated from the regular expression with randexp, seeded), formats, enums,
// bounds and lengths, required fields at every depth, arrays and maps of the sizes asked, list-map keys kept
// unique, int-or-string, embedded resources. CEL rules (x-kubernetes-validations) cannot be solved in general, so
// the caller tries a few candidates (required fields only, every field, other seeds) against the store's own CRD
// validation and keeps the first the store accepts.
import randexp from "randexp";
import { Rng } from "../sim/rng.ts";
import { cloneJson } from "../api/json.ts";

export type Schema = {
  type?: string;
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  additionalProperties?: boolean | Schema;
  default?: unknown;
  enum?: unknown[];
  pattern?: string;
  format?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: boolean;
  exclusiveMaximum?: boolean;
  multipleOf?: number;
  minItems?: number;
  maxItems?: number;
  uniqueItems?: boolean;
  minProperties?: number;
  oneOf?: Schema[];
  anyOf?: Schema[];
  allOf?: Schema[];
  "x-kubernetes-int-or-string"?: boolean;
  "x-kubernetes-preserve-unknown-fields"?: boolean;
  "x-kubernetes-embedded-resource"?: boolean;
  "x-kubernetes-list-type"?: string;
  "x-kubernetes-list-map-keys"?: string[];
};

export interface SampleOptions {
  /** Fill optional fields too (a CEL rule may ask for one of them); default: required fields only. */
  full: boolean;
  /** Picks among valid values: 0 the plainest, others other strings and numbers. */
  variant: number;
}

/** Nesting followed at most: deeper objects are left empty (recursive schemas are not structural, but be safe). */
const depthMax = 12;
/** Attempts at a string matching a pattern within its length bounds. */
const patternTriesMax = 24;
/** Repetitions randexp gives an unbounded `*` or `+`. */
const patternRepeatMax = 4;

// randexp is CommonJS (`module.exports = RandExp`) with declarations that say `export default`: at run time the
// default import is the class itself.
const RandExp = randexp as unknown as typeof randexp.default;

/** Sample values for well-known formats (kube-openapi's), each valid for its format. */
const formats: Readonly<Record<string, string>> = {
  "date-time": "2024-01-01T00:00:00Z",
  datetime: "2024-01-01T00:00:00Z",
  date: "2024-01-01",
  duration: "1h",
  uri: "https://example.com/",
  email: "user@example.com",
  hostname: "example.com",
  ipv4: "192.0.2.1",
  ipv6: "2001:db8::1",
  cidr: "192.0.2.0/24",
  mac: "00:00:5e:00:53:01",
  uuid: "123e4567-e89b-42d3-a456-426614174000",
  uuid3: "a3bb189e-8bf9-3888-9912-ace4e6543002",
  uuid4: "123e4567-e89b-42d3-a456-426614174000",
  uuid5: "a6edc906-2f9f-5fb2-a373-efac406f0ef2",
  byte: "ZXhhbXBsZQ==",
  hexcolor: "#00ff00",
  rgbcolor: "rgb(0,255,0)",
  password: "example",
  bsonobjectid: "507f1f77bcf86cd799439011",
};

/** A value that satisfies `schema` (see the file's comment); `path` seeds the generated strings. */
export function sampleValue(schema: Schema | undefined, options: SampleOptions, path = "", depth = 0): unknown {
  if (schema === undefined) return {};
  if (schema.default !== undefined && options.variant === 0) return cloneJson(schema.default);
  if (schema.enum !== undefined && schema.enum.length > 0) return schema.enum[options.variant % schema.enum.length];
  const type = schema.type ?? inferType(schema);
  switch (type) {
    case "string":
      return sampleString(schema, options.variant, path);
    case "integer":
    case "number":
      return sampleNumber(schema, options.variant, type === "integer");
    case "boolean":
      return options.variant % 2 === 1;
    case "array":
      return sampleArray(schema, options, path, depth);
    default:
      return sampleObject(schema, options, path, depth);
  }
}

function inferType(schema: Schema): string {
  if (schema["x-kubernetes-int-or-string"] === true) return schema.pattern !== undefined || schema.format !== undefined ? "string" : "integer";
  if (schema.items !== undefined) return "array";
  return "object";
}

/** A string in the schema's format, or matching its pattern, within its length bounds. */
export function sampleString(schema: Schema, variant: number, path: string): string {
  const min = schema.minLength ?? 0;
  const max = schema.maxLength ?? Number.POSITIVE_INFINITY;
  const fits = (s: string) => [...s].length >= min && [...s].length <= max && (schema.pattern === undefined || new RegExp(schema.pattern, "u").test(s));
  const known = schema.format === undefined ? undefined : formats[schema.format];
  if (known !== undefined && variant === 0 && fits(known)) return known;
  if (schema.pattern !== undefined) {
    // The shortest of a few matches: a sample people read, not a random wall of characters.
    let best: string | undefined;
    for (let attempt = 0; attempt < patternTriesMax; attempt++) {
      const generated = fromPattern(schema.pattern, seedOf(`${path}#${variant}#${attempt}`), attempt);
      if (generated === undefined) continue;
      // Too short for minLength: the pattern may allow a longer form with padding.
      const candidate = fits(generated) ? generated : fitLength(generated, min, max);
      if (fits(candidate) && (best === undefined || [...candidate].length < [...best].length)) best = candidate;
    }
    if (best !== undefined) return best;
  }
  const base = known ?? (variant === 0 ? "example" : `example-${variant}`);
  return fitLength(base, min, max);
}

function fitLength(text: string, min: number, max: number): string {
  let out = text;
  while ([...out].length < min) out += "x";
  return [...out].slice(0, Number.isFinite(max) ? max : undefined).join("");
}

/** A string the regular expression matches, from a seeded generator (the same scaffold for the same CRD). */
function fromPattern(pattern: string, seed: number, attempt: number): string | undefined {
  try {
    const generator = new RandExp(pattern) as InstanceType<typeof RandExp> & { randInt(from: number, to: number): number };
    const rng = new Rng(seed);
    generator.max = attempt < patternTriesMax / 2 ? patternRepeatMax : patternRepeatMax * 4;
    // Seeded instead of Math.random: the same CRD always gets the same scaffold.
    generator.randInt = (from: number, to: number) => from + rng.int(to - from + 1);
    return generator.gen();
  } catch {
    return undefined;
  }
}

function seedOf(text: string): number {
  let hash = 2166136261;
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 16777619) >>> 0;
  return hash;
}

/** The smallest valid number above the bounds (1 when unbounded), `variant` steps further while within them. */
export function sampleNumber(schema: Schema, variant: number, integer: boolean): number {
  const step = schema.multipleOf ?? 1;
  let low = schema.minimum ?? (schema.maximum !== undefined ? Math.min(1, schema.maximum) : 1);
  if (schema.minimum !== undefined && schema.exclusiveMinimum === true) low += integer ? 1 : step / 2;
  if (schema.minimum === undefined && schema.maximum !== undefined && schema.exclusiveMaximum === true && low >= schema.maximum) low = schema.maximum - 1;
  let value = schema.multipleOf !== undefined ? Math.ceil(low / step) * step : integer ? Math.ceil(low) : low;
  const within = (v: number) =>
    schema.maximum === undefined || (schema.exclusiveMaximum === true ? v < schema.maximum : v <= schema.maximum);
  if (within(value + variant * step)) value += variant * step;
  return value;
}

function sampleArray(schema: Schema, options: SampleOptions, path: string, depth: number): unknown[] {
  if (depth >= depthMax) return [];
  const count = Math.max(schema.minItems ?? 0, options.full && (schema.maxItems ?? 1) >= 1 ? 1 : 0);
  const keys = schema["x-kubernetes-list-map-keys"] ?? [];
  const unique = schema.uniqueItems === true || schema["x-kubernetes-list-type"] === "set" || keys.length > 0;
  const items: unknown[] = [];
  const seen = new Set<string>();
  for (let i = 0; items.length < count && i < count * 8 + 8; i++) {
    const item = sampleValue(schema.items, { ...options, variant: options.variant + i }, `${path}[${i}]`, depth + 1);
    const key = JSON.stringify(keys.length > 0 && isObject(item) ? keys.map((k) => item[k]) : item);
    if (unique && seen.has(key)) continue;
    seen.add(key);
    items.push(item);
  }
  return items;
}

function sampleObject(schema: Schema, options: SampleOptions, path: string, depth: number): Record<string, unknown> {
  if (schema["x-kubernetes-embedded-resource"] === true && schema.properties === undefined) return { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "example" } };
  if (depth >= depthMax) return {};
  const properties = { ...schema.properties };
  for (const part of schema.allOf ?? []) Object.assign(properties, part.properties);
  // oneOf/anyOf in a structural schema only add constraints (`required` of one branch); the first branch is taken.
  const branch = schema.oneOf?.[0] ?? schema.anyOf?.[0];
  const required = new Set([...(schema.required ?? []), ...(schema.allOf ?? []).flatMap((p) => p.required ?? []), ...(branch?.required ?? [])]);
  const fields = Object.keys(properties).filter((field) => required.has(field) || options.full);
  const object: Record<string, unknown> = {};
  for (const field of fields) object[field] = sampleValue(properties[field], options, `${path}.${field}`, depth + 1);
  if (schema["x-kubernetes-embedded-resource"] === true) {
    object.apiVersion ??= "v1";
    object.kind ??= "ConfigMap";
    object.metadata ??= { name: "example" };
  }
  const extra = typeof schema.additionalProperties === "object" ? schema.additionalProperties : undefined;
  const wanted = Math.max(schema.minProperties ?? 0, extra !== undefined && options.full ? Object.keys(object).length + 1 : 0);
  for (let i = 1; extra !== undefined && Object.keys(object).length < wanted; i++) object[`key${i}`] = sampleValue(extra, options, `${path}.key${i}`, depth + 1);
  return object;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
