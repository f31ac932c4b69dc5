// CEL for the store: compiling expressions once (a cache keyed by the text, as programs are pure), turning JSON
// values into CEL values the way the API server does (integers of the schema are CEL `int`, not `double`), and
// the `x-kubernetes-validations` rules of CRD schemas, including transition rules on `oldSelf` and ratcheting of
// unchanged values. The scenario module reuses `compileCel` and `toCel` for properties written in CEL.
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import type * as CelModule from "@bufbuild/cel";
import type { CelEnv, CelFunc, CelValue } from "@bufbuild/cel";
import type * as CelExtModule from "@bufbuild/cel/ext";
import type { FieldError } from "../api/errors.ts";
import { isRecord, jsonEqual } from "../api/json.ts";

/** A compiled expression: evaluates with the given variables, returning a value or an `Error` (never throws). */
export type CelProgram = (bindings: Record<string, unknown>) => CelValue | Error;

interface CelLibrary {
  cel: typeof CelModule;
  strings: typeof CelExtModule.strings;
  /** The standard library and the strings extension: the environment of CRD validation rules. */
  sharedEnv: CelEnv;
}

let library: CelLibrary | undefined;

/**
 * @bufbuild/cel with the protobuf runtime it needs is about 130 files and 100-250 ms of start-up, which every
 * `settle serve` and every explore worker would pay although most stores never see a CEL rule. So it is loaded
 * synchronously on first use (the store's API is synchronous): by the first CRD or custom resource with
 * `x-kubernetes-validations`, or the first scenario expression.
 */
function celLibrary(): CelLibrary {
  if (library === undefined) {
    const cel = requireCel<typeof CelModule>("@bufbuild/cel");
    const { strings } = requireCel<typeof CelExtModule>("@bufbuild/cel/ext");
    library = { cel, strings, sharedEnv: cel.celEnv({ funcs: strings }) };
  }
  return library;
}

/**
 * One entry of @bufbuild/cel, loaded now. Inside a worker bundle (see workerBundle in src/explore/load.ts) `require`
 * exists and esbuild bundles these literal calls, so the bundled copy is evaluated only here. As an ES module (dist/
 * or the sources) there is no `require`: node's require(esm) of the package's ES build, resolved as an `import`
 * would be, yields the very instance the scenario module's own `import "@bufbuild/cel"` gets. (Under tsx, the
 * sources' loader, it yields a transformed second copy; that works too, as the library brands its values and types
 * with `Symbol.for` keys, which every copy shares.)
 */
function requireCel<T>(specifier: "@bufbuild/cel" | "@bufbuild/cel/ext"): T {
  if (typeof require === "function") return (specifier === "@bufbuild/cel" ? require("@bufbuild/cel") : require("@bufbuild/cel/ext")) as T;
  const load = createRequire(import.meta.url);
  // A module runner that transforms settle itself (vitest inlining a linked package) may lack import.meta.resolve:
  // the package's CommonJS build is then a second copy, which works for the reason above.
  if (typeof import.meta.resolve !== "function") return load(specifier) as T;
  return load(fileURLToPath(import.meta.resolve(specifier))) as T;
}

const programs = new Map<string, CelProgram>();
const programsMax = 2_000;

/**
 * Parses and plans `expression` in `env` (default: the standard library and strings); throws an `Error` with the
 * parser's message when it is not valid CEL.
 */
export function compileCel(expression: string, env?: CelEnv): CelProgram {
  const { cel, sharedEnv } = celLibrary();
  const shared = env === undefined || env === sharedEnv;
  const cached = shared ? programs.get(expression) : undefined;
  if (cached !== undefined) return cached;
  const planned = cel.plan(env ?? sharedEnv, cel.parse(expression));
  const program: CelProgram = (bindings) => {
    try {
      return planned(bindings as never);
    } catch (error) {
      return error instanceof Error ? error : new Error(String(error));
    }
  };
  if (shared) {
    if (programs.size >= programsMax) programs.clear();
    programs.set(expression, program);
  }
  return program;
}

/** The environment with extra functions (the scenario helpers); the standard library and strings stay. */
export function celEnvWith(funcs: readonly CelFunc[]): CelEnv {
  const { cel, strings } = celLibrary();
  return cel.celEnv({ funcs: [...strings, ...funcs] });
}

/**
 * A JSON value as CEL sees it. JSON has one number type, CEL two: a value the schema types `integer` (or, without
 * a schema, any whole number, as the API server decodes unstructured JSON) becomes a CEL `int` (a bigint).
 */
export function toCel(value: unknown, schema?: Record<string, unknown>): unknown {
  if (typeof value === "number") {
    if (schema?.type === "number") return value;
    return Number.isInteger(value) ? BigInt(value) : value;
  }
  if (Array.isArray(value)) {
    const items = isRecord(schema?.items) ? schema.items : undefined;
    return value.map((item) => toCel(item, items));
  }
  if (!isRecord(value)) return value;
  const properties = isRecord(schema?.properties) ? schema.properties : undefined;
  const additional = isRecord(schema?.additionalProperties) ? schema.additionalProperties : undefined;
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    const sub = properties?.[key];
    out[key] = toCel(item, isRecord(sub) ? sub : additional);
  }
  return out;
}

/** A CEL result back as JSON: ints become numbers, CEL maps and lists plain objects and arrays. */
export function fromCel(value: unknown): unknown {
  if (typeof value === "bigint") return Number(value);
  if (typeof value !== "object" || value === null) return value;
  const { isCelList, isCelMap } = celLibrary().cel;
  if (isCelList(value)) return Array.from(value, fromCel);
  if (isCelMap(value)) return Object.fromEntries(Array.from(value.entries(), ([k, v]) => [String(k), fromCel(v)]));
  return value;
}

interface ValidationRule {
  rule: string;
  message?: string;
  messageExpression?: string;
  fieldPath?: string;
  reason?: string;
  optionalOldSelf?: boolean;
}

function rulesOf(schema: Record<string, unknown>): ValidationRule[] {
  const rules = schema["x-kubernetes-validations"];
  return Array.isArray(rules) ? rules.filter((r): r is ValidationRule => isRecord(r) && typeof r.rule === "string") : [];
}

/** Whether a rule reads `oldSelf` (a transition rule): such rules run only on updates with a correlated old value. */
function isTransitionRule(rule: string): boolean {
  return /\boldSelf\b/.test(rule);
}

const schemasWithRules = new WeakMap<object, boolean>();

/** Whether any node of the schema carries `x-kubernetes-validations` (cached: most CRDs have none). */
export function hasCelRules(schema: Record<string, unknown>): boolean {
  const known = schemasWithRules.get(schema);
  if (known !== undefined) return known;
  let found = rulesOf(schema).length > 0;
  for (const sub of childSchemas(schema)) found ||= hasCelRules(sub);
  schemasWithRules.set(schema, found);
  return found;
}

function childSchemas(schema: Record<string, unknown>): Record<string, unknown>[] {
  const children: Record<string, unknown>[] = [];
  if (isRecord(schema.properties)) for (const sub of Object.values(schema.properties)) if (isRecord(sub)) children.push(sub);
  if (isRecord(schema.additionalProperties)) children.push(schema.additionalProperties);
  if (isRecord(schema.items)) children.push(schema.items);
  return children;
}

/**
 * The rules of a CRD version's schema that do not compile, as the API server rejects such a CRD. `base` is the
 * schema's field path, e.g. `spec.versions[0].schema.openAPIV3Schema`.
 */
export function celRuleDefinitionErrors(schema: Record<string, unknown>, base: string): FieldError[] {
  const errors: FieldError[] = [];
  rulesOf(schema).forEach((rule, i) => {
    for (const key of ["rule", "messageExpression"] as const) {
      const text = rule[key];
      if (typeof text !== "string") continue;
      try {
        compileCel(text);
      } catch (error) {
        const why = error instanceof Error ? error.message : String(error);
        errors.push({ field: `${base}.x-kubernetes-validations[${i}].${key}`, type: "FieldValueInvalid", message: `Invalid value: ${JSON.stringify(text)}: compilation failed: ${why}` });
      }
    }
  });
  if (isRecord(schema.properties)) {
    for (const [key, sub] of Object.entries(schema.properties)) if (isRecord(sub)) errors.push(...celRuleDefinitionErrors(sub, `${base}.properties[${key}]`));
  }
  if (isRecord(schema.additionalProperties)) errors.push(...celRuleDefinitionErrors(schema.additionalProperties, `${base}.additionalProperties`));
  if (isRecord(schema.items)) errors.push(...celRuleDefinitionErrors(schema.items, `${base}.items`));
  return errors;
}

/**
 * The `x-kubernetes-validations` rules a custom resource breaks, worded as the API server words them:
 * `<path>: Invalid value: "<schema type>": <message>`, where the message is the rule's `message`, its evaluated
 * `messageExpression`, or `failed rule: <rule>`. `old` is the stored object on update (transition rules and
 * ratcheting), undefined on create.
 */
export function celRuleErrors(schema: Record<string, unknown>, object: unknown, old: unknown): FieldError[] {
  if (!hasCelRules(schema)) return [];
  const errors: FieldError[] = [];
  validateNode(schema, object, old, "", errors);
  return errors;
}

function validateNode(schema: Record<string, unknown>, value: unknown, old: unknown, path: string, errors: FieldError[]): void {
  if (value === undefined || value === null || !hasCelRules(schema)) return;
  const rules = rulesOf(schema);
  if (rules.length > 0) {
    const unchanged = old !== undefined && jsonEqual(value, old);
    const bindings = { self: toCel(value, schema), oldSelf: old === undefined ? null : toCel(old, schema) };
    for (const rule of rules) {
      const transition = isTransitionRule(rule.rule);
      // A transition rule needs an old value to compare with; a plain rule is not re-checked on a value the
      // update did not change (ratcheting), so an object stored before a rule existed can still be updated.
      if (transition && old === undefined && rule.optionalOldSelf !== true) continue;
      if (!transition && unchanged) continue;
      const error = checkRule(rule, bindings, schema, path);
      if (error !== undefined) errors.push(error);
    }
  }
  for (const [, sub, child, oldChild, childPath] of children(schema, value, old, path)) {
    validateNode(sub, child, oldChild, childPath, errors);
  }
}

function checkRule(rule: ValidationRule, bindings: Record<string, unknown>, schema: Record<string, unknown>, path: string): FieldError | undefined {
  const typeName = typeof schema.type === "string" ? schema.type : "object";
  // The API server validates a custom resource from a nil field path: a rule at the root prints as `<nil>`.
  const field = joinFieldPath(path, rule.fieldPath) || "<nil>";
  let result: CelValue | Error;
  try {
    result = compileCel(rule.rule)(bindings);
  } catch (error) {
    result = error instanceof Error ? error : new Error(String(error));
  }
  if (result === true) return undefined;
  if (result instanceof Error) {
    return { field, type: "FieldValueInvalid", message: `Invalid value: ${JSON.stringify(typeName)}: ${result.message} evaluating rule: ${rule.rule}` };
  }
  const detail = failureMessage(rule, bindings);
  switch (rule.reason) {
    case "FieldValueForbidden":
      return { field, type: "FieldValueForbidden", message: `Forbidden: ${detail}` };
    case "FieldValueRequired":
      return { field, type: "FieldValueRequired", message: `Required value: ${detail}` };
    case "FieldValueDuplicate":
      return { field, type: "FieldValueDuplicate", message: `Duplicate value: ${JSON.stringify(typeName)}` };
    default:
      return { field, type: "FieldValueInvalid", message: `Invalid value: ${JSON.stringify(typeName)}: ${detail}` };
  }
}

/** `messageExpression` wins when it yields a non-blank one-line string; then `message`; then the rule itself. */
function failureMessage(rule: ValidationRule, bindings: Record<string, unknown>): string {
  if (typeof rule.messageExpression === "string") {
    let text: unknown;
    try {
      text = compileCel(rule.messageExpression)(bindings);
    } catch {
      text = undefined;
    }
    if (typeof text === "string" && text.trim() !== "" && !text.includes("\n")) return text;
  }
  if (typeof rule.message === "string" && rule.message !== "") return rule.message;
  return `failed rule: ${rule.rule.trim()}`;
}

function joinFieldPath(path: string, relative: string | undefined): string {
  if (relative === undefined || relative === "") return path;
  const tail = relative.startsWith(".") ? relative.slice(1) : relative;
  return path === "" ? tail : relative.startsWith("[") ? `${path}${relative}` : `${path}.${tail}`;
}

type Child = [key: string, schema: Record<string, unknown>, value: unknown, old: unknown, path: string];

/**
 * The children of a value with their schemas and correlated old values. Object properties and map entries
 * correlate by key; list items only in `x-kubernetes-list-type: map` lists, by their map keys (as in Kubernetes,
 * items of other lists have no old value, so transition rules under them do not run).
 */
function children(schema: Record<string, unknown>, value: unknown, old: unknown, path: string): Child[] {
  const out: Child[] = [];
  if (Array.isArray(value) && isRecord(schema.items)) {
    const keys = schema["x-kubernetes-list-type"] === "map" && Array.isArray(schema["x-kubernetes-list-map-keys"]) ? (schema["x-kubernetes-list-map-keys"] as string[]) : undefined;
    const oldItems = Array.isArray(old) ? old : [];
    value.forEach((item, i) => {
      const match = keys === undefined ? undefined : oldItems.find((o) => isRecord(o) && isRecord(item) && keys.every((k) => jsonEqual(o[k], item[k])));
      out.push([String(i), schema.items as Record<string, unknown>, item, match, `${path}[${i}]`]);
    });
    return out;
  }
  if (!isRecord(value)) return out;
  const oldObject = isRecord(old) ? old : undefined;
  const properties = isRecord(schema.properties) ? schema.properties : undefined;
  const additional = isRecord(schema.additionalProperties) ? schema.additionalProperties : undefined;
  for (const [key, child] of Object.entries(value)) {
    const sub = properties?.[key];
    if (isRecord(sub)) out.push([key, sub, child, oldObject?.[key], path === "" ? key : `${path}.${key}`]);
    else if (additional !== undefined) out.push([key, additional, child, oldObject?.[key], `${path}[${key}]`]);
  }
  return out;
}
