// LimitRange in `settle serve`, as kube-apiserver's LimitRanger admission applies it to a new Pod or
// PersistentVolumeClaim: a container that states no request or limit of a resource gets the namespace's default
// (and the pod an annotation saying which), then every `min`, `max` and `maxLimitRequestRatio` must hold, per
// container, per pod (the sums) and per claim; one that does not is refused with 403 Forbidden in the real words.
// LimitRange objects themselves get the real defaulting (a default from `max`, a default request from the default
// or `min`: see `defaultLimitRange`). Left out: updates, and the ephemeral containers of a debug session.
import { ApiError } from "../../api/errors.ts";
import type { KubeObject } from "../../api/object.ts";
import type { ResourceType } from "../../api/resources.ts";
import { formatNanos, quantityFormat, quantityNanos } from "../../api/quantity.ts";
import type { Store } from "../../store/index.ts";
import { isRecord, records, type JsonObject } from "../../api/json.ts";

const annotation = "kubernetes.io/limit-ranger";

function map(value: unknown): JsonObject {
  return isRecord(value) ? value : {};
}

/** The LimitRange defaulting of a `Container` item: default limits from `max`, default requests from them or `min`. */
export function defaultLimitRange(limitRange: JsonObject): void {
  for (const item of records(map(limitRange.spec).limits)) {
    if (item.type !== "Container") continue;
    const defaults = isRecord(item.default) ? item.default : (item.default = {});
    const requests = isRecord(item.defaultRequest) ? item.defaultRequest : (item.defaultRequest = {});
    for (const [name, value] of Object.entries(map(item.max))) if (!(name in (defaults as JsonObject))) (defaults as JsonObject)[name] = value;
    for (const [name, value] of Object.entries(defaults as JsonObject)) if (!(name in (requests as JsonObject))) (requests as JsonObject)[name] = value;
    for (const [name, value] of Object.entries(map(item.min))) if (!(name in (requests as JsonObject))) (requests as JsonObject)[name] = value;
  }
}

function items(store: Store, namespace: string, type: string): JsonObject[] {
  return store
    .list({ apiVersion: "v1", kind: "LimitRange", namespace })
    .items.flatMap((lr) => records(map(lr.spec).limits))
    .filter((item) => item.type === type);
}

/** Applies the namespace's LimitRanges to a pod or claim being created: defaults, then the constraints. */
export function admitLimits(store: Store, resource: ResourceType, object: KubeObject): void {
  if (resource.group !== "" || object.metadata.namespace === undefined) return;
  if (resource.kind === "Pod") {
    const containerItems = items(store, object.metadata.namespace, "Container");
    const podItems = items(store, object.metadata.namespace, "Pod");
    if (containerItems.length === 0 && podItems.length === 0) return;
    applyContainerDefaults(object, containerItems);
    const errors = [...containerItems.flatMap((item) => containerErrors(object, item)), ...podItems.flatMap((item) => podErrors(object, item))];
    if (errors.length > 0) throw forbidden(resource, object, errors);
  } else if (resource.kind === "PersistentVolumeClaim") {
    const claimItems = items(store, object.metadata.namespace, "PersistentVolumeClaim");
    const spec = map(object.spec);
    const storage = map(map(spec.resources).requests).storage;
    const limit = map(map(spec.resources).limits).storage;
    const errors = claimItems.flatMap((item) => bounds("PersistentVolumeClaim", "storage", item, storage, limit, true));
    if (errors.length > 0) throw forbidden(resource, object, errors);
  }
}

function forbidden(resource: ResourceType, object: KubeObject, errors: string[]): ApiError {
  const name = object.metadata.name ?? "";
  // Several errors read as Go's error aggregate prints them.
  const message = errors.length === 1 ? errors[0]! : `[${errors.join(", ")}]`;
  return new ApiError("Forbidden", 403, `${resource.plural} "${name}" is forbidden: ${message}`, { name, kind: resource.plural });
}

function applyContainerDefaults(pod: KubeObject, containerItems: readonly JsonObject[]): void {
  const limits: JsonObject = {};
  const requests: JsonObject = {};
  for (const item of containerItems) {
    Object.assign(limits, map(item.default));
    Object.assign(requests, map(item.defaultRequest));
  }
  const notes: string[] = [];
  const spec = map(pod.spec);
  for (const [field, label] of [["initContainers", "init container"], ["containers", "container"]] as const) {
    for (const container of records(spec[field])) {
      const resources = isRecord(container.resources) ? container.resources : (container.resources = {});
      const fill = (kind: "requests" | "limits", defaults: JsonObject): string[] => {
        const current = isRecord((resources as JsonObject)[kind]) ? ((resources as JsonObject)[kind] as JsonObject) : ((resources as JsonObject)[kind] = {});
        const set = Object.keys(defaults).filter((name) => !(name in current));
        for (const name of set) current[name] = defaults[name];
        if (Object.keys(current).length === 0) delete (resources as JsonObject)[kind];
        return set.sort();
      };
      const setRequests = fill("requests", requests);
      const setLimits = fill("limits", limits);
      if (setRequests.length > 0) notes.push(`${setRequests.join(", ")} request for ${label} ${String(container.name)}`);
      if (setLimits.length > 0) notes.push(`${setLimits.join(", ")} limit for ${label} ${String(container.name)}`);
    }
  }
  if (notes.length === 0) return;
  pod.metadata.annotations = { ...(pod.metadata.annotations ?? {}), [annotation]: `LimitRanger plugin set: ${notes.join("; ")}` };
}

/** The bounds of one resource: `min` on request and limit, `max` on the limit (a claim's: its request), which must then be stated. */
function bounds(type: string, name: string, item: JsonObject, request: unknown, limit: unknown, claim = false): string[] {
  const errors: string[] = [];
  const min = map(item.min)[name];
  const max = map(item.max)[name];
  const req = quantityNanos(request);
  const lim = quantityNanos(limit);
  if (min !== undefined) {
    if (req === undefined && !claim) errors.push(`minimum ${name} usage per ${type} is ${String(min)}.  No request is specified`);
    else if (req !== undefined && req < quantityNanos(min)!) errors.push(`minimum ${name} usage per ${type} is ${String(min)}, but request is ${String(request)}`);
    if (lim !== undefined && lim < quantityNanos(min)!) errors.push(`minimum ${name} usage per ${type} is ${String(min)}, but limit is ${String(limit)}`);
  }
  if (max !== undefined) {
    // A claim's maximum bounds its request (it has no limit to speak of); a container's bounds its limit.
    const [what, measured, stated] = claim ? ["request", req, request] : ["limit", lim, limit];
    if (measured === undefined) errors.push(`maximum ${name} usage per ${type} is ${String(max)}.  No ${what} is specified`);
    else if (measured > quantityNanos(max)!) errors.push(`maximum ${name} usage per ${type} is ${String(max)}, but ${what} is ${String(stated)}`);
  }
  return errors;
}

function ratio(type: string, name: string, item: JsonObject, request: unknown, limit: unknown): string[] {
  const most = map(item.maxLimitRequestRatio)[name];
  if (most === undefined) return [];
  const req = quantityNanos(request);
  const lim = quantityNanos(limit);
  if (req === undefined || lim === undefined) return [`${name} max limit to request ratio per ${type} is ${String(most)}, but no request is specified or request is 0`];
  if (req === 0n) return [`${name} max limit to request ratio per ${type} is ${String(most)}, but no request is specified or request is 0`];
  const actual = Number((lim * 1_000_000n) / req) / 1_000_000;
  return actual > Number(quantityNanos(most)!) / 1e9 ? [`${name} max limit to request ratio per ${type} is ${String(most)}, but provided ratio is ${actual.toFixed(6)}`] : [];
}

function resourceNames(item: JsonObject): string[] {
  return [...new Set([...Object.keys(map(item.min)), ...Object.keys(map(item.max)), ...Object.keys(map(item.maxLimitRequestRatio))])].sort();
}

function containerErrors(pod: KubeObject, item: JsonObject): string[] {
  const spec = map(pod.spec);
  const errors: string[] = [];
  for (const container of [...records(spec.initContainers), ...records(spec.containers)]) {
    const resources = map(container.resources);
    for (const name of resourceNames(item)) {
      const request = map(resources.requests)[name];
      const limit = map(resources.limits)[name];
      errors.push(...bounds("Container", name, item, request, limit), ...ratio("Container", name, item, request, limit));
    }
  }
  return errors;
}

/** A pod's total of one resource: its containers' sum, or its largest init container if that is more. */
function podTotal(spec: JsonObject, kind: "requests" | "limits", name: string): string | undefined {
  const of = (c: JsonObject) => quantityNanos(map(map(c.resources)[kind])[name]);
  const containers = records(spec.containers);
  if (containers.some((c) => of(c) === undefined)) return undefined;
  const sum = containers.reduce((total, c) => total + of(c)!, 0n);
  const init = records(spec.initContainers).reduce((most, c) => ((of(c) ?? 0n) > most ? of(c)! : most), 0n);
  const total = sum > init ? sum : init;
  // Printed as the real sum prints: canonical, in the form its first term was written.
  return formatNanos(total, quantityFormat(containers.map((c) => map(map(c.resources)[kind])[name])[0]));
}

function podErrors(pod: KubeObject, item: JsonObject): string[] {
  const spec = map(pod.spec);
  return resourceNames(item).flatMap((name) => {
    const request = podTotal(spec, "requests", name);
    const limit = podTotal(spec, "limits", name);
    return [...bounds("Pod", name, item, request, limit), ...ratio("Pod", name, item, request, limit)];
  });
}
