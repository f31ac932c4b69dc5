// Group versions served as a conversion of another stored version, as kube-apiserver stores one version of a kind
// and converts on the way in and out: autoscaling/v1 HorizontalPodAutoscaler is a view of the stored autoscaling/v2
// object. Reads, lists and watches convert each object out; creates and updates convert the body in; patches apply
// to the v1 form of the current object (the form the client sees) and the result is converted in and written.
//
// The conversion follows kubernetes pkg/apis/autoscaling/v1/conversion.go: `spec.targetCPUUtilizationPercentage` is
// the first Resource cpu metric's `target.averageUtilization`, `status.currentCPUUtilizationPercentage` the cpu
// current metric's `current.averageUtilization`; what v1 cannot say travels in annotations, so that a
// read-modify-write through v1 keeps it: other metrics (`autoscaling.alpha.kubernetes.io/metrics`, in v1's metric
// form), `spec.behavior` (`.../behavior`, the internal type's Go field names), `status.currentMetrics`
// (`.../current-metrics`) and `status.conditions` (`.../conditions`). Writes lift them back out; an object left
// without metrics gets the 80% CPU utilization target v1 always implied.
import type { DeleteOptions, PatchOptions, WriteOptions } from "../api/client.ts";
import { badRequest } from "../api/errors.ts";
import { deepFreeze, isRecord, type JsonObject } from "../api/json.ts";
import type { KubeObject, ObjectList, ObjectRef } from "../api/object.ts";
import { applyJsonPatch, applyMergePatch } from "../api/patch.ts";
import type { ResourceType } from "../api/resources.ts";
import type { Store, StoreListOptions, StoreWatchOptions, StoreWatcher, StoreWatchListener } from "../store/index.ts";

/** A resource served in one version and stored in another. */
export interface ConvertedResource {
  /** The resource as clients address it (the stored one's facts, another version). */
  served: ResourceType;
  /** The store seen through the conversion: the served version in and out. */
  store: Store;
}

interface Conversion {
  group: string;
  kind: string;
  servedVersion: string;
  storedVersion: string;
  /** Stored form -> served form (a new object). */
  out(stored: JsonObject): JsonObject;
  /** Served form -> stored form (a new object). */
  in(served: JsonObject): JsonObject;
}

const metricsAnnotation = "autoscaling.alpha.kubernetes.io/metrics";
const behaviorAnnotation = "autoscaling.alpha.kubernetes.io/behavior";
const currentMetricsAnnotation = "autoscaling.alpha.kubernetes.io/current-metrics";
const conditionsAnnotation = "autoscaling.alpha.kubernetes.io/conditions";
/** The CPU utilization autoscaling/v1 implies when an HPA names no metric. */
const defaultCpuUtilization = 80;

const conversions: readonly Conversion[] = [{ group: "autoscaling", kind: "HorizontalPodAutoscaler", servedVersion: "v1", storedVersion: "v2", out: hpaToV1, in: hpaToV2 }];

const rec = (value: unknown): JsonObject => (isRecord(value) ? value : {});
/** Copies the keys of `from` that are set, in order. */
function pick(from: JsonObject, keys: readonly string[]): JsonObject {
  const out: JsonObject = {};
  for (const key of keys) if (from[key] !== undefined && from[key] !== null) out[key] = from[key];
  return out;
}

function isCpuResource(metric: JsonObject): boolean {
  return metric.type === "Resource" && isRecord(metric.resource) && metric.resource.name === "cpu";
}

// ---- v2 -> v1 ----

function metricSpecToV1(m: JsonObject): JsonObject {
  const target = (source: JsonObject) => rec(source.target);
  const metric = (source: JsonObject) => rec(source.metric);
  const out: JsonObject = { type: m.type };
  if (isRecord(m.resource)) out.resource = { name: m.resource.name, ...pick({ targetAverageUtilization: target(m.resource).averageUtilization, targetAverageValue: target(m.resource).averageValue }, ["targetAverageUtilization", "targetAverageValue"]) };
  if (isRecord(m.containerResource)) {
    const c = m.containerResource;
    out.containerResource = { name: c.name, ...pick({ targetAverageUtilization: target(c).averageUtilization, targetAverageValue: target(c).averageValue }, ["targetAverageUtilization", "targetAverageValue"]), container: c.container ?? "" };
  }
  if (isRecord(m.pods)) out.pods = { metricName: metric(m.pods).name ?? "", targetAverageValue: target(m.pods).averageValue ?? "0", ...pick({ selector: metric(m.pods).selector }, ["selector"]) };
  if (isRecord(m.object)) {
    const o = m.object;
    out.object = { target: pick(rec(o.describedObject), ["kind", "name", "apiVersion"]), metricName: metric(o).name ?? "", targetValue: target(o).value ?? "0", ...pick({ selector: metric(o).selector, averageValue: target(o).averageValue }, ["selector", "averageValue"]) };
  }
  if (isRecord(m.external)) {
    const e = m.external;
    out.external = { metricName: metric(e).name ?? "", ...pick({ metricSelector: metric(e).selector, targetValue: target(e).value, targetAverageValue: target(e).averageValue }, ["metricSelector", "targetValue", "targetAverageValue"]) };
  }
  return out;
}

function metricStatusToV1(m: JsonObject): JsonObject {
  const current = (source: JsonObject) => rec(source.current);
  const metric = (source: JsonObject) => rec(source.metric);
  const out: JsonObject = { type: m.type };
  if (isRecord(m.resource)) out.resource = { name: m.resource.name, ...pick({ currentAverageUtilization: current(m.resource).averageUtilization }, ["currentAverageUtilization"]), currentAverageValue: current(m.resource).averageValue ?? "0" };
  if (isRecord(m.containerResource)) {
    const c = m.containerResource;
    out.containerResource = { name: c.name, ...pick({ currentAverageUtilization: current(c).averageUtilization }, ["currentAverageUtilization"]), currentAverageValue: current(c).averageValue ?? "0", container: c.container ?? "" };
  }
  if (isRecord(m.pods)) out.pods = { metricName: metric(m.pods).name ?? "", currentAverageValue: current(m.pods).averageValue ?? "0", ...pick({ selector: metric(m.pods).selector }, ["selector"]) };
  if (isRecord(m.object)) {
    const o = m.object;
    out.object = { target: pick(rec(o.describedObject), ["kind", "name", "apiVersion"]), metricName: metric(o).name ?? "", currentValue: current(o).value ?? "0", ...pick({ selector: metric(o).selector, averageValue: current(o).averageValue }, ["selector", "averageValue"]) };
  }
  if (isRecord(m.external)) {
    const e = m.external;
    out.external = { metricName: metric(e).name ?? "", ...pick({ metricSelector: metric(e).selector }, ["metricSelector"]), currentValue: current(e).value ?? "0", ...pick({ currentAverageValue: current(e).averageValue }, ["currentAverageValue"]) };
  }
  return out;
}

/** Keys as Go's encoding/json writes a struct without JSON tags: the field names, capitalized. */
function goFieldNames(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(goFieldNames);
  if (!isRecord(value)) return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k.charAt(0).toUpperCase() + k.slice(1), goFieldNames(v)]));
}

function hpaToV1(stored: JsonObject): JsonObject {
  const spec = rec(stored.spec);
  const status = rec(stored.status);
  const metrics = (Array.isArray(spec.metrics) ? spec.metrics : []).filter(isRecord);
  const v1Spec: JsonObject = pick(spec, ["scaleTargetRef", "minReplicas", "maxReplicas"]);
  const cpu = metrics.find(isCpuResource);
  const cpuTarget = cpu === undefined ? undefined : rec(rec(cpu.resource).target).averageUtilization;
  if (cpuTarget !== undefined && cpuTarget !== null) v1Spec.targetCPUUtilizationPercentage = cpuTarget;
  const others = metrics.filter((m) => !(isCpuResource(m) && rec(rec(m.resource).target).averageUtilization !== undefined));
  const current = (Array.isArray(status.currentMetrics) ? status.currentMetrics : []).filter(isRecord);
  const conditions = Array.isArray(status.conditions) ? status.conditions : [];
  const annotations: Record<string, string> = { ...(rec(rec(stored.metadata).annotations) as Record<string, string>) };
  if (others.length > 0) annotations[metricsAnnotation] = JSON.stringify(others.map(metricSpecToV1));
  if (isRecord(spec.behavior)) annotations[behaviorAnnotation] = JSON.stringify(goFieldNames(spec.behavior));
  if (current.length > 0) annotations[currentMetricsAnnotation] = JSON.stringify(current.map(metricStatusToV1));
  if (conditions.length > 0) annotations[conditionsAnnotation] = JSON.stringify(conditions);
  const metadata: JsonObject = { ...rec(stored.metadata) };
  if (Object.keys(annotations).length > 0) metadata.annotations = annotations;
  const v1Status: JsonObject = { ...pick(status, ["observedGeneration", "lastScaleTime"]), currentReplicas: status.currentReplicas ?? 0, desiredReplicas: status.desiredReplicas ?? 0 };
  const cpuNow = current.find(isCpuResource);
  const cpuCurrent = cpuNow === undefined ? undefined : rec(rec(cpuNow.resource).current).averageUtilization;
  if (cpuCurrent !== undefined && cpuCurrent !== null) v1Status.currentCPUUtilizationPercentage = cpuCurrent;
  return { apiVersion: "autoscaling/v1", kind: stored.kind, metadata, spec: v1Spec, status: v1Status };
}

// ---- v1 -> v2 ----

function metricSpecToV2(m: JsonObject): JsonObject {
  const out: JsonObject = { type: m.type };
  // A utilization makes the target a Utilization one; without it, an AverageValue one.
  const resourceTarget = (r: JsonObject): JsonObject => {
    const utilization = r.targetAverageUtilization;
    const type = utilization === undefined || utilization === null ? "AverageValue" : "Utilization";
    return { type, ...pick({ averageValue: r.targetAverageValue, averageUtilization: utilization }, ["averageValue", "averageUtilization"]) };
  };
  if (isRecord(m.resource)) out.resource = { name: m.resource.name, target: resourceTarget(m.resource) };
  if (isRecord(m.containerResource)) out.containerResource = { name: m.containerResource.name, container: m.containerResource.container, target: resourceTarget(m.containerResource) };
  if (isRecord(m.pods)) out.pods = { metric: { name: m.pods.metricName, ...pick(m.pods, ["selector"]) }, target: { type: "AverageValue", averageValue: m.pods.targetAverageValue } };
  if (isRecord(m.object)) {
    const o = m.object;
    const averaged = o.averageValue !== undefined && o.averageValue !== null;
    out.object = { describedObject: o.target, metric: { name: o.metricName, ...pick(o, ["selector"]) }, target: { type: averaged ? "AverageValue" : "Value", value: o.targetValue ?? "0", ...pick(o, ["averageValue"]) } };
  }
  if (isRecord(m.external)) {
    const e = m.external;
    const valued = e.targetValue !== undefined && e.targetValue !== null;
    out.external = { metric: { name: e.metricName, ...pick({ selector: e.metricSelector }, ["selector"]) }, target: { type: valued ? "Value" : "AverageValue", ...pick({ value: e.targetValue, averageValue: e.targetAverageValue }, ["value", "averageValue"]) } };
  }
  return out;
}

function metricStatusToV2(m: JsonObject): JsonObject {
  const out: JsonObject = { type: m.type };
  const resourceCurrent = (r: JsonObject) => ({ ...pick({ averageValue: r.currentAverageValue, averageUtilization: r.currentAverageUtilization }, ["averageValue", "averageUtilization"]) });
  if (isRecord(m.resource)) out.resource = { name: m.resource.name, current: resourceCurrent(m.resource) };
  if (isRecord(m.containerResource)) out.containerResource = { name: m.containerResource.name, container: m.containerResource.container, current: resourceCurrent(m.containerResource) };
  if (isRecord(m.pods)) out.pods = { metric: { name: m.pods.metricName, ...pick(m.pods, ["selector"]) }, current: pick({ averageValue: m.pods.currentAverageValue }, ["averageValue"]) };
  if (isRecord(m.object)) out.object = { describedObject: m.object.target, metric: { name: m.object.metricName, ...pick(m.object, ["selector"]) }, current: pick({ value: m.object.currentValue, averageValue: m.object.averageValue }, ["value", "averageValue"]) };
  if (isRecord(m.external)) out.external = { metric: { name: m.external.metricName, ...pick({ selector: m.external.metricSelector }, ["selector"]) }, current: pick({ value: m.external.currentValue, averageValue: m.external.currentAverageValue }, ["value", "averageValue"]) };
  return out;
}

/** Go's encoding/json matches field names without regard to case: the behavior annotation's keys, as JSON names. */
function jsonFieldNames(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(jsonFieldNames);
  if (!isRecord(value)) return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k.charAt(0).toLowerCase() + k.slice(1), jsonFieldNames(v)]));
}

/** Takes an annotation out of `annotations` and parses it as JSON; a malformed one is the client's error (400). */
function takeAnnotation(annotations: JsonObject, name: string): unknown {
  const text = annotations[name];
  if (text === undefined) return undefined;
  delete annotations[name];
  try {
    return JSON.parse(String(text));
  } catch {
    throw badRequest(`the annotation ${name} of an autoscaling/v1 HorizontalPodAutoscaler is not valid JSON`);
  }
}

const records = (value: unknown): JsonObject[] => (Array.isArray(value) ? value.filter(isRecord) : []);

function hpaToV2(served: JsonObject): JsonObject {
  const spec = rec(served.spec);
  const status = rec(served.status);
  const metadata: JsonObject = { ...rec(served.metadata) };
  const annotations: JsonObject = { ...rec(metadata.annotations) };
  const v2Spec: JsonObject = pick(spec, ["scaleTargetRef", "minReplicas", "maxReplicas"]);
  const cpu = spec.targetCPUUtilizationPercentage;
  const cpuMetrics = cpu === undefined || cpu === null ? [] : [{ type: "Resource", resource: { name: "cpu", target: { type: "Utilization", averageUtilization: cpu } } }];
  const metrics = [...records(takeAnnotation(annotations, metricsAnnotation)).map(metricSpecToV2), ...cpuMetrics];
  v2Spec.metrics = metrics.length > 0 ? metrics : [{ type: "Resource", resource: { name: "cpu", target: { type: "Utilization", averageUtilization: defaultCpuUtilization } } }];
  const behavior = takeAnnotation(annotations, behaviorAnnotation);
  if (isRecord(behavior)) v2Spec.behavior = jsonFieldNames(behavior);
  const v2Status: JsonObject = pick(status, ["observedGeneration", "lastScaleTime", "currentReplicas", "desiredReplicas"]);
  const current = takeAnnotation(annotations, currentMetricsAnnotation);
  const cpuNow = status.currentCPUUtilizationPercentage;
  if (current !== undefined) v2Status.currentMetrics = records(current).map(metricStatusToV2);
  else if (cpuNow !== undefined && cpuNow !== null) v2Status.currentMetrics = [{ type: "Resource", resource: { name: "cpu", current: { averageUtilization: cpuNow } } }];
  const conditions = takeAnnotation(annotations, conditionsAnnotation);
  if (conditions !== undefined) v2Status.conditions = records(conditions);
  if (Object.keys(annotations).length > 0) metadata.annotations = annotations;
  else delete metadata.annotations;
  return { apiVersion: "autoscaling/v2", kind: served.kind, metadata, spec: v2Spec, status: v2Status };
}

// ---- the converted view of the store ----

/** The group versions served only as conversions (`autoscaling/v1`): built-in, with schemas from the wire table. */
export const convertedGroupVersions: ReadonlySet<string> = new Set(conversions.map((c) => `${c.group}/${c.servedVersion}`));

/** The served resources: the store's own and the converted views of them. */
export function servedResources(store: Store): ResourceType[] {
  const resources = store.resources();
  const views: ResourceType[] = [];
  for (const c of conversions) {
    const stored = resources.find((r) => r.group === c.group && r.version === c.storedVersion && r.kind === c.kind);
    if (stored !== undefined) views.push(servedOf(stored, c));
  }
  return [...resources, ...views];
}

const servedTypes = new WeakMap<ResourceType, ResourceType>();

function servedOf(stored: ResourceType, c: Conversion): ResourceType {
  let served = servedTypes.get(stored);
  if (served === undefined) {
    served = { ...stored, version: c.servedVersion };
    servedTypes.set(stored, served);
  }
  return served;
}

/** The converted view for a request path's group, version and plural, or undefined when none is served so. */
export function convertedResource(store: Store, group: string, version: string, plural: string): ConvertedResource | undefined {
  const c = conversions.find((x) => x.group === group && x.servedVersion === version);
  if (c === undefined) return undefined;
  const stored = store.resourceForPlural(group, c.storedVersion, plural);
  if (stored === undefined || stored.kind !== c.kind) return undefined;
  return { served: servedOf(stored, c), store: convertingStore(store, c) };
}

/** Served forms of stored objects, shared by every reader of the same stored object (stored objects are frozen). */
const servedForms = new WeakMap<KubeObject, KubeObject>();

function convertingStore(store: Store, c: Conversion): Store {
  const storedApiVersion = `${c.group}/${c.storedVersion}`;
  const servedApiVersion = `${c.group}/${c.servedVersion}`;
  const toStoredRef = <T extends { apiVersion: string }>(ref: T): T => ({ ...ref, apiVersion: storedApiVersion });
  const out = (object: KubeObject): KubeObject => {
    let served = servedForms.get(object);
    if (served === undefined) {
      served = deepFreeze(c.out(object as unknown as JsonObject)) as unknown as KubeObject;
      if (Object.isFrozen(object)) servedForms.set(object, served);
    }
    return served;
  };
  const into = (object: KubeObject): KubeObject => c.in(object as unknown as JsonObject) as unknown as KubeObject;
  const patched = (options: PatchOptions): KubeObject => {
    const current = out(store.get(toStoredRef(options)));
    const next = options.patchType === "merge" ? applyMergePatch(current, options.patch) : applyJsonPatch(current, options.patch);
    if (!isRecord(next)) throw badRequest("the patch must leave an object");
    return next as unknown as KubeObject;
  };
  const view = {
    get: (ref: ObjectRef, options?: { revision?: number }) => out(store.get(toStoredRef(ref), options)),
    list: (options: StoreListOptions): ObjectList => {
      const list = store.list(toStoredRef(options));
      return { ...list, apiVersion: servedApiVersion, items: list.items.map(out) };
    },
    watch: (options: StoreWatchOptions, listener: StoreWatchListener): StoreWatcher => store.watch(toStoredRef(options), (event) => listener({ ...event, object: out(event.object) })),
    create: (object: KubeObject, options?: WriteOptions) => out(store.create(into(object), options)),
    update: (object: KubeObject, options?: WriteOptions) => out(store.update(into(object), options)),
    updateStatus: (object: KubeObject, options?: WriteOptions) => out(store.updateStatus(into(object), options)),
    patch: (options: PatchOptions) => out(store.update(into(patched(options)), options)),
    patchStatus: (options: PatchOptions) => out(store.updateStatus(into(patched(options)), options)),
    delete: (options: DeleteOptions) => out(store.delete(toStoredRef(options))),
  };
  const proxy = new Proxy(store, {
    get(target, property) {
      if (Object.hasOwn(view, property)) return view[property as keyof typeof view];
      const value = Reflect.get(target, property, target) as unknown;
      return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
  viewedStores.set(proxy, store);
  return proxy;
}

/** The store a converting view reads and writes through, by view. */
const viewedStores = new WeakMap<Store, Store>();

/** Records `view` as a view of `store` (CRD webhook conversions make their own, crd-conversion.ts). */
export function markView(view: Store, store: Store): void {
  viewedStores.set(view, store);
}

/** The store itself: the one behind a converting view, or `store` when it is none. */
export function storeBehind(store: Store): Store {
  return viewedStores.get(store) ?? store;
}
