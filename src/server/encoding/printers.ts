// The columns and cells kube-apiserver's printers give built-in kinds (kubernetes pkg/printers/internalversion,
// read for the 1.33 era: column names, types, priorities and how each cell is formatted). The server always prints
// the wide form: priority-1 columns (`kubectl get -o wide`) are in every row and kubectl hides them otherwise.
// Kinds without a printer there get the default table convertor's Name and Created At (see table.ts).
import type { LabelSelector } from "../../api/object.ts";
import { formatLabelSelector, labelSelectorFromSpec } from "../../api/selectors.ts";
import { isRecord, type LooseJsonObject as Json } from "../../api/json.ts";

export type { Json };
export interface Column {
  name: string;
  type: string;
  format?: string;
  priority?: number;
  description?: string;
}
export type Cell = string | number | boolean | null;
export type Age = (timestamp: unknown) => string;
export interface Printer {
  columns: Column[];
  cells(object: Json, age: Age): Cell[];
  /**
   * The order of a list's rows, for the kinds whose list printer sorts before printing (FlowSchemas by matching
   * precedence); absent, rows keep the list's order.
   */
  compare?(a: Json, b: Json): number;
}

export const nameColumn: Column = { name: "Name", type: "string", format: "name", description: "Name must be unique within a namespace." };
export const ageColumn: Column = { name: "Age", type: "string", description: "CreationTimestamp is a timestamp representing the server time when this object was created." };
const col = (name: string, type = "string", priority = 0): Column => ({ name, type, priority });
const wide = (name: string, type = "string"): Column => col(name, type, 1);
const templateColumns = [wide("Containers"), wide("Images")];
const count = (value: unknown): number => (value !== null && typeof value === "object" ? Object.keys(value).length : 0);
const num = (value: unknown): number => (typeof value === "number" ? value : 0);
const list = (value: unknown): Json[] => (Array.isArray(value) ? value : []);
const text = (value: unknown, none = "<none>"): string => (typeof value === "string" && value !== "" ? value : none);
const conditionOf = (o: Json, type: string): Json | undefined => list(o.status?.conditions).find((c) => c?.type === type);
const isTrue = (o: Json, type: string): boolean => conditionOf(o, type)?.status === "True";
const name = (o: Json): string => o.metadata?.name ?? "";
const created = (o: Json, age: Age): string => age(o.metadata?.creationTimestamp);
/** spec.replicas, defaulted to 1 as the server's defaulting would (a simulator's store does not default). */
const replicas = (o: Json): number => (typeof o.spec?.replicas === "number" ? o.spec.replicas : 1);

/** Go's printBoolPtr: True, False, or <unset> for an absent pointer. */
const boolText = (value: unknown): string => (value === true ? "True" : value === false ? "False" : "<unset>");

/** labels.FormatLabels: `k=v` in key order, or <none>. */
export function formatLabels(labels: unknown): string {
  const entries = Object.entries(labels !== null && typeof labels === "object" ? (labels as Json) : {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return entries.length === 0 ? "<none>" : entries.map(([k, v]) => `${k}=${String(v)}`).join(",");
}

/**
 * metav1.FormatLabelSelector: the selector's canonical string (src/api/selectors.ts), <none> when it selects by
 * nothing, <error> when it does not parse.
 */
function formatSelector(selector: unknown): string {
  if (selector === null || typeof selector !== "object") return "<none>";
  try {
    return text(formatLabelSelector(labelSelectorFromSpec(selector as LabelSelector)));
  } catch {
    return "<error>";
  }
}

/** Names and images of a pod template's containers, comma-separated (layoutContainerCells). */
function containerCells(template: Json | undefined): [string, string] {
  const containers = list(template?.spec?.containers);
  return [containers.map((c) => c?.name ?? "").join(","), containers.map((c) => c?.image ?? "").join(",")];
}

/** The first `max` entries joined, then `+ N more...` (the printers' listWithMoreString). */
function listWithMore(items: string[], max: number, empty: string): string {
  if (items.length > max) return `${items.slice(0, max).join(",")} + ${items.length - max} more...`;
  return items.length === 0 ? empty : items.join(",");
}

/** Endpoints subsets as `ip:port` per port and address (headless: bare IPs), at most three. */
function endpointsText(o: Json): string {
  const subsets = list(o.subsets);
  if (subsets.length === 0) return "<none>";
  const items: string[] = [];
  for (const s of subsets) {
    const ips = list(s.addresses).map((a) => String(a?.ip ?? ""));
    const ports = list(s.ports);
    if (ports.length === 0) items.push(...ips);
    for (const p of ports) items.push(...ips.map((ip) => (ip.includes(":") ? `[${ip}]:${num(p?.port)}` : `${ip}:${num(p?.port)}`)));
  }
  return listWithMore(items, 3, "");
}

function endpointSliceCells(o: Json, age: Age): Cell[] {
  const ports = list(o.ports).map((p) => (typeof p?.port === "number" ? String(p.port) : typeof p?.name === "string" ? p.name : "*"));
  const addresses = list(o.endpoints).flatMap((e) => list(e?.addresses).map(String));
  return [name(o), o.addressType ?? "", listWithMore(ports, 3, "<unset>"), listWithMore(addresses, 3, "<unset>"), created(o, age)];
}

/** External IPs by service type, as getServiceExternalIP: balancer addresses only for LoadBalancer services. */
function serviceExternalIp(o: Json): string {
  const spec = o.spec ?? {};
  const externalIps: string[] = list(spec.externalIPs).map(String);
  switch (spec.type ?? "ClusterIP") {
    case "ClusterIP":
    case "NodePort":
      return externalIps.length > 0 ? externalIps.join(",") : "<none>";
    case "LoadBalancer": {
      const balancer = [...new Set(list(o.status?.loadBalancer?.ingress).map((i) => i?.ip || i?.hostname).filter((x): x is string => typeof x === "string" && x !== ""))].sort();
      const all = [...balancer, ...externalIps];
      return all.length > 0 ? all.join(",") : "<pending>";
    }
    case "ExternalName":
      return spec.externalName ?? "";
    default:
      return "<unknown>";
  }
}

function serviceCells(o: Json, age: Age): Cell[] {
  const spec = o.spec ?? {};
  const ports = list(spec.ports).map((p) => (num(p?.nodePort) > 0 ? `${num(p.port)}:${p.nodePort}/${p.protocol ?? ""}` : `${num(p?.port)}/${p?.protocol ?? ""}`));
  // A Service the defaulting never saw (a simulator's store) reads as the ClusterIP service it would default to.
  return [name(o), spec.type ?? "ClusterIP", text(list(spec.clusterIPs)[0] ?? spec.clusterIP), serviceExternalIp(o), ports.length > 0 ? ports.join(",") : "<none>", created(o, age), formatLabels(spec.selector)];
}

/**
 * The pod's READY, STATUS and RESTARTS as printPod derives them from its containers (init containers aside): the
 * first container's waiting or terminated reason wins, and restarts show how long ago the last one ended.
 */
function podCells(o: Json, age: Age): Cell[] {
  const statuses = list(o.status?.containerStatuses);
  const total = list(o.spec?.containers).length;
  let ready = 0;
  let restarts = 0;
  let lastRestart = "";
  let running = false;
  let reason: string = text(o.status?.reason, text(o.status?.phase, ""));
  if (list(o.status?.conditions).some((c) => c?.type === "PodScheduled" && c?.reason === "SchedulingGated")) reason = "SchedulingGated";
  for (const s of [...statuses].reverse()) {
    restarts += num(s?.restartCount);
    const finished = s?.lastState?.terminated?.finishedAt;
    if (typeof finished === "string" && finished > lastRestart) lastRestart = finished;
    const terminated = s?.state?.terminated;
    if (typeof s?.state?.waiting?.reason === "string" && s.state.waiting.reason !== "") reason = s.state.waiting.reason;
    else if (terminated !== undefined && terminated !== null) reason = text(terminated.reason, num(terminated.signal) !== 0 ? `Signal:${terminated.signal}` : `ExitCode:${num(terminated.exitCode)}`);
    else if (s?.ready === true && s?.state?.running !== undefined) {
      running = true;
      ready++;
    }
  }
  if (reason === "Completed" && running) reason = isTrue(o, "Ready") ? "Running" : "NotReady";
  const restartText = restarts !== 0 && lastRestart !== "" ? `${restarts} (${age(lastRestart)} ago)` : String(restarts);
  const terminal = o.status?.phase === "Succeeded" || o.status?.phase === "Failed";
  if (o.metadata?.deletionTimestamp !== undefined && o.status?.reason === "NodeLost") reason = "Unknown";
  else if (o.metadata?.deletionTimestamp !== undefined && !terminal) reason = "Terminating";
  const gates = list(o.spec?.readinessGates);
  const gatesText = gates.length === 0 ? "<none>" : `${gates.filter((g) => isTrue(o, g?.conditionType)).length}/${gates.length}`;
  const ip = list(o.status?.podIPs)[0]?.ip ?? o.status?.podIP;
  return [name(o), `${ready}/${total}`, reason, restartText, created(o, age), text(ip), text(o.spec?.nodeName), text(o.status?.nominatedNodeName), gatesText];
}

function nodeCells(o: Json, age: Age): Cell[] {
  const ready = conditionOf(o, "Ready");
  let status = ready === undefined ? "Unknown" : ready.status === "True" ? "Ready" : "NotReady";
  if (o.spec?.unschedulable === true) status += ",SchedulingDisabled";
  const roles = new Set<string>();
  for (const [key, value] of Object.entries(o.metadata?.labels ?? {})) {
    if (key.startsWith("node-role.kubernetes.io/") && key.length > "node-role.kubernetes.io/".length) roles.add(key.slice("node-role.kubernetes.io/".length));
    else if (key === "kubernetes.io/role" && value !== "") roles.add(String(value));
  }
  const address = (type: string) => text(list(o.status?.addresses).find((a) => a?.type === type)?.address);
  const info = o.status?.nodeInfo ?? {};
  const roleText = roles.size === 0 ? "<none>" : [...roles].sort().join(",");
  return [name(o), status, roleText, created(o, age), info.kubeletVersion ?? "", address("InternalIP"), address("ExternalIP"), text(info.osImage, "<unknown>"), text(info.kernelVersion, "<unknown>"), text(info.containerRuntimeVersion, "<unknown>")];
}

/** A core/v1 Event, or an events.k8s.io/v1 one read through the same fields (as the server converts it). */
function eventCells(o: Json, age: Age): Cell[] {
  const involved = o.involvedObject ?? o.regarding ?? {};
  const source = o.source ?? o.deprecatedSource ?? {};
  const first = o.firstTimestamp ?? o.deprecatedFirstTimestamp;
  const firstText = typeof first === "string" ? age(first) : age(o.eventTime);
  const last = o.lastTimestamp ?? o.deprecatedLastTimestamp;
  let lastText = typeof last === "string" ? age(last) : firstText;
  let eventCount = num(o.count ?? o.deprecatedCount);
  if (o.series !== undefined && o.series !== null) {
    lastText = age(o.series.lastObservedTime);
    eventCount = num(o.series.count);
  } else if (eventCount === 0) eventCount = 1;
  const kind = String(involved.kind ?? "").toLowerCase();
  const target = typeof involved.name === "string" && involved.name !== "" ? `${kind}/${involved.name}` : kind;
  const component = text(source.component, text(o.reportingController, ""));
  const instance = text(source.host, text(o.reportingInstance, ""));
  const message = String(o.message ?? o.note ?? "").trim();
  return [lastText, o.type ?? "", o.reason ?? "", target, involved.fieldPath ?? "", instance === "" ? component : `${component}, ${instance}`, message, firstText, eventCount, name(o)];
}

function jobCells(o: Json, age: Age): Cell[] {
  const succeeded = num(o.status?.succeeded);
  const parallelism = num(o.spec?.parallelism);
  const completions = typeof o.spec?.completions === "number" ? `${succeeded}/${o.spec.completions}` : parallelism > 1 ? `${succeeded}/1 of ${parallelism}` : `${succeeded}/1`;
  let status = "Running";
  if (isTrue(o, "Complete")) status = "Complete";
  else if (isTrue(o, "Failed")) status = "Failed";
  else if (o.metadata?.deletionTimestamp !== undefined) status = "Terminating";
  else if (isTrue(o, "Suspended")) status = "Suspended";
  else if (isTrue(o, "FailureTarget")) status = "FailureTarget";
  const start = Date.parse(o.status?.startTime ?? "");
  const end = Date.parse(o.status?.completionTime ?? "");
  // Running: the time since the start, as the age of the start; finished: the time it took.
  const duration = Number.isNaN(start) ? "" : Number.isNaN(end) ? age(o.status.startTime) : humanDuration(end - start);
  const [containers, images] = containerCells(o.spec?.template);
  return [name(o), status, completions, duration, created(o, age), containers, images, formatSelector(o.spec?.selector)];
}

/** Access modes as the short names GetAccessModesAsString writes, in its fixed order. */
function accessModes(modes: unknown): string {
  const given = new Set(list(modes).map(String));
  const order: Array<[string, string]> = [["ReadWriteOnce", "RWO"], ["ReadOnlyMany", "ROX"], ["ReadWriteMany", "RWX"], ["ReadWriteOncePod", "RWOP"]];
  return order.filter(([mode]) => given.has(mode)).map(([, short]) => short).join(",");
}

const storageClassOf = (o: Json): string => o.metadata?.annotations?.["volume.beta.kubernetes.io/storage-class"] ?? o.spec?.storageClassName ?? "";

function pvcCells(o: Json, age: Age): Cell[] {
  const bound = typeof o.spec?.volumeName === "string" && o.spec.volumeName !== "";
  const phase = o.metadata?.deletionTimestamp !== undefined ? "Terminating" : (o.status?.phase ?? "");
  const capacity = bound ? String(o.status?.capacity?.storage ?? "") : "";
  return [name(o), phase, o.spec?.volumeName ?? "", capacity, bound ? accessModes(o.status?.accessModes) : "", storageClassOf(o), o.spec?.volumeAttributesClassName ?? "<unset>", created(o, age), o.spec?.volumeMode ?? "<unset>"];
}

function pvCells(o: Json, age: Age): Cell[] {
  const claim = o.spec?.claimRef === undefined || o.spec.claimRef === null ? "" : `${o.spec.claimRef.namespace ?? ""}/${o.spec.claimRef.name ?? ""}`;
  const phase = o.metadata?.deletionTimestamp !== undefined ? "Terminating" : (o.status?.phase ?? "");
  const spec = o.spec ?? {};
  return [name(o), String(spec.capacity?.storage ?? "0"), accessModes(spec.accessModes), spec.persistentVolumeReclaimPolicy ?? "", phase, claim, storageClassOf(o), spec.volumeAttributesClassName ?? "<unset>", o.status?.reason ?? "", created(o, age), spec.volumeMode ?? "<unset>"];
}

function ingressCells(o: Json, age: Age): Cell[] {
  const rules = list(o.spec?.rules);
  const hosts = rules.map((r) => r?.host).filter((h): h is string => typeof h === "string" && h !== "");
  let hostText = hosts.length === 0 ? "*" : hosts.slice(0, 3).join(",");
  if (hosts.length > 3) hostText += ` + ${rules.length - 3} more...`;
  const addresses = [...new Set(list(o.status?.loadBalancer?.ingress).map((i) => i?.ip || i?.hostname).filter((x): x is string => typeof x === "string" && x !== ""))].sort();
  return [name(o), o.spec?.ingressClassName ?? "<none>", hostText, addresses.join(","), list(o.spec?.tls).length > 0 ? "80, 443" : "80", created(o, age)];
}

/** One HPA metric as formatHPAMetrics writes it (`cpu: 40%/80%`, `<unknown>` before the first reading). */
function hpaMetric(spec: Json, status: Json | undefined): string {
  const quantity = (v: unknown) => (v === undefined || v === null ? "<unknown>" : String(v));
  const source = spec[String(spec.type ?? "").replace(/^./, (c) => c.toLowerCase())] ?? {};
  const current = status?.[String(spec.type ?? "").replace(/^./, (c) => c.toLowerCase())]?.current;
  switch (spec.type) {
    case "Resource":
    case "ContainerResource":
      if (source.target?.averageValue !== undefined) return `${source.name}: ${quantity(current?.averageValue)}/${source.target.averageValue}`;
      return `${source.name}: ${typeof current?.averageUtilization === "number" ? `${current.averageUtilization}%` : "<unknown>"}/${typeof source.target?.averageUtilization === "number" ? `${source.target.averageUtilization}%` : "<auto>"}`;
    case "Pods":
      return `${quantity(current?.averageValue)}/${source.target?.averageValue}`;
    case "Object":
    case "External":
      if (source.target?.averageValue !== undefined) return `${quantity(current?.averageValue)}/${source.target.averageValue} (avg)`;
      return `${quantity(current?.value)}/${source.target?.value}`;
    default:
      return "<unknown type>";
  }
}

/** autoscaling/v2 metrics, or an autoscaling/v1 HPA's CPU target read as the v2 metric it converts to. */
function hpaCells(o: Json, age: Age): Cell[] {
  const spec = o.spec ?? {};
  let metrics: string[];
  if (Array.isArray(spec.metrics)) metrics = spec.metrics.map((m: Json, i: number) => hpaMetric(m ?? {}, list(o.status?.currentMetrics)[i]));
  else if (typeof spec.targetCPUUtilizationPercentage === "number") {
    const current = o.status?.currentCPUUtilizationPercentage;
    metrics = [`cpu: ${typeof current === "number" ? `${current}%` : "<unknown>"}/${spec.targetCPUUtilizationPercentage}%`];
  } else metrics = [];
  let targets = metrics.length === 0 ? "<none>" : metrics.slice(0, 2).join(", ");
  if (metrics.length > 2) targets += ` + ${metrics.length - 2} more...`;
  const reference = `${spec.scaleTargetRef?.kind ?? ""}/${spec.scaleTargetRef?.name ?? ""}`;
  return [name(o), reference, targets, typeof spec.minReplicas === "number" ? String(spec.minReplicas) : "<unset>", num(spec.maxReplicas), num(o.status?.currentReplicas), created(o, age)];
}

/** Subjects of a binding by kind, as rbac.SubjectsStrings: users, groups, `namespace/name` service accounts. */
function bindingCells(o: Json, age: Age): Cell[] {
  const subjects = list(o.subjects);
  const of = (kind: string) => subjects.filter((s) => s?.kind === kind);
  const accounts = of("ServiceAccount").map((s) => `${s.namespace ?? ""}/${s.name ?? ""}`);
  return [name(o), `${o.roleRef?.kind ?? ""}/${o.roleRef?.name ?? ""}`, created(o, age), of("User").map((s) => s.name).join(", "), of("Group").map((s) => s.name).join(", "), accounts.join(", ")];
}

function csrStatus(o: Json): string {
  const types = new Set(list(o.status?.conditions).map((c) => c?.type));
  let status = types.has("Denied") ? "Denied" : types.has("Approved") ? "Approved" : "Pending";
  if (types.has("Failed")) status += ",Failed";
  if (typeof o.status?.certificate === "string" && o.status.certificate !== "") status += ",Issued";
  return status;
}

/** Go's string order (bytes), as its printers sort resource names and label keys. */
const byteOrder = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
const record = (value: unknown): Json => (isRecord(value) ? value : {});
const isObject = (value: unknown): value is Json => value !== null && typeof value === "object";

/**
 * A quota's `resource: used/hard` pairs, one per resource of status.hard in name order: `limits.*` resources go to
 * the Limit column, every other one to Request. A resource the quota controller has not counted yet shows 0 used.
 * Quantities print as stored (a real server stores them in canonical form).
 */
function quotaCells(o: Json, age: Age): Cell[] {
  const hard = record(o.status?.hard);
  const used = record(o.status?.used);
  const quantity = (v: unknown): string => (typeof v === "string" || typeof v === "number" ? String(v) : "0");
  const requests: string[] = [];
  const limits: string[] = [];
  for (const resource of Object.keys(hard).sort(byteOrder)) {
    const pieces = resource.split(".");
    const column = pieces.length > 1 && pieces[0] === "limits" ? limits : requests;
    column.push(`${resource}: ${quantity(used[resource])}/${quantity(hard[resource])}`);
  }
  return [name(o), requests.join(", "), limits.join(", "), created(o, age)];
}

/** The controlling owner as its lower-case group kind and name (`statefulset.apps/web`, `pod/p`), or <none>. */
function controllerText(o: Json): string {
  const owner = list(o.metadata?.ownerReferences).find((r) => r?.controller === true);
  if (owner === undefined) return "<none>";
  const apiVersion = String(owner.apiVersion ?? "");
  const group = apiVersion.includes("/") ? apiVersion.slice(0, apiVersion.indexOf("/")) : "";
  const kind = String(owner.kind ?? "");
  if (group === "" && kind === "") return owner.name ?? "";
  return `${(group === "" ? kind : `${kind}.${group}`).toLowerCase()}/${owner.name ?? ""}`;
}

/**
 * A CSIDriver as the server's defaulting leaves it: attach required, no pod info on mount, no capacity tracking, no
 * republish, and the Persistent lifecycle mode when none is named. An empty token request list reads back from
 * storage as an absent one, so both print as <unset>.
 */
function csiDriverCells(o: Json, age: Age): Cell[] {
  const spec = record(o.spec);
  const flag = (value: unknown, unset: boolean): boolean => (typeof value === "boolean" ? value : unset);
  const tokens = list(spec.tokenRequests).map((t) => String(t?.audience ?? ""));
  const modes = list(spec.volumeLifecycleModes).map(String);
  const tokenText = tokens.length === 0 ? "<unset>" : tokens.join(",");
  return [name(o), flag(spec.attachRequired, true), flag(spec.podInfoOnMount, false), flag(spec.storageCapacity, false), tokenText, flag(spec.requiresRepublish, false), modes.length === 0 ? "Persistent" : modes.join(","), created(o, age)];
}

/**
 * A LabelSelector as Go's generated String method dumps the struct, which is how the binding printer shows a param
 * selector (not in selector syntax): labels in key order, then each requirement with its values space-separated.
 */
function goLabelSelectorText(selector: Json): string {
  const labels = Object.entries(record(selector.matchLabels)).sort(([a], [b]) => byteOrder(a, b));
  const labelText = labels.map(([k, v]) => `${k}: ${String(v)},`).join("");
  const requirements = list(selector.matchExpressions).map((e) => `LabelSelectorRequirement{Key:${e?.key ?? ""},Operator:${e?.operator ?? ""},Values:[${list(e?.values).map(String).join(" ")}],},`);
  return `&LabelSelector{MatchLabels:map[string]string{${labelText}},MatchExpressions:[]LabelSelectorRequirement{${requirements.join("")}},}`;
}

// A binding's param: `namespace/name`, `*/name` when it names no namespace (it may be cluster-scoped), its
// selector, or <unset>.
function paramRefText(ref: unknown): string {
  if (!isObject(ref)) return "<unset>";
  if (typeof ref.name === "string" && ref.name !== "") return `${text(ref.namespace, "*")}/${ref.name}`;
  return isObject(ref.selector) ? goLabelSelectorText(ref.selector) : "<unset>";
}

/** spec.matchingPrecedence, 1000 when unset or 0, as the server's defaulting makes it. */
const matchingPrecedence = (o: Json): number => (typeof o.spec?.matchingPrecedence === "number" && o.spec.matchingPrecedence !== 0 ? o.spec.matchingPrecedence : 1000);

/** MissingPL is the status of the Dangling condition the APF controller writes, `?` until it has written one. */
function flowSchemaCells(o: Json, age: Age): Cell[] {
  const method = o.spec?.distinguisherMethod;
  const dangling = conditionOf(o, "Dangling");
  return [name(o), o.spec?.priorityLevelConfiguration?.name ?? "", matchingPrecedence(o), isObject(method) ? (method.type ?? "") : "<none>", created(o, age), dangling === undefined ? "?" : (dangling.status ?? "")];
}

/**
 * A limited priority level's shares and queuing, read with the server's defaults (30 shares; 64 queues, hand size
 * 8, 50 long, where 0 also means unset); an exempt level, or one that rejects rather than queues, shows <none>.
 */
function priorityLevelCells(o: Json, age: Age): Cell[] {
  const limited = o.spec?.limited;
  let settings: Cell[] = ["<none>", "<none>", "<none>", "<none>"];
  if (isObject(limited)) {
    const shares = typeof limited.nominalConcurrencyShares === "number" ? limited.nominalConcurrencyShares : 30;
    const queuing = limited.limitResponse?.queuing;
    const defaulted = (value: unknown, unset: number): number => (typeof value === "number" && value !== 0 ? value : unset);
    settings = isObject(queuing) ? [shares, defaulted(queuing.queues, 64), defaulted(queuing.handSize, 8), defaulted(queuing.queueLengthLimit, 50)] : [shares, "<none>", "<none>", "<none>"];
  }
  return [name(o), o.spec?.type ?? "", ...settings, created(o, age)];
}

/** The Healthy condition's verdict, message and error; Unknown when the component reported none. */
function componentStatusCells(o: Json): Cell[] {
  const healthy = list(o.conditions).find((c) => c?.type === "Healthy");
  if (healthy === undefined) return [name(o), "Unknown", "", ""];
  return [name(o), healthy.status === "True" ? "Healthy" : "Unhealthy", healthy.message ?? "", healthy.error ?? ""];
}

/** A workload's columns, then its template's containers and images, then (unless absent) its selector's text. */
function workloadPrinter(columns: Column[], cells: (o: Json) => Cell[], selector: ((o: Json) => string) | undefined): Printer {
  return {
    columns: [nameColumn, ...columns, ageColumn, ...templateColumns, ...(selector === undefined ? [] : [wide("Selector")])],
    cells: (o, age) => [name(o), ...cells(o), created(o, age), ...containerCells(o.spec?.template), ...(selector === undefined ? [] : [selector(o)])],
  };
}

const specSelector = (o: Json): string => formatSelector(o.spec?.selector);
/** A ReplicationController's selector is a plain label map, printed as labels. */
const labelMapSelector = (o: Json): string => formatLabels(o.spec?.selector);

const bindingColumns = [nameColumn, col("Role"), ageColumn, wide("Users"), wide("Groups"), wide("ServiceAccounts")];

/** Built-in printers by `group/Kind`. */
export const builtinPrinters: Readonly<Record<string, Printer>> = {
  "/Pod": { columns: [nameColumn, col("Ready"), col("Status"), col("Restarts"), ageColumn, wide("IP"), wide("Node"), wide("Nominated Node"), wide("Readiness Gates")], cells: podCells },
  "/Service": { columns: [nameColumn, col("Type"), col("Cluster-IP"), col("External-IP"), col("Port(s)"), ageColumn, wide("Selector")], cells: serviceCells },
  "/Endpoints": { columns: [nameColumn, col("Endpoints"), ageColumn], cells: (o, age) => [name(o), endpointsText(o), created(o, age)] },
  "discovery.k8s.io/EndpointSlice": { columns: [nameColumn, col("AddressType"), col("Ports"), col("Endpoints"), ageColumn], cells: endpointSliceCells },
  "/Namespace": { columns: [nameColumn, col("Status"), ageColumn], cells: (o, age) => [name(o), o.status?.phase ?? "Active", created(o, age)] },
  "/ConfigMap": { columns: [nameColumn, col("Data"), ageColumn], cells: (o, age) => [name(o), count(o.data) + count(o.binaryData), created(o, age)] },
  "/Secret": { columns: [nameColumn, col("Type"), col("Data"), ageColumn], cells: (o, age) => [name(o), o.type ?? "Opaque", count(o.data), created(o, age)] },
  "/ServiceAccount": { columns: [nameColumn, col("Secrets"), ageColumn], cells: (o, age) => [name(o), list(o.secrets).length, created(o, age)] },
  "/Node": { columns: [nameColumn, col("Status"), col("Roles"), ageColumn, col("Version"), wide("Internal-IP"), wide("External-IP"), wide("OS-Image"), wide("Kernel-Version"), wide("Container-Runtime")], cells: nodeCells },
  "/Event": { columns: [col("Last Seen"), col("Type"), col("Reason"), col("Object"), wide("Subobject"), wide("Source"), col("Message"), wide("First Seen"), wide("Count"), { ...wide("Name"), format: "name" }], cells: eventCells },
  "events.k8s.io/Event": { columns: [col("Last Seen"), col("Type"), col("Reason"), col("Object"), wide("Subobject"), wide("Source"), col("Message"), wide("First Seen"), wide("Count"), { ...wide("Name"), format: "name" }], cells: eventCells },
  "/PersistentVolumeClaim": { columns: [nameColumn, col("Status"), col("Volume"), col("Capacity"), col("Access Modes"), col("StorageClass"), col("VolumeAttributesClass"), ageColumn, wide("VolumeMode")], cells: pvcCells },
  "/PersistentVolume": { columns: [nameColumn, col("Capacity"), col("Access Modes"), col("Reclaim Policy"), col("Status"), col("Claim"), col("StorageClass"), col("VolumeAttributesClass"), col("Reason"), ageColumn, wide("VolumeMode")], cells: pvCells },
  "/ReplicationController": workloadPrinter([col("Desired", "integer"), col("Current", "integer"), col("Ready", "integer")], (o) => [replicas(o), num(o.status?.replicas), num(o.status?.readyReplicas)], labelMapSelector),
  "/PodTemplate": { columns: [nameColumn, col("Containers"), col("Images"), col("Pod Labels")], cells: (o) => [name(o), ...containerCells(o.template), formatLabels(o.template?.metadata?.labels)] },
  "apps/Deployment": workloadPrinter([col("Ready"), col("Up-to-date"), col("Available")], (o) => [`${num(o.status?.readyReplicas)}/${replicas(o)}`, num(o.status?.updatedReplicas), num(o.status?.availableReplicas)], specSelector),
  "apps/ReplicaSet": workloadPrinter([col("Desired", "integer"), col("Current", "integer"), col("Ready", "integer")], (o) => [replicas(o), num(o.status?.replicas), num(o.status?.readyReplicas)], specSelector),
  "apps/StatefulSet": workloadPrinter([col("Ready")], (o) => [`${num(o.status?.readyReplicas)}/${replicas(o)}`], undefined),
  "apps/DaemonSet": workloadPrinter(
    [col("Desired", "integer"), col("Current", "integer"), col("Ready", "integer"), col("Up-to-date", "integer"), col("Available", "integer"), col("Node Selector")],
    (o) => [num(o.status?.desiredNumberScheduled), num(o.status?.currentNumberScheduled), num(o.status?.numberReady), num(o.status?.updatedNumberScheduled), num(o.status?.numberAvailable), formatLabels(o.spec?.template?.spec?.nodeSelector)],
    specSelector,
  ),
  "batch/Job": { columns: [nameColumn, col("Status"), col("Completions"), col("Duration"), ageColumn, ...templateColumns, wide("Selector")], cells: jobCells },
  "batch/CronJob": {
    columns: [nameColumn, col("Schedule"), col("Timezone"), col("Suspend", "boolean"), col("Active", "integer"), col("Last Schedule"), ageColumn, ...templateColumns, wide("Selector")],
    cells: (o, age) => {
      const job = o.spec?.jobTemplate?.spec;
      const last = o.status?.lastScheduleTime === undefined ? "<none>" : age(o.status.lastScheduleTime);
      return [name(o), o.spec?.schedule ?? "", o.spec?.timeZone ?? "<none>", boolText(o.spec?.suspend), list(o.status?.active).length, last, created(o, age), ...containerCells(job?.template), formatSelector(job?.selector)];
    },
  },
  "autoscaling/HorizontalPodAutoscaler": { columns: [nameColumn, col("Reference"), col("Targets"), col("MinPods"), col("MaxPods"), col("Replicas"), ageColumn], cells: hpaCells },
  "networking.k8s.io/Ingress": { columns: [nameColumn, col("Class"), col("Hosts"), col("Address"), col("Ports"), ageColumn], cells: ingressCells },
  "networking.k8s.io/IngressClass": {
    columns: [nameColumn, col("Controller"), col("Parameters"), ageColumn],
    cells: (o, age) => {
      const p = o.spec?.parameters;
      const parameters = p === undefined || p === null ? "<none>" : `${p.kind ?? ""}${p.apiGroup === undefined ? "" : `.${p.apiGroup}`}/${p.name ?? ""}`;
      return [name(o), o.spec?.controller ?? "", parameters, created(o, age)];
    },
  },
  "networking.k8s.io/NetworkPolicy": { columns: [nameColumn, col("Pod-Selector"), ageColumn], cells: (o, age) => [name(o), formatSelector(o.spec?.podSelector ?? {}), created(o, age)] },
  "networking.k8s.io/ServiceCIDR": { columns: [nameColumn, col("CIDRs"), ageColumn], cells: (o, age) => [name(o), list(o.spec?.cidrs).join(","), created(o, age)] },
  "networking.k8s.io/IPAddress": {
    columns: [nameColumn, col("ParentRef")],
    cells: (o) => {
      const p = o.spec?.parentRef;
      if (p === undefined || p === null) return [name(o), "<none>"];
      const resource = `${p.resource ?? ""}${p.group ? `.${p.group}` : ""}`.toLowerCase();
      return [name(o), `${resource}${p.namespace ? `/${p.namespace}` : ""}/${p.name ?? ""}`];
    },
  },
  "policy/PodDisruptionBudget": {
    columns: [nameColumn, col("Min Available"), col("Max Unavailable"), col("Allowed Disruptions", "integer"), ageColumn],
    cells: (o, age) => [name(o), o.spec?.minAvailable === undefined ? "N/A" : String(o.spec.minAvailable), o.spec?.maxUnavailable === undefined ? "N/A" : String(o.spec.maxUnavailable), num(o.status?.disruptionsAllowed), created(o, age)],
  },
  "rbac.authorization.k8s.io/RoleBinding": { columns: bindingColumns, cells: bindingCells },
  "rbac.authorization.k8s.io/ClusterRoleBinding": { columns: bindingColumns, cells: bindingCells },
  "storage.k8s.io/StorageClass": {
    columns: [nameColumn, col("Provisioner"), col("ReclaimPolicy"), col("VolumeBindingMode"), col("AllowVolumeExpansion"), ageColumn],
    cells: (o, age) => {
      const isDefault = ["storageclass.kubernetes.io/is-default-class", "storageclass.beta.kubernetes.io/is-default-class"].some((a) => o.metadata?.annotations?.[a] === "true");
      return [`${name(o)}${isDefault ? " (default)" : ""}`, o.provisioner ?? "", o.reclaimPolicy ?? "Delete", o.volumeBindingMode ?? "Immediate", o.allowVolumeExpansion === true, created(o, age)];
    },
  },
  "scheduling.k8s.io/PriorityClass": {
    columns: [nameColumn, col("Value", "integer"), col("Global-Default", "boolean"), ageColumn, wide("PreemptionPolicy")],
    cells: (o, age) => [name(o), num(o.value), o.globalDefault === true, created(o, age), o.preemptionPolicy ?? ""],
  },
  "coordination.k8s.io/Lease": { columns: [nameColumn, col("Holder"), ageColumn], cells: (o, age) => [name(o), o.spec?.holderIdentity ?? "", created(o, age)] },
  "certificates.k8s.io/CertificateSigningRequest": {
    columns: [nameColumn, ageColumn, col("SignerName"), col("Requestor"), col("RequestedDuration"), col("Condition")],
    cells: (o, age) => [name(o), created(o, age), text(o.spec?.signerName), o.spec?.username ?? "", typeof o.spec?.expirationSeconds === "number" ? humanDuration(o.spec.expirationSeconds * 1000) : "<none>", csrStatus(o)],
  },
  "admissionregistration.k8s.io/MutatingWebhookConfiguration": { columns: [nameColumn, col("Webhooks", "integer"), ageColumn], cells: (o, age) => [name(o), list(o.webhooks).length, created(o, age)] },
  "admissionregistration.k8s.io/ValidatingWebhookConfiguration": { columns: [nameColumn, col("Webhooks", "integer"), ageColumn], cells: (o, age) => [name(o), list(o.webhooks).length, created(o, age)] },
  "node.k8s.io/RuntimeClass": { columns: [nameColumn, col("Handler"), ageColumn], cells: (o, age) => [name(o), o.handler ?? "", created(o, age)] },
  "/ResourceQuota": { columns: [nameColumn, col("Request"), col("Limit"), ageColumn], cells: quotaCells },
  "/ComponentStatus": { columns: [nameColumn, col("Status"), col("Message"), col("Error")], cells: componentStatusCells },
  "apps/ControllerRevision": {
    columns: [nameColumn, col("Controller"), col("Revision"), ageColumn],
    cells: (o, age) => [name(o), controllerText(o), num(o.revision), created(o, age)],
  },
  "storage.k8s.io/VolumeAttachment": {
    columns: [nameColumn, { ...col("Attacher"), format: "name" }, col("PV"), col("Node"), col("Attached", "boolean"), ageColumn],
    cells: (o, age) => [name(o), o.spec?.attacher ?? "", o.spec?.source?.persistentVolumeName ?? "", o.spec?.nodeName ?? "", o.status?.attached === true, created(o, age)],
  },
  "storage.k8s.io/CSIDriver": {
    columns: [nameColumn, col("AttachRequired", "boolean"), col("PodInfoOnMount", "boolean"), col("StorageCapacity", "boolean"), col("TokenRequests"), col("RequiresRepublish", "boolean"), col("Modes"), ageColumn],
    cells: csiDriverCells,
  },
  "storage.k8s.io/CSINode": { columns: [nameColumn, col("Drivers", "integer"), ageColumn], cells: (o, age) => [name(o), list(o.spec?.drivers).length, created(o, age)] },
  "storage.k8s.io/CSIStorageCapacity": {
    columns: [nameColumn, col("StorageClassName"), col("Capacity")],
    cells: (o) => [name(o), o.storageClassName ?? "", o.capacity === undefined || o.capacity === null ? "<unset>" : String(o.capacity)],
  },
  "storage.k8s.io/VolumeAttributesClass": {
    columns: [nameColumn, col("DriverName"), ageColumn],
    // The printer marks a class carrying the (alpha) default-class annotation, as it marks default StorageClasses.
    cells: (o, age) => [`${name(o)}${o.metadata?.annotations?.["volumeattributesclass.alpha.kubernetes.io/is-default-class"] === "true" ? " (default)" : ""}`, o.driverName ?? "", created(o, age)],
  },
  "admissionregistration.k8s.io/ValidatingAdmissionPolicy": {
    columns: [nameColumn, col("Validations", "integer"), col("ParamKind"), ageColumn],
    cells: (o, age) => {
      const kind = o.spec?.paramKind;
      return [name(o), list(o.spec?.validations).length, isObject(kind) ? `${kind.apiVersion ?? ""}/${kind.kind ?? ""}` : "<unset>", created(o, age)];
    },
  },
  "admissionregistration.k8s.io/ValidatingAdmissionPolicyBinding": {
    columns: [nameColumn, col("PolicyName"), col("ParamRef"), ageColumn],
    cells: (o, age) => [name(o), o.spec?.policyName ?? "", paramRefText(o.spec?.paramRef), created(o, age)],
  },
  "flowcontrol.apiserver.k8s.io/FlowSchema": {
    columns: [nameColumn, col("PriorityLevel"), col("MatchingPrecedence"), col("DistinguisherMethod"), ageColumn, col("MissingPL")],
    cells: flowSchemaCells,
    // The list printer puts the schemas in the order the server matches requests against them.
    compare: (a, b) => matchingPrecedence(a) - matchingPrecedence(b) || byteOrder(name(a), name(b)),
  },
  "flowcontrol.apiserver.k8s.io/PriorityLevelConfiguration": {
    columns: [nameColumn, col("Type"), col("NominalConcurrencyShares"), col("Queues"), col("HandSize"), col("QueueLengthLimit"), ageColumn],
    cells: priorityLevelCells,
  },
};

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
