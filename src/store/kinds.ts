// The built-in kinds the store serves, with the per-kind rules of their REST strategies: scope, status
// subresource, field labels, what a create keeps of `status`, the default garbage-collection policy.
//
// Checked (2026-12) against the discovery documents that kubernetes/kubernetes records from a running
// kube-apiserver in its `api/discovery/` folder: `api__v1.json` at commit 7c554ea1d91eddac32fcd89f37d7ed0347e1f311
// (core/v1), `aggregated_v2.json` at commit 0b1dcaba0a3f1fdcfe5fbb6516d68ffc8e625d81 (every other group, from the
// 1.34 development line: resource.k8s.io/v1 is served there) and `apis__storage.k8s.io__v1.json` at commit
// 96a03f453527c60de35414d2214e4e7adf2eb549 (storage.k8s.io/v1 with VolumeAttributesClass GA). Plural, scope,
// singular name, short names, categories, verbs and the `status`/`scale` subresources of every entry below agree
// with them, and the later core/v1 document (commit 4d817e791304350f797ea28d315a677873d20cba) lists the same
// facts for core/v1. test/store/kinds-facts.test.ts pins them.
// What the table cannot say: the other subresources a real server lists. The server lists and answers pods/log,
// exec, attach, portforward, proxy and binding, nodes/proxy, services/proxy, namespaces/finalize,
// certificatesigningrequests/approval and the `bindings` resource (src/server/subresources.ts), and pods/eviction
// and serviceaccounts/token (src/server/auth/reviews.ts); pods/ephemeralcontainers and pods/resize are not served.
import type { KubeObject } from "../api/object.ts";
import type { ResourceType } from "../api/resources.ts";
import type { PropagationPolicy } from "../api/client.ts";
import { wireKinds } from "../api/generated/k8s-api.ts";

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
    categories?: string[];
    verbs?: string[];
    scale?: boolean;
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
  if (options.categories !== undefined) resource.categories = options.categories;
  if (options.verbs !== undefined) resource.verbs = options.verbs;
  if (options.scale === true) resource.scaleSubresource = true;
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

/** Whether the generated wire table says the kind's type has a `status` subresource. */
function wireStatus(apiVersion: string, kindName: string): boolean {
  const slash = apiVersion.indexOf("/");
  const group = slash < 0 ? "" : apiVersion.slice(0, slash);
  const version = slash < 0 ? apiVersion : apiVersion.slice(slash + 1);
  const wire = wireKinds.find((k) => k.group === group && k.version === version && k.kind === kindName);
  if (wire === undefined) throw new Error(`${apiVersion} ${kindName} is not in the generated wire table`);
  return wire.subresources?.includes("status") ?? false;
}

/**
 * The resource facts the wire definitions do not hold (plural, scope, short names, categories, verbs), as a 1.35
 * kube-apiserver's registry declares them; the status subresource comes from the definitions' markers, except
 * where the registry serves one the markers do not name (ReplicationController, VolumeAttachment).
 */
function moreKinds(): BuiltinKind[] {
  const all = ["all"];
  const admission = ["api-extensions"];
  const entries: Array<[string, string, string, Parameters<typeof kind>[3]]> = [
    // Service names are DNS-1035 labels: a DNS-1123 label that starts with a letter.
    ["v1", "Service", "services", { namespaced: true, shortNames: ["svc"], categories: all, nameRule: "dns1035-label" }],
    ["v1", "Endpoints", "endpoints", { namespaced: true, shortNames: ["ep"] }],
    ["v1", "PersistentVolumeClaim", "persistentvolumeclaims", { namespaced: true, shortNames: ["pvc"] }],
    ["v1", "PersistentVolume", "persistentvolumes", { namespaced: false, shortNames: ["pv"] }],
    ["v1", "PodTemplate", "podtemplates", { namespaced: true }],
    // The markers of ReplicationController name no subresource; the registry serves status and scale.
    ["v1", "ReplicationController", "replicationcontrollers", { namespaced: true, status: true, shortNames: ["rc"], categories: all, scale: true }],
    ["v1", "ResourceQuota", "resourcequotas", { namespaced: true, shortNames: ["quota"] }],
    ["v1", "LimitRange", "limitranges", { namespaced: true, shortNames: ["limits"] }],
    ["v1", "ComponentStatus", "componentstatuses", { namespaced: false, shortNames: ["cs"], verbs: ["get", "list"] }],
    ["admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration", "mutatingwebhookconfigurations", { namespaced: false, categories: admission }],
    ["admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration", "validatingwebhookconfigurations", { namespaced: false, categories: admission }],
    ["admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy", "validatingadmissionpolicies", { namespaced: false, categories: admission }],
    ["admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding", "validatingadmissionpolicybindings", { namespaced: false, categories: admission }],
    ["apps/v1", "ControllerRevision", "controllerrevisions", { namespaced: true }],
    ["autoscaling/v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers", { namespaced: true, shortNames: ["hpa"], categories: all }],
    ["certificates.k8s.io/v1", "CertificateSigningRequest", "certificatesigningrequests", { namespaced: false, shortNames: ["csr"] }],
    ["discovery.k8s.io/v1", "EndpointSlice", "endpointslices", { namespaced: true }],
    ["events.k8s.io/v1", "Event", "events", { namespaced: true, shortNames: ["ev"] }],
    ["flowcontrol.apiserver.k8s.io/v1", "FlowSchema", "flowschemas", { namespaced: false }],
    ["flowcontrol.apiserver.k8s.io/v1", "PriorityLevelConfiguration", "prioritylevelconfigurations", { namespaced: false }],
    ["networking.k8s.io/v1", "Ingress", "ingresses", { namespaced: true, shortNames: ["ing"] }],
    ["networking.k8s.io/v1", "IngressClass", "ingressclasses", { namespaced: false }],
    ["networking.k8s.io/v1", "NetworkPolicy", "networkpolicies", { namespaced: true, shortNames: ["netpol"] }],
    // The real server requires an IPAddress's name to be the address in canonical form (10.0.0.1, 2001:db8::1).
    ["networking.k8s.io/v1", "IPAddress", "ipaddresses", { namespaced: false, shortNames: ["ip"], nameRule: "ip-address" }],
    ["networking.k8s.io/v1", "ServiceCIDR", "servicecidrs", { namespaced: false }],
    ["node.k8s.io/v1", "RuntimeClass", "runtimeclasses", { namespaced: false }],
    // RBAC names may hold colons (`system:controller:...`): path-segment names, as its registry validates.
    ["rbac.authorization.k8s.io/v1", "ClusterRole", "clusterroles", { namespaced: false, nameRule: "path-segment" }],
    ["rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "clusterrolebindings", { namespaced: false, nameRule: "path-segment" }],
    ["rbac.authorization.k8s.io/v1", "Role", "roles", { namespaced: true, nameRule: "path-segment" }],
    ["rbac.authorization.k8s.io/v1", "RoleBinding", "rolebindings", { namespaced: true, nameRule: "path-segment" }],
    ["scheduling.k8s.io/v1", "PriorityClass", "priorityclasses", { namespaced: false, shortNames: ["pc"] }],
    ["storage.k8s.io/v1", "CSIDriver", "csidrivers", { namespaced: false }],
    ["storage.k8s.io/v1", "CSINode", "csinodes", { namespaced: false }],
    ["storage.k8s.io/v1", "CSIStorageCapacity", "csistoragecapacities", { namespaced: true }],
    ["storage.k8s.io/v1", "StorageClass", "storageclasses", { namespaced: false, shortNames: ["sc"] }],
    // The markers of VolumeAttachment name no subresource; the registry serves status (the attacher writes it).
    ["storage.k8s.io/v1", "VolumeAttachment", "volumeattachments", { namespaced: false, status: true }],
    ["storage.k8s.io/v1", "VolumeAttributesClass", "volumeattributesclasses", { namespaced: false, shortNames: ["vac"] }],
  ];
  return entries.map(([apiVersion, kindName, plural, options]) => kind(apiVersion, kindName, plural, { status: wireStatus(apiVersion, kindName), ...options }));
}

/** The kinds every store starts with, as a real cluster serves them (group, version, plural, scope, subresources). */
export const builtinKinds: readonly BuiltinKind[] = [
  kind("v1", "Namespace", "namespaces", {
    namespaced: false,
    status: true,
    shortNames: ["ns"],
    // A namespace is deleted one at a time (its contents go with it): no deletecollection.
    verbs: ["create", "delete", "get", "list", "patch", "update", "watch"],
    fieldLabels: ["status.phase"],
    nameRule: "dns1123-label",
  }),
  kind("v1", "ConfigMap", "configmaps", { namespaced: true, shortNames: ["cm"] }),
  kind("v1", "Secret", "secrets", { namespaced: true, fieldLabels: ["type"] }),
  kind("v1", "Pod", "pods", {
    namespaced: true,
    categories: ["all"],
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
  kind("apps/v1", "Deployment", "deployments", { namespaced: true, status: true, shortNames: ["deploy"], categories: ["all"], scale: true }),
  kind("apps/v1", "ReplicaSet", "replicasets", {
    namespaced: true,
    status: true,
    shortNames: ["rs"],
    categories: ["all"],
    scale: true,
    fieldLabels: ["status.replicas"],
    fieldDefaults: { "status.replicas": "0" },
  }),
  kind("apps/v1", "StatefulSet", "statefulsets", { namespaced: true, status: true, shortNames: ["sts"], categories: ["all"], scale: true }),
  kind("apps/v1", "DaemonSet", "daemonsets", { namespaced: true, status: true, shortNames: ["ds"], categories: ["all"] }),
  kind("batch/v1", "Job", "jobs", {
    namespaced: true,
    status: true,
    categories: ["all"],
    fieldLabels: ["status.successful"],
    fieldDefaults: { "status.successful": "0" },
    // batch/v1 Jobs orphan their pods when the delete names no policy (kubectl always sends Background).
    rules: { defaultPropagation: "Orphan" },
  }),
  kind("batch/v1", "CronJob", "cronjobs", { namespaced: true, status: true, shortNames: ["cj"], categories: ["all"] }),
  kind("policy/v1", "PodDisruptionBudget", "poddisruptionbudgets", { namespaced: true, status: true, shortNames: ["pdb"] }),
  kind("apiextensions.k8s.io/v1", "CustomResourceDefinition", "customresourcedefinitions", {
    namespaced: false,
    status: true,
    shortNames: ["crd", "crds"],
    categories: ["api-extensions"],
  }),
  // Every other kind of the stable group versions, appended so that the kinds above keep their order (the
  // simulator walks kinds in this order, and its traces must not change).
  ...moreKinds(),
];

const builtinIds = new Set(builtinKinds.map((k) => `${k.resource.group}/${k.resource.kind}`));

/** Whether a group and kind is built in (in any version): what the server serves as protobuf and tables as built-ins. */
export function isBuiltinKind(resource: Pick<ResourceType, "group" | "kind">): boolean {
  return builtinIds.has(`${resource.group}/${resource.kind}`);
}

/** Rules for kinds registered by CRDs: custom resources drop `status` on create when it is a subresource. */
export const customResourceRules: KindRules = standardRules;
