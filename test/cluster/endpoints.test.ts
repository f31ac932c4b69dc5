// Pod networking and Service endpoints in the simulator: with `network`, nodes report addresses and pods get
// distinct IPs from their node's range; readiness probes delay Ready by their initial delay; the Endpoints and
// EndpointSlice controllers follow the ready and not-ready pods a Service selects, and go with the Service.
import { test } from "node:test";
import assert from "node:assert/strict";
import { annotations, cluster } from "../../src/cluster/index.ts";
import type { Simulation } from "../../src/sim/index.ts";
import type { KubeObject } from "../../src/api/object.ts";
import { list, ns, runFor, world } from "./helpers.ts";

const registry = { "web:v1": "sha256:w1" };
const actors = (nodes: number) => cluster({ nodes, network: true, with: ["endpoints-controller", "endpointslice-controller"] });

function deployment(name: string, replicas: number, container: Record<string, unknown> = {}): KubeObject {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name, namespace: ns },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: "web", image: "web:v1", ports: [{ name: "http", containerPort: 8080 }], ...container }] } },
    },
  };
}

const service: KubeObject = {
  apiVersion: "v1",
  kind: "Service",
  metadata: { name: "web", namespace: ns, labels: { tier: "front" } },
  spec: { selector: { app: "web" }, ports: [{ name: "http", port: 80, targetPort: "http", protocol: "TCP" }] },
};

function pods(sim: Simulation): any[] {
  return sim.view().list({ apiVersion: "v1", kind: "Pod", namespace: ns }) as any[];
}

function endpoints(sim: Simulation): any {
  return sim.view().get({ apiVersion: "v1", kind: "Endpoints", namespace: ns, name: "web" });
}

function slices(sim: Simulation): any[] {
  return list(sim, "discovery.k8s.io/v1", "EndpointSlice") as any[];
}

test("with network on, each node reports its address and range, and its pods get distinct IPs from that range", async () => {
  const sim = world(41, { nodes: ["n1", "n2"], registry, actors: actors(2) });
  sim.store.create(deployment("web", 5));
  await runFor(sim, 30_000);
  const nodes = list(sim, "v1", "Node") as any[];
  assert.deepEqual(
    nodes.map((n) => [n.metadata.name, n.spec.podCIDR, n.status.addresses]),
    [
      ["n1", "10.244.1.0/24", [{ type: "InternalIP", address: "10.0.0.2" }, { type: "Hostname", address: "n1" }]],
      ["n2", "10.244.2.0/24", [{ type: "InternalIP", address: "10.0.0.3" }, { type: "Hostname", address: "n2" }]],
    ],
  );
  const running = pods(sim);
  assert.equal(running.length, 5);
  assert.equal(new Set(running.map((p) => p.status.podIP)).size, 5, "distinct pod IPs");
  for (const pod of running) {
    const index = pod.spec.nodeName === "n1" ? 1 : 2;
    assert.match(pod.status.podIP, new RegExp(`^10\\.244\\.${index}\\.\\d+$`));
    assert.equal(pod.status.hostIP, `10.0.0.${index + 1}`);
    assert.deepEqual(pod.status.podIPs, [{ ip: pod.status.podIP }]);
  }
});

test("a restarted container keeps its pod's addresses, and a host-network pod has the node's", async () => {
  const sim = world(45, { nodes: ["n1"], registry, actors: actors(1) });
  const restarting = { apiVersion: "v1", kind: "Pod", metadata: { name: "flaky", namespace: ns, annotations: { [annotations.runMs]: "3000" } }, spec: { containers: [{ name: "c", image: "web:v1" }] } };
  const host = { apiVersion: "v1", kind: "Pod", metadata: { name: "agent", namespace: ns }, spec: { hostNetwork: true, containers: [{ name: "c", image: "web:v1" }] } };
  sim.store.create(restarting);
  sim.store.create(host);
  await runFor(sim, 2_500);
  const first = (sim.view().get({ apiVersion: "v1", kind: "Pod", namespace: ns, name: "flaky" }) as any).status;
  await runFor(sim, 10_000);
  const later = (sim.view().get({ apiVersion: "v1", kind: "Pod", namespace: ns, name: "flaky" }) as any).status;
  assert.ok(later.containerStatuses[0].restartCount >= 2, "the container restarted");
  assert.deepEqual([later.podIP, later.podIPs, later.hostIPs], [first.podIP, [{ ip: first.podIP }], [{ ip: "10.0.0.2" }]]);
  assert.equal(first.podIP, "10.244.1.2");
  const agent = (sim.view().get({ apiVersion: "v1", kind: "Pod", namespace: ns, name: "agent" }) as any).status;
  assert.deepEqual([agent.podIP, agent.hostIP], ["10.0.0.2", "10.0.0.2"]);
});

test("without network the kubelet keeps the fixed addresses earlier runs recorded", async () => {
  const sim = world(42, { nodes: ["n1"], registry, actors: cluster({ nodes: 1 }) });
  sim.store.create(deployment("web", 2));
  await runFor(sim, 30_000);
  assert.deepEqual(pods(sim).map((p) => [p.status.hostIP, p.status.podIP]), [["10.0.0.1", "10.1.0.1"], ["10.0.0.1", "10.1.0.1"]]);
});

test("a readiness probe's initial delay holds Ready back, and Endpoints list the pod as not ready until then", async () => {
  const sim = world(43, { nodes: ["n1"], registry, actors: actors(1) });
  sim.store.create(service);
  sim.store.create(deployment("web", 1, { readinessProbe: { httpGet: { path: "/", port: "http" }, initialDelaySeconds: 20 } }));
  await runFor(sim, 10_000);
  const [pod] = pods(sim);
  assert.equal(pod.status.phase, "Running");
  assert.equal(pod.status.conditions.find((c: any) => c.type === "Ready").status, "False");
  const ref = { kind: "Pod", namespace: ns, name: pod.metadata.name, uid: pod.metadata.uid };
  const address = { ip: pod.status.podIP, nodeName: "n1", targetRef: ref };
  assert.deepEqual(endpoints(sim).subsets, [{ notReadyAddresses: [address], ports: [{ name: "http", port: 8080, protocol: "TCP" }] }]);
  assert.deepEqual(slices(sim)[0].endpoints, [{ addresses: [pod.status.podIP], conditions: { ready: false, serving: false, terminating: false }, nodeName: "n1", targetRef: ref }]);
  await runFor(sim, 20_000);
  assert.deepEqual(endpoints(sim).subsets, [{ addresses: [address], ports: [{ name: "http", port: 8080, protocol: "TCP" }] }]);
  assert.deepEqual(slices(sim)[0].endpoints[0].conditions, { ready: true, serving: true, terminating: false });
});

test("Endpoints and one EndpointSlice follow the pods a Service selects, with the controllers' labels, and go with the Service", async () => {
  const sim = world(44, { nodes: ["n1", "n2"], registry, actors: actors(2) });
  sim.store.create(service);
  await runFor(sim, 5_000);
  // A Service that selects nothing has Endpoints without subsets and one empty slice.
  assert.equal(endpoints(sim).subsets, undefined);
  assert.deepEqual(slices(sim).map((s) => s.endpoints), [[]]);
  sim.store.create(deployment("web", 3));
  sim.store.create(deployment("other", 1));
  await runFor(sim, 30_000);
  const ips = pods(sim).filter((p) => p.metadata.labels.app === "web").map((p) => p.status.podIP).sort();
  const ep = endpoints(sim);
  assert.deepEqual(ep.metadata.labels, { tier: "front", "endpoints.kubernetes.io/managed-by": "endpoint-controller" });
  assert.deepEqual(ep.subsets.flatMap((s: any) => s.addresses.map((a: any) => a.ip)).sort(), ips);
  const [slice, ...more] = slices(sim);
  assert.equal(more.length, 0);
  assert.match(slice.metadata.name, /^web-/);
  assert.deepEqual(slice.metadata.labels, { tier: "front", "kubernetes.io/service-name": "web", "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io" });
  assert.equal(slice.metadata.ownerReferences[0].kind, "Service");
  assert.equal(slice.addressType, "IPv4");
  assert.deepEqual(slice.ports, [{ name: "http", port: 8080, protocol: "TCP" }]);
  assert.deepEqual(slice.endpoints.map((e: any) => e.addresses[0]).sort(), ips);
  // Scaling down drops the deleted pod's address.
  sim.store.patch({ apiVersion: "apps/v1", kind: "Deployment", namespace: ns, name: "web", patchType: "merge", patch: { spec: { replicas: 1 } } });
  await runFor(sim, 30_000);
  assert.equal(endpoints(sim).subsets[0].addresses.length, 1);
  assert.equal(slices(sim)[0].endpoints.length, 1);
  sim.store.delete({ apiVersion: "v1", kind: "Service", namespace: ns, name: "web" });
  await runFor(sim, 30_000);
  assert.equal(endpoints(sim), undefined, "Endpoints deleted with the Service");
  assert.deepEqual(slices(sim), [], "slices collected with their owner");
});

test("under crashes, failed requests, closed watches and stale reads, Endpoints and exactly one slice end up listing the ready pods", async () => {
  for (const seed of [51, 52, 53]) {
    const sim = world(seed, { nodes: ["n1", "n2"], registry, actors: actors(2) });
    sim.store.create(service);
    sim.store.create(deployment("web", 3));
    const faulted = await runFor(sim, 40_000, { faultBudget: { chance: [1, 6], counts: { crash: 4, "fail-request": 4, "close-watch": 4, "stale-read": 4 } } });
    assert.ok(faulted.faults.length > 4, `seed ${seed}: faults were drawn`);
    sim.stopFaults();
    await runFor(sim, 120_000);
    const ips = pods(sim).filter((p) => p.status?.podIP !== undefined && p.metadata.deletionTimestamp === undefined).map((p) => p.status.podIP).sort();
    assert.equal(ips.length, 3, `seed ${seed}`);
    assert.deepEqual(endpoints(sim).subsets.flatMap((s: any) => s.addresses.map((a: any) => a.ip)).sort(), ips, `seed ${seed}`);
    const all = slices(sim);
    assert.equal(all.length, 1, `seed ${seed}: one slice, no duplicate`);
    assert.deepEqual(all[0].endpoints.map((e: any) => e.addresses[0]).sort(), ips, `seed ${seed}`);
  }
});
