// Table responses (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`), what `kubectl get` prints: the
// columns kube-apiserver's printers define for built-in kinds (printers.ts), a CRD's `additionalPrinterColumns`
// (JSONPath, a subset: fields, indexes, `[*]`, `[?(@.f=="v")]`), Name/Created At for other built-in kinds and
// Name/Age for other custom resources. Ages are
// computed on the server from the injected clock, as kube-apiserver does. Watches send one-row tables.
import type { Clock } from "../../api/clock.ts";
import { badRequest } from "../../api/errors.ts";
import type { KubeObject, ObjectList } from "../../api/object.ts";
import type { ResourceType } from "../../api/resources.ts";
import type { Store } from "../../store/index.ts";
import { ageColumn, builtinPrinters, humanDuration, nameColumn } from "./printers.ts";
import type { Cell, Json, Printer } from "./printers.ts";
import { isBuiltinKind } from "../../store/index.ts";

export type { Column } from "./printers.ts";
export { humanDuration } from "./printers.ts";

/** True when the Accept header asks for a meta.k8s.io Table (v1 or v1beta1). */
export function wantsTable(accept: string | undefined): boolean {
  if (accept === undefined) return false;
  const first = accept.split(",")[0]!.toLowerCase().replace(/\s/g, "");
  return first.startsWith("application/json;") && first.includes("as=table") && first.includes("g=meta.k8s.io");
}

export type IncludeObject = "None" | "Metadata" | "Object";

export function includeObjectOf(query: URLSearchParams): IncludeObject {
  const value = query.get("includeObject");
  if (value === null || value === "") return "Metadata";
  if (value !== "None" && value !== "Metadata" && value !== "Object") throw badRequest(`includeObject: unsupported value ${JSON.stringify(value)}: supported values: "None", "Metadata", "Object"`);
  return value;
}

/**
 * The default table convertor of kube-apiserver, for built-in kinds without a printer (Role, ClusterRole,
 * LimitRange...): Name and the creation time as an RFC 3339 date, which kubectl prints as CREATED AT.
 */
const builtinDefaultPrinter: Printer = {
  columns: [nameColumn, { name: "Created At", type: "date", description: "CreationTimestamp is a timestamp representing the server time when this object was created." }],
  cells: (o) => [o.metadata?.name ?? "", typeof o.metadata?.creationTimestamp === "string" ? o.metadata.creationTimestamp : ""],
};

/** A custom resource without printer columns: Name and Age, the columns a CRD's handler adds by default. */
const customDefaultPrinter: Printer = { columns: [nameColumn, ageColumn], cells: (o, age) => [o.metadata?.name ?? "", age(o.metadata?.creationTimestamp)] };

/** The printer of a CRD's kind: Name plus its `additionalPrinterColumns` for the version, or Name/Age. */
function customPrinter(store: Store, resource: ResourceType): Printer | undefined {
  let crd: KubeObject;
  try {
    crd = store.get({ apiVersion: "apiextensions.k8s.io/v1", kind: "CustomResourceDefinition", name: `${resource.plural}.${resource.group}` });
  } catch {
    return undefined;
  }
  const versions: Json[] = Array.isArray((crd as Json).spec?.versions) ? (crd as Json).spec.versions : [];
  const columns: Json[] = versions.find((v) => v?.name === resource.version)?.additionalPrinterColumns ?? [];
  if (!Array.isArray(columns) || columns.length === 0) return undefined;
  const specs = columns.filter((c) => typeof c?.name === "string" && typeof c?.jsonPath === "string");
  return {
    columns: [nameColumn, ...specs.map((c) => ({ name: c.name, type: c.type ?? "string", priority: c.priority ?? 0, description: c.description ?? "", ...(c.format === undefined ? {} : { format: c.format }) }))],
    cells: (o, age) => [o.metadata?.name ?? "", ...specs.map((c) => printerCell(jsonPath(o, c.jsonPath), c.type, age))],
  };
}

function printerCell(values: unknown[], type: string | undefined, age: (t: unknown) => string): Cell {
  if (values.length === 0) return null;
  const value = values[0];
  if (type === "date") return age(value);
  if (values.length > 1) return values.map((v) => (typeof v === "object" ? JSON.stringify(v) : String(v))).join(",");
  if (typeof value === "object" && value !== null) return JSON.stringify(value);
  return value as Cell;
}

const jsonPathLengthMax = 256;

/** A subset of JSONPath as printer columns use it: `.a.b`, `[0]`, `[*]`, `[?(@.type=="Ready")]`. */
export function jsonPath(object: unknown, path: string): unknown[] {
  if (path.length > jsonPathLengthMax) return [];
  const tokens = path.replace(/^\{|\}$/g, "").match(/\.[^.[]+|\[\?\(@\.[^)]*\)\]|\[[^\]]*\]/g) ?? [];
  let nodes: unknown[] = [object];
  for (const token of tokens) {
    const next: unknown[] = [];
    for (const node of nodes) {
      if (node === null || typeof node !== "object") continue;
      const n = node as Json;
      if (token.startsWith(".")) {
        if (Object.hasOwn(n, token.slice(1))) next.push(n[token.slice(1)]);
      } else if (token.startsWith("[?(@.") && Array.isArray(node)) {
        const match = /^\[\?\(@\.([\w.-]+)\s*==\s*["']?([^"']*)["']?\)\]$/.exec(token);
        if (match !== null) for (const item of node) if (item !== null && typeof item === "object" && String((item as Json)[match[1]!]) === match[2]) next.push(item);
      } else if (token === "[*]") next.push(...(Array.isArray(node) ? node : Object.values(n)));
      else if (Array.isArray(node) && /^\[-?\d+\]$/.test(token)) {
        const i = Number(token.slice(1, -1));
        const item = node[i < 0 ? node.length + i : i];
        if (item !== undefined) next.push(item);
      }
    }
    nodes = next;
  }
  return nodes;
}

export class Tables {
  constructor(
    readonly store: Store,
    readonly clock: Clock,
  ) {}

  #printer(resource: ResourceType): Printer {
    const builtin = builtinPrinters[`${resource.group}/${resource.kind}`];
    if (builtin !== undefined) return builtin;
    return customPrinter(this.store, resource) ?? (isBuiltinKind(resource) ? builtinDefaultPrinter : customDefaultPrinter);
  }

  #age(): (timestamp: unknown) => string {
    const now = this.clock.now();
    return (timestamp) => {
      const t = typeof timestamp === "string" ? Date.parse(timestamp) : NaN;
      return Number.isNaN(t) ? "<unknown>" : humanDuration(now - t);
    };
  }

  #row(printer: Printer, object: KubeObject, include: IncludeObject, age: (t: unknown) => string): Json {
    const row: Json = { cells: printer.cells(object as Json, age) };
    if (include === "Object") row.object = object;
    else if (include === "Metadata") row.object = { kind: "PartialObjectMetadata", apiVersion: "meta.k8s.io/v1", metadata: object.metadata };
    return row;
  }

  /** A Table of a list (with its list metadata) or of one object. */
  table(resource: ResourceType, items: readonly KubeObject[], include: IncludeObject, listMeta: ObjectList["metadata"] | undefined, withColumns = true): Json {
    const printer = this.#printer(resource);
    const age = this.#age();
    const table: Json = { kind: "Table", apiVersion: "meta.k8s.io/v1", metadata: listMeta ?? {} };
    if (withColumns) table.columnDefinitions = printer.columns.map((c) => ({ priority: 0, description: "", format: "", ...c }));
    // Some kinds' lists print in an order of their own (FlowSchemas by matching precedence), as kube's list printers sort.
    const ordered = printer.compare === undefined ? items : [...items].sort((a, b) => printer.compare!(a as Json, b as Json));
    table.rows = ordered.map((item) => this.#row(printer, item, include, age));
    return table;
  }

  fromObject(resource: ResourceType, object: KubeObject, include: IncludeObject): Json {
    return this.table(resource, [object], include, { resourceVersion: object.metadata.resourceVersion ?? "" });
  }
}
