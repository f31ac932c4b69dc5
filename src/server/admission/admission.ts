// The server's own mutating admission: defaulting of built-in kinds (defaults.ts), what a Service's REST storage
// allocates (a cluster IP from the service range, node ports for NodePort and LoadBalancer Services, the IP family
// fields), and the default admission plugins' changes to new Pods (pod-admission.ts). It is installed in the store the server creates (or `createServerStore`), never in a simulator's store,
// so simulated runs and their traces are unchanged.
//
// The chain of the server's store (`serverAdmissionChain`), in the order the store runs it: every plugin's `mutate`
// in this order, then every plugin's `validate` in this order, then the write.
//   1. `settle-serve-defaulting` (serverAdmission): defaulting, Service allocation, LimitRange defaults and limits,
//      the pod plugins (ServiceAccount, DefaultTolerationSeconds, Priority). Mutates only.
//   2. `settle-serve-csr-requestor`: a CertificateSigningRequest's requestor. Mutates only.
//   3. `settle-serve-resourcequota`: validates only, so it judges the object every mutation has made, with the
//      LimitRange's default requests and limits filled in (as ResourceQuota comes after LimitRanger in
//      kube-apiserver's order).
//   4. Plugins the caller adds (tests), after the server's own.
// Invariants, asserted where the chain is built: the server's three plugins come first and in this order, the
// defaulting and requestor plugins never validate and the quota plugin never mutates, and no two plugins share a name.
// Admission webhooks are not in this chain: the request handlers call them before the store's write (webhooks.ts).
import { assert } from "../../api/assert.ts";
import { invalid } from "../../api/errors.ts";
import type { FieldError } from "../../api/errors.ts";
import type { KubeObject } from "../../api/object.ts";
import { formatApiVersion } from "../../api/object.ts";
import { createStore } from "../../store/index.ts";
import type { Admission, AdmissionRequest, Store, StoreOptions } from "../../store/index.ts";
import { applyServerDefaults, hasServerDefaults } from "../defaults.ts";
import { PodAdmission, systemPriorityClasses } from "./pod-admission.ts";
import { admitQuota } from "./quota.ts";
import { admitLimits } from "./limitrange.ts";
import { isRecord, type JsonObject } from "../../api/json.ts";
import { createBootstrapPolicy, serverUser } from "../auth/rbac.ts";

/** The service range of a default kubeadm cluster, 10.96.0.0/12; 10.96.0.1 is the `kubernetes` Service's. */
const rangeBase = (10 << 24) | (96 << 16);
const rangeSize = 1 << 20;
const rangeText = "10.96.0.0/12";
const nodePortMin = 30000;
const nodePortMax = 32767;

function ipText(n: number): string {
  return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join(".");
}

/** An IPv4 address as a number, or undefined when the text is not one. */
function ipNumber(text: string): number | undefined {
  const parts = text.split(".");
  if (parts.length !== 4 || parts.some((p) => !/^(0|[1-9]\d{0,2})$/.test(p) || Number(p) > 255)) return undefined;
  return parts.reduce((n, p) => n * 256 + Number(p), 0);
}

/** The cluster IPs and node ports Services hold now, besides the one being written. */
function allocated(store: Store, except: KubeObject): { ips: Set<string>; nodePorts: Set<number> } {
  // The `kubernetes` Service's address is reserved for it, whether it exists yet or not.
  const isKubernetes = except.metadata.namespace === "default" && except.metadata.name === "kubernetes";
  const ips = new Set<string>(isKubernetes ? [] : [ipText(rangeBase + 1)]);
  const nodePorts = new Set<number>();
  for (const service of store.list({ apiVersion: "v1", kind: "Service" }).items) {
    if (service.metadata.uid !== undefined && service.metadata.uid === except.metadata.uid) continue;
    if (service.metadata.namespace === except.metadata.namespace && service.metadata.name === except.metadata.name) continue;
    const spec = (service.spec ?? {}) as JsonObject;
    for (const ip of Array.isArray(spec.clusterIPs) ? spec.clusterIPs : [spec.clusterIP]) if (typeof ip === "string") ips.add(ip);
    for (const port of Array.isArray(spec.ports) ? spec.ports : []) if (isRecord(port) && typeof port.nodePort === "number") nodePorts.add(port.nodePort);
  }
  return { ips, nodePorts };
}

/** The lowest free address of the range, skipping the network address and the `kubernetes` Service's. */
function freeIp(used: Set<string>): string | undefined {
  for (let offset = 2; offset < rangeSize - 1; offset++) {
    const ip = ipText(rangeBase + offset);
    if (!used.has(ip)) return ip;
  }
  return undefined;
}

function checkRequestedIp(ip: string, used: Set<string>): FieldError[] {
  const n = ipNumber(ip);
  if (n === undefined) return [{ field: "spec.clusterIPs[0]", type: "FieldValueInvalid", message: `Invalid value: ${JSON.stringify(ip)}: must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)` }];
  if (n <= rangeBase || n >= rangeBase + rangeSize - 1) {
    return [{ field: "spec.clusterIPs", type: "FieldValueInvalid", message: `Invalid value: ["${ip}"]: failed to allocate IP ${ip}: provided IP is not in the valid range. The range of valid IPs is ${rangeText}` }];
  }
  if (used.has(ip)) return [{ field: "spec.clusterIPs", type: "FieldValueInvalid", message: `Invalid value: ["${ip}"]: failed to allocate IP ${ip}: provided IP is already allocated` }];
  return [];
}

/** Keeps what an earlier write allocated when an update leaves it out, as kube-apiserver's Service storage does. */
function keepAllocated(spec: JsonObject, old: JsonObject): void {
  if ((spec.clusterIP === undefined || spec.clusterIP === "") && typeof old.clusterIP === "string" && old.clusterIP !== "") {
    spec.clusterIP = old.clusterIP;
    if (spec.clusterIPs === undefined && Array.isArray(old.clusterIPs)) spec.clusterIPs = [...old.clusterIPs];
  }
  if (spec.ipFamilies === undefined && Array.isArray(old.ipFamilies)) spec.ipFamilies = [...old.ipFamilies];
  if (spec.ipFamilyPolicy === undefined && typeof old.ipFamilyPolicy === "string") spec.ipFamilyPolicy = old.ipFamilyPolicy;
  const oldPorts = Array.isArray(old.ports) ? old.ports.filter(isRecord) : [];
  for (const port of Array.isArray(spec.ports) ? spec.ports.filter(isRecord) : []) {
    if (port.nodePort !== undefined) continue;
    const before = oldPorts.find((p) => p.port === port.port && (p.protocol ?? "TCP") === (port.protocol ?? "TCP"));
    if (before !== undefined && typeof before.nodePort === "number") port.nodePort = before.nodePort;
  }
}

function allocateIps(spec: JsonObject, used: Set<string>, errors: FieldError[]): void {
  if (spec.clusterIP === "None") {
    spec.clusterIPs = ["None"];
  } else if (spec.clusterIP === undefined || spec.clusterIP === "") {
    const ip = freeIp(used);
    if (ip === undefined) {
      errors.push({ field: "spec.clusterIPs", type: "InternalError", message: `Internal error: failed to allocate a serviceIP: range is full` });
      return;
    }
    spec.clusterIP = ip;
    spec.clusterIPs = [ip];
  } else if (typeof spec.clusterIP === "string") {
    errors.push(...checkRequestedIp(spec.clusterIP, used));
    if (spec.clusterIPs === undefined) spec.clusterIPs = [spec.clusterIP];
  }
  if (spec.ipFamilies === undefined) spec.ipFamilies = ["IPv4"];
  if (spec.ipFamilyPolicy === undefined) spec.ipFamilyPolicy = "SingleStack";
}

function allocateNodePorts(spec: JsonObject, used: Set<number>, errors: FieldError[]): void {
  if (spec.type !== "NodePort" && !(spec.type === "LoadBalancer" && spec.allocateLoadBalancerNodePorts !== false)) return;
  let next = nodePortMin;
  for (const [index, port] of (Array.isArray(spec.ports) ? spec.ports : []).entries()) {
    if (!isRecord(port)) continue;
    if (typeof port.nodePort === "number" && port.nodePort !== 0) {
      if (used.has(port.nodePort)) errors.push({ field: `spec.ports[${index}].nodePort`, type: "FieldValueInvalid", message: `Invalid value: ${port.nodePort}: provided port is already allocated` });
      used.add(port.nodePort);
      continue;
    }
    while (next <= nodePortMax && used.has(next)) next++;
    if (next > nodePortMax) {
      errors.push({ field: `spec.ports[${index}].nodePort`, type: "InternalError", message: "Internal error: failed to allocate a nodePort: range is full" });
      return;
    }
    port.nodePort = next;
    used.add(next);
  }
}

/** Cluster IP and node ports of a Service being created or updated (type changes may need new ones). */
function allocateService(store: Store, request: AdmissionRequest): void {
  const service = request.object;
  if (!isRecord(service.spec)) service.spec = {};
  const spec = service.spec as JsonObject;
  const old = request.oldObject !== undefined && isRecord(request.oldObject.spec) ? request.oldObject.spec : undefined;
  if (old !== undefined) keepAllocated(spec, old);
  if (spec.type === "ExternalName") return;
  const errors: FieldError[] = [];
  const oldIp = old?.clusterIP;
  if (old !== undefined && typeof oldIp === "string" && oldIp !== "" && spec.clusterIP !== oldIp) {
    errors.push({ field: "spec.clusterIPs[0]", type: "FieldValueInvalid", message: `Invalid value: ${JSON.stringify(spec.clusterIP)}: may not change once set` });
  }
  const needsIp = old === undefined || oldIp === undefined || oldIp === "";
  const used = allocated(store, service);
  if (errors.length === 0 && needsIp) allocateIps(spec, used.ips, errors);
  if (errors.length === 0) allocateNodePorts(spec, used.nodePorts, errors);
  if (errors.length > 0) throw invalid("Service", service.metadata.name ?? "", errors);
}

/** The server's mutating admission over `store()` (a getter: the store is created with its admission list). */
export function serverAdmission(store: () => Store): Admission {
  const pods = new PodAdmission(store);
  return {
    name: "settle-serve-defaulting",
    concerns(operation, resource, subresource) {
      if (operation === "DELETE" || subresource === "status") return false;
      return (resource.group === "" && resource.kind === "Service") || hasServerDefaults(formatApiVersion(resource), resource.kind);
    },
    mutate(request) {
      if (request.operation === "DELETE" || request.subresource === "status") return;
      applyServerDefaults(request.object);
      if (request.resource.group === "" && request.resource.kind === "Service") allocateService(store(), request);
      if (request.operation === "CREATE") admitLimits(store(), request.resource, request.object);
      if (request.resource.group === "" && request.resource.kind === "Pod" && request.operation === "CREATE") pods.admitCreate(request.object);
    },
  };
}

/**
 * A CertificateSigningRequest names who asked for it: on create the server sets `spec.username` and `spec.groups` to
 * the requesting user (the one user settle serves), whatever the body said, as the real CSR strategy does.
 */
export function csrRequestorAdmission(): Admission {
  return {
    name: "settle-serve-csr-requestor",
    concerns: (operation, resource) => operation === "CREATE" && resource.group === "certificates.k8s.io" && resource.kind === "CertificateSigningRequest",
    mutate(request) {
      if (request.operation !== "CREATE") return;
      const object = request.object as KubeObject & { spec?: Record<string, unknown> };
      object.spec = { ...object.spec, username: serverUser.username, groups: [...serverUser.groups] };
    },
  };
}

/** The server's quota admission: a create that a ResourceQuota of its namespace has no room for is refused (quota.ts). */
export function quotaAdmission(store: () => Store): Admission {
  return {
    name: "settle-serve-resourcequota",
    concerns: (operation, resource) => operation === "CREATE" && resource.namespaced,
    validate: (request) => admitQuota(store(), request.resource, request.object),
  };
}

/** The names of the server's own plugins, in the order the chain runs them (see the top of this file). */
export const serverAdmissionOrder = ["settle-serve-defaulting", "settle-serve-csr-requestor", "settle-serve-resourcequota"] as const;

/** The server store's admission chain: the server's plugins in `serverAdmissionOrder`, then `extra`. */
export function serverAdmissionChain(store: () => Store, extra: readonly Admission[]): Admission[] {
  const chain = [serverAdmission(store), csrRequestorAdmission(), quotaAdmission(store), ...extra];
  for (const [index, name] of serverAdmissionOrder.entries()) assert(chain[index]?.name === name, `admission chain: ${name} is plugin ${index + 1}`);
  assert(chain[0]!.validate === undefined && chain[1]!.validate === undefined, "admission chain: defaulting and requestor only mutate");
  assert(chain[2]!.mutate === undefined, "admission chain: quota only validates, after every mutation");
  assert(new Set(chain.map((plugin) => plugin.name)).size === chain.length, "admission chain: plugin names are unique");
  return chain;
}

/**
 * The server store's default bound of its history in bytes: a server that takes large writes for hours would
 * otherwise keep every version of them (the revision bound alone let 400 patches of 500 KB hold 230 MB).
 */
export const serverHistoryBytesMax = 64 * 1024 * 1024;

/**
 * A store with the server's defaulting, Service allocation, pod admission and quota enforcement, as `settle serve`
 * uses, holding what a fresh cluster has: its namespaces, the two system PriorityClasses and the bootstrap RBAC
 * roles RBAC needs (rbac.ts). Its history is bounded by `serverHistoryBytesMax` unless `options` says otherwise.
 */
export function createServerStore(options: StoreOptions = {}): Store {
  let store: Store | undefined;
  store = createStore({ historyBytesMax: serverHistoryBytesMax, ...options, admission: serverAdmissionChain(() => store!, options.admission ?? []) });
  createBootstrapPolicy(store);
  for (const [name, value] of Object.entries(systemPriorityClasses)) {
    store.create({ apiVersion: "scheduling.k8s.io/v1", kind: "PriorityClass", metadata: { name }, value } as unknown as KubeObject);
  }
  return store;
}
