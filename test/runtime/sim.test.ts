// The runtime inside the simulator: informers and controllers as actors, under the faults a real cluster
// produces (closed watches, 410 after compaction, failed requests, crashes), with pinned seeds.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createSimulation, defineActor } from "../../src/sim/index.ts";
import type { ExternalHandle, FaultBudget, Simulation } from "../../src/sim/index.ts";
import type { KubeObject } from "../../src/api/object.ts";
import { isApiError } from "../../src/api/errors.ts";
import { controllerOf } from "../../src/api/object.ts";
import { Informer } from "../../src/runtime/informer.ts";
import { Action, defineController, runController } from "../../src/runtime/controller.ts";
import { ensureOwned } from "../../src/runtime/ownership.ts";
import type { Lease } from "../../src/runtime/leader.ts";
import { createStore } from "../../src/store/index.ts";

const cmKind = { apiVersion: "v1", kind: "ConfigMap" };
const secretKind = { apiVersion: "v1", kind: "Secret" };
const hourMs = 60 * 60 * 1000;

function world(seed: number, historyRevisionsMax = 100_000): Simulation {
  const sim = createSimulation({ seed, createStore, historyRevisionsMax });
  sim.store.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: "ns" } });
  return sim;
}

/** Writes, changes and deletes ConfigMaps for a while, tolerating injected failures. */
function churn(name: string, writes: number) {
  return defineActor({
    name,
    crashable: false,
    async start(ctx) {
      for (let i = 0; i < writes; i++) {
        const target = `cm-${i % 7}`;
        try {
          if (i % 5 === 4) await ctx.client.delete({ ...cmKind, namespace: "ns", name: target });
          else await ctx.client.create({ object: { ...cmKind, metadata: { name: target, namespace: "ns" }, data: { i: String(i) } } });
        } catch (error) {
          if (!isApiError(error)) throw error;
          // AlreadyExists: change it instead; NotFound or an injected failure: move on.
          if (error.reason === "AlreadyExists") {
            try {
              const current = await ctx.client.get<KubeObject>({ ...cmKind, namespace: "ns", name: target });
              await ctx.client.update({ object: { ...current, data: { i: String(i) } } });
            } catch (inner) {
              if (!isApiError(inner)) throw inner;
            }
          }
        }
        await ctx.clock.sleep(50);
      }
    },
  });
}

/** An informer actor whose handlers check every event against the previous ones, and keep a mirror. */
function mirroredInformer(mirror: Map<string, string>, stats: { lists: number }) {
  return defineActor({
    name: "informer",
    crashable: false,
    async start(ctx) {
      // Counts lists: a relist is how a 410 shows from outside.
      const client = Object.create(ctx.client) as typeof ctx.client;
      client.list = (options) => ((stats.lists += 1), ctx.client.list(options));
      const informer = new Informer({ client, clock: ctx.clock, kind: cmKind, namespace: "ns", log: ctx.log });
      const key = (o: KubeObject) => o.metadata.name as string;
      informer.addHandler({
        add(o) {
          assert.ok(!mirror.has(key(o)), `duplicate add of ${key(o)}`);
          mirror.set(key(o), o.metadata.resourceVersion as string);
        },
        update(old, o) {
          assert.equal(mirror.get(key(o)), old.metadata.resourceVersion, `update of ${key(o)} from a state never delivered`);
          mirror.set(key(o), o.metadata.resourceVersion as string);
        },
        delete(o) {
          assert.ok(mirror.has(key(o)), `delete of unknown ${key(o)}`);
          mirror.delete(key(o));
        },
      });
      await informer.start();
    },
  });
}

function storeState(sim: Simulation): Map<string, string> {
  const items = sim.view().list({ ...cmKind, namespace: "ns" });
  return new Map(items.map((o) => [o.metadata.name as string, o.metadata.resourceVersion as string]));
}

async function informerRecovers(seed: number, budget: FaultBudget, historyRevisionsMax: number) {
  const sim = world(seed, historyRevisionsMax);
  const mirror = new Map<string, string>();
  const stats = { lists: 0 };
  sim.addActor(churn("writer", 60));
  sim.addActor(mirroredInformer(mirror, stats));
  const faulted = await sim.run({ faultBudget: budget, untilMs: sim.clock.now() + 5_000, maxSteps: 200_000 });
  assert.ok(faulted.status === "idle" || faulted.status === "until", faulted.message);
  sim.stopFaults();
  const settled = await sim.run({ untilMs: sim.clock.now() + 2 * 60_000, maxSteps: 400_000 });
  assert.ok(settled.status === "idle" || settled.status === "until", settled.message);
  assert.deepEqual([...mirror].sort(), [...storeState(sim)].sort());
  assert.ok(mirror.size > 0, "the writer's objects were seen");
  return { faults: faulted.faults, lists: stats.lists, steps: settled.steps };
}

test("an informer in the simulator recovers from closed watches without losing or repeating an event", async () => {
  const budget: FaultBudget = { chance: [1, 6], counts: { "close-watch": 8, "delay-watch": 4 } };
  for (const seed of [1, 2, 3]) {
    const { faults } = await informerRecovers(seed, budget, 100_000);
    assert.ok(faults.some((f) => f.kind === "close-watch"), `seed ${seed} closed a watch`);
  }
});

test("an informer in the simulator relists after 410 when history is compacted while its watch is down", async () => {
  const budget: FaultBudget = { chance: [1, 4], counts: { "close-watch": 10, "delay-watch": 6 } };
  let relisted = false;
  for (const seed of [4, 5, 6]) {
    const { lists } = await informerRecovers(seed, budget, 3);
    relisted ||= lists > 1;
  }
  assert.ok(relisted, "at least one seed ran into a 410 and relisted");
});

test("an informer in the simulator survives injected 500s on its lists and watches", async () => {
  const budget: FaultBudget = { chance: [1, 3], counts: { "fail-request": 12, "close-watch": 4 }, failCodes: [500] };
  for (const seed of [7, 8]) {
    const { faults } = await informerRecovers(seed, budget, 100_000);
    assert.ok(faults.some((f) => f.kind === "fail-request"), `seed ${seed} failed a request`);
  }
});

/** A ConfigMap `app-*` with `data.replicas` owns that many Secrets. */
function childrenController() {
  return defineController({
    name: "children",
    for: cmKind,
    owns: [secretKind],
    maxConcurrentReconciles: 2,
    async reconcile(app, ctx) {
      if (!(app.metadata.name as string).startsWith("app-")) return Action.awaitChange();
      const replicas = Number((app["data"] as { replicas: string }).replicas);
      const secrets = ctx.lister(secretKind);
      for (let i = 0; i < replicas; i++) {
        const desired = { ...secretKind, metadata: { name: `${app.metadata.name}-${i}` }, data: {} };
        await ensureOwned(app, desired, { client: ctx.client, lister: secrets });
      }
      return Action.awaitChange();
    },
  });
}

test("a controller that creates owned children converges in the simulator despite crashes and failures", async () => {
  const faultKinds = new Set<string>();
  for (const seed of [11, 12, 13]) {
    const sim = world(seed);
    for (let i = 0; i < 4; i++) {
      sim.store.create({ ...cmKind, metadata: { name: `app-${i}`, namespace: "ns" }, data: { replicas: String(i + 1) } });
    }
    sim.addActor(
      defineActor({
        name: "controller",
        async start(ctx) {
          await runController(childrenController(), { client: ctx.client, clock: ctx.clock, log: ctx.log }).done;
        },
      }),
    );
    const budget: FaultBudget = { chance: [1, 8], counts: { crash: 2, "fail-request": 6, "lost-response": 3, "close-watch": 3 } };
    // Two planned crashes in the middle of the work, on top of the drawn faults.
    const crashes = [30, 90].map((atStep) => ({ atStep, kind: "crash", target: "controller" }));
    const faulted = await sim.run({ faultBudget: budget, faults: crashes, untilMs: sim.clock.now() + 5_000, maxSteps: 200_000 });
    assert.ok(faulted.status === "idle" || faulted.status === "until", faulted.message);
    for (const fault of faulted.faults) faultKinds.add(fault.kind);
    sim.stopFaults();
    const settled = await sim.run({ untilMs: sim.clock.now() + hourMs, maxSteps: 400_000 });
    assert.ok(settled.status === "idle" || settled.status === "until", settled.message);
    const secrets = sim.view().list({ ...secretKind, namespace: "ns" });
    assert.equal(secrets.length, 1 + 2 + 3 + 4, `seed ${seed}`);
    for (const secret of secrets) assert.equal(controllerOf(secret)?.kind, "ConfigMap");
  }
  assert.ok(faultKinds.has("crash"), "some seed crashed the controller");
  assert.ok(faultKinds.has("lost-response"), "some seed lost a response");
});

test("leader election in the simulator hands over on lease expiry when the leader crashes", async () => {
  const sim = world(21);
  sim.store.create({ ...cmKind, metadata: { name: "app-0", namespace: "ns" }, data: { replicas: "1" } });
  const lease = { namespace: "ns", name: "children" };
  const reconciles: Array<{ identity: string; atMs: number }> = [];
  for (const identity of ["a", "b"]) {
    sim.addActor(
      defineActor({
        name: identity,
        restartDelayMs: 10 * hourMs,
        async start(ctx) {
          const controller = defineController({
            name: "children",
            for: cmKind,
            reconcile: () => (reconciles.push({ identity, atMs: ctx.clock.now() }), Action.requeueAfter(1000)),
          });
          await runController(controller, { client: ctx.client, clock: ctx.clock, log: ctx.log, leaderElection: { lease, identity } }).done;
        },
      }),
    );
  }
  await sim.run({ untilMs: sim.clock.now() + 10_000 });
  const first = (sim.view().get({ apiVersion: "coordination.k8s.io/v1", kind: "Lease", ...lease }) as Lease).spec?.holderIdentity;
  assert.ok(first === "a" || first === "b");
  assert.deepEqual(new Set(reconciles.map((r) => r.identity)), new Set([first]));
  const crashAtMs = sim.clock.now();
  const crashed = await sim.run({ faults: [{ atStep: sim.steps, kind: "crash", target: first as string }], untilMs: crashAtMs + 60_000 });
  assert.equal(crashed.status, "until", crashed.message);
  const second = (sim.view().get({ apiVersion: "coordination.k8s.io/v1", kind: "Lease", ...lease }) as Lease).spec?.holderIdentity;
  assert.notEqual(second, first);
  const takeover = reconciles.find((r) => r.identity === second);
  assert.ok(takeover !== undefined, "the standby reconciles after taking over");
  assert.ok(takeover.atMs - crashAtMs >= 15_000, `not before the lease expired (${takeover.atMs - crashAtMs} ms)`);
});

test("an elected controller paused past its renew deadline exits and is restarted by the simulator, as a real process", async () => {
  const sim = world(22);
  sim.store.create({ ...cmKind, metadata: { name: "app-0", namespace: "ns" }, data: { replicas: "1" } });
  const lease = { namespace: "ns", name: "children" };
  const starts: Array<{ identity: string; incarnation: number }> = [];
  for (const identity of ["a", "b"]) {
    sim.addActor(
      defineActor({
        name: identity,
        restartDelayMs: 3000,
        async start(ctx) {
          starts.push({ identity, incarnation: ctx.incarnation });
          const controller = defineController({ name: "children", for: cmKind, reconcile: () => Action.requeueAfter(1000) });
          // No loop around the run: a lost lease rejects `done` with a ProcessExit, and the simulator restarts the actor.
          await runController(controller, { client: ctx.client, clock: ctx.clock, log: ctx.log, leaderElection: { lease, identity } }).done;
        },
      }),
    );
  }
  await sim.run({ untilMs: sim.clock.now() + 10_000 });
  const leaseRef = { apiVersion: "coordination.k8s.io/v1", kind: "Lease", ...lease };
  const first = (sim.view().get(leaseRef) as Lease).spec?.holderIdentity as string;
  // The leader stalls for 30 s (a long GC pause, a frozen VM): its lease expires and the standby takes it.
  const paused = await sim.run({ faults: [{ atStep: sim.steps, kind: "pause", target: first, durationMs: 30_000 }], untilMs: sim.clock.now() + 60_000 });
  assert.equal(paused.status, "until", paused.message);
  const second = (sim.view().get(leaseRef) as Lease).spec?.holderIdentity;
  assert.notEqual(second, first, "the standby holds the lease");
  assert.deepEqual(
    starts.filter((s) => s.identity === first).map((s) => s.incarnation),
    [0, 1],
    "the old leader exited on waking up to a lost lease and was started again, not reported as an actor error",
  );
});

test("a controller in the simulator reaches external state through its run context, each access a step", async () => {
  const sim = world(23);
  sim.defineExternal("registry", { pushed: [] as string[] });
  sim.store.create({ ...cmKind, metadata: { name: "app-0", namespace: "ns" }, data: { replicas: "2" } });
  type Registry = { pushed: string[] };
  sim.addActor(
    defineActor({
      name: "pusher",
      async start(ctx) {
        const controller = defineController<KubeObject, { registry: ExternalHandle<Registry> }>({
          name: "pusher",
          for: cmKind,
          async reconcile(cm, rctx) {
            await rctx.context.registry.write((r) => ({ pushed: [...r.pushed, cm.metadata.name as string] }));
            return Action.awaitChange();
          },
        });
        await runController(controller, { client: ctx.client, clock: ctx.clock, context: { registry: ctx.external<Registry>("registry") } }).done;
      },
    }),
  );
  await sim.run({ untilMs: sim.clock.now() + 5000 });
  assert.deepEqual(sim.view().external<Registry>("registry").pushed, ["app-0"]);
});
