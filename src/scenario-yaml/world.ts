// CEL over the world: the helpers a scenario's expressions use to read API objects, and the compiled form of an
// expression (a predicate over a `WorldView`). Helpers:
//   get(kind, namespace, name), get(kind, name)           -> the object, or null
//   list(kind), list(kind, namespace), list(kind, namespace, labelSelector)  -> a list of objects
// `kind` is a kind or plural, optionally with its group (`Ensemble`, `ensembles`, `Deployment.apps`); `""` as the
// namespace means every namespace. Integers are CEL ints, as in CRD validation rules.
import { celFunc, CelScalar, listType, type CelEnv } from "@bufbuild/cel";
import type { KindRef } from "../api/object.ts";
import { formatApiVersion } from "../api/object.ts";
import type { WorldView } from "../sim/types.ts";
import { celEnvWith, compileCel, toCel, type CelProgram } from "../store/cel.ts";
import type { Store } from "../store/types.ts";

/** Kind names (lower case: kind, plural, `kind.group`, `plural.group`) to the served kind. */
export type KindTable = ReadonlyMap<string, KindRef>;

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
  /** The last evaluation error (undefined after a clean evaluation). */
  readonly lastError: string | undefined;
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

/** Compiles `text`; throws with the parser's message when it is not CEL. */
export function compileWorldExpression(text: string, kinds: KindTable): WorldExpression {
  const state: Evaluation = { view: undefined, kinds };
  const program: CelProgram = compileCel(text, worldEnv(state));
  let lastError: string | undefined;
  return {
    text,
    get lastError() {
      return lastError;
    },
    test(view) {
      state.view = view;
      try {
        const result = program({});
        if (result instanceof Error) {
          lastError = result.message;
          return false;
        }
        lastError = typeof result === "boolean" ? undefined : `evaluates to ${typeof result}, not bool`;
        return result === true;
      } finally {
        state.view = undefined;
      }
    },
  };
}
