// Table responses (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`), what `kubectl get` prints: the
// columns kube-apiserver's printers define for the common built-in kinds, a CRD's `additionalPrinterColumns`
// (JSONPath, a subset: fields, indexes, `[*]`, `[?(@.f=="v")]`), and Name/Age for anything else. Ages are
// computed on the server from the injected clock, as kube-apiserver does. Watches send one-row tables.
import type { Clock } from "../api/clock.ts";
import { badRequest } from "../api/errors.ts";
import type { KubeObject, ObjectList } from "../api/object.ts";
import type { ResourceType } from "../api/resources.ts";
import type { Store } from "../store/index.ts";

type Json = Record<string, any>;
export interface Column {
  name: string;
  type: string;
  format?: string;
  priority?: number;
  description?: string;
}
type Cell = string | number | boolean | null;
interface Printer {
  columns: Column[];
  cells(object: Json, age: (timestamp: unknown) => string): Cell[];
}

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

/** kube's HumanDuration, as `kubectl get` prints ages: 42s, 5m10s, 3h, 2d5h, 400d, 3y. */
export function humanDuration(ms: number): string {
  const s = Math.floor(Math.max(0, ms) / 1000);
  if (s < 120) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 10) return s % 60 === 0 ? `${m}m` : `${m}m${s % 60}s`;
  if (m < 180) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 8) return m % 60 === 0 ? `${h}h` : `${h}h${m % 60}m`;
  if (h < 48) return `${h}h`;
  const d = Math.floor(h / 24);
  if (h < 24 * 8) return h % 24 === 0 ? `${d}d` : `${d}d${h % 24}h`;
  if (d < 365 * 2) return `${d}d`;
  if (d < 365 * 8) return d % 365 === 0 ? `${Math.floor(d / 365)}y` : `${Math.floor(d / 365)}y${d % 365}d`;
  return `${Math.floor(d / 365)}y`;
}

const nameColumn: Column = { name: "Name", type: "string", format: "name", description: "Name must be unique within a namespace." };
const ageColumn: Column = { name: "Age", type: "string", description: "CreationTimestamp is a timestamp representing the server time when this object was created." };
const col = (name: string, type = "string", priority = 0): Column => ({ name, type, priority });
const count = (value: unknown): number => (value !== null && typeof value === "object" ? Object.keys(value).length : 0);
const num = (value: unknown): number => (typeof value === "number" ? value : 0);
const condition = (o: Json, type: string): Json | undefined => (Array.isArray(o.status?.conditions) ? o.status.conditions.find((c: Json) => c?.type === type) : undefined);

function podCells(o: Json, age: (t: unknown) => string): Cell[] {
  const statuses: Json[] = Array.isArray(o.status?.containerStatuses) ? o.status.containerStatuses : [];
  const total = Array.isArray(o.spec?.containers) ? o.spec.containers.length : 0;
  const ready = statuses.filter((s) => s?.ready === true).length;
  const restarts = statuses.reduce((n, s) => n + num(s?.restartCount), 0);
  let reason: string = o.status?.reason ?? o.status?.phase ?? "Pending";
  for (const s of statuses) if (typeof s?.state?.waiting?.reason === "string") reason = s.state.waiting.reason;
  if (o.metadata?.deletionTimestamp !== undefined) reason = "Terminating";
  return [o.metadata?.name ?? "", `${ready}/${total}`, reason, restarts, age(o.metadata?.creationTimestamp), o.status?.podIP ?? "<none>", o.spec?.nodeName ?? "<none>", "<none>", "<none>"];
}

function nodeCells(o: Json, age: (t: unknown) => string): Cell[] {
  const ready = condition(o, "Ready");
  let status = ready === undefined ? "Unknown" : ready.status === "True" ? "Ready" : "NotReady";
  if (o.spec?.unschedulable === true) status += ",SchedulingDisabled";
  const roles = Object.keys(o.metadata?.labels ?? {}).filter((l) => l.startsWith("node-role.kubernetes.io/")).map((l) => l.slice("node-role.kubernetes.io/".length)).sort();
  return [o.metadata?.name ?? "", status, roles.length === 0 ? "<none>" : roles.join(","), age(o.metadata?.creationTimestamp), o.status?.nodeInfo?.kubeletVersion ?? ""];
}

function jobStatus(o: Json): string {
  if (condition(o, "Complete")?.status === "True") return "Complete";
  if (condition(o, "Failed")?.status === "True") return "Failed";
  if (o.metadata?.deletionTimestamp !== undefined) return "Terminating";
  return o.spec?.suspend === true ? "Suspended" : "Running";
}

/** Service columns as kube's printer: external IPs from the spec or the load balancer, ports as `80:30080/TCP`. */
function serviceCells(o: Json, age: (t: unknown) => string): Cell[] {
  const spec = o.spec ?? {};
  const ingress: Json[] = Array.isArray(o.status?.loadBalancer?.ingress) ? o.status.loadBalancer.ingress : [];
  const fromBalancer = ingress.map((i) => i?.ip ?? i?.hostname).filter((x): x is string => typeof x === "string");
  const external: string[] = [...(Array.isArray(spec.externalIPs) ? spec.externalIPs : []), ...fromBalancer];
  let externalText = external.length > 0 ? external.join(",") : "<none>";
  if (spec.type === "ExternalName") externalText = spec.externalName ?? "<none>";
  else if (spec.type === "LoadBalancer" && external.length === 0) externalText = "<pending>";
  const ports: Json[] = Array.isArray(spec.ports) ? spec.ports : [];
  const portText = ports.map((p) => `${p?.port}${typeof p?.nodePort === "number" && p.nodePort !== 0 ? `:${p.nodePort}` : ""}/${p?.protocol ?? "TCP"}`).join(",");
  const selector = Object.entries(spec.selector ?? {}).map(([k, v]) => `${k}=${String(v)}`).join(",");
  return [o.metadata?.name ?? "", spec.type ?? "ClusterIP", spec.type === "ExternalName" ? "<none>" : (spec.clusterIP ?? "<none>"), externalText, portText === "" ? "<none>" : portText, age(o.metadata?.creationTimestamp), selector === "" ? "<none>" : selector];
}

const printers: Readonly<Record<string, Printer>> = {
  "/Service": { columns: [nameColumn, col("Type"), col("Cluster-IP"), col("External-IP"), col("Port(s)"), ageColumn, col("Selector", "string", 1)], cells: serviceCells },
  "/Namespace": { columns: [nameColumn, col("Status"), ageColumn], cells: (o, age) => [o.metadata?.name ?? "", o.status?.phase ?? "Active", age(o.metadata?.creationTimestamp)] },
  "/ConfigMap": { columns: [nameColumn, col("Data", "integer"), ageColumn], cells: (o, age) => [o.metadata?.name ?? "", count(o.data) + count(o.binaryData), age(o.metadata?.creationTimestamp)] },
  "/Secret": { columns: [nameColumn, col("Type"), col("Data", "integer"), ageColumn], cells: (o, age) => [o.metadata?.name ?? "", o.type ?? "Opaque", count(o.data), age(o.metadata?.creationTimestamp)] },
  "/ServiceAccount": { columns: [nameColumn, col("Secrets", "integer"), ageColumn], cells: (o, age) => [o.metadata?.name ?? "", Array.isArray(o.secrets) ? o.secrets.length : 0, age(o.metadata?.creationTimestamp)] },
  "/Pod": { columns: [nameColumn, col("Ready"), col("Status"), col("Restarts", "string"), ageColumn, col("IP", "string", 1), col("Node", "string", 1), col("Nominated Node", "string", 1), col("Readiness Gates", "string", 1)], cells: podCells },
  "/Node": { columns: [nameColumn, col("Status"), col("Roles"), ageColumn, col("Version")], cells: nodeCells },
  "/Event": {
    columns: [col("Last Seen"), col("Type"), col("Reason"), col("Object"), col("Message")],
    cells: (o, age) => [age(o.lastTimestamp ?? o.eventTime ?? o.metadata?.creationTimestamp), o.type ?? "", o.reason ?? "", `${String(o.involvedObject?.kind ?? "").toLowerCase()}/${o.involvedObject?.name ?? ""}`, o.message ?? ""],
  },
  "coordination.k8s.io/Lease": { columns: [nameColumn, col("Holder"), ageColumn], cells: (o, age) => [o.metadata?.name ?? "", o.spec?.holderIdentity ?? "", age(o.metadata?.creationTimestamp)] },
  "apps/Deployment": {
    columns: [nameColumn, col("Ready"), col("Up-to-date", "integer"), col("Available", "integer"), ageColumn],
    cells: (o, age) => [o.metadata?.name ?? "", `${num(o.status?.readyReplicas)}/${o.spec?.replicas ?? 1}`, num(o.status?.updatedReplicas), num(o.status?.availableReplicas), age(o.metadata?.creationTimestamp)],
  },
  "apps/ReplicaSet": {
    columns: [nameColumn, col("Desired", "integer"), col("Current", "integer"), col("Ready", "integer"), ageColumn],
    cells: (o, age) => [o.metadata?.name ?? "", o.spec?.replicas ?? 1, num(o.status?.replicas), num(o.status?.readyReplicas), age(o.metadata?.creationTimestamp)],
  },
  "apps/StatefulSet": { columns: [nameColumn, col("Ready"), ageColumn], cells: (o, age) => [o.metadata?.name ?? "", `${num(o.status?.readyReplicas)}/${o.spec?.replicas ?? 1}`, age(o.metadata?.creationTimestamp)] },
  "apps/DaemonSet": {
    columns: [nameColumn, col("Desired", "integer"), col("Current", "integer"), col("Ready", "integer"), col("Up-to-date", "integer"), col("Available", "integer"), col("Node Selector"), ageColumn],
    cells: (o, age) => {
      const selector = Object.entries(o.spec?.template?.spec?.nodeSelector ?? {}).map(([k, v]) => `${k}=${String(v)}`).join(",");
      const s = o.status ?? {};
      return [o.metadata?.name ?? "", num(s.desiredNumberScheduled), num(s.currentNumberScheduled), num(s.numberReady), num(s.updatedNumberScheduled), num(s.numberAvailable), selector === "" ? "<none>" : selector, age(o.metadata?.creationTimestamp)];
    },
  },
  "batch/Job": {
    columns: [nameColumn, col("Status"), col("Completions"), col("Duration"), ageColumn],
    cells: (o, age) => [o.metadata?.name ?? "", jobStatus(o), `${num(o.status?.succeeded)}/${o.spec?.completions ?? 1}`, o.status?.startTime === undefined ? "" : age(o.status.startTime), age(o.metadata?.creationTimestamp)],
  },
  "batch/CronJob": {
    columns: [nameColumn, col("Schedule"), col("Timezone"), col("Suspend", "boolean"), col("Active", "integer"), col("Last Schedule"), ageColumn],
    cells: (o, age) => [o.metadata?.name ?? "", o.spec?.schedule ?? "", o.spec?.timeZone ?? "<none>", o.spec?.suspend === true, Array.isArray(o.status?.active) ? o.status.active.length : 0, o.status?.lastScheduleTime === undefined ? "<none>" : age(o.status.lastScheduleTime), age(o.metadata?.creationTimestamp)],
  },
  "policy/PodDisruptionBudget": {
    columns: [nameColumn, col("Min Available"), col("Max Unavailable"), col("Allowed Disruptions", "integer"), ageColumn],
    cells: (o, age) => [o.metadata?.name ?? "", o.spec?.minAvailable === undefined ? "N/A" : String(o.spec.minAvailable), o.spec?.maxUnavailable === undefined ? "N/A" : String(o.spec.maxUnavailable), num(o.status?.disruptionsAllowed), age(o.metadata?.creationTimestamp)],
  },
  "apiextensions.k8s.io/CustomResourceDefinition": { columns: [nameColumn, col("Created At", "date")], cells: (o) => [o.metadata?.name ?? "", o.metadata?.creationTimestamp ?? ""] },
};

const defaultPrinter: Printer = { columns: [nameColumn, ageColumn], cells: (o, age) => [o.metadata?.name ?? "", age(o.metadata?.creationTimestamp)] };

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
    return printers[`${resource.group}/${resource.kind}`] ?? customPrinter(this.store, resource) ?? defaultPrinter;
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
    table.rows = items.map((item) => this.#row(printer, item, include, age));
    return table;
  }

  fromObject(resource: ResourceType, object: KubeObject, include: IncludeObject): Json {
    return this.table(resource, [object], include, { resourceVersion: object.metadata.resourceVersion ?? "" });
  }
}
