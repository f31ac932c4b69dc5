// The kubelet and the scheduler in the simulator: pods run, become ready, finish, and terminate gracefully.
import { test } from "node:test";
import assert from "node:assert/strict";
import { kubelet, scheduler, annotations, imageCacheCell, registryCell } from "../../src/cluster/index.ts";
import type { ImageCache } from "../../src/cluster/index.ts";
import type { KubeObject } from "../../src/api/object.ts";
import { list, ns, pod, runFor, world } from "./helpers.ts";

const podRef = (name: string) => ({ apiVersion: "v1", kind: "Pod", namespace: ns, name });

test("the kubelet registers its node Ready and runs a bound pod to Running and Ready", async () => {
  const sim = world(1, { registry: { "app:v1": "sha256:a1" }, actors: [kubelet({ node: "n1", readyMs: 5000 })] });
  sim.store.create(pod("p", { nodeName: "n1" }));
  await runFor(sim, 3000);
  const node = sim.view().get({ apiVersion: "v1", kind: "Node", name: "n1" }) as KubeObject & { status: { conditions: Array<{ type: string; status: string }> } };
  assert.equal(node.status.conditions.find((c) => c.type === "Ready")?.status, "True");
  let p = sim.view().get(podRef("p")) as KubeObject & { status: { phase: string; conditions: Array<{ type: string; status: string }>; containerStatuses: Array<{ imageID: string }> } };
  assert.equal(p.status.phase, "Running");
  assert.equal(p.status.conditions.find((c) => c.type === "Ready")?.status, "False");
  assert.equal(p.status.containerStatuses[0]?.imageID, "app@sha256:a1");
  await runFor(sim, 6000);
  p = sim.view().get(podRef("p")) as typeof p;
  assert.equal(p.status.conditions.find((c) => c.type === "Ready")?.status, "True");
});

test("a pod with a run time and restartPolicy Never succeeds or fails by its exit code", async () => {
  const sim = world(2, { registry: { "app:v1": "sha256:a1" }, actors: [kubelet({ node: "n1" })] });
  sim.store.create(pod("ok", { nodeName: "n1", restartPolicy: "Never", annotations: { [annotations.runMs]: "5000" } }));
  sim.store.create(pod("bad", { nodeName: "n1", restartPolicy: "Never", annotations: { [annotations.runMs]: "5000", [annotations.exitCode]: "2" } }));
  await runFor(sim, 20_000);
  assert.equal((sim.view().get(podRef("ok"))?.status as { phase: string }).phase, "Succeeded");
  assert.equal((sim.view().get(podRef("bad"))?.status as { phase: string }).phase, "Failed");
});

test("a deleted running pod stays terminating until the kubelet removes it with grace 0", async () => {
  const sim = world(3, { registry: { "app:v1": "sha256:a1" }, actors: [kubelet({ node: "n1", stopMs: 4000 })] });
  sim.store.create(pod("p", { nodeName: "n1" }));
  await runFor(sim, 5000);
  sim.store.delete(podRef("p"));
  assert.ok(sim.view().get(podRef("p"))?.metadata.deletionTimestamp !== undefined, "terminating after the delete");
  await runFor(sim, 2000);
  assert.ok(sim.view().get(podRef("p")) !== undefined, "still terminating after 2 s");
  await runFor(sim, 5000);
  assert.equal(sim.view().get(podRef("p")), undefined);
});

test("IfNotPresent runs the cached digest of a tag; a digest reference pulls that digest", async () => {
  const cache: ImageCache = { tags: { "app:v1": "sha256:old" }, digests: ["app@sha256:old"] };
  const sim = world(4, { registry: { "app:v1": "sha256:new" }, actors: [kubelet({ node: "n1" })] });
  sim.external(imageCacheCell("n1")).set(cache);
  sim.store.create(pod("tag", { nodeName: "n1" }));
  sim.store.create(pod("pinned", { nodeName: "n1", image: "app@sha256:new" }));
  sim.store.create(pod("always", { nodeName: "n1", image: "app:latest" }));
  sim.external(registryCell).set({ "app:v1": "sha256:new", "app:latest": "sha256:l" });
  await runFor(sim, 5000);
  const imageId = (name: string) => (sim.view().get(podRef(name))?.status as { containerStatuses: Array<{ imageID: string }> }).containerStatuses[0]?.imageID;
  assert.equal(imageId("tag"), "app@sha256:old");
  assert.equal(imageId("pinned"), "app@sha256:new");
  assert.equal(imageId("always"), "app@sha256:l");
  const after = sim.view().external<ImageCache>(imageCacheCell("n1"));
  assert.ok(after.digests.includes("app@sha256:new"));
  assert.equal(after.tags["app:latest"], "sha256:l");
});

test("a missing tag leaves the pod Pending with ErrImagePull until the registry has it", async () => {
  const sim = world(5, { registry: {}, actors: [kubelet({ node: "n1", pullBackoffMs: 5000 })] });
  sim.store.create(pod("p", { nodeName: "n1" }));
  await runFor(sim, 3000);
  const status = () => sim.view().get(podRef("p"))?.status as { phase: string; containerStatuses: Array<{ state: { waiting?: { reason: string } } }> };
  assert.equal(status().phase, "Pending");
  assert.equal(status().containerStatuses[0]?.state.waiting?.reason, "ErrImagePull");
  sim.external(registryCell).set({ "app:v1": "sha256:a1" });
  await runFor(sim, 10_000);
  assert.equal(status().phase, "Running");
});

test("the scheduler binds pending pods to Ready, schedulable nodes only, spreading them", async () => {
  const sim = world(6, { nodes: ["n1", "n2", "n3"], registry: { "app:v1": "sha256:a1" }, actors: [kubelet({ node: "n1" }), kubelet({ node: "n2" }), kubelet({ node: "n3" }), scheduler()] });
  await runFor(sim, 2000);
  sim.store.patch({ apiVersion: "v1", kind: "Node", name: "n3", patchType: "merge", patch: { spec: { unschedulable: true } } });
  for (let i = 0; i < 4; i++) sim.store.create(pod(`p${i}`));
  await runFor(sim, 5000);
  const nodes = list(sim, "v1", "Pod").map((p) => (p.spec as { nodeName?: string }).nodeName);
  assert.deepEqual(nodes.filter((n) => n === "n1").length, 2);
  assert.deepEqual(nodes.filter((n) => n === "n2").length, 2);
  assert.ok(list(sim, "v1", "Pod").every((p) => (p.status as { phase: string }).phase === "Running"));
});

test("a final pod delete that meets a passing 409 is retried, not taken for a replaced pod", async () => {
  const sim = world(3, { registry: { "app:v1": "sha256:a1" }, actors: [kubelet({ node: "n1", stopMs: 4000 })] });
  sim.store.create(pod("p", { nodeName: "n1" }));
  await runFor(sim, 5000);
  sim.store.delete(podRef("p"));
  await runFor(sim, 3900);
  // The kubelet's next request is its delete with grace 0: it fails with 409 and is not applied.
  const result = await runFor(sim, 30_000, { faults: [{ atStep: sim.steps, kind: "fail-request", target: "kubelet-n1", code: 409 }] });
  assert.ok(result.faults.some((f) => f.kind === "fail-request"), "the fault was injected");
  assert.equal(sim.view().get(podRef("p")), undefined);
});
