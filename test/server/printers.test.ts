// The cells of kube-apiserver's printers (pkg/printers/internalversion/printers.go) for objects shaped like the
// ones a real cluster stores: quotas the quota controller has counted, flow schemas whose priority level is gone,
// CSI drivers as defaulting leaves them. The kubectl tests show the same columns end to end.
import { test } from "node:test";
import assert from "node:assert/strict";
import type { KubeObject } from "../../src/api/object.ts";
import { realClock } from "../../src/api/clock.ts";
import { createStore } from "../../src/store/index.ts";
import { builtinPrinters } from "../../src/server/encoding/printers.ts";
import { Tables } from "../../src/server/encoding/table.ts";
import type { Cell, Json, Printer } from "../../src/server/encoding/printers.ts";

const age = (timestamp: unknown): string => (typeof timestamp === "string" ? "5m" : "<unknown>");
const created = { creationTimestamp: "2026-01-01T00:00:00Z" };

function printer(id: string): Printer {
  const found = builtinPrinters[id];
  assert.ok(found !== undefined, `no printer for ${id}`);
  return found;
}

function cells(id: string, object: Json): Cell[] {
  return printer(id).cells(object, age);
}

test("every printer gives one cell per column, even for an object with nothing but a name", () => {
  for (const [id, p] of Object.entries(builtinPrinters)) {
    assert.equal(p.cells({ metadata: { name: "x" } }, age).length, p.columns.length, id);
  }
});

test("a ResourceQuota lists used/hard per resource in name order, limits.* under Limit and 0 for what is not counted yet", () => {
  const hard = { pods: "10", "limits.memory": "2Gi", cpu: "1", "count/deployments.apps": "5", "limits.cpu": "2", "requests.memory": "1Gi", limits: "3" };
  const used = { pods: "3", cpu: "500m", "limits.cpu": "1" };
  const quota = { metadata: { name: "compute", ...created }, spec: { hard }, status: { hard, used } };
  assert.deepEqual(printer("/ResourceQuota").columns.map((c) => c.name), ["Name", "Request", "Limit", "Age"]);
  assert.deepEqual(cells("/ResourceQuota", quota), [
    "compute",
    // `limits` alone has no dot: it is not a limits.* resource.
    "count/deployments.apps: 0/5, cpu: 500m/1, limits: 0/3, pods: 3/10, requests.memory: 0/1Gi",
    "limits.cpu: 1/2, limits.memory: 0/2Gi",
    "5m",
  ]);
  // Before the quota controller writes status.hard, the real printer shows nothing (spec.hard is not read).
  assert.deepEqual(cells("/ResourceQuota", { metadata: { name: "new", ...created }, spec: { hard } }), ["new", "", "", "5m"]);
});

test("a FlowSchema reads as defaulted (precedence 1000, no distinguisher) and shows whether its priority level is missing", () => {
  const dangling = { metadata: { name: "orphan", ...created }, spec: { priorityLevelConfiguration: { name: "gone" } }, status: { conditions: [{ type: "Dangling", status: "True", reason: "NotFound" }] } };
  assert.deepEqual(cells("flowcontrol.apiserver.k8s.io/FlowSchema", dangling), ["orphan", "gone", 1000, "<none>", "5m", "True"]);
  const fresh = { metadata: { name: "fresh", ...created }, spec: { priorityLevelConfiguration: { name: "workload-low" }, matchingPrecedence: 800, distinguisherMethod: { type: "ByUser" } } };
  assert.deepEqual(cells("flowcontrol.apiserver.k8s.io/FlowSchema", fresh), ["fresh", "workload-low", 800, "ByUser", "5m", "?"]);
  assert.deepEqual(printer("flowcontrol.apiserver.k8s.io/FlowSchema").columns.map((c) => c.name), ["Name", "PriorityLevel", "MatchingPrecedence", "DistinguisherMethod", "Age", "MissingPL"]);
});

test("FlowSchemas are listed in matching order: precedence first (unset is 1000), then name", () => {
  const schema = (schemaName: string, precedence?: number): Json => ({ metadata: { name: schemaName }, spec: { priorityLevelConfiguration: { name: "p" }, ...(precedence === undefined ? {} : { matchingPrecedence: precedence }) } });
  const compare = printer("flowcontrol.apiserver.k8s.io/FlowSchema").compare;
  assert.ok(compare !== undefined);
  const sorted = [schema("a"), schema("b", 500), schema("exempt", 1), schema("a5", 500), schema("z", 0)].sort(compare);
  assert.deepEqual(sorted.map((s) => s.metadata.name), ["exempt", "a5", "b", "a", "z"]);
});

test("a Table of FlowSchemas has its rows in matching order, whatever order the list had", () => {
  const store = createStore();
  const resource = store.resourceFor({ apiVersion: "flowcontrol.apiserver.k8s.io/v1", kind: "FlowSchema" });
  const schema = (schemaName: string, precedence: number): KubeObject => ({ apiVersion: "flowcontrol.apiserver.k8s.io/v1", kind: "FlowSchema", metadata: { name: schemaName, ...created }, spec: { priorityLevelConfiguration: { name: "p" }, matchingPrecedence: precedence } });
  const table = new Tables(store, realClock).table(resource, [schema("late", 9000), schema("early", 100)], "None", undefined);
  assert.deepEqual((table.rows as { cells: Cell[] }[]).map((row) => row.cells[0]), ["early", "late"]);
});

test("a PriorityLevelConfiguration shows its queuing with the server's defaults, and <none> where it does not queue", () => {
  const id = "flowcontrol.apiserver.k8s.io/PriorityLevelConfiguration";
  const exempt = { metadata: { name: "exempt", ...created }, spec: { type: "Exempt", exempt: {} } };
  assert.deepEqual(cells(id, exempt), ["exempt", "Exempt", "<none>", "<none>", "<none>", "<none>", "5m"]);
  const rejecting = { metadata: { name: "reject", ...created }, spec: { type: "Limited", limited: { limitResponse: { type: "Reject" } } } };
  assert.deepEqual(cells(id, rejecting), ["reject", "Limited", 30, "<none>", "<none>", "<none>", "5m"]);
  // Zero queues or hand size is what an unset int32 looks like to the defaulting; zero shares are kept in v1.
  const queuing = { metadata: { name: "queue", ...created }, spec: { type: "Limited", limited: { nominalConcurrencyShares: 0, limitResponse: { type: "Queue", queuing: { queues: 0, handSize: 6 } } } } };
  assert.deepEqual(cells(id, queuing), ["queue", "Limited", 0, 64, 6, 50, "5m"]);
});

test("a CSIDriver reads as defaulting leaves it, and an empty token request list prints as unset", () => {
  const id = "storage.k8s.io/CSIDriver";
  assert.deepEqual(cells(id, { metadata: { name: "bare", ...created }, spec: {} }), ["bare", true, false, false, "<unset>", false, "Persistent", "5m"]);
  const spec = { attachRequired: false, podInfoOnMount: true, storageCapacity: true, requiresRepublish: true, tokenRequests: [{ audience: "vault" }, { audience: "gcp", expirationSeconds: 3600 }], volumeLifecycleModes: ["Persistent", "Ephemeral"] };
  assert.deepEqual(cells(id, { metadata: { name: "full", ...created }, spec }), ["full", false, true, true, "vault,gcp", true, "Persistent,Ephemeral", "5m"]);
  assert.equal(cells(id, { metadata: { name: "empty" }, spec: { tokenRequests: [] } })[4], "<unset>");
});

test("a ValidatingAdmissionPolicyBinding names its param by namespace, by */name, or dumps its selector as Go prints the struct", () => {
  const id = "admissionregistration.k8s.io/ValidatingAdmissionPolicyBinding";
  const binding = (paramRef?: Json): Json => ({ metadata: { name: "b", ...created }, spec: { policyName: "limits", ...(paramRef === undefined ? {} : { paramRef }) } });
  assert.deepEqual(cells(id, binding({ name: "cfg", namespace: "team-a" })), ["b", "limits", "team-a/cfg", "5m"]);
  assert.equal(cells(id, binding({ name: "cfg" }))[2], "*/cfg");
  assert.equal(cells(id, binding())[2], "<unset>");
  assert.equal(cells(id, binding({ parameterNotFoundAction: "Deny" }))[2], "<unset>");
  const selector = { matchLabels: { tier: "db", app: "web" }, matchExpressions: [{ key: "env", operator: "In", values: ["prod", "staging"] }, { key: "legacy", operator: "DoesNotExist" }] };
  assert.equal(
    cells(id, binding({ selector }))[2],
    "&LabelSelector{MatchLabels:map[string]string{app: web,tier: db,},MatchExpressions:[]LabelSelectorRequirement{LabelSelectorRequirement{Key:env,Operator:In,Values:[prod staging],},LabelSelectorRequirement{Key:legacy,Operator:DoesNotExist,Values:[],},},}",
  );
  assert.equal(cells(id, binding({ selector: {} }))[2], "&LabelSelector{MatchLabels:map[string]string{},MatchExpressions:[]LabelSelectorRequirement{},}");
});

test("a ValidatingAdmissionPolicy counts its validations and names its param kind as apiVersion/kind", () => {
  const id = "admissionregistration.k8s.io/ValidatingAdmissionPolicy";
  const validations = [{ expression: "object.spec.replicas <= 5" }, { expression: "true" }];
  assert.deepEqual(cells(id, { metadata: { name: "p", ...created }, spec: { validations, paramKind: { apiVersion: "v1", kind: "ConfigMap" } } }), ["p", 2, "v1/ConfigMap", "5m"]);
  assert.deepEqual(cells(id, { metadata: { name: "q", ...created }, spec: {} }), ["q", 0, "<unset>", "5m"]);
});

test("a ControllerRevision names its controller by lower-case group kind, and <none> when no owner controls it", () => {
  const id = "apps/ControllerRevision";
  const owner = (apiVersion: string, kind: string, controller: boolean) => ({ apiVersion, kind, name: "web", uid: "u1", controller });
  const revision = (owners: Json[]): Json => ({ metadata: { name: "web-7c9", ownerReferences: owners, ...created }, revision: 3, data: {} });
  assert.deepEqual(cells(id, revision([owner("apps/v1", "StatefulSet", true)])), ["web-7c9", "statefulset.apps/web", 3, "5m"]);
  assert.equal(cells(id, revision([owner("v1", "Pod", false), owner("v1", "Pod", true)]))[1], "pod/web");
  assert.equal(cells(id, revision([owner("apps/v1", "DaemonSet", false)]))[1], "<none>");
});

test("storage kinds: attachments, CSI nodes, capacities and volume attributes classes", () => {
  const attachment = { metadata: { name: "csi-1", ...created }, spec: { attacher: "ebs.csi.aws.com", nodeName: "n1", source: { persistentVolumeName: "pv-1" } }, status: { attached: true } };
  assert.deepEqual(cells("storage.k8s.io/VolumeAttachment", attachment), ["csi-1", "ebs.csi.aws.com", "pv-1", "n1", true, "5m"]);
  const inline = { metadata: { name: "csi-2", ...created }, spec: { attacher: "a", nodeName: "n2", source: { inlineVolumeSpec: {} } } };
  assert.deepEqual(cells("storage.k8s.io/VolumeAttachment", inline), ["csi-2", "a", "", "n2", false, "5m"]);
  assert.deepEqual(cells("storage.k8s.io/CSINode", { metadata: { name: "n1", ...created }, spec: { drivers: [{ name: "a", nodeID: "1" }, { name: "b", nodeID: "1" }] } }), ["n1", 2, "5m"]);
  assert.deepEqual(cells("storage.k8s.io/CSIStorageCapacity", { metadata: { name: "c" }, storageClassName: "fast", capacity: "100Gi" }), ["c", "fast", "100Gi"]);
  assert.deepEqual(cells("storage.k8s.io/CSIStorageCapacity", { metadata: { name: "d" }, storageClassName: "fast" }), ["d", "fast", "<unset>"]);
  const annotations = { "volumeattributesclass.alpha.kubernetes.io/is-default-class": "true" };
  assert.deepEqual(cells("storage.k8s.io/VolumeAttributesClass", { metadata: { name: "gold", annotations, ...created }, driverName: "ebs.csi.aws.com" }), ["gold (default)", "ebs.csi.aws.com", "5m"]);
  assert.deepEqual(cells("storage.k8s.io/VolumeAttributesClass", { metadata: { name: "silver", ...created }, driverName: "d" }), ["silver", "d", "5m"]);
});

test("a ComponentStatus shows its Healthy condition's verdict, message and error", () => {
  const status = (conditions: Json[]): Json => ({ metadata: { name: "etcd-0" }, conditions });
  assert.deepEqual(cells("/ComponentStatus", status([{ type: "Healthy", status: "True", message: "ok" }])), ["etcd-0", "Healthy", "ok", ""]);
  assert.deepEqual(cells("/ComponentStatus", status([{ type: "Healthy", status: "False", error: "dial tcp: refused" }])), ["etcd-0", "Unhealthy", "", "dial tcp: refused"]);
  assert.deepEqual(cells("/ComponentStatus", status([])), ["etcd-0", "Unknown", "", ""]);
});

test("a ReplicationController's wide columns end with its selector, printed as labels", () => {
  const rc = { metadata: { name: "web", ...created }, spec: { replicas: 2, selector: { tier: "front", app: "web" }, template: { spec: { containers: [{ name: "c", image: "nginx" }] } } } };
  assert.deepEqual(printer("/ReplicationController").columns.map((c) => `${c.name}:${c.priority ?? 0}`), ["Name:0", "Desired:0", "Current:0", "Ready:0", "Age:0", "Containers:1", "Images:1", "Selector:1"]);
  assert.deepEqual(cells("/ReplicationController", rc), ["web", 2, 0, 0, "5m", "c", "nginx", "app=web,tier=front"]);
});
