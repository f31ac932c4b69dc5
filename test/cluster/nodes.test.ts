// DaemonSets, node lifecycle, reboots and drains in the simulator.
import { test } from "node:test";
import assert from "node:assert/strict";
import { cluster, daemonSetRolloutStatus, drain, drainCell, hostCell, kubelet, annotations, isNodeReady, nodeActor, rebootFaultKind, requestReboot } from "../../src/cluster/index.ts";
import type { HostState } from "../../src/cluster/index.ts";
import { defineActor } from "../../src/sim/index.ts";
import type { Simulation } from "../../src/sim/index.ts";
import type { KubeObject } from "../../src/api/object.ts";
import { deployment, list, ns, registry as webRegistry, runFor, world } from "./helpers.ts";

const registry = { ...webRegistry, "agent:v1": "sha256:a1", "agent:v2": "sha256:a2" };
const dsRef = { apiVersion: "apps/v1", kind: "DaemonSet", namespace: ns, name: "agent" };

function daemonSet(image = "agent:v1"): KubeObject {
  return {
    apiVersion: "apps/v1",
    kind: "DaemonSet",
    metadata: { name: "agent", namespace: ns },
    spec: {
      selector: { matchLabels: { app: "agent" } },
      template: { metadata: { labels: { app: "agent" }, annotations: { [annotations.readyMs]: "3000" } }, spec: { containers: [{ name: "agent", image }] } },
    },
  };
}

function node(sim: Simulation, name: string): KubeObject & { status: { conditions: Array<{ type: string; status: string }>; nodeInfo: { bootID: string } } } {
  return sim.view().get({ apiVersion: "v1", kind: "Node", name }) as never;
}

function podsOf(sim: Simulation, prefix: string): KubeObject[] {
  return list(sim, "v1", "Pod").filter((p) => p.metadata.name?.startsWith(prefix));
}

test("a DaemonSet runs one pod per node, cordoned ones too, and rolls one node at a time", async () => {
  const sim = world(31, { nodes: ["n1", "n2", "n3"], registry, actors: cluster({ nodes: 3 }) });
  await runFor(sim, 2000);
  sim.store.patch({ apiVersion: "v1", kind: "Node", name: "n3", patchType: "merge", patch: { spec: { unschedulable: true } } });
  sim.store.create(daemonSet());
  await runFor(sim, 30_000);
  const nodesOf = () => podsOf(sim, "agent-").map((p) => (p.spec as { nodeName: string }).nodeName).sort();
  assert.deepEqual(nodesOf(), ["n1", "n2", "n3"]);
  assert.equal(daemonSetRolloutStatus(sim.view().get(dsRef)!).done, true);
  sim.store.patch({ ...dsRef, patchType: "merge", patch: { spec: { template: { spec: { containers: [{ name: "agent", image: "agent:v2" }] } } } } });
  let maxDown = 0;
  const result = await sim.run({
    untilMs: sim.clock.now() + 120_000,
    onStep: (_r, view) => {
      const ready = view.list({ apiVersion: "v1", kind: "Pod", namespace: ns }).filter((p) => p.metadata.deletionTimestamp === undefined && ((p.status as { conditions?: Array<{ type: string; status: string }> })?.conditions ?? []).some((c) => c.type === "Ready" && c.status === "True"));
      maxDown = Math.max(maxDown, 3 - ready.length);
    },
  });
  assert.equal(result.status, "until");
  assert.ok(maxDown <= 1, `at most one node without a ready daemon pod: ${maxDown}`);
  assert.deepEqual(nodesOf(), ["n1", "n2", "n3"]);
  assert.ok(podsOf(sim, "agent-").every((p) => (p.spec as { containers: Array<{ image: string }> }).containers[0]?.image === "agent:v2"));
  assert.equal(daemonSetRolloutStatus(sim.view().get(dsRef)!).done, true);
});

test("with revisionHistory a DaemonSet keeps its templates as ControllerRevisions, and going back renumbers the old one", async () => {
  const revisions = (sim: Simulation) =>
    Object.fromEntries(list(sim, "apps/v1", "ControllerRevision").map((r) => [(r as unknown as { data: { spec: { template: { spec: { containers: Array<{ image: string }> } } } } }).data.spec.template.spec.containers[0]!.image, (r as unknown as { revision: number }).revision]));
  const setImage = (sim: Simulation, image: string) => sim.store.patch({ ...dsRef, patchType: "merge", patch: { spec: { template: { spec: { containers: [{ name: "agent", image }] } } } } });
  const sim = world(33, { nodes: ["n1", "n2"], registry, actors: cluster({ nodes: 2, revisionHistory: true }) });
  sim.store.create(daemonSet());
  await runFor(sim, 30_000);
  assert.deepEqual(revisions(sim), { "agent:v1": 1 });
  setImage(sim, "agent:v2");
  await runFor(sim, 60_000);
  assert.deepEqual(revisions(sim), { "agent:v1": 1, "agent:v2": 2 });
  setImage(sim, "agent:v1");
  await runFor(sim, 60_000);
  assert.deepEqual(revisions(sim), { "agent:v1": 3, "agent:v2": 2 });
  const history = list(sim, "apps/v1", "ControllerRevision");
  assert.ok(history.every((r) => r.metadata.ownerReferences?.[0]?.kind === "DaemonSet" && r.metadata.labels?.app === "agent"), "owned by the set, with its template's labels");
  assert.equal(daemonSetRolloutStatus(sim.view().get(dsRef)!).done, true);
  // Without the option there is no history (the recorded behaviour).
  const plain = world(33, { nodes: ["n1", "n2"], registry, actors: cluster({ nodes: 2 }) });
  plain.store.create(daemonSet());
  await runFor(plain, 30_000);
  assert.deepEqual(list(plain, "apps/v1", "ControllerRevision"), []);
});

test("a node whose kubelet stops heartbeating goes Ready=Unknown, and Ready again when it is back", async () => {
  const sim = world(32, { nodes: ["n1", "n2"], registry, actors: cluster({ nodes: 2 }) });
  await runFor(sim, 20_000);
  let unknownSeen = false;
  const stuck = await sim.run({
    untilMs: sim.clock.now() + 120_000,
    faults: [{ atStep: sim.steps, kind: "pause", target: "kubelet-n2", durationMs: 100_000 }],
    onStep: (_r, view) => {
      const n2 = view.get({ apiVersion: "v1", kind: "Node", name: "n2" }) as ReturnType<typeof node>;
      unknownSeen ||= n2.status.conditions.some((c) => c.type === "Ready" && c.status === "Unknown");
    },
  });
  assert.equal(stuck.status, "until");
  assert.equal(unknownSeen, true);
  // During the pause the node went Unknown; once the kubelet is back it reports Ready again.
  assert.equal(isNodeReady(node(sim, "n2")), true);
});

test("a reboot takes the node NotReady, changes the host through the hook, and restarts its pods", async () => {
  const onReboot = (host: HostState): HostState => ({ ...host, booted: host.staged, staged: null });
  const sim = world(33, { nodes: ["n1"], registry, actors: [...cluster({ nodes: 1, without: ["kubelet"] }), kubelet({ node: "n1", rebootMs: 20_000, onReboot })] });
  sim.external(hostCell("n1")).set({ bootId: "n1-boot-0", bootCount: 0, booted: "v1", staged: "v2" });
  sim.store.create(deployment(1));
  await runFor(sim, 20_000);
  const uid = list(sim, "v1", "Pod")[0]?.metadata.uid;
  sim.addActor(defineActor({ name: "daemon", async start(ctx) {
    await ctx.client.patch({ apiVersion: "v1", kind: "Node", name: "n1", patchType: "merge", patch: { metadata: { annotations: { [annotations.reboot]: "r1" } } } });
  } }));
  await runFor(sim, 5000);
  assert.equal(isNodeReady(node(sim, "n1")), false, "NotReady while rebooting");
  await runFor(sim, 40_000);
  const host = sim.view().external<HostState>(hostCell("n1"));
  assert.deepEqual({ bootCount: host.bootCount, booted: host.booted, staged: host.staged }, { bootCount: 1, booted: "v2", staged: null });
  assert.equal(node(sim, "n1").status.nodeInfo.bootID, host.bootId);
  assert.equal(isNodeReady(node(sim, "n1")), true);
  const pod = list(sim, "v1", "Pod")[0]!;
  assert.equal(pod.metadata.uid, uid, "the same pod, restarted in place");
  const status = pod.status as { containerStatuses: Array<{ restartCount: number; ready: boolean }> };
  assert.equal(status.containerStatuses[0]?.restartCount, 1);
  assert.equal(status.containerStatuses[0]?.ready, true);
});

test("a drain cordons the node and evicts pods one at a time as the PodDisruptionBudget allows", async () => {
  const sim = world(34, { nodes: ["n1", "n2"], registry, actors: cluster({ nodes: 2 }) });
  sim.defineExternal(drainCell("n1"), {});
  sim.store.create(deployment(4));
  sim.store.create({ apiVersion: "policy/v1", kind: "PodDisruptionBudget", metadata: { name: "web", namespace: ns }, spec: { minAvailable: 3, selector: { matchLabels: { app: "web" } } } });
  await runFor(sim, 30_000);
  sim.addActor(drain({ node: "n1", report: true, retryMs: 2000 }));
  let minReady = Infinity;
  const result = await sim.run({
    untilMs: sim.clock.now() + 180_000,
    onStep: (_r, view) => {
      const ready = view.list({ apiVersion: "v1", kind: "Pod", namespace: ns }).filter((p) => p.metadata.deletionTimestamp === undefined && ((p.status as { conditions?: Array<{ type: string; status: string }> })?.conditions ?? []).some((c) => c.type === "Ready" && c.status === "True"));
      minReady = Math.min(minReady, ready.length);
    },
  });
  assert.equal(result.status, "until");
  assert.equal((sim.view().external(drainCell("n1")) as { state: string }).state, "done");
  assert.equal((node(sim, "n1").spec as { unschedulable: boolean }).unschedulable, true);
  assert.ok(list(sim, "v1", "Pod").every((p) => (p.spec as { nodeName: string }).nodeName === "n2"));
  assert.ok(minReady >= 3, `the budget held: ${minReady}`);
});

test("a node daemon stops when its node reboots and starts afresh on the new boot", async () => {
  const daemon = defineActor({
    name: "daemon-n1",
    async start(ctx) {
      const host = await ctx.external<HostState>(hostCell("n1")).read();
      await ctx.external<string[]>("daemon-log").write((log) => [...log, `start ${host.bootId}`]);
      for (;;) {
        await ctx.clock.sleep(2000);
        await ctx.external<string[]>("daemon-log").write((log) => [...log.slice(-50), `tick ${ctx.clock.now()}`]);
      }
    },
  });
  const sim = world(35, { nodes: ["n1"], registry, actors: [...cluster({ nodes: 1, kubelet: { rebootMs: 20_000 } }), nodeActor({ node: "n1", actor: daemon })] });
  sim.defineExternal("daemon-log", []);
  sim.defineFaultKind(rebootFaultKind());
  await runFor(sim, 10_000);
  const rebootAt = sim.clock.now();
  await runFor(sim, 60_000, { faults: [{ atStep: sim.steps, kind: "reboot", target: "n1" }] });
  const log = sim.view().external<string[]>("daemon-log");
  const starts = log.filter((line) => line.startsWith("start"));
  assert.deepEqual(starts, ["start n1-boot-0", "start n1-boot-1"]);
  const ticks = log.filter((line) => line.startsWith("tick")).map((line) => Number(line.split(" ")[1]) - rebootAt);
  // No tick while the host is down (it is down for 20 s, from about the reboot request).
  assert.ok(!ticks.some((t) => t > 3000 && t < 20_000), `ticks during the reboot: ${ticks.join(",")}`);
  assert.ok(ticks.some((t) => t > 25_000), "the new boot's daemon ticks");
  assert.equal(sim.view().external<HostState>(hostCell("n1")).bootCount, 1);
});

test("a node daemon waits for a Ready node, and a new boot id restarts it even when no Rebooting status was seen", async () => {
  const starts: number[] = [];
  const daemon = nodeActor({
    node: "n9",
    actor: defineActor({
      name: "agent",
      start: async (ctx) => {
        starts.push(ctx.clock.now());
        await new Promise<never>(() => {}); // a daemon runs until its boot ends
      },
    }),
  });
  const sim = world(41, { nodes: [], actors: [daemon] });
  const status = (ready: "True" | "False", bootID: string, reason?: string) => ({
    conditions: [{ type: "Ready", status: ready, ...(reason ? { reason } : {}) }],
    nodeInfo: { bootID },
  });
  sim.store.create({ apiVersion: "v1", kind: "Node", metadata: { name: "n9" }, status: status("False", "b0", "Rebooting") });
  await runFor(sim, 5000);
  assert.equal(starts.length, 0, "not started on a host that is still rebooting");
  const node = () => sim.view().get({ apiVersion: "v1", kind: "Node", name: "n9" })!;
  sim.store.updateStatus({ ...node(), status: status("True", "b1") } as KubeObject);
  await runFor(sim, 5000);
  assert.equal(starts.length, 1, "started once the node is Ready");
  // The Rebooting write was lost: the next sign of the reboot is a new boot id on a Ready node.
  sim.store.updateStatus({ ...node(), status: status("True", "b2") } as KubeObject);
  await runFor(sim, 5000);
  assert.equal(starts.length, 2, "started afresh on the new boot");
});

test("a reboot request made while the host is already going down lapses with that boot, as a real systemctl reboot", async () => {
  const sim = world(36, { nodes: ["n1"], registry, actors: [...cluster({ nodes: 1, without: ["kubelet"] }), kubelet({ node: "n1", rebootMs: 20_000 })] });
  sim.external(hostCell("n1")).set({ bootId: "n1-boot-0", bootCount: 0 });
  await runFor(sim, 5000);
  // A power cycle, then (while the host is down) a daemon of the old boot that had not noticed asks again.
  sim.addActor(defineActor({ name: "daemon", async start(ctx) {
    await requestReboot(ctx.client, "n1", "power", { bootId: "n1-boot-0" });
    await ctx.clock.sleep(5000);
    await requestReboot(ctx.client, "n1", "daemon-late", { bootId: "n1-boot-0" });
  } }));
  await runFor(sim, 120_000);
  assert.equal(sim.view().external<HostState>(hostCell("n1")).bootCount, 1, "one reboot: the late request lapsed");
  assert.equal(isNodeReady(node(sim, "n1")), true);
  // A request made in the current boot (its id read from the Node, as `requestReboot` does without one) is carried out.
  sim.addActor(defineActor({ name: "operator", async start(ctx) {
    await requestReboot(ctx.client, "n1", "planned");
  } }));
  await runFor(sim, 120_000);
  const host = sim.view().external<HostState>(hostCell("n1"));
  assert.deepEqual([host.bootCount, host.lastRebootToken], [2, "planned"]);
});
