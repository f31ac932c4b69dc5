// ResourceQuota enforcement, as kube-apiserver's quota admission does it for a create: each quota of the namespace
// that tracks what the new object would use must have room for it, or the create is refused with 403 Forbidden
// (`exceeded quota: ...`); a quota on pod compute resources also refuses a pod whose containers do not say how much
// they need of them (`failed quota: ...: must specify ...`). What is used is counted from the store at the time of the
// write (the real plugin reads the quota's status.used, which the quota controller keeps; a store that is the one
// source of truth needs no lag). `quotaUsage` is that count, which the cluster's quota controller writes to status.
//
// Counted: object counts (`pods`, `services`, `configmaps`, `secrets`, `persistentvolumeclaims`,
// `replicationcontrollers`, `resourcequotas`, `services.nodeports`, `services.loadbalancers`, and
// `count/<resource>[.<group>]` for any kind), pod compute (`cpu`, `memory`, `ephemeral-storage` and their `requests.`
// and `limits.` forms, of pods not finished nor being deleted) and claimed storage (`requests.storage`). Left out:
// quota scopes and scope selectors (such quotas are not enforced), per-storage-class keys, extended resources,
// and updates (a pod's resources cannot change; a Service that changes type is not re-counted).
import type { Clock, Timer } from "../../api/clock.ts";
import { ApiError } from "../../api/errors.ts";
import { isRecord, jsonEqual, type JsonObject } from "../../api/json.ts";
import type { KubeObject } from "../../api/object.ts";
import type { ResourceType } from "../../api/resources.ts";
import { formatNanos, quantityFormat, quantityNanos } from "../../api/quantity.ts";
import type { Store } from "../../store/index.ts";

type Usage = Map<string, bigint>;

const computeResources = ["cpu", "memory", "ephemeral-storage"] as const;
/** The object-count names that predate `count/...`, by the kind they count. */
const legacyCounts: Readonly<Record<string, string>> = {
  Pod: "pods",
  Service: "services",
  ConfigMap: "configmaps",
  Secret: "secrets",
  PersistentVolumeClaim: "persistentvolumeclaims",
  ReplicationController: "replicationcontrollers",
  ResourceQuota: "resourcequotas",
};

function add(usage: Usage, name: string, amount: bigint): void {
  usage.set(name, (usage.get(name) ?? 0n) + amount);
}

function containers(spec: JsonObject, field: "containers" | "initContainers"): JsonObject[] {
  const list = spec[field];
  return Array.isArray(list) ? list.filter(isRecord) : [];
}

/** A pod's requests or limits of one resource: the larger of its containers' sum and its largest init container. */
function podAmount(spec: JsonObject, kind: "requests" | "limits", resource: string): bigint {
  const of = (c: JsonObject) => quantityNanos(isRecord(c.resources) && isRecord(c.resources[kind]) ? c.resources[kind][resource] : undefined) ?? 0n;
  const sum = containers(spec, "containers").reduce((total, c) => total + of(c), 0n);
  const init = containers(spec, "initContainers").reduce((most, c) => (of(c) > most ? of(c) : most), 0n);
  return sum > init ? sum : init;
}

function podCounts(pod: KubeObject): boolean {
  const phase = isRecord(pod.status) ? pod.status.phase : undefined;
  return phase !== "Succeeded" && phase !== "Failed" && pod.metadata.deletionTimestamp === undefined;
}

/** What one object uses, by quota resource name. */
export function objectUsage(resource: ResourceType, object: KubeObject): Usage {
  const usage: Usage = new Map();
  const isPod = resource.group === "" && resource.kind === "Pod";
  if (isPod && !podCounts(object)) return usage;
  const legacy = resource.group === "" ? legacyCounts[resource.kind] : undefined;
  if (legacy !== undefined) add(usage, legacy, 1_000_000_000n);
  add(usage, resource.group === "" ? `count/${resource.plural}` : `count/${resource.plural}.${resource.group}`, 1_000_000_000n);
  const spec = isRecord(object.spec) ? object.spec : {};
  if (isPod) {
    for (const name of computeResources) {
      const requests = podAmount(spec, "requests", name);
      add(usage, name, requests);
      add(usage, `requests.${name}`, requests);
      add(usage, `limits.${name}`, podAmount(spec, "limits", name));
    }
  } else if (resource.group === "" && resource.kind === "Service") {
    const ports = Array.isArray(spec.ports) ? spec.ports.length : 0;
    if (spec.type === "LoadBalancer") add(usage, "services.loadbalancers", 1_000_000_000n);
    if (spec.type === "NodePort" || (spec.type === "LoadBalancer" && spec.allocateLoadBalancerNodePorts !== false)) add(usage, "services.nodeports", BigInt(ports) * 1_000_000_000n);
  } else if (resource.group === "" && resource.kind === "PersistentVolumeClaim") {
    const requests = isRecord(spec.resources) && isRecord(spec.resources.requests) ? spec.resources.requests : {};
    add(usage, "requests.storage", quantityNanos(requests.storage) ?? 0n);
  }
  return usage;
}

/** Quotas the admission and the controller enforce: those without scopes. */
function enforced(quota: KubeObject): boolean {
  const spec = isRecord(quota.spec) ? quota.spec : {};
  return (!Array.isArray(spec.scopes) || spec.scopes.length === 0) && spec.scopeSelector === undefined;
}

function hardOf(quota: KubeObject): JsonObject {
  const spec = isRecord(quota.spec) ? quota.spec : {};
  return isRecord(spec.hard) ? spec.hard : {};
}

/** What the namespace uses now of each resource the quota limits, formatted as the limit is. */
export function quotaUsage(store: Store, quota: KubeObject): Record<string, string> {
  const hard = hardOf(quota);
  const used = namespaceUsage(store, quota.metadata.namespace ?? "", Object.keys(hard));
  return Object.fromEntries(Object.keys(hard).sort().map((name) => [name, formatNanos(used.get(name) ?? 0n, quantityFormat(hard[name]))]));
}

/** The kinds whose objects count toward some of `names`, and the total use of each name in the namespace. */
function namespaceUsage(store: Store, namespace: string, names: readonly string[]): Usage {
  const wanted = new Set(names);
  const total: Usage = new Map();
  for (const resource of store.resources()) {
    if (!resource.namespaced || !countsToward(resource, wanted)) continue;
    for (const object of store.list({ apiVersion: resource.group === "" ? resource.version : `${resource.group}/${resource.version}`, kind: resource.kind, namespace }).items) {
      for (const [name, amount] of objectUsage(resource, object)) if (wanted.has(name)) add(total, name, amount);
    }
  }
  return total;
}

function countsToward(resource: ResourceType, names: ReadonlySet<string>): boolean {
  const count = resource.group === "" ? `count/${resource.plural}` : `count/${resource.plural}.${resource.group}`;
  if (names.has(count)) return true;
  if (resource.group !== "") return false;
  if (legacyCounts[resource.kind] !== undefined && names.has(legacyCounts[resource.kind]!)) return true;
  if (resource.kind === "Pod") return [...names].some((n) => computeResources.some((r) => n === r || n === `requests.${r}` || n === `limits.${r}`));
  if (resource.kind === "Service") return names.has("services.nodeports") || names.has("services.loadbalancers");
  return resource.kind === "PersistentVolumeClaim" && names.has("requests.storage");
}

function forbidden(resource: ResourceType, object: KubeObject, message: string): ApiError {
  const name = object.metadata.name ?? "";
  return new ApiError("Forbidden", 403, `${resource.plural} "${name}" is forbidden: ${message}`, { name, group: resource.group, kind: resource.plural });
}

const pretty = (entries: Array<[string, string]>) => entries.map(([k, v]) => `${k}=${v}`).join(",");

/** Refuses the create of `object` when a quota of its namespace has no room for it (see the top of this file). */
export function admitQuota(store: Store, resource: ResourceType, object: KubeObject): void {
  if (!resource.namespaced || object.metadata.namespace === undefined) return;
  const quotas = store.list({ apiVersion: "v1", kind: "ResourceQuota", namespace: object.metadata.namespace }).items.filter(enforced);
  if (quotas.length === 0) return;
  const requested = objectUsage(resource, object);
  for (const quota of quotas) {
    const hard = hardOf(quota);
    const tracked = Object.keys(hard).filter((name) => requested.has(name)).sort();
    if (tracked.length === 0) continue;
    if (resource.group === "" && resource.kind === "Pod") requireCompute(resource, object, quota, tracked);
    const used = namespaceUsage(store, object.metadata.namespace, tracked);
    const exceeded = tracked.filter((name) => (used.get(name) ?? 0n) + requested.get(name)! > (quantityNanos(hard[name]) ?? 0n));
    if (exceeded.length === 0) continue;
    const show = (amounts: (name: string) => bigint) => pretty(exceeded.map((name) => [name, formatNanos(amounts(name), quantityFormat(hard[name]))]));
    throw forbidden(
      resource,
      object,
      `exceeded quota: ${quota.metadata.name}, requested: ${show((n) => requested.get(n)!)}, used: ${show((n) => used.get(n) ?? 0n)}, limited: ${pretty(exceeded.map((n) => [n, String(hard[n])]))}`,
    );
  }
}

/** A quota on pod compute needs every container to state the amount it limits (the real evaluator's check). */
function requireCompute(resource: ResourceType, pod: KubeObject, quota: KubeObject, tracked: readonly string[]): void {
  const spec = isRecord(pod.spec) ? pod.spec : {};
  const missing: string[] = [];
  for (const name of tracked) {
    const [kind, compute] = name.includes(".") ? (name.split(".", 2) as [string, string]) : ["requests", name];
    if ((kind !== "requests" && kind !== "limits") || !(computeResources as readonly string[]).includes(compute)) continue;
    const stated = containers(spec, "containers").every((c) => isRecord(c.resources) && isRecord(c.resources[kind]) && c.resources[kind][compute] !== undefined);
    if (!stated) missing.push(name);
  }
  if (missing.length > 0) throw forbidden(resource, pod, `failed quota: ${quota.metadata.name}: must specify ${missing.join(",")}`);
}

/**
 * The quota controller's part in `settle serve`: a moment after writes, each ResourceQuota's status is set to its
 * limits and what its namespace uses now (`quotaUsage`), as kube-controller-manager's resourcequota controller keeps
 * it (quotas with scopes are left alone). One pass serves many writes; a quota whose status holds writes nothing.
 */
export class QuotaStatusLoop {
  #timer: Timer | undefined;
  #stopped = false;

  constructor(
    readonly store: Store,
    readonly clock: Clock,
  ) {}

  /** After a write: a pass soon, if any quota exists and none is scheduled. */
  kick(): void {
    if (this.#stopped || this.#timer !== undefined || this.store.list({ apiVersion: "v1", kind: "ResourceQuota" }).items.length === 0) return;
    this.#timer = this.clock.setTimer(0, () => {
      this.#timer = undefined;
      this.#sync();
    });
  }

  #sync(): void {
    for (const quota of this.store.list({ apiVersion: "v1", kind: "ResourceQuota" }).items) {
      if (!enforced(quota) || quota.metadata.deletionTimestamp !== undefined) continue;
      const status = { hard: { ...hardOf(quota) }, used: quotaUsage(this.store, quota) };
      if (jsonEqual(normalized(quota.status), normalized(status))) continue;
      try {
        this.store.updateStatus({ ...quota, status } as KubeObject);
      } catch {
        // Changed or gone since the list: its own write kicks the next pass.
      }
    }
  }

  stop(): void {
    this.#stopped = true;
    this.#timer?.cancel();
    this.#timer = undefined;
  }
}

/** A status as the store would keep it: its quantities canonical, so comparing does not loop on spelling. */
function normalized(status: unknown): unknown {
  if (!isRecord(status)) return status;
  const canonical = (map: unknown) => (isRecord(map) ? Object.fromEntries(Object.entries(map).map(([k, v]) => [k, quantityNanos(v)?.toString() ?? v])) : map);
  return { hard: canonical(status.hard), used: canonical(status.used) };
}
