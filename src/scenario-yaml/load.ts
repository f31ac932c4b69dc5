// Loading `scenario.yaml`: parse (keeping positions), validate against the JSON Schema, load the world's
// manifests into a scratch store (so a bad world fails at load, with the store's own error), and compile every CEL
// expression. Every error names the file, the line and column, the field and, for CEL, the expression.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { basename, dirname, extname, join, resolve } from "node:path";
import { Ajv } from "ajv";
import { LineCounter, parseAllDocuments, parseDocument, type Document } from "yaml";
import { isApiError } from "../api/errors.ts";
import { cloneJson, isRecord } from "../api/json.ts";
import type { KindRef, KubeObject } from "../api/object.ts";
import { always, eventually, type Property } from "../check/properties.ts";
import { createStore } from "../store/index.ts";
import type { Store } from "../store/types.ts";
import { scenarioSchema } from "./schema.ts";
import { compileWorldExpression, kindTable, WorldExpressionError, type KindTable, type WorldExpression } from "./world.ts";

export class ScenarioYamlError extends Error {
  override name = "ScenarioYamlError";
}

export type WorkloadStep =
  | { kind: "apply"; object: KubeObject; at: string }
  | { kind: "patch"; ref: Ref; merge?: unknown; json?: unknown[]; status: boolean; at: string }
  | { kind: "delete"; ref: Ref; at: string }
  | { kind: "sleep"; ms: number; at: string }
  | { kind: "waitFor"; condition: WorldExpression; timeoutMs: number; at: string };

export interface Ref {
  kind: string;
  apiVersion?: string;
  namespace?: string;
  name: string;
}

export interface YamlVariant {
  description?: string;
  command?: string[];
  /** The controller module, absolute (resolved against the scenario's folder at load; the file exists then). */
  module?: string;
  /** The Go main package's folder, absolute (resolved against the scenario's folder at load; a folder then). */
  go?: string;
  /** The module's process.argv after its path, or the Go program's arguments. */
  args?: string[];
  /** How many instances of the module or Go program run (default 1). */
  replicas?: number;
  expect?: "finding" | "ok";
  /** What settle drill finds, where it differs from `expect` (default: `expect`). */
  drillExpect?: "finding" | "ok";
  env?: Record<string, string>;
}

export interface YamlScenario {
  name: string;
  description?: string;
  /** The scenario file, absolute. */
  path: string;
  variants: Record<string, YamlVariant>;
  /** The world's objects in creation order (ownerReferences without a uid are resolved when created). */
  world: KubeObject[];
  workload: WorkloadStep[];
  properties: Property[];
  /** The compiled expressions of `properties`, in the same order (their last evaluation errors). */
  expressions: WorldExpression[];
  kinds: KindTable;
  /** Whether a kind is namespaced, as the world's store serves it; a kind it does not serve counts as namespaced. */
  namespaced(kind: KindRef): boolean;
  faults: "none" | { kinds?: string[]; afterWrites?: number[] };
  drill: { quietMs?: number; timeoutMs?: number; coldStart?: boolean };
}

const ajv = new Ajv({ allErrors: true, strict: false });
const validateSchema = ajv.compile(scenarioSchema);
const manifestExtensions = new Set([".yaml", ".yml", ".json"]);
const waitTimeoutMsDefault = 30_000;

export function isYamlScenarioPath(path: string): boolean {
  return /\.ya?ml$/i.test(path) && !(statSafe(path)?.isDirectory() ?? false);
}

function statSafe(path: string) {
  try {
    return statSync(path);
  } catch {
    return undefined;
  }
}

/** Whether a YAML text is a settle scenario (a mapping with `variants` and `properties`) rather than manifests. */
export function isScenarioText(text: string): boolean {
  try {
    const value = parseDocument(text).toJS() as unknown;
    return isRecord(value) && "variants" in value && "properties" in value && !("apiVersion" in value);
  } catch {
    return false;
  }
}

/** Where a field of the document is: `file:line:col`. */
function locate(file: string, doc: Document, counter: LineCounter, path: readonly (string | number)[]): string {
  for (let n = path.length; n >= 0; n--) {
    const node = doc.getIn(path.slice(0, n), true) as { range?: [number, number, number] } | undefined;
    if (node?.range !== undefined) {
      const { line, col } = counter.linePos(node.range[0]);
      return `${file}:${line}:${col}`;
    }
  }
  return `${file}:1:1`;
}

function fieldName(path: readonly (string | number)[]): string {
  return path.map((p, i) => (typeof p === "number" ? `[${p}]` : i === 0 ? p : `.${p}`)).join("");
}

export function loadYamlScenario(path: string): YamlScenario {
  const file = resolve(path);
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    throw new ScenarioYamlError(`${path}: ${error instanceof Error ? error.message : String(error)}`);
  }
  const counter = new LineCounter();
  const doc = parseDocument(text, { lineCounter: counter, prettyErrors: false });
  if (doc.errors.length > 0) {
    const error = doc.errors[0]!;
    const { line, col } = counter.linePos(error.pos[0]);
    throw new ScenarioYamlError(`${path}:${line}:${col}: ${error.message.split("\n")[0]}`);
  }
  const value = doc.toJS() as unknown;
  const at = (p: readonly (string | number)[]) => locate(path, doc, counter, p);
  if (!validateSchema(value)) {
    const lines = (validateSchema.errors ?? []).slice(0, 10).map((e) => {
      const parts = e.instancePath.split("/").slice(1).map((s) => (/^\d+$/.test(s) ? Number(s) : s.replace(/~1/g, "/").replace(/~0/g, "~")));
      const extra = e.keyword === "additionalProperties" ? ` (${String(e.params.additionalProperty)})` : e.keyword === "enum" ? ` (${(e.params.allowedValues as unknown[]).join(", ")})` : "";
      return `${at(parts)}: ${fieldName(parts) || "(top)"}: ${e.message ?? "is invalid"}${extra}`;
    });
    throw new ScenarioYamlError(`${lines.join("\n")}`);
  }
  const atOffset = (p: readonly (string | number)[], offset: number) => locateInScalar(path, text, doc, counter, p, offset);
  return build(value as unknown as Record<string, unknown>, file, path, at, atOffset);
}

/**
 * Where character `offset` of a string field is: `file:line:col`. A plain or quoted scalar on one line counts from
 * its first character (after the quote); a block scalar (`|`, `>`) from the first character of its line in the
 * file, line by line. Escapes in a quoted scalar are not undone (the column is then approximate).
 */
function locateInScalar(file: string, source: string, doc: Document, counter: LineCounter, path: readonly (string | number)[], offset: number): string {
  const node = doc.getIn(path, true) as { range?: [number, number, number]; type?: string; source?: string } | undefined;
  if (node?.range === undefined) return locate(file, doc, counter, path);
  const start = node.range[0];
  const value = String((node as { value?: unknown }).value ?? "");
  const chars = [...value];
  const before = chars.slice(0, Math.min(offset, chars.length)).join("");
  const lineIndex = before.split("\n").length - 1;
  const column = before.length - (before.lastIndexOf("\n") + 1);
  const { line, col } = counter.linePos(start);
  if (node.type === "BLOCK_LITERAL" || node.type === "BLOCK_FOLDED") {
    // The header (`|`) ends its line; the text starts on the next, indented.
    const lines = source.split("\n");
    const textLine = line + 1 + lineIndex;
    const indent = /^ */.exec(lines[line] ?? "")![0].length;
    return `${file}:${textLine}:${indent + column + 1}`;
  }
  const quote = node.type === "QUOTE_DOUBLE" || node.type === "QUOTE_SINGLE" ? 1 : 0;
  return lineIndex === 0 ? `${file}:${line}:${col + quote + column}` : `${file}:${line + lineIndex}:${column + 1}`;
}

function build(
  raw: Record<string, unknown>,
  file: string,
  shown: string,
  at: (p: readonly (string | number)[]) => string,
  atOffset: (p: readonly (string | number)[], offset: number) => string,
): YamlScenario {
  const world = loadWorld(raw.world as Record<string, unknown> | undefined, dirname(file), shown, at);
  const scratch = createStore({ now: () => 0 });
  createWorld(scratch, world, (object, message) => `${shown}: world: ${object.kind} ${object.metadata.name ?? "?"}: ${message}`);
  const kinds = kindTable(scratch);
  const compile = (expression: string, where: readonly (string | number)[]) => {
    try {
      return compileWorldExpression(expression, kinds);
    } catch (error) {
      const place = error instanceof WorldExpressionError ? atOffset(where, error.offset) : at(where);
      throw new ScenarioYamlError(`${place}: ${fieldName(where)}: ${JSON.stringify(expression)}: ${error instanceof Error ? error.message : String(error)}`);
    }
  };
  const rawProperties = raw.properties as Array<Record<string, unknown>>;
  const expressions = rawProperties.map((p, i) => compile(p.expr as string, ["properties", i, "expr"]));
  const properties = rawProperties.map((p, i) => property(p, expressions[i]!, at(["properties", i])));
  const workload = ((raw.workload as Array<Record<string, unknown>> | undefined) ?? []).map((s, i) => workloadStep(s, i, compile, at));
  const scenario: YamlScenario = {
    name: raw.name as string,
    path: file,
    variants: variants(raw.variants as Record<string, YamlVariant>, dirname(file), at),
    world,
    workload,
    properties,
    expressions,
    kinds,
    namespaced: (kind) => {
      try {
        return scratch.resourceFor(kind).namespaced;
      } catch (error) {
        // A kind the world does not serve (a CRD the workload creates, say): as kubectl would, given a namespace.
        if (isApiError(error)) return true;
        throw error;
      }
    },
    faults: (raw.faults as YamlScenario["faults"] | undefined) ?? {},
    drill: (raw.drill as YamlScenario["drill"] | undefined) ?? {},
  };
  if (typeof raw.description === "string") scenario.description = raw.description;
  return scenario;
}

/** The variants with each `module` resolved against the scenario's folder; a module that is not a file fails the load. */
function variants(raw: Record<string, YamlVariant>, dir: string, at: (p: readonly (string | number)[]) => string): Record<string, YamlVariant> {
  const out: Record<string, YamlVariant> = {};
  for (const [name, variant] of Object.entries(raw)) {
    out[name] = { ...variant };
    for (const field of ["args", "replicas"] as const) {
      if (variant[field] !== undefined && variant.module === undefined && variant.go === undefined) {
        throw new ScenarioYamlError(`${at(["variants", name, field])}: variants.${name}.${field}: given without module or go (it is the program's ${field === "args" ? "arguments" : "instance count"})`);
      }
    }
    if (variant.go !== undefined && variant.module !== undefined) {
      throw new ScenarioYamlError(`${at(["variants", name, "go"])}: variants.${name}: module and go both given (a variant runs one program: a Node.js module or a Go package)`);
    }
    if (variant.go !== undefined) out[name]!.go = goPackageDir(variant.go, dir, ["variants", name, "go"], at);
    if (variant.module === undefined) continue;
    const path = resolve(dir, variant.module);
    const stat = statSafe(path);
    if (stat === undefined || !stat.isFile()) {
      const what = stat === undefined ? "no such file" : "not a file";
      throw new ScenarioYamlError(`${at(["variants", name, "module"])}: variants.${name}.module: ${variant.module}: ${what} (resolved against the scenario's folder: ${path})`);
    }
    out[name]!.module = path;
  }
  return out;
}

/** A `go:` folder resolved against the scenario's folder; it must be a folder with Go files inside a Go module. */
function goPackageDir(given: string, dir: string, path: readonly (string | number)[], at: (p: readonly (string | number)[]) => string): string {
  const abs = resolve(dir, given);
  const stat = statSafe(abs);
  const where = `${at(path)}: ${path.join(".")}: ${given}`;
  if (stat === undefined || !stat.isDirectory()) {
    throw new ScenarioYamlError(`${where}: ${stat === undefined ? "no such folder" : "not a folder"} (resolved against the scenario's folder: ${abs})`);
  }
  for (let up = abs; ; up = dirname(up)) {
    if (statSafe(join(up, "go.mod"))?.isFile() === true) return abs;
    if (dirname(up) === up) break;
  }
  throw new ScenarioYamlError(`${where}: no go.mod in ${abs} or any folder above it (a go: variant names a main package inside a Go module)`);
}

function property(raw: Record<string, unknown>, expr: WorldExpression, where: string): Property {
  try {
    if (typeof raw.always === "string") return always(raw.always, (view) => expr.test(view));
    const options = typeof raw.withinMs === "number" ? { withinMs: raw.withinMs } : {};
    return eventually(raw.eventually as string, (view) => expr.test(view), options);
  } catch (error) {
    throw new ScenarioYamlError(`${where}: ${error instanceof Error ? error.message : String(error)}`);
  }
}

function workloadStep(raw: Record<string, unknown>, i: number, compile: (e: string, w: readonly (string | number)[]) => WorldExpression, at: (p: readonly (string | number)[]) => string): WorkloadStep {
  const where = at(["workload", i]);
  if (raw.apply !== undefined) return { kind: "apply", object: raw.apply as KubeObject, at: where };
  if (raw.sleep !== undefined) return { kind: "sleep", ms: raw.sleep as number, at: where };
  if (raw.delete !== undefined) return { kind: "delete", ref: raw.delete as Ref, at: where };
  if (raw.patch !== undefined) {
    const p = raw.patch as Record<string, unknown>;
    const ref: Ref = { kind: p.kind as string, name: p.name as string };
    if (typeof p.apiVersion === "string") ref.apiVersion = p.apiVersion;
    if (typeof p.namespace === "string") ref.namespace = p.namespace;
    return { kind: "patch", ref, ...(p.merge === undefined ? {} : { merge: p.merge }), ...(p.json === undefined ? {} : { json: p.json as unknown[] }), status: p.status === true, at: where };
  }
  const wait = raw.waitFor;
  const condition = typeof wait === "string" ? wait : ((wait as Record<string, unknown>).condition as string);
  const timeoutMs = typeof wait === "string" ? waitTimeoutMsDefault : (((wait as Record<string, unknown>).timeoutMs as number | undefined) ?? waitTimeoutMsDefault);
  const path = typeof wait === "string" ? ["workload", i, "waitFor"] : ["workload", i, "waitFor", "condition"];
  return { kind: "waitFor", condition: compile(condition, path), timeoutMs, at: where };
}

/** The world's manifests: `files` (files and folders, in order) first, then inline `manifests`. */
function loadWorld(raw: Record<string, unknown> | undefined, dir: string, shown: string, at: (p: readonly (string | number)[]) => string): KubeObject[] {
  const objects: KubeObject[] = [];
  ((raw?.files as string[] | undefined) ?? []).forEach((entry, i) => {
    const path = resolve(dir, entry);
    const stat = statSafe(path);
    if (stat === undefined) throw new ScenarioYamlError(`${at(["world", "files", i])}: world.files[${i}]: ${entry}: no such file or folder`);
    const files = stat.isDirectory() ? readdirSync(path).filter((f) => manifestExtensions.has(extname(f))).sort().map((f) => join(path, f)) : [path];
    for (const f of files) objects.push(...manifests(readFileSync(f, "utf8"), `${shown} -> ${basename(f)}`));
  });
  objects.push(...(((raw?.manifests as KubeObject[] | undefined) ?? []).map((o) => cloneJson(o))));
  return objects;
}

function manifests(text: string, where: string): KubeObject[] {
  const out: KubeObject[] = [];
  for (const doc of parseAllDocuments(text)) {
    if (doc.errors.length > 0) throw new ScenarioYamlError(`${where}: ${doc.errors[0]!.message.split("\n")[0]}`);
    const value = doc.toJS() as unknown;
    if (value === null || value === undefined) continue;
    if (isRecord(value) && value.kind === "List" && Array.isArray(value.items)) out.push(...(value.items as KubeObject[]));
    else if (isRecord(value) && isRecord(value.metadata)) out.push(value as KubeObject);
    else throw new ScenarioYamlError(`${where}: a manifest must be an object with apiVersion, kind and metadata`);
  }
  return out;
}

/**
 * Creates the world in a store: namespaced objects without a namespace go to `default`, an ownerReference
 * without a uid gets its owner's (the owner must come first), and a `status` is written through the status
 * subresource after the create, as a controller would have.
 */
export function createWorld(store: Store, world: readonly KubeObject[], describe: (object: KubeObject, message: string) => string = (o, m) => `${o.kind} ${o.metadata.name ?? "?"}: ${m}`): void {
  for (const source of world) {
    const object = cloneJson(source);
    try {
      const resource = store.resourceFor(object);
      if (object.metadata.namespace === undefined && resource.namespaced) object.metadata.namespace = "default";
      for (const ref of object.metadata.ownerReferences ?? []) {
        if (ref.uid !== undefined && ref.uid !== "") continue;
        const owner = store.get({ apiVersion: ref.apiVersion, kind: ref.kind, name: ref.name, ...(resource.namespaced ? { namespace: object.metadata.namespace } : {}) });
        ref.uid = owner.metadata.uid!;
      }
      const created = store.create(object);
      if (object.status !== undefined && resource.statusSubresource) store.updateStatus({ ...created, status: object.status });
    } catch (error) {
      if (!isApiError(error)) throw error;
      throw new ScenarioYamlError(describe(object, error.message));
    }
  }
}
