import { test } from "node:test";
import assert from "node:assert/strict";
import { Action, TerminalError, defineController, runController, requeueAfterMsMax } from "../../src/runtime/controller.ts";
import type { ReconcileContext } from "../../src/runtime/controller.ts";
import { ensureOwned } from "../../src/runtime/ownership.ts";
import { assert as invariant } from "../../src/api/assert.ts";
import { internalError } from "../../src/api/errors.ts";
import type { KubeObject } from "../../src/api/object.ts";
import { FakeClient } from "./fake-client.ts";
import { ManualClock, settle } from "./manual-clock.ts";

const app = { apiVersion: "example.com/v1", kind: "App" };
const cmKind = { apiVersion: "v1", kind: "ConfigMap" };

function appObject(name: string, replicas = 2): KubeObject {
  return { ...app, metadata: { name, namespace: "ns" }, spec: { replicas } };
}

async function setup() {
  return { client: new FakeClient(), clock: new ManualClock() };
}

test("Action.requeueAfter clamps to the maximum and refuses negative delays", () => {
  assert.deepEqual(Action.requeueAfter(10), { type: "requeueAfter", ms: 10 });
  assert.deepEqual(Action.requeueAfter(requeueAfterMsMax * 10), { type: "requeueAfter", ms: requeueAfterMsMax });
  assert.throws(() => Action.requeueAfter(-1), /action-requeue-ms-not-negative/);
  assert.equal(Action.awaitChange().type, "awaitChange");
});

test("defineController refuses a concurrency of zero", () => {
  assert.throws(
    () => defineController({ name: "x", for: app, maxConcurrentReconciles: 0, reconcile: () => Action.awaitChange() }),
    /controller-concurrency-in-range/,
  );
});

test("each primary object is reconciled once after sync, with a frozen object", async () => {
  const { client, clock } = await setup();
  await client.create({ object: appObject("a") });
  await client.create({ object: appObject("b") });
  const seen: string[] = [];
  const controller = defineController({
    name: "apps",
    for: app,
    reconcile(object) {
      assert.ok(Object.isFrozen(object));
      seen.push(object.metadata.name as string);
      return Action.awaitChange();
    },
  });
  const handle = runController(controller, { client, clock });
  await handle.waitForSync();
  await settle();
  assert.deepEqual(seen.sort(), ["a", "b"]);
  handle.stop();
  assert.equal(await handle.done, "stopped");
});

/** A controller that keeps `spec.replicas` ConfigMaps owned by each App. */
function childrenController(options: { failEvery?: number } = {}) {
  let calls = 0;
  return defineController({
    name: "app-children",
    for: app,
    owns: [cmKind],
    maxConcurrentReconciles: 2,
    async reconcile(object, ctx: ReconcileContext) {
      calls += 1;
      if (options.failEvery !== undefined && calls % options.failEvery === 0) throw internalError("flaky");
      const replicas = (object["spec"] as { replicas: number }).replicas;
      const children = ctx.lister(cmKind);
      for (let i = 0; i < replicas; i++) {
        const desired = { ...cmKind, metadata: { name: `${object.metadata.name}-${i}` }, data: { index: String(i) } };
        await ensureOwned(object, desired, { client: ctx.client, lister: children });
      }
      for (const child of children.byIndex("owner-uid", object.metadata.uid as string)) {
        const index = Number((child["data"] as { index: string }).index);
        if (index >= replicas) await ctx.client.delete({ ...cmKind, namespace: "ns", name: child.metadata.name as string });
      }
      return Action.awaitChange();
    },
  });
}

test("a controller that creates owned children converges, and a deleted child is recreated", async () => {
  const { client, clock } = await setup();
  for (const name of ["a", "b", "c"]) await client.create({ object: appObject(name, 3) });
  const handle = runController(childrenController(), { client, clock });
  await clock.advance(1000);
  assert.equal(client.all("ConfigMap").length, 9);
  await client.delete({ ...cmKind, namespace: "ns", name: "b-1" });
  await clock.advance(1000);
  assert.equal(client.all("ConfigMap").length, 9, "the owner was enqueued by its child's delete");
  const a = await client.get({ ...app, namespace: "ns", name: "a" });
  await client.update({ object: { ...a, spec: { replicas: 1 } } });
  await clock.advance(1000);
  assert.equal(client.all("ConfigMap").length, 7);
  handle.stop();
  await handle.done;
});

test("a controller converges despite reconciles that fail, retrying through the rate limiter", async () => {
  const { client, clock } = await setup();
  for (const name of ["a", "b", "c", "d"]) await client.create({ object: appObject(name, 2) });
  const handle = runController(childrenController({ failEvery: 2 }), { client, clock });
  await clock.advance(10_000);
  assert.equal(client.all("ConfigMap").length, 8);
  handle.stop();
  await handle.done;
});

test("a thrown error is retried with growing delays and a success stops the retries", async () => {
  const { client, clock } = await setup();
  await client.create({ object: appObject("a") });
  const times: number[] = [];
  const start = clock.now();
  const controller = defineController({
    name: "flaky",
    for: app,
    rateLimiter: { baseDelayMs: 100, maxDelayMs: 1000 },
    reconcile() {
      times.push(clock.now() - start);
      if (times.length < 4) throw new Error("not yet");
      return Action.awaitChange();
    },
  });
  const handle = runController(controller, { client, clock });
  await clock.advance(60_000);
  assert.deepEqual(times, [0, 100, 300, 700]);
  handle.stop();
});

test("a TerminalError is not retried until the object changes", async () => {
  const { client, clock } = await setup();
  await client.create({ object: appObject("a") });
  let calls = 0;
  const controller = defineController({
    name: "terminal",
    for: app,
    reconcile() {
      calls += 1;
      throw new TerminalError("bad spec");
    },
  });
  const handle = runController(controller, { client, clock });
  await clock.advance(60_000);
  assert.equal(calls, 1);
  const a = await client.get({ ...app, namespace: "ns", name: "a" });
  await client.update({ object: { ...a, spec: { replicas: 5 } } });
  await clock.advance(1000);
  assert.equal(calls, 2);
  handle.stop();
});

test("an errorPolicy can replace the rate limiter's delay", async () => {
  const { client, clock } = await setup();
  await client.create({ object: appObject("a") });
  const times: number[] = [];
  const start = clock.now();
  const controller = defineController({
    name: "policy",
    for: app,
    reconcile() {
      times.push(clock.now() - start);
      throw new Error("always");
    },
    errorPolicy: () => Action.requeueAfter(5000),
  });
  const handle = runController(controller, { client, clock });
  await clock.advance(12_000);
  assert.deepEqual(times, [0, 5000, 10000]);
  handle.stop();
});

test("requeueAfter reconciles again after the delay without any change", async () => {
  const { client, clock } = await setup();
  await client.create({ object: appObject("a") });
  let calls = 0;
  const controller = defineController({
    name: "poll",
    for: app,
    resyncMs: 0,
    reconcile() {
      calls += 1;
      return Action.requeueAfter(1000);
    },
  });
  const handle = runController(controller, { client, clock });
  await clock.advance(3500);
  assert.equal(calls, 4);
  handle.stop();
});

test("a controller resyncs every object each resyncMs", async () => {
  const { client, clock } = await setup();
  await client.create({ object: appObject("a") });
  let calls = 0;
  const controller = defineController({ name: "resync", for: app, resyncMs: 1000, reconcile: () => ((calls += 1), Action.awaitChange()) });
  const handle = runController(controller, { client, clock });
  await clock.advance(2500);
  assert.equal(calls, 3);
  handle.stop();
});

test("watched objects map to the primary keys their function names", async () => {
  const { client, clock } = await setup();
  await client.create({ object: appObject("a") });
  const seen: string[] = [];
  const controller = defineController({
    name: "mapped",
    for: app,
    watches: [{ ...cmKind, map: (cm) => [{ namespace: "ns", name: (cm.metadata.labels ?? {})["app"] ?? "none" }] }],
    reconcile(object) {
      seen.push(object.metadata.name as string);
      return Action.awaitChange();
    },
  });
  const handle = runController(controller, { client, clock });
  await clock.advance(10);
  await client.create({ object: { ...cmKind, metadata: { name: "x", namespace: "ns", labels: { app: "a" } } } });
  await clock.advance(10);
  assert.deepEqual(seen, ["a", "a"]);
  handle.stop();
});

test("a key is never reconciled by two workers at once, while different keys run in parallel", async () => {
  const { client, clock } = await setup();
  for (const name of ["a", "b", "c"]) await client.create({ object: appObject(name) });
  const active = new Set<string>();
  let parallelMax = 0;
  const controller = defineController({
    name: "concurrent",
    for: app,
    maxConcurrentReconciles: 3,
    async reconcile(object) {
      const name = object.metadata.name as string;
      assert.ok(!active.has(name), `${name} reconciled twice at once`);
      active.add(name);
      parallelMax = Math.max(parallelMax, active.size);
      await clock.sleep(100);
      active.delete(name);
      return Action.awaitChange();
    },
  });
  const handle = runController(controller, { client, clock });
  await clock.advance(10);
  for (let i = 0; i < 5; i++) {
    const a = await client.get({ ...app, namespace: "ns", name: "a" });
    await client.update({ object: { ...a, spec: { replicas: i + 10 } } });
  }
  await clock.advance(1000);
  assert.equal(parallelMax, 3);
  handle.stop();
});

test("a deleted primary is not reconciled", async () => {
  const { client, clock } = await setup();
  await client.create({ object: appObject("a") });
  let calls = 0;
  const controller = defineController({ name: "gone", for: app, reconcile: () => ((calls += 1), Action.awaitChange()) });
  const handle = runController(controller, { client, clock });
  await clock.advance(10);
  await client.delete({ ...app, namespace: "ns", name: "a" });
  await clock.advance(10);
  assert.equal(calls, 1);
  handle.stop();
});

test("a failed assertion in a reconciler crashes the controller", async () => {
  const { client, clock } = await setup();
  await client.create({ object: appObject("a") });
  const controller = defineController({
    name: "buggy",
    for: app,
    reconcile() {
      invariant(false, "reconciler-invariant");
    },
  });
  const handle = runController(controller, { client, clock });
  await clock.advance(10);
  await assert.rejects(handle.done, /reconciler-invariant/);
});

test("a watches mapping finds the primaries that reference an object through an index of the primary cache", async () => {
  const { client, clock } = await setup();
  // Apps name the ConfigMap they read in spec.configRef; the App cache is indexed by it.
  const byConfig = (object: KubeObject) => [String((object["spec"] as { configRef?: string }).configRef ?? "")];
  for (const [name, configRef] of [["a", "shared"], ["b", "shared"], ["c", "other"]] as const) {
    await client.create({ object: { ...app, metadata: { name, namespace: "ns" }, spec: { configRef } } });
  }
  const seen: string[] = [];
  const controller = defineController({
    name: "by-config",
    for: { ...app, indexers: { config: byConfig } },
    watches: [
      {
        ...cmKind,
        map: (cm, ctx) =>
          ctx
            .lister(app)
            .byIndex("config", cm.metadata.name as string)
            .map((a) => ({ namespace: a.metadata.namespace, name: a.metadata.name as string })),
      },
    ],
    reconcile(object) {
      seen.push(object.metadata.name as string);
      return Action.awaitChange();
    },
  });
  const handle = runController(controller, { client, clock });
  await handle.waitForSync();
  await clock.advance(10);
  seen.length = 0;
  await client.create({ object: { ...cmKind, metadata: { name: "shared", namespace: "ns" } } });
  await clock.advance(10);
  assert.deepEqual(seen.sort(), ["a", "b"], "the ConfigMap concerns exactly the Apps that reference it");
  handle.stop();
});

test("lister() of a kind the controller did not declare crashes it with a message naming that kind", async () => {
  const { client, clock } = await setup();
  await client.create({ object: appObject("a") });
  const controller = defineController({
    name: "undeclared",
    for: app,
    owns: [cmKind],
    reconcile(_object, ctx) {
      ctx.lister({ apiVersion: "v1", kind: "Secret" });
      return Action.awaitChange();
    },
  });
  const handle = runController(controller, { client, clock });
  await clock.advance(10);
  await assert.rejects(handle.done, (error: Error) => {
    assert.match(error.message, /no cache of v1\/Secret/);
    assert.match(error.message, /example\.com\/v1\/App, v1\/ConfigMap/);
    return true;
  });
});

test("the run's context reaches every reconcile, typed, so a reconciler can talk to an outside system", async () => {
  const { client, clock } = await setup();
  await client.create({ object: appObject("a", 3) });
  // Stands for a registry client on a real cluster, or an external-state handle in the simulator.
  const registry = { pushed: [] as string[], async push(name: string) { this.pushed.push(name); } };
  const controller = defineController<KubeObject, { registry: typeof registry }>({
    name: "pusher",
    for: app,
    async reconcile(object, ctx) {
      await ctx.context.registry.push(`${object.metadata.name}:${(object["spec"] as { replicas: number }).replicas}`);
      return Action.awaitChange();
    },
  });
  // @ts-expect-error: the type-check refuses to run a controller that needs a context without one.
  const unrun = () => runController(controller, { client, clock });
  assert.equal(typeof unrun, "function");
  const handle = runController(controller, { client, clock, context: { registry } });
  await clock.advance(10);
  assert.deepEqual(registry.pushed, ["a:3"]);
  handle.stop();
});

test("a controller without a context sees ctx.context as undefined", async () => {
  const { client, clock } = await setup();
  await client.create({ object: appObject("a") });
  const contexts: unknown[] = [];
  const controller = defineController({ name: "plain", for: app, reconcile: (_o, ctx) => (contexts.push(ctx.context), Action.awaitChange()) });
  const handle = runController(controller, { client, clock });
  await clock.advance(10);
  assert.deepEqual(contexts, [undefined]);
  handle.stop();
});
