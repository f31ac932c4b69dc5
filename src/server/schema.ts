// The shape of the built-in kinds as far as merging needs it: which lists are associative (and by which keys),
// which are sets, which are atomic, and which structs are atomic. Strategic merge patch reads the `patchMergeKey`
// / `patchStrategy` side (`mergeKey`, `strategy`); server-side apply reads the `listType` / `listMapKeys` side
// (`keys`, `listType`). Facts from the Go types of core/v1, apps/v1, batch/v1 and policy/v1; a field not named here
// is `any`: maps merge key by key, lists are atomic (as for a custom resource without list annotations).
import type { ResourceType } from "../api/resources.ts";

export type SchemaNode =
  | { t: "any" }
  | { t: "struct"; fields: Readonly<Record<string, SchemaNode>>; atomic?: boolean }
  | { t: "map"; value: SchemaNode; atomic?: boolean }
  | ListNode;

export interface ListNode {
  t: "list";
  item: SchemaNode;
  /** Strategic merge: the `patchMergeKey` (object lists), absent for primitive or atomic lists. */
  mergeKey?: string;
  /** Strategic merge: `merge` merges by key (objects) or takes the union (primitives); `replace` replaces. */
  strategy: "merge" | "replace";
  /** Server-side apply: `map` (associative, by `keys`), `set` (primitives, by value) or `atomic`. */
  listType: "map" | "set" | "atomic";
  keys?: readonly string[];
}

export const anyNode: SchemaNode = { t: "any" };
const struct = (fields: Record<string, SchemaNode>): SchemaNode => ({ t: "struct", fields });
const atomicStruct: SchemaNode = { t: "struct", fields: {}, atomic: true };
const map = (value: SchemaNode = anyNode): SchemaNode => ({ t: "map", value });
const atomicList: SchemaNode = { t: "list", item: anyNode, strategy: "replace", listType: "atomic" };
const mergedSet: SchemaNode = { t: "list", item: anyNode, strategy: "merge", listType: "set" };
const byKey = (mergeKey: string, item: SchemaNode = anyNode, keys: readonly string[] = [mergeKey]): ListNode => ({ t: "list", item, mergeKey, strategy: "merge", listType: "map", keys });
/** Strategic merge by key, but atomic for server-side apply (fields whose Go type says `listType=atomic`). */
const byKeyAtomic = (mergeKey: string): ListNode => ({ t: "list", item: anyNode, mergeKey, strategy: "merge", listType: "atomic" });

export const objectMeta = struct({
  labels: map(),
  annotations: map(),
  finalizers: mergedSet,
  ownerReferences: byKey("uid"),
  managedFields: atomicList,
});

const conditions = byKey("type");
const labelSelector = atomicStruct;

const envVar = struct({ valueFrom: struct({}) });
const container = struct({
  ports: byKey("containerPort", anyNode, ["containerPort", "protocol"]),
  env: byKey("name", envVar),
  envFrom: atomicList,
  volumeMounts: byKey("mountPath"),
  volumeDevices: byKey("devicePath"),
  resources: struct({ limits: map(), requests: map(), claims: byKey("name") }),
  command: atomicList,
  args: atomicList,
});

export const podSpec = struct({
  volumes: byKey("name"),
  initContainers: byKey("name", container),
  containers: byKey("name", container),
  ephemeralContainers: byKey("name", container),
  imagePullSecrets: byKey("name"),
  hostAliases: byKey("ip"),
  topologySpreadConstraints: byKey("topologyKey", anyNode, ["topologyKey", "whenUnsatisfiable"]),
  resourceClaims: byKey("name"),
  schedulingGates: byKey("name"),
  readinessGates: atomicList,
  tolerations: atomicList,
  nodeSelector: map(),
  overhead: map(),
});

const podTemplate = struct({ metadata: objectMeta, spec: podSpec });

const workloadStatus = struct({ conditions });

/** `group/Kind` -> the kind's top-level fields (metadata is added for every kind). */
const kinds: Readonly<Record<string, Record<string, SchemaNode>>> = {
  "/Pod": { spec: podSpec, status: struct({ conditions, podIPs: byKey("ip"), hostIPs: byKey("ip"), containerStatuses: atomicList, initContainerStatuses: atomicList }) },
  "/Node": {
    spec: struct({ taints: atomicList, podCIDRs: mergedSet }),
    status: struct({ conditions, addresses: byKeyAtomic("type"), images: atomicList, capacity: map(), allocatable: map() }),
  },
  "/Namespace": { spec: struct({ finalizers: atomicList }), status: struct({ conditions }) },
  "/ConfigMap": { data: map(), binaryData: map() },
  "/Secret": { data: map(), stringData: map() },
  "/ServiceAccount": { secrets: byKey("name"), imagePullSecrets: atomicList },
  "apps/Deployment": { spec: struct({ selector: labelSelector, template: podTemplate }), status: workloadStatus },
  "apps/ReplicaSet": { spec: struct({ selector: labelSelector, template: podTemplate }), status: workloadStatus },
  "apps/DaemonSet": { spec: struct({ selector: labelSelector, template: podTemplate }), status: workloadStatus },
  "apps/StatefulSet": { spec: struct({ selector: labelSelector, template: podTemplate, volumeClaimTemplates: atomicList }), status: workloadStatus },
  "batch/Job": { spec: struct({ selector: labelSelector, template: podTemplate }), status: workloadStatus },
  "batch/CronJob": { spec: struct({ jobTemplate: struct({ metadata: objectMeta, spec: struct({ selector: labelSelector, template: podTemplate }) }) }), status: struct({ active: atomicList }) },
  "policy/PodDisruptionBudget": { spec: struct({ selector: labelSelector }), status: struct({ conditions, disruptedPods: map() }) },
  "apiextensions.k8s.io/CustomResourceDefinition": { status: struct({ conditions }) },
};

const cache = new Map<string, SchemaNode>();

/** The schema of a kind: its known fields, or `any` below `metadata` for kinds the table does not describe. */
export function schemaOf(resource: Pick<ResourceType, "group" | "kind">): SchemaNode {
  const id = `${resource.group}/${resource.kind}`;
  let node = cache.get(id);
  if (node === undefined) {
    node = struct({ ...(kinds[id] ?? {}), metadata: objectMeta });
    cache.set(id, node);
  }
  return node;
}

/** The schema of `field` below `node` (`any` when unknown). */
export function childOf(node: SchemaNode, field: string): SchemaNode {
  if (node.t === "struct") return node.fields[field] ?? anyNode;
  if (node.t === "map") return node.value;
  return anyNode;
}
