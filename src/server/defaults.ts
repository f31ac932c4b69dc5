// Defaulting of built-in kinds on the server's write path, as kube-apiserver's defaulters do on every decode: the
// `+default` markers of the wire table, plus a hand table of the rules that live in the Kubernetes defaulting
// functions rather than in markers (the fields clients diff against: Deployment strategy, Pod restart and DNS
// policy, container pull policy, Service port protocol and target port...). It runs as a mutating admission of the
// server's store only, so stores a simulator drives (and their pinned traces) never see it.
import type { KubeObject } from "../api/object.ts";
import type { WireField } from "../api/wire-types.ts";
import { isScalar, messageOfKind, wireFields } from "./encoding/wire.ts";
import { defaultLimitRange } from "./admission/limitrange.ts";
import { isRecord, records, type JsonObject } from "../api/json.ts";

type Defaulter = (value: JsonObject) => void;

function set(target: JsonObject, key: string, value: unknown): void {
  if (target[key] === undefined || target[key] === null) target[key] = value;
}

/** A nested object, created (empty) when absent. */
function child(target: JsonObject, key: string): JsonObject {
  const value = target[key];
  if (isRecord(value)) return value;
  const created: JsonObject = {};
  target[key] = created;
  return created;
}

/** Go's image-name rule: no tag (and no digest) means `latest`, which is pulled always. */
export function pullPolicyOf(image: string): "Always" | "IfNotPresent" {
  if (image.includes("@")) return "IfNotPresent";
  const last = image.slice(image.lastIndexOf("/") + 1);
  const colon = last.lastIndexOf(":");
  const tag = colon === -1 ? "latest" : last.slice(colon + 1);
  return tag === "latest" ? "Always" : "IfNotPresent";
}

function defaultContainer(container: JsonObject): void {
  if (typeof container.image === "string") set(container, "imagePullPolicy", pullPolicyOf(container.image));
  set(container, "terminationMessagePath", "/dev/termination-log");
  set(container, "terminationMessagePolicy", "File");
  set(container, "resources", {});
}

function defaultProbe(probe: JsonObject): void {
  set(probe, "timeoutSeconds", 1);
  set(probe, "periodSeconds", 10);
  set(probe, "successThreshold", 1);
  set(probe, "failureThreshold", 3);
}

function defaultPodSpec(spec: JsonObject): void {
  set(spec, "dnsPolicy", "ClusterFirst");
  set(spec, "restartPolicy", "Always");
  set(spec, "terminationGracePeriodSeconds", 30);
  set(spec, "schedulerName", "default-scheduler");
  set(spec, "securityContext", {});
  // With the host's network, a container port is also the host port.
  if (spec.hostNetwork === true) {
    for (const container of [...records(spec.containers), ...records(spec.initContainers)]) {
      for (const port of records(container.ports)) set(port, "hostPort", port.containerPort);
    }
  }
}

/** Volume modes of the projected sources: 0644, as the Kubernetes defaulters write it (decimal 420). */
const modeDefault: Defaulter = (source) => set(source, "defaultMode", 420);

function defaultVolume(volume: JsonObject): void {
  const sources = Object.keys(volume).filter((k) => k !== "name");
  if (sources.length === 0) volume.emptyDir = {};
}

function defaultDeploymentSpec(spec: JsonObject): void {
  set(spec, "replicas", 1);
  const strategy = child(spec, "strategy");
  set(strategy, "type", "RollingUpdate");
  if (strategy.type === "RollingUpdate") {
    const rolling = child(strategy, "rollingUpdate");
    set(rolling, "maxUnavailable", "25%");
    set(rolling, "maxSurge", "25%");
  }
  set(spec, "revisionHistoryLimit", 10);
  set(spec, "progressDeadlineSeconds", 600);
}

function defaultStatefulSetSpec(spec: JsonObject): void {
  set(spec, "replicas", 1);
  set(spec, "podManagementPolicy", "OrderedReady");
  const strategy = child(spec, "updateStrategy");
  set(strategy, "type", "RollingUpdate");
  if (strategy.type === "RollingUpdate") set(child(strategy, "rollingUpdate"), "partition", 0);
  set(spec, "revisionHistoryLimit", 10);
  const retention = child(spec, "persistentVolumeClaimRetentionPolicy");
  set(retention, "whenDeleted", "Retain");
  set(retention, "whenScaled", "Retain");
}

function defaultDaemonSetSpec(spec: JsonObject): void {
  const strategy = child(spec, "updateStrategy");
  set(strategy, "type", "RollingUpdate");
  if (strategy.type === "RollingUpdate") {
    const rolling = child(strategy, "rollingUpdate");
    set(rolling, "maxUnavailable", 1);
    set(rolling, "maxSurge", 0);
  }
  set(spec, "revisionHistoryLimit", 10);
}

function defaultJobSpec(spec: JsonObject): void {
  if (spec.completions === undefined && spec.parallelism === undefined) spec.completions = 1;
  set(spec, "parallelism", 1);
  set(spec, "backoffLimit", spec.backoffLimitPerIndex === undefined ? 6 : 2147483647);
  set(spec, "completionMode", "NonIndexed");
  set(spec, "suspend", false);
  set(spec, "podReplacementPolicy", spec.podFailurePolicy === undefined ? "TerminatingOrFailed" : "Failed");
}

function defaultCronJobSpec(spec: JsonObject): void {
  set(spec, "concurrencyPolicy", "Allow");
  set(spec, "suspend", false);
  set(spec, "successfulJobsHistoryLimit", 3);
  set(spec, "failedJobsHistoryLimit", 1);
}

function defaultServiceSpec(spec: JsonObject): void {
  set(spec, "type", "ClusterIP");
  set(spec, "sessionAffinity", "None");
  if (spec.sessionAffinity === "ClientIP") set(child(child(spec, "sessionAffinityConfig"), "clientIP"), "timeoutSeconds", 10800);
  for (const port of records(spec.ports)) {
    set(port, "protocol", "TCP");
    if (port.targetPort === undefined || port.targetPort === null || port.targetPort === 0 || port.targetPort === "") port.targetPort = port.port;
  }
  if (spec.type === "ExternalName") return;
  set(spec, "internalTrafficPolicy", "Cluster");
  if (spec.type === "NodePort" || spec.type === "LoadBalancer") set(spec, "externalTrafficPolicy", "Cluster");
  if (spec.type === "LoadBalancer") set(spec, "allocateLoadBalancerNodePorts", true);
}

function defaultSubject(subject: JsonObject): void {
  if (subject.kind === "User" || subject.kind === "Group") set(subject, "apiGroup", "rbac.authorization.k8s.io");
}

function defaultNetworkPolicySpec(spec: JsonObject): void {
  if (Array.isArray(spec.policyTypes) && spec.policyTypes.length > 0) return;
  spec.policyTypes = Array.isArray(spec.egress) && spec.egress.length > 0 ? ["Ingress", "Egress"] : ["Ingress"];
}

function defaultHpaSpec(spec: JsonObject): void {
  set(spec, "minReplicas", 1);
  if (Array.isArray(spec.metrics) && spec.metrics.length > 0) return;
  spec.metrics = [{ type: "Resource", resource: { name: "cpu", target: { type: "Utilization", averageUtilization: 80 } } }];
}

function defaultWebhook(webhook: JsonObject): void {
  set(webhook, "failurePolicy", "Fail");
  set(webhook, "matchPolicy", "Equivalent");
  set(webhook, "namespaceSelector", {});
  set(webhook, "objectSelector", {});
  set(webhook, "timeoutSeconds", 10);
  for (const rule of records(webhook.rules)) set(rule, "scope", "*");
  const service = isRecord(webhook.clientConfig) ? webhook.clientConfig.service : undefined;
  if (isRecord(service)) set(service, "port", 443);
}

const protocolDefault: Defaulter = (port) => set(port, "protocol", "TCP");

/** Rules of the Kubernetes defaulting functions, by wire message; they apply wherever the message is nested. */
const messageDefaulters: Readonly<Record<string, Defaulter>> = {
  "core/v1.PodSpec": defaultPodSpec,
  "core/v1.Container": defaultContainer,
  "core/v1.EphemeralContainerCommon": defaultContainer,
  "core/v1.Probe": defaultProbe,
  "core/v1.HTTPGetAction": (action) => {
    set(action, "path", "/");
    set(action, "scheme", "HTTP");
  },
  "core/v1.ObjectFieldSelector": (selector) => set(selector, "apiVersion", "v1"),
  "core/v1.Volume": defaultVolume,
  "core/v1.SecretVolumeSource": modeDefault,
  "core/v1.ConfigMapVolumeSource": modeDefault,
  "core/v1.DownwardAPIVolumeSource": modeDefault,
  "core/v1.ProjectedVolumeSource": modeDefault,
  "core/v1.HostPathVolumeSource": (source) => set(source, "type", ""),
  "core/v1.PersistentVolumeClaimSpec": (spec) => set(spec, "volumeMode", "Filesystem"),
  "core/v1.PersistentVolumeSpec": (spec) => {
    set(spec, "persistentVolumeReclaimPolicy", "Retain");
    set(spec, "volumeMode", "Filesystem");
  },
  "core/v1.EndpointPort": protocolDefault,
  "core/v1.ServiceSpec": defaultServiceSpec,
  "apps/v1.DeploymentSpec": defaultDeploymentSpec,
  "apps/v1.ReplicaSetSpec": (spec) => set(spec, "replicas", 1),
  "apps/v1.StatefulSetSpec": defaultStatefulSetSpec,
  "apps/v1.DaemonSetSpec": defaultDaemonSetSpec,
  "batch/v1.CronJobSpec": defaultCronJobSpec,
  "rbac/v1.Subject": defaultSubject,
  "rbac/v1.RoleRef": (ref) => set(ref, "apiGroup", "rbac.authorization.k8s.io"),
  "networking/v1.NetworkPolicySpec": defaultNetworkPolicySpec,
  "networking/v1.NetworkPolicyPort": protocolDefault,
  "discovery/v1.EndpointPort": protocolDefault,
  "autoscaling/v2.HorizontalPodAutoscalerSpec": defaultHpaSpec,
  "scheduling/v1.PriorityClass": (pc) => set(pc, "preemptionPolicy", "PreemptLowerPriority"),
  "storage/v1.StorageClass": (sc) => {
    set(sc, "reclaimPolicy", "Delete");
    set(sc, "volumeBindingMode", "Immediate");
  },
  "admissionregistration/v1.ValidatingWebhook": defaultWebhook,
  "admissionregistration/v1.MutatingWebhook": (webhook) => {
    defaultWebhook(webhook);
    set(webhook, "reinvocationPolicy", "Never");
  },
};

/**
 * Rules that belong to a kind's top-level object, not to a message wherever it is nested: a Job's spec is defaulted
 * in a Job but not inside a CronJob's template, and a Pod gets `enableServiceLinks` where a template does not.
 */
const kindDefaulters: Readonly<Record<string, Defaulter>> = {
  "/Pod": (pod) => {
    const spec = child(pod, "spec");
    set(spec, "enableServiceLinks", true);
    // A container that states limits but not requests requests what it limits (a Pod's defaulting, not a template's).
    for (const container of [...records(spec.containers), ...records(spec.initContainers)]) {
      const resources = isRecord(container.resources) ? container.resources : undefined;
      if (resources === undefined || !isRecord(resources.limits)) continue;
      const requests = isRecord(resources.requests) ? resources.requests : (resources.requests = {});
      for (const [name, value] of Object.entries(resources.limits)) if (!(name in requests)) (requests as JsonObject)[name] = value;
    }
  },
  "/Secret": (secret) => set(secret, "type", "Opaque"),
  "/LimitRange": (limitRange) => defaultLimitRange(limitRange),
  "/ReplicationController": (rc) => {
    const spec = child(rc, "spec");
    const template = isRecord(spec.template) && isRecord(spec.template.metadata) ? spec.template.metadata.labels : undefined;
    if (isRecord(template) && Object.keys(template).length > 0) {
      if (!isRecord(spec.selector) || Object.keys(spec.selector).length === 0) spec.selector = { ...template };
      const meta = rc.metadata as JsonObject;
      if (!isRecord(meta.labels) || Object.keys(meta.labels).length === 0) meta.labels = { ...template };
    }
  },
  "batch/Job": (job) => defaultJobSpec(child(job, "spec")),
};

/** Constants that `+default=ref(...)` markers name. */
const markerRefs: Readonly<Record<string, string>> = { AzureDataDiskCachingReadWrite: "ReadWrite", AzureSharedBlobDisk: "Shared" };

/**
 * The value of a `+default` marker, or undefined for Go zero values: Go omits those from its JSON, so a client
 * never sees them and writing them here would only make objects differ from a real server's.
 */
function markerValue(text: string): unknown {
  const ref = /^ref\((\w+)\)$/.exec(text);
  const value: unknown = ref !== null ? markerRefs[ref[1]!] : JSON.parse(text);
  return value === "" || value === 0 || value === false ? undefined : value;
}

/** Per message: its marker defaults, and whether any defaulting is reachable from it (to prune the walk). */
const markerDefaults = new Map<string, [string, unknown][]>();
const reachable = new Map<string, boolean>();

function markersOf(message: string): [string, unknown][] {
  let found = markerDefaults.get(message);
  if (found === undefined) {
    found = [];
    for (const field of wireFields(message)) {
      const value = field.default === undefined ? undefined : markerValue(field.default);
      if (value !== undefined) found.push([field.name, value]);
    }
    markerDefaults.set(message, found);
  }
  return found;
}

function hasDefaults(message: string): boolean {
  const known = reachable.get(message);
  if (known !== undefined) return known;
  // A cycle (a message nesting itself) is assumed to have nothing until proven otherwise.
  reachable.set(message, false);
  let any = messageDefaulters[message] !== undefined || markersOf(message).length > 0;
  for (const field of wireFields(message)) {
    if (any) break;
    if (!isScalar(field.type)) any = hasDefaults(field.type);
  }
  reachable.set(message, any);
  return any;
}

const walkDepthMax = 64;

/** Per message: the fields of message type from which some defaulting is reachable (the only ones walked). */
const defaultedFields = new Map<string, readonly WireField[]>();

function fieldsToWalk(message: string): readonly WireField[] {
  let fields = defaultedFields.get(message);
  if (fields === undefined) {
    fields = wireFields(message).filter((field) => !isScalar(field.type) && hasDefaults(field.type));
    defaultedFields.set(message, fields);
  }
  return fields;
}

function walk(value: JsonObject, message: string, depth: number): void {
  if (depth > walkDepthMax || !hasDefaults(message)) return;
  for (const [name, defaultValue] of markersOf(message)) set(value, name, defaultValue);
  messageDefaulters[message]?.(value);
  for (const field of fieldsToWalk(message)) {
    if (field.inline === true) {
      walk(value, field.type, depth + 1);
      continue;
    }
    const nested = value[field.name];
    if (nested === undefined || nested === null) continue;
    if (field.map !== undefined) {
      if (isRecord(nested)) for (const entry of Object.values(nested)) if (isRecord(entry)) walk(entry, field.type, depth + 1);
    } else if (field.repeated === true) {
      for (const entry of records(nested)) walk(entry, field.type, depth + 1);
    } else if (isRecord(nested)) walk(nested, field.type, depth + 1);
  }
}

/** Whether `applyServerDefaults` can change an object of this apiVersion and kind at all (most kinds have none). */
export function hasServerDefaults(apiVersion: string, kind: string): boolean {
  const plan = defaultingPlan(apiVersion, kind);
  return plan !== undefined && (plan.kindDefaulter !== undefined || hasDefaults(plan.message));
}

/** Applies the defaults of a built-in kind to `object` in place; other kinds are left alone. */
export function applyServerDefaults(object: KubeObject): void {
  const plan = defaultingPlan(object.apiVersion, object.kind);
  if (plan === undefined) return;
  plan.kindDefaulter?.(object as unknown as JsonObject);
  walk(object as unknown as JsonObject, plan.message, 0);
}

interface DefaultingPlan {
  message: string;
  kindDefaulter: ((object: JsonObject) => void) | undefined;
}

/** apiVersion -> kind -> what defaulting a write of it needs: found once, not per write. */
const plans = new Map<string, Map<string, DefaultingPlan | undefined>>();

function defaultingPlan(apiVersion: string, kind: string): DefaultingPlan | undefined {
  let byKind = plans.get(apiVersion);
  if (byKind === undefined) {
    byKind = new Map();
    if (plans.size < customKindsRememberedMax) plans.set(apiVersion, byKind);
  }
  if (byKind.has(kind)) return byKind.get(kind);
  const slash = apiVersion.indexOf("/");
  const group = slash === -1 ? "" : apiVersion.slice(0, slash);
  const message = messageOfKind(group, apiVersion.slice(slash + 1), kind);
  const plan = message === undefined ? undefined : { message, kindDefaulter: kindDefaulters[`${group}/${kind}`] };
  // Only kinds of the wire table get here with a plan, so the table stays bounded by it; others are remembered
  // as undefined up to a bound, since custom kinds are unbounded.
  if (plan !== undefined || byKind.size < customKindsRememberedMax) byKind.set(kind, plan);
  return plan;
}

const customKindsRememberedMax = 1000;
