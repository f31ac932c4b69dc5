// The built-in kinds the store serves, with the per-kind rules of their REST strategies: scope, status
// subresource, field labels, what a create keeps of `status`, the default garbage-collection policy.
import type { KubeObject } from "../api/object.ts";
import type { ResourceType } from "../api/resources.ts";
import type { PropagationPolicy } from "../api/client.ts";

/** What the store knows about a kind beyond its `ResourceType`: the strategy hooks of kube-apiserver's registry. */
export interface KindRules {
  /** Create keeps `status` as sent (Node) or drops it (every other kind with a status subresource). */
  statusOnCreate: "keep" | "drop";
  /** The propagation policy of a delete that names none (batch/v1 Job still orphans, for compatibility). */
  defaultPropagation: PropagationPolicy;
  /** Pods only: a delete sets a grace period and the object stays until a delete with grace period 0. */
  gracefulDelete: boolean;
}

export interface BuiltinKind {
  resource: ResourceType;
  rules: KindRules;
}

const standardRules: KindRules = { statusOnCreate: "drop", defaultPropagation: "Background", gracefulDelete: false };

function str(value: unknown): string {
  if (value === undefined || value === null) return "";
  return typeof value === "string" ? value : String(value);
}

/** Reads a dotted path of plain properties; arrays are not traversed (no field label needs them). */
function at(object: KubeObject, path: string): unknown {
  let node: unknown = object;
  for (const part of path.split(".")) {
    if (node === null || typeof node !== "object") return undefined;
    node = (node as Record<string, unknown>)[part];
  }
  return node;
}

/** Field values for `fieldLabels`, with the API server's empty-string and "false" defaults. */
function fieldsFrom(labels: readonly string[], defaults: Record<string, string> = {}) {
  return (object: KubeObject): Record<string, string> => {
    const fields: Record<string, string> = {};
    for (const label of labels) {
      const value = at(object, label);
      fields[label] = value === undefined || value === null ? (defaults[label] ?? "") : str(value);
    }
    return fields;
  };
}

function kind(
  apiVersion: string,
  kindName: string,
  plural: string,
  options: {
    namespaced: boolean;
    status?: boolean;
    shortNames?: string[];
    fieldLabels?: string[];
    fieldDefaults?: Record<string, string>;
    nameRule?: ResourceType["nameRule"];
    rules?: Partial<KindRules>;
  },
): BuiltinKind {
  const slash = apiVersion.indexOf("/");
  const group = slash < 0 ? "" : apiVersion.slice(0, slash);
  const version = slash < 0 ? apiVersion : apiVersion.slice(slash + 1);
  const fieldLabels = options.fieldLabels ?? [];
  const resource: ResourceType = {
    group,
    version,
    kind: kindName,
    plural,
    singular: kindName.toLowerCase(),
    listKind: `${kindName}List`,
    namespaced: options.namespaced,
    statusSubresource: options.status ?? false,
    shortNames: options.shortNames ?? [],
    fieldLabels,
    nameRule: options.nameRule ?? "dns1123-subdomain",
  };
  if (fieldLabels.length > 0) resource.fieldsOf = fieldsFrom(fieldLabels, options.fieldDefaults);
  return { resource, rules: { ...standardRules, ...options.rules } };
}

const podFields = [
  "spec.nodeName",
  "spec.restartPolicy",
  "spec.schedulerName",
  "spec.serviceAccountName",
  "spec.hostNetwork",
  "status.phase",
  "status.podIP",
  "status.nominatedNodeName",
];

const eventFields = [
  "involvedObject.kind",
  "involvedObject.namespace",
  "involvedObject.name",
  "involvedObject.uid",
  "involvedObject.apiVersion",
  "involvedObject.resourceVersion",
  "involvedObject.fieldPath",
  "reason",
  "reportingComponent",
  "source",
  "type",
];

/** The kinds every store starts with, as a real cluster serves them (group, version, plural, scope, subresources). */
export const builtinKinds: readonly BuiltinKind[] = [
  kind("v1", "Namespace", "namespaces", {
    namespaced: false,
    status: true,
    shortNames: ["ns"],
    fieldLabels: ["status.phase"],
    nameRule: "dns1123-label",
  }),
  kind("v1", "ConfigMap", "configmaps", { namespaced: true, shortNames: ["cm"] }),
  kind("v1", "Secret", "secrets", { namespaced: true, fieldLabels: ["type"] }),
  kind("v1", "Pod", "pods", {
    namespaced: true,
    status: true,
    shortNames: ["po"],
    fieldLabels: podFields,
    fieldDefaults: { "spec.hostNetwork": "false" },
    rules: { gracefulDelete: true },
  }),
  kind("v1", "Node", "nodes", {
    namespaced: false,
    status: true,
    shortNames: ["no"],
    fieldLabels: ["spec.unschedulable"],
    fieldDefaults: { "spec.unschedulable": "false" },
    // The kubelet registers a node with its status in one request.
    rules: { statusOnCreate: "keep" },
  }),
  kind("v1", "Event", "events", { namespaced: true, shortNames: ["ev"], fieldLabels: eventFields }),
  kind("v1", "ServiceAccount", "serviceaccounts", { namespaced: true, shortNames: ["sa"] }),
  kind("coordination.k8s.io/v1", "Lease", "leases", { namespaced: true }),
  kind("apps/v1", "Deployment", "deployments", { namespaced: true, status: true, shortNames: ["deploy"] }),
  kind("apps/v1", "ReplicaSet", "replicasets", {
    namespaced: true,
    status: true,
    shortNames: ["rs"],
    fieldLabels: ["status.replicas"],
    fieldDefaults: { "status.replicas": "0" },
  }),
  kind("apps/v1", "StatefulSet", "statefulsets", { namespaced: true, status: true, shortNames: ["sts"] }),
  kind("apps/v1", "DaemonSet", "daemonsets", { namespaced: true, status: true, shortNames: ["ds"] }),
  kind("batch/v1", "Job", "jobs", {
    namespaced: true,
    status: true,
    fieldLabels: ["status.successful"],
    fieldDefaults: { "status.successful": "0" },
    // batch/v1 Jobs orphan their pods when the delete names no policy (kubectl always sends Background).
    rules: { defaultPropagation: "Orphan" },
  }),
  kind("batch/v1", "CronJob", "cronjobs", { namespaced: true, status: true, shortNames: ["cj"] }),
  kind("policy/v1", "PodDisruptionBudget", "poddisruptionbudgets", { namespaced: true, status: true, shortNames: ["pdb"] }),
  kind("apiextensions.k8s.io/v1", "CustomResourceDefinition", "customresourcedefinitions", {
    namespaced: false,
    status: true,
    shortNames: ["crd", "crds"],
  }),
];

/** Rules for kinds registered by CRDs: custom resources drop `status` on create when it is a subresource. */
export const customResourceRules: KindRules = standardRules;
