// The discovery facts of the built-in kinds table, pinned to what a real kube-apiserver lists (the documents
// kubernetes/kubernetes records under api/discovery/, commits named at the top of src/store/kinds.ts). Clients
// act on these facts: kubectl resolves short names and `get all` from them, and reads `status`/`scale` from the
// subresource list.
import { test } from "node:test";
import assert from "node:assert/strict";
import { builtinKinds } from "../../src/store/kinds.ts";
import type { ResourceType } from "../../src/api/resources.ts";
import { newStore } from "./helpers.ts";

interface Fact {
  namespaced: boolean;
  shortNames?: string[];
  categories?: string[];
  subresources?: string[];
  verbs?: string[];
}

const N = true;
const C = false;
const status = ["status"];
const scaled = ["scale", "status"];
const all = ["all"];
const extensions = ["api-extensions"];

// One row per served resource, keyed `group/version/plural` ("v1/..." for core), as the real server's discovery
// lists it. Verbs are given only where they are not the full set of eight.
const facts: Record<string, Fact> = {
  "v1/namespaces": { namespaced: C, shortNames: ["ns"], subresources: status, verbs: ["create", "delete", "get", "list", "patch", "update", "watch"] },
  "v1/configmaps": { namespaced: N, shortNames: ["cm"] },
  "v1/secrets": { namespaced: N },
  "v1/pods": { namespaced: N, shortNames: ["po"], categories: all, subresources: status },
  "v1/nodes": { namespaced: C, shortNames: ["no"], subresources: status },
  "v1/events": { namespaced: N, shortNames: ["ev"] },
  "v1/serviceaccounts": { namespaced: N, shortNames: ["sa"] },
  "v1/services": { namespaced: N, shortNames: ["svc"], categories: all, subresources: status },
  "v1/endpoints": { namespaced: N, shortNames: ["ep"] },
  "v1/persistentvolumeclaims": { namespaced: N, shortNames: ["pvc"], subresources: status },
  "v1/persistentvolumes": { namespaced: C, shortNames: ["pv"], subresources: status },
  "v1/podtemplates": { namespaced: N },
  "v1/replicationcontrollers": { namespaced: N, shortNames: ["rc"], categories: all, subresources: scaled },
  "v1/resourcequotas": { namespaced: N, shortNames: ["quota"], subresources: status },
  "v1/limitranges": { namespaced: N, shortNames: ["limits"] },
  "v1/componentstatuses": { namespaced: C, shortNames: ["cs"], verbs: ["get", "list"] },
  "admissionregistration.k8s.io/v1/mutatingwebhookconfigurations": { namespaced: C, categories: extensions },
  "admissionregistration.k8s.io/v1/validatingwebhookconfigurations": { namespaced: C, categories: extensions },
  "admissionregistration.k8s.io/v1/validatingadmissionpolicies": { namespaced: C, categories: extensions, subresources: status },
  "admissionregistration.k8s.io/v1/validatingadmissionpolicybindings": { namespaced: C, categories: extensions },
  "apiextensions.k8s.io/v1/customresourcedefinitions": { namespaced: C, shortNames: ["crd", "crds"], categories: extensions, subresources: status },
  "apps/v1/controllerrevisions": { namespaced: N },
  "apps/v1/daemonsets": { namespaced: N, shortNames: ["ds"], categories: all, subresources: status },
  "apps/v1/deployments": { namespaced: N, shortNames: ["deploy"], categories: all, subresources: scaled },
  "apps/v1/replicasets": { namespaced: N, shortNames: ["rs"], categories: all, subresources: scaled },
  "apps/v1/statefulsets": { namespaced: N, shortNames: ["sts"], categories: all, subresources: scaled },
  "autoscaling/v2/horizontalpodautoscalers": { namespaced: N, shortNames: ["hpa"], categories: all, subresources: status },
  "batch/v1/cronjobs": { namespaced: N, shortNames: ["cj"], categories: all, subresources: status },
  "batch/v1/jobs": { namespaced: N, categories: all, subresources: status },
  "certificates.k8s.io/v1/certificatesigningrequests": { namespaced: C, shortNames: ["csr"], subresources: status },
  "coordination.k8s.io/v1/leases": { namespaced: N },
  "discovery.k8s.io/v1/endpointslices": { namespaced: N },
  "events.k8s.io/v1/events": { namespaced: N, shortNames: ["ev"] },
  "flowcontrol.apiserver.k8s.io/v1/flowschemas": { namespaced: C, subresources: status },
  "flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations": { namespaced: C, subresources: status },
  "networking.k8s.io/v1/ingressclasses": { namespaced: C },
  "networking.k8s.io/v1/ingresses": { namespaced: N, shortNames: ["ing"], subresources: status },
  "networking.k8s.io/v1/ipaddresses": { namespaced: C, shortNames: ["ip"] },
  "networking.k8s.io/v1/networkpolicies": { namespaced: N, shortNames: ["netpol"] },
  "networking.k8s.io/v1/servicecidrs": { namespaced: C, subresources: status },
  "node.k8s.io/v1/runtimeclasses": { namespaced: C },
  "policy/v1/poddisruptionbudgets": { namespaced: N, shortNames: ["pdb"], subresources: status },
  "rbac.authorization.k8s.io/v1/clusterrolebindings": { namespaced: C },
  "rbac.authorization.k8s.io/v1/clusterroles": { namespaced: C },
  "rbac.authorization.k8s.io/v1/rolebindings": { namespaced: N },
  "rbac.authorization.k8s.io/v1/roles": { namespaced: N },
  "scheduling.k8s.io/v1/priorityclasses": { namespaced: C, shortNames: ["pc"] },
  "storage.k8s.io/v1/csidrivers": { namespaced: C },
  "storage.k8s.io/v1/csinodes": { namespaced: C },
  "storage.k8s.io/v1/csistoragecapacities": { namespaced: N },
  "storage.k8s.io/v1/storageclasses": { namespaced: C, shortNames: ["sc"] },
  "storage.k8s.io/v1/volumeattachments": { namespaced: C, subresources: status },
  "storage.k8s.io/v1/volumeattributesclasses": { namespaced: C, shortNames: ["vac"] },
};

function key(r: ResourceType): string {
  return `${r.group === "" ? "" : `${r.group}/`}${r.version}/${r.plural}`;
}

/** The table's facts in the same shape as `facts`, with empty lists left out as discovery leaves them out. */
function factOf(r: ResourceType): Fact {
  const subresources = [...(r.scaleSubresource === true ? ["scale"] : []), ...(r.statusSubresource ? ["status"] : [])];
  const fact: Fact = { namespaced: r.namespaced };
  if (r.shortNames.length > 0) fact.shortNames = r.shortNames;
  if (r.categories !== undefined && r.categories.length > 0) fact.categories = r.categories;
  if (subresources.length > 0) fact.subresources = subresources;
  if (r.verbs !== undefined) fact.verbs = r.verbs;
  return fact;
}

const resources = builtinKinds.map((k) => k.resource);

test("the table serves exactly the resources the real server lists for these group versions", () => {
  assert.deepEqual(resources.map(key).sort(), Object.keys(facts).sort());
});

test("every resource has the real server's scope, short names, categories, verbs and status/scale subresources", () => {
  for (const r of resources) assert.deepEqual(factOf(r), facts[key(r)], key(r));
});

test("`kubectl get all` covers the ten workload and service kinds a real server puts in the `all` category", () => {
  const inAll = resources.filter((r) => r.categories?.includes("all")).map((r) => r.plural).sort();
  assert.deepEqual(inAll, [
    "cronjobs",
    "daemonsets",
    "deployments",
    "horizontalpodautoscalers",
    "jobs",
    "pods",
    "replicasets",
    "replicationcontrollers",
    "services",
    "statefulsets",
  ]);
});

test("the short names kubectl users type resolve to one resource each (ev: the core and events.k8s.io Event)", () => {
  const owners = new Map<string, string[]>();
  for (const r of resources) for (const s of r.shortNames) owners.set(s, [...(owners.get(s) ?? []), key(r)]);
  const expected: Record<string, string> = {
    po: "v1/pods",
    svc: "v1/services",
    deploy: "apps/v1/deployments",
    rs: "apps/v1/replicasets",
    sts: "apps/v1/statefulsets",
    ds: "apps/v1/daemonsets",
    cj: "batch/v1/cronjobs",
    pvc: "v1/persistentvolumeclaims",
    pv: "v1/persistentvolumes",
    sa: "v1/serviceaccounts",
    ns: "v1/namespaces",
    no: "v1/nodes",
    cm: "v1/configmaps",
    ep: "v1/endpoints",
    ing: "networking.k8s.io/v1/ingresses",
    netpol: "networking.k8s.io/v1/networkpolicies",
    pdb: "policy/v1/poddisruptionbudgets",
    hpa: "autoscaling/v2/horizontalpodautoscalers",
    pc: "scheduling.k8s.io/v1/priorityclasses",
    sc: "storage.k8s.io/v1/storageclasses",
    crd: "apiextensions.k8s.io/v1/customresourcedefinitions",
    rc: "v1/replicationcontrollers",
    quota: "v1/resourcequotas",
    limits: "v1/limitranges",
    csr: "certificates.k8s.io/v1/certificatesigningrequests",
  };
  for (const [short, owner] of Object.entries(expected)) assert.deepEqual(owners.get(short), [owner], short);
  assert.deepEqual(owners.get("ev"), ["v1/events", "events.k8s.io/v1/events"]);
  // No resource the real server lists without short names gained any: secrets, jobs and leases have none.
  for (const plural of ["secrets", "jobs", "leases", "endpointslices", "controllerrevisions"]) {
    assert.deepEqual(resources.find((r) => r.plural === plural)?.shortNames, [], plural);
  }
});

test("singular names are what discovery lists (Endpoints stays `endpoints`)", () => {
  for (const r of resources) assert.equal(r.singular, r.kind.toLowerCase(), key(r));
  assert.equal(resources.find((r) => r.plural === "endpoints")?.singular, "endpoints");
});

test("a VolumeAttachment has a status subresource: create drops status, only status writes change it", () => {
  const store = newStore();
  const attachment = {
    apiVersion: "storage.k8s.io/v1",
    kind: "VolumeAttachment",
    metadata: { name: "va-1" },
    spec: { attacher: "csi.example.com", nodeName: "n1", source: { persistentVolumeName: "pv-1" } },
    status: { attached: true },
  };
  const created = store.create(attachment);
  assert.equal(created.status, undefined, "a v1 create drops status");
  const attached = store.updateStatus({ ...created, status: { attached: true } });
  assert.deepEqual(attached.status, { attached: true });
  const main = store.update({ ...attached, status: { attached: false } });
  assert.deepEqual(main.status, { attached: true }, "a main write keeps the stored status");
});

test("Service names are DNS-1035 labels: a leading digit is refused, as the real server refuses it", () => {
  const store = newStore();
  const service = (name: string) => ({
    apiVersion: "v1",
    kind: "Service",
    metadata: { name, namespace: "default" },
    spec: { ports: [{ port: 80 }] },
  });
  assert.equal(store.create(service("web-1")).metadata.name, "web-1");
  assert.throws(
    () => store.create(service("1web")),
    (error: unknown) => {
      const e = error as { code?: number; message?: string };
      assert.equal(e.code, 422);
      assert.match(String(e.message), /metadata\.name: Invalid value: "1web": a DNS-1035 label/);
      return true;
    },
  );
  // A ConfigMap keeps the DNS-1123 subdomain rule: the same name is fine there.
  assert.equal(store.create({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "1web", namespace: "default" } }).metadata.name, "1web");
});
