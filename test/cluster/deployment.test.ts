// The Deployment and ReplicaSet controllers in the simulator: scale, roll (RollingUpdate and Recreate),
// restart by annotation, report rollout status, and time out on the progress deadline.
import { test } from "node:test";
import assert from "node:assert/strict";
import { cluster, deploymentRolloutStatus, rolloutRestart, annotations, revisionAnnotation } from "../../src/cluster/index.ts";
import { templateHash } from "../../src/cluster/common.ts";
import { defineActor } from "../../src/sim/index.ts";
import type { Simulation, TraceRecord, WorldView } from "../../src/sim/index.ts";
import type { KubeObject } from "../../src/api/object.ts";
import { deployment, list, ns, registry, runFor, world } from "./helpers.ts";

const deployRef = { apiVersion: "apps/v1", kind: "Deployment", namespace: ns, name: "web" };



function pods(view: WorldView): Array<KubeObject & { spec: { containers: Array<{ image: string }> } }> {
  return view.list({ apiVersion: "v1", kind: "Pod", namespace: ns }) as never;
}

function rollout(sim: Simulation) {
  return deploymentRolloutStatus(sim.view().get(deployRef)!);
}

function setImage(sim: Simulation, image: string): void {
  const patch = { spec: { template: { spec: { containers: [{ name: "web", image }] } } } };
  sim.store.patch({ ...deployRef, patchType: "merge", patch });
}

/** Records the most pods of each image and the fewest ready pods seen after every step. */
function watchRollout(sim: Simulation) {
  const seen = { maxTotal: 0, minReady: Infinity };
  return {
    seen,
    onStep(_record: TraceRecord, view: WorldView) {
      const live = pods(view).filter((p) => p.metadata.deletionTimestamp === undefined);
      seen.maxTotal = Math.max(seen.maxTotal, live.length);
      const ready = live.filter((p) => ((p.status as { conditions?: Array<{ type: string; status: string }> })?.conditions ?? []).some((c) => c.type === "Ready" && c.status === "True"));
      seen.minReady = Math.min(seen.minReady, ready.length);
    },
  };
}

test("a Deployment gets a ReplicaSet and its replicas run Ready, and rollout status says so", async () => {
  const sim = world(11, { nodes: ["n1", "n2"], registry, actors: cluster({ nodes: 2 }) });
  sim.store.create(deployment(3));
  await runFor(sim, 30_000);
  assert.equal(list(sim, "apps/v1", "ReplicaSet").length, 1);
  assert.equal(pods(sim.view()).length, 3);
  assert.deepEqual(rollout(sim), { done: true, failed: false, message: 'deployment "web" successfully rolled out' });
  sim.store.patch({ ...deployRef, patchType: "merge", patch: { spec: { replicas: 1 } } });
  await runFor(sim, 30_000);
  assert.equal(pods(sim.view()).length, 1);
});

test("a RollingUpdate keeps within maxSurge and maxUnavailable and ends with every pod on the new image", async () => {
  const sim = world(12, { nodes: ["n1", "n2"], registry, actors: cluster({ nodes: 2 }) });
  sim.store.create(deployment(4, { strategy: { type: "RollingUpdate", rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } } }));
  await runFor(sim, 30_000);
  setImage(sim, "web:v2");
  const watcher = watchRollout(sim);
  const result = await sim.run({ untilMs: sim.clock.now() + 120_000, onStep: watcher.onStep });
  assert.equal(result.status, "until");
  assert.ok(watcher.seen.maxTotal <= 5, `at most replicas + maxSurge pods: ${watcher.seen.maxTotal}`);
  assert.ok(watcher.seen.minReady >= 4, `never below replicas - maxUnavailable ready: ${watcher.seen.minReady}`);
  assert.ok(pods(sim.view()).every((p) => p.spec.containers[0]?.image === "web:v2"));
  assert.equal(pods(sim.view()).length, 4);
  assert.equal(rollout(sim).done, true);
  assert.equal(list(sim, "apps/v1", "ReplicaSet").length, 2, "the old ReplicaSet stays, scaled to 0");
});

test("Recreate removes every old pod before any new one exists", async () => {
  const sim = world(13, { nodes: ["n1"], registry, actors: cluster({ nodes: 1 }) });
  sim.store.create(deployment(2, { strategy: { type: "Recreate" } }));
  await runFor(sim, 30_000);
  setImage(sim, "web:v2");
  let mixed = false;
  const result = await sim.run({
    untilMs: sim.clock.now() + 120_000,
    onStep: (_r, view) => {
      const images = new Set(pods(view).map((p) => p.spec.containers[0]?.image));
      mixed ||= images.size > 1;
    },
  });
  assert.equal(result.status, "until");
  assert.equal(mixed, false);
  assert.ok(pods(sim.view()).every((p) => p.spec.containers[0]?.image === "web:v2"));
  assert.equal(rollout(sim).done, true);
});

test("the restartedAt annotation rolls every pod of a Deployment onto new pods", async () => {
  const sim = world(14, { nodes: ["n1", "n2"], registry, actors: cluster({ nodes: 2 }) });
  sim.store.create(deployment(2));
  await runFor(sim, 30_000);
  const before = new Set(pods(sim.view()).map((p) => p.metadata.uid));
  sim.addActor(defineActor({ name: "script", async start(ctx) { await rolloutRestart(ctx.client, { namespace: ns, name: "web" }, ctx.clock.now()); } }));
  await runFor(sim, 60_000);
  const after = pods(sim.view());
  assert.equal(after.length, 2);
  assert.ok(after.every((p) => !before.has(p.metadata.uid)), "every pod is new");
  assert.equal(rollout(sim).done, true);
});

test("with revisionHistory the Deployment carries its revision, and a rollback renumbers the restored ReplicaSet", async () => {
  const revision = (object: KubeObject | undefined) => object?.metadata.annotations?.[revisionAnnotation];
  const setsByImage = (sim: Simulation) =>
    Object.fromEntries(list(sim, "apps/v1", "ReplicaSet").map((rs) => [(rs.spec as { template: { spec: { containers: Array<{ image: string }> } } }).template.spec.containers[0]!.image, revision(rs)]));
  const sim = world(16, { nodes: ["n1", "n2"], registry, actors: cluster({ nodes: 2, revisionHistory: true }) });
  sim.store.create(deployment(2));
  await runFor(sim, 30_000);
  assert.equal(revision(sim.view().get(deployRef)), "1");
  setImage(sim, "web:v2");
  await runFor(sim, 60_000);
  assert.equal(revision(sim.view().get(deployRef)), "2");
  // Back to the first template: its ReplicaSet is reused and becomes revision 3, as `kubectl rollout undo` leaves it.
  setImage(sim, "web:v1");
  await runFor(sim, 60_000);
  assert.equal(revision(sim.view().get(deployRef)), "3");
  assert.deepEqual(setsByImage(sim), { "web:v1": "3", "web:v2": "2" });
  assert.equal(rollout(sim).done, true);
  // Without the option the Deployment is left unannotated (the recorded behaviour).
  const plain = world(16, { nodes: ["n1", "n2"], registry, actors: cluster({ nodes: 2 }) });
  plain.store.create(deployment(2));
  await runFor(plain, 30_000);
  assert.equal(revision(plain.view().get(deployRef)), undefined);
});

test("a template sent back with null members (kubectl 1.33's rollout undo sends creationTimestamp: null) is the same template", () => {
  const template = { metadata: { labels: { app: "web" } }, spec: { containers: [{ name: "web", image: "web:v1" }] } };
  const resent = { metadata: { creationTimestamp: null, labels: { app: "web" } }, spec: { containers: [{ name: "web", image: "web:v1", resources: null }] } };
  assert.equal(templateHash(resent), templateHash(template));
  assert.notEqual(templateHash({ ...template, spec: { containers: [{ name: "web", image: "web:v2" }] } }), templateHash(template));
});

test("a rollout that cannot progress reports ProgressDeadlineExceeded", async () => {
  const sim = world(15, { nodes: ["n1"], registry, actors: cluster({ nodes: 1 }) });
  sim.store.create(deployment(2, { progressDeadlineSeconds: 60 }));
  await runFor(sim, 30_000);
  setImage(sim, "web:missing");
  await runFor(sim, 30_000);
  assert.equal(rollout(sim).failed, false);
  await runFor(sim, 90_000);
  assert.deepEqual(rollout(sim), { done: false, failed: true, message: 'deployment "web" exceeded its progress deadline' });
});

test("a pod delete that fails is not waited for: the ReplicaSet still scales down (expectations lowered on error)", async () => {
  const sim = world(12, { nodes: ["n1"], registry, actors: cluster({ nodes: 1 }) });
  sim.store.create(deployment(3));
  await runFor(sim, 30_000);
  assert.equal(pods(sim.view()).length, 3);
  sim.store.patch({ ...deployRef, patchType: "merge", patch: { spec: { replicas: 1 } } });
  // The controller's next request is its first pod delete: it fails with 409 and is not applied.
  const result = await runFor(sim, 60_000, { faults: [{ atStep: sim.steps, kind: "fail-request", target: "replicaset-controller", code: 409 }] });
  assert.ok(result.faults.some((f) => f.kind === "fail-request"), "the fault was injected");
  const live = pods(sim.view()).filter((p) => p.metadata.deletionTimestamp === undefined);
  assert.equal(live.length, 1);
});
