// CEL over the world: the helpers a scenario's expressions use to read API objects, and the compiled form of an
// expression (a predicate over a `WorldView`). Helpers:
//   get(kind, namespace, name), get(kind, name)           -> the object, or null
//   list(kind), list(kind, namespace), list(kind, namespace, labelSelector)  -> a list of objects
// `kind` is a kind or plural, optionally with its group (`Ensemble`, `ensembles`, `Deployment.apps`); `""` as the
// namespace means every namespace. Integers are CEL ints, as in CRD validation rules.
import { celFunc, CelScalar, listType, parse, type CelEnv } from "@bufbuild/cel";
import type { KindRef } from "../api/object.ts";
import { formatApiVersion } from "../api/object.ts";
import type { WorldView } from "../sim/types.ts";
import { celEnvWith, compileCel, toCel, type CelProgram } from "../store/cel.ts";
import type { Store } from "../store/types.ts";

/** Kind names (lower case: kind, plural, `kind.group`, `plural.group`) to the served kind. */
export type KindTable = ReadonlyMap<string, KindRef>;

/** The kind of a workload's reference or object: its own apiVersion when it gives one, else the table's entry for its kind. */
export function kindIn(kinds: KindTable, ref: { readonly apiVersion?: string | undefined; readonly kind: string }): KindRef {
  if (ref.apiVersion !== undefined) return { apiVersion: ref.apiVersion, kind: ref.kind };
  const found = kinds.get(ref.kind.toLowerCase());
  if (found === undefined) throw new Error(`unknown kind "${ref.kind}"`);
  return found;
}

export function kindTable(store: Store): KindTable {
  const table = new Map<string, KindRef>();
  for (const r of store.resources()) {
    const ref = { apiVersion: formatApiVersion(r), kind: r.kind };
    for (const name of [r.kind, r.plural]) {
      const key = name.toLowerCase();
      // The first kind of a name wins (built-ins come first), as kubectl resolves a bare name.
      if (!table.has(key)) table.set(key, ref);
      if (r.group !== "") table.set(`${key}.${r.group}`, ref);
    }
  }
  return table;
}

/** A compiled expression: `test` for conditions and properties (an error or a non-bool is false, and kept). */
export interface WorldExpression {
  readonly text: string;
  test(view: WorldView): boolean;
  /**
   * The last evaluation error over `view` (undefined after a clean evaluation). Kept per view: one compiled scenario
   * serves a drill's points in parallel, each with its own world, and one point's error must not show in another's.
   */
  lastError(view: WorldView): string | undefined;
}

interface Evaluation {
  view: WorldView | undefined;
  kinds: KindTable;
}

const DYN = CelScalar.DYN;
const STRING = CelScalar.STRING;

function worldEnv(state: Evaluation): CelEnv {
  const resolveKind = (name: string): KindRef => {
    const ref = state.kinds.get(name.toLowerCase());
    if (ref === undefined) throw new Error(`unknown kind "${name}"`);
    return ref;
  };
  const view = (): WorldView => {
    if (state.view === undefined) throw new Error("the world is not available here");
    return state.view;
  };
  const get = (kind: string, namespace: string | undefined, name: string) => {
    const object = view().get({ ...resolveKind(kind), ...(namespace === undefined ? {} : { namespace }), name });
    return object === undefined ? null : (toCel(object) as never);
  };
  const list = (kind: string, namespace?: string, labelSelector?: string) =>
    view()
      .list({ ...resolveKind(kind), ...(namespace === undefined || namespace === "" ? {} : { namespace }), ...(labelSelector === undefined || labelSelector === "" ? {} : { labelSelector }) })
      .map((o) => toCel(o)) as never;
  return celEnvWith([
    celFunc("get", [STRING, STRING, STRING], DYN, (kind, namespace, name) => get(kind, namespace, name)),
    celFunc("get", [STRING, STRING], DYN, (kind, name) => get(kind, undefined, name)),
    celFunc("list", [STRING], listType(DYN), (kind) => list(kind)),
    celFunc("list", [STRING, STRING], listType(DYN), (kind, namespace) => list(kind, namespace)),
    celFunc("list", [STRING, STRING, STRING], listType(DYN), (kind, namespace, selector) => list(kind, namespace, selector)),
  ]);
}

/** A mistake in an expression found before it runs: what, and where in the expression (0-based offset). */
export class WorldExpressionError extends Error {
  override name = "WorldExpressionError";
  constructor(
    message: string,
    /** The offset in the expression's text (in code points, as CEL counts) of the mistake. */
    readonly offset: number,
  ) {
    super(message);
  }
}

/** Type names CEL lets an expression use as values (`type(x) == int`). */
const typeIdentifiers = new Set(["int", "uint", "double", "bool", "string", "bytes", "list", "map", "null_type", "type", "dyn"]);

type CelExpr = ReturnType<typeof parse>["expr"];

/**
 * Checks every name an expression uses against the environment: each function or method is one the environment
 * declares (the standard library, the strings extension and the world helpers) with a matching number of
 * arguments, and each identifier a variable of an enclosing macro (`all`, `exists`, `map`, `filter`). The world
 * expressions have no variables of their own, so any other identifier is a mistake. Evaluation would otherwise
 * meet the mistake only at run time, as "unbound function" at every check. Throws a WorldExpressionError.
 */
function checkNames(text: string, env: CelEnv): void {
  const parsed = parse(text);
  const positions = parsed.sourceInfo?.positions ?? {};
  const at = (expr: CelExpr | undefined): number => (expr === undefined ? 0 : ((positions as Record<string, number>)[String(expr.id)] ?? 0));
  const visit = (expr: CelExpr | undefined, scope: ReadonlySet<string>): void => {
    if (expr === undefined) return;
    const kind = expr.exprKind;
    switch (kind.case) {
      case "identExpr":
        if (!scope.has(kind.value.name) && !typeIdentifiers.has(kind.value.name)) {
          throw new WorldExpressionError(`undeclared reference to "${kind.value.name}" (an expression reads the world through ${helperNames}; its only variables are those of macros such as all(x, ...))`, at(expr));
        }
        return;
      case "selectExpr":
        return visit(kind.value.operand, scope);
      case "callExpr": {
        const { function: name, target, args } = kind.value;
        // CEL places a method call at its dot: the name starts one further.
        if (/^[A-Za-z]/.test(name)) checkCall(env, name, target !== undefined, args.length, at(expr) + (target !== undefined ? 1 : 0));
        visit(target, scope);
        for (const arg of args) visit(arg, scope);
        return;
      }
      case "listExpr":
        for (const element of kind.value.elements) visit(element, scope);
        return;
      case "structExpr":
        for (const entry of kind.value.entries) {
          if (entry.keyKind.case === "mapKey") visit(entry.keyKind.value, scope);
          visit(entry.value, scope);
        }
        return;
      case "comprehensionExpr": {
        const c = kind.value;
        visit(c.iterRange, scope);
        visit(c.accuInit, scope);
        const inner = new Set([...scope, c.iterVar, c.accuVar, ...(c.iterVar2 === "" ? [] : [c.iterVar2])]);
        visit(c.loopCondition, inner);
        visit(c.loopStep, inner);
        visit(c.result, new Set([...scope, c.accuVar]));
        return;
      }
      default:
        return;
    }
  };
  visit(parsed.expr, new Set());
}

const helperNames = "get(kind, namespace, name), get(kind, name) and list(kind[, namespace[, labelSelector]])";

function checkCall(env: CelEnv, name: string, method: boolean, argCount: number, offset: number): void {
  const group = env.funcs.find(name);
  const overloads = group === undefined ? [] : [...group];
  const what = method ? `method .${name}()` : `function ${name}()`;
  if (overloads.length === 0) {
    const known = [...new Set([...env.funcs].filter((f) => (f.target !== undefined) === method).map((f) => f.name).filter((n) => /^[A-Za-z]/.test(n)))].sort();
    const near = nearest(name, known);
    const hint = near !== undefined ? `did you mean ${near}?` : `known: ${known.join(", ")}`;
    throw new WorldExpressionError(`unknown ${what} (${hint})`, offset);
  }
  const fits = overloads.filter((f) => (f.target !== undefined) === method && f.arguments.length === argCount);
  if (fits.length === 0) {
    const arities = [...new Set(overloads.filter((f) => (f.target !== undefined) === method).map((f) => f.arguments.length))].sort();
    const called = method ? `as a method` : `as a function`;
    throw new WorldExpressionError(arities.length === 0 ? `${name} is not callable ${called}` : `${what} takes ${arities.join(" or ")} argument(s), not ${argCount}`, offset);
  }
}

/** The name of `names` closest to `name` by edit distance, when it is at most 2 edits away. */
function nearest(name: string, names: readonly string[]): string | undefined {
  let best: { name: string; distance: number } | undefined;
  for (const candidate of names) {
    const distance = editDistance(name.toLowerCase(), candidate.toLowerCase());
    if (distance <= 2 && (best === undefined || distance < best.distance)) best = { name: candidate, distance };
  }
  return best?.name;
}

/** Levenshtein distance, with a transposition counted as one edit (`lenght` is one from `length`). */
function editDistance(a: string, b: string): number {
  const rows = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(rows[i - 1]![j]! + 1, rows[i]![j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, rows[i - 2]![j - 2]! + 1);
      rows[i]![j] = d;
    }
  }
  return rows[a.length]![b.length]!;
}

/** Compiles `text`; throws with the parser's message when it is not CEL, a WorldExpressionError for an unknown name. */
export function compileWorldExpression(text: string, kinds: KindTable): WorldExpression {
  const state: Evaluation = { view: undefined, kinds };
  const env = worldEnv(state);
  const program: CelProgram = compileCel(text, env);
  checkNames(text, env);
  const lastErrors = new WeakMap<WorldView, string>();
  return {
    text,
    lastError: (view) => lastErrors.get(view),
    test(view) {
      state.view = view;
      try {
        const result = program({});
        const error = result instanceof Error ? result.message : typeof result === "boolean" ? undefined : `evaluates to ${typeof result}, not bool`;
        if (error === undefined) lastErrors.delete(view);
        else lastErrors.set(view, error);
        return result === true;
      } finally {
        state.view = undefined;
      }
    },
  };
}
