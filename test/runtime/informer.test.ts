import { test } from "node:test";
import assert from "node:assert/strict";
import { Informer } from "../../src/runtime/informer.ts";
import { backoffDefaults, backoffDelayMs, step } from "../../src/runtime/informer-state.ts";
import type { InformerInput, InformerState } from "../../src/runtime/informer-state.ts";
import { internalError } from "../../src/api/errors.ts";
import type { KubeObject } from "../../src/api/object.ts";
import { FakeClient } from "./fake-client.ts";
import { ManualClock, settle } from "./manual-clock.ts";

const kind = { apiVersion: "v1", kind: "ConfigMap" };

function cm(name: string, data: Record<string, string> = {}, labels?: Record<string, string>): KubeObject {
  return { ...kind, metadata: { name, namespace: "ns", ...(labels ? { labels } : {}) }, data };
}

/**
 * A handler that mirrors the cache from events alone and fails on any event that could not follow from the
 * previous ones (an add of a known key, an update or delete of an unknown one, an update whose old object is
 * not the last one delivered). At the end the mirror must equal the server's state.
 */
function mirror() {
  const state = new Map<string, KubeObject>();
  const log: string[] = [];
  const key = (o: KubeObject) => `${o.metadata.namespace}/${o.metadata.name}`;
  return {
    state,
    log,
    handler: {
      add(o: KubeObject) {
        assert.ok(!state.has(key(o)), `duplicate add ${key(o)}`);
        state.set(key(o), o);
        log.push(`add ${o.metadata.name}`);
      },
      update(old: KubeObject, o: KubeObject) {
        assert.equal(state.get(key(o)), old, `update of ${key(o)} from an old state never delivered`);
        state.set(key(o), o);
        log.push(old === o ? `resync ${o.metadata.name}` : `update ${o.metadata.name}`);
      },
      delete(o: KubeObject) {
        assert.ok(state.has(key(o)), `delete of unknown ${key(o)}`);
        state.delete(key(o));
        log.push(`delete ${o.metadata.name}`);
      },
    },
  };
}

function assertMirrors(m: ReturnType<typeof mirror>, client: FakeClient): void {
  const server = client.all("ConfigMap").map((o) => `${o.metadata.name}@${o.metadata.resourceVersion}`);
  const seen = [...m.state.values()]
    .sort((a, b) => ((a.metadata.name as string) < (b.metadata.name as string) ? -1 : 1))
    .map((o) => `${o.metadata.name}@${o.metadata.resourceVersion}`);
  assert.deepEqual(seen, server);
}

async function started(client: FakeClient, clock: ManualClock, extra: Partial<ConstructorParameters<typeof Informer>[0]> = {}) {
  const informer = new Informer({ client, clock, kind, ...extra });
  const m = mirror();
  informer.addHandler(m.handler);
  const done = informer.start();
  await informer.waitForSync();
  await settle();
  return { informer, m, done };
}

test("the state machine relists consistently and at once after a 410 while watching", () => {
  const watching: InformerState = { phase: "Watching", revision: "7", failures: 0, eventsSeen: 2, idleCloses: 0 };
  const next = step(watching, { type: "watchFailed", gone: true });
  assert.deepEqual(next.effect, { type: "list", consistent: true });
  assert.equal(next.state.phase, "Listing");
  const again = step({ ...watching, failures: 1 }, { type: "watchFailed", gone: true });
  assert.equal(again.effect.type, "sleep", "a second 410 before any event backs off");
});

test("a second 410 before any event backs off, then relists consistently", () => {
  const watching: InformerState = { phase: "Watching", revision: "7", failures: 1, eventsSeen: 0, idleCloses: 0 };
  const backedOff = step(watching, { type: "watchFailed", gone: true });
  assert.deepEqual(backedOff.effect, { type: "sleep", ms: backoffDefaults.initialBackoffMs * 2 });
  const resumed = step(backedOff.state, { type: "backoffDone" });
  assert.deepEqual(resumed.effect, { type: "list", consistent: true }, "a stale list could lead to the same 410");
  const otherFailure = step(step(watching, { type: "watchFailed", gone: false }).state, { type: "backoffDone" });
  assert.deepEqual(otherFailure.effect, { type: "list", consistent: false }, "any other failure relists from the cache's revision 0");
});

test("a failed list relists consistently when it was consistent or the failure was a 410, and at 0 otherwise", () => {
  const cases: Array<{ consistent: boolean; gone: boolean; expected: boolean }> = [
    { consistent: false, gone: false, expected: false },
    { consistent: false, gone: true, expected: true },
    { consistent: true, gone: false, expected: true },
    { consistent: true, gone: true, expected: true },
  ];
  for (const { consistent, gone, expected } of cases) {
    const failed = step({ phase: "Listing", consistent, failures: 0 }, { type: "listFailed", gone });
    const resumed = step(failed.state, { type: "backoffDone" });
    assert.deepEqual(resumed.effect, { type: "list", consistent: expected }, `a list (consistent: ${consistent}) failed (gone: ${gone})`);
  }
});

test("the state machine backs off exponentially up to its cap on repeated failures", () => {
  let state: InformerState = { phase: "Empty" };
  state = step(state, { type: "start" }).state;
  const delays: number[] = [];
  for (let i = 0; i < 8; i++) {
    const failed = step(state, { type: "listFailed", gone: false });
    assert.equal(failed.effect.type, "sleep");
    if (failed.effect.type === "sleep") delays.push(failed.effect.ms);
    state = step(failed.state, { type: "backoffDone" }).state;
    assert.equal(state.phase, "Listing");
  }
  assert.deepEqual(delays, [800, 1600, 3200, 6400, 12800, 25600, 30000, 30000]);
});

test("the state machine resumes a normally closed watch from the last revision and backs off idle closes", () => {
  let state: InformerState = { phase: "Watching", revision: "5", failures: 0, eventsSeen: 0, idleCloses: 0 };
  state = step(state, { type: "event", revision: "9" }).state;
  const resumed = step(state, { type: "watchClosed" });
  assert.deepEqual(resumed.effect, { type: "watch", revision: "9" });
  let s = resumed.state;
  const effects: string[] = [];
  for (let i = 0; i < backoffDefaults.idleClosesMax; i++) {
    const n = step(s, { type: "watchClosed" });
    effects.push(n.effect.type);
    s = n.state;
  }
  assert.deepEqual(effects, ["watch", "watch", "sleep"]);
});

test("the state machine counts the events of the current watch and starts over at 0 on the next watch", () => {
  let state: InformerState = { phase: "Watching", revision: "5", failures: 0, eventsSeen: 0, idleCloses: 0 };
  const counts: number[] = [];
  for (const revision of ["6", "7", "8"]) {
    state = step(state, { type: "event", revision }).state;
    if (state.phase === "Watching") counts.push(state.eventsSeen);
  }
  assert.deepEqual(counts, [1, 2, 3]);
  const next = step(state, { type: "watchClosed" }).state;
  assert.ok(next.phase === "Watching" && next.eventsSeen === 0 && next.revision === "8", "a new watch from revision 8 has seen no event yet");
});

test("the state machine refuses an input its phase does not expect, naming the rule the driver broke", () => {
  const cases: Array<{ state: InformerState; input: InformerInput; rule: RegExp }> = [
    { state: { phase: "Empty" }, input: { type: "listed", revision: "1" }, rule: /informer-starts-empty/ },
    { state: { phase: "Listing", consistent: false, failures: 0 }, input: { type: "event", revision: "1" }, rule: /informer-listing-gets-list-result/ },
    {
      state: { phase: "Watching", revision: "1", failures: 0, eventsSeen: 0, idleCloses: 0 },
      input: { type: "start" },
      rule: /informer-input-start-not-expected-while-watching/,
    },
    {
      state: { phase: "Backoff", failures: 1, resume: { to: "list", consistent: false }, delayMs: 800 },
      input: { type: "start" },
      rule: /informer-backoff-ends-by-timer/,
    },
    { state: { phase: "Stopped" }, input: { type: "start" }, rule: /informer-no-input-after-stop/ },
  ];
  for (const { state, input, rule } of cases) {
    assert.throws(() => step(state, input), rule, `${input.type} in ${state.phase}`);
  }
});

test("the backoff delay is defined from the first failure on", () => {
  assert.equal(backoffDelayMs(1, backoffDefaults), backoffDefaults.initialBackoffMs);
  assert.throws(() => backoffDelayMs(0, backoffDefaults), /backoff-after-a-failure/);
});

test("an informer lists at resourceVersion 0 and watches from the list's revision", async () => {
  const client = new FakeClient();
  const clock = new ManualClock();
  await client.create({ object: cm("a") });
  const { informer, m } = await started(client, clock);
  assert.equal(informer.hasSynced(), true);
  const list = client.calls.find((c) => c.method === "list")?.options as { resourceVersion?: string };
  assert.equal(list.resourceVersion, "0");
  const watch = client.calls.find((c) => c.method === "watch")?.options as { resourceVersion?: string };
  assert.equal(watch.resourceVersion, "101");
  await client.create({ object: cm("b") });
  const b = await client.get({ ...kind, namespace: "ns", name: "b" });
  await client.update({ object: { ...b, data: { x: "1" } } });
  await client.delete({ ...kind, namespace: "ns", name: "a" });
  await settle();
  assert.deepEqual(m.log, ["add a", "add b", "update b", "delete a"]);
  assert.deepEqual(informer.lister.keys(), ["ns/b"]);
  assert.ok(Object.isFrozen(informer.lister.get("ns/b")?.metadata), "cached objects are frozen");
  informer.stop();
});

test("an informer resumes after a normal watch close without losing or repeating an event", async () => {
  const client = new FakeClient();
  const clock = new ManualClock();
  const { informer, m, done } = await started(client, clock);
  for (let round = 0; round < 5; round++) {
    await client.create({ object: cm(`c${round}`) });
    client.closeWatches();
    await client.create({ object: cm(`d${round}`) });
    await settle();
  }
  assertMirrors(m, client);
  assert.equal(client.count("list"), 1, "no relist for a normal close");
  informer.stop();
  await done;
});

test("an informer relists after a watch error and delivers deletes for objects that vanished meanwhile", async () => {
  const client = new FakeClient();
  const clock = new ManualClock();
  await client.create({ object: cm("keep") });
  await client.create({ object: cm("gone") });
  await client.create({ object: cm("change") });
  const { informer, m } = await started(client, clock);
  // The watch is cut, the world changes, history is compacted: the resumed watch gets 410.
  client.failWatches(internalError("cut"));
  await client.delete({ ...kind, namespace: "ns", name: "gone" });
  const change = await client.get({ ...kind, namespace: "ns", name: "change" });
  await client.update({ object: { ...change, data: { v: "2" } } });
  await client.create({ object: cm("new") });
  client.compact();
  await clock.advance(60_000);
  assertMirrors(m, client);
  assert.deepEqual(m.log.slice(3), ["update change", "add new", "delete gone"]);
  const lastList = client.calls.filter((c) => c.method === "list").at(-1)?.options as { resourceVersion?: string };
  assert.equal(lastList.resourceVersion, "0", "an error other than 410 relists from the cache");
  informer.stop();
});

test("a 410 on the watch leads to a consistent relist, not another stale one", async () => {
  const client = new FakeClient();
  const clock = new ManualClock();
  const { informer, m } = await started(client, clock);
  client.closeWatches();
  await client.create({ object: cm("x") });
  client.compact();
  await settle();
  const lastList = client.calls.filter((c) => c.method === "list").at(-1)?.options as { resourceVersion?: string };
  assert.equal(lastList.resourceVersion, undefined);
  assertMirrors(m, client);
  informer.stop();
});

test("an informer never stops on errors: injected 500s on list and watch end in a synced cache", async () => {
  const client = new FakeClient();
  const clock = new ManualClock();
  for (let i = 0; i < 4; i++) client.failNext("list", internalError("boom"));
  const informer = new Informer({ client, clock, kind });
  const m = mirror();
  informer.addHandler(m.handler);
  void informer.start();
  await settle();
  assert.equal(informer.state.phase, "Backoff");
  await client.create({ object: cm("a") });
  await clock.advance(60_000);
  assert.equal(informer.hasSynced(), true);
  client.failNext("watch", internalError("watch boom"));
  client.failWatches(internalError("cut"));
  await client.create({ object: cm("b") });
  await clock.advance(60_000);
  assert.equal(informer.state.phase, "Watching");
  assertMirrors(m, client);
  // Five lists to the first success, one after the cut watch, one after the failed re-watch.
  assert.equal(client.count("list"), 7);
  informer.stop();
});

test("a periodic resync delivers update with the same object as old and new", async () => {
  const client = new FakeClient();
  const clock = new ManualClock();
  await client.create({ object: cm("a") });
  const { informer, m } = await started(client, clock, { resyncMs: 1000 });
  await clock.advance(2500);
  assert.deepEqual(m.log, ["add a", "resync a", "resync a"]);
  informer.stop();
  await clock.advance(5000);
  assert.equal(m.log.length, 3);
});

test("an informer passes its selectors to the server and caches only what matches", async () => {
  const client = new FakeClient();
  const clock = new ManualClock();
  await client.create({ object: cm("a", {}, { app: "x" }) });
  await client.create({ object: cm("b", {}, { app: "y" }) });
  const { informer } = await started(client, clock, { labelSelector: "app=x", fieldSelector: "metadata.name=a" });
  assert.deepEqual(informer.lister.keys(), ["ns/a"]);
  const watch = client.calls.find((c) => c.method === "watch")?.options as { labelSelector?: string };
  assert.equal(watch.labelSelector, "app=x");
  informer.stop();
});

test("a handler that throws ends the informer with that error", async () => {
  const client = new FakeClient();
  const clock = new ManualClock();
  const informer = new Informer({ client, clock, kind });
  informer.addHandler({
    add() {
      throw new Error("handler bug");
    },
  });
  const done = informer.start();
  await client.create({ object: cm("a") });
  await assert.rejects(done, /handler bug/);
});

test("a handler added late gets an add for every cached object", async () => {
  const client = new FakeClient();
  const clock = new ManualClock();
  await client.create({ object: cm("a") });
  const { informer } = await started(client, clock);
  const late = mirror();
  informer.addHandler(late.handler);
  assert.deepEqual(late.log, ["add a"]);
  informer.stop();
});

test("stop ends the informer in any phase and leaves no timer or watch behind", async () => {
  const client = new FakeClient();
  const clock = new ManualClock();
  const { informer, done } = await started(client, clock, { resyncMs: 1000 });
  assert.equal(client.watches.size, 1);
  informer.stop();
  await done;
  assert.equal(client.watches.size, 0);
  assert.equal(clock.pendingCount(), 0);
  assert.equal(informer.state.phase, "Stopped");
  client.failNext("list", internalError("down"));
  const backingOff = new Informer({ client, clock, kind });
  const running = backingOff.start();
  await settle();
  assert.equal(backingOff.state.phase, "Backoff");
  backingOff.stop();
  await running;
  assert.equal(clock.pendingCount(), 0);
});
