// The keys the property monitor compares reads with writes are remembered per kind (`objectKey`, `kindKey`); these
// tests hold the remembered keys to the texts they stand for, across versions of a group, names that repeat, an
// absent name, and more names than one kind remembers (the memo starts again and must still answer the same).
import assert from "node:assert/strict";
import test from "node:test";
import { changeFeedOf, kindKey, objectKey } from "../../src/sim/changes.ts";
import { createSimulation } from "../../src/sim/index.ts";

test("kind keys name the group and the kind, whatever the version", () => {
  assert.equal(kindKey("v1", "ConfigMap"), "/ConfigMap");
  assert.equal(kindKey("apps/v1", "Deployment"), "apps/Deployment");
  assert.equal(kindKey("academy.settle.dev/v1", "Ensemble"), kindKey("academy.settle.dev/v2", "Ensemble"));
  assert.notEqual(kindKey("a.example/v1", "Widget"), kindKey("b.example/v1", "Widget"));
});

test("object keys are the kind key and the name, the same on every call", () => {
  assert.equal(objectKey("v1", "ConfigMap", "alpha"), "/ConfigMap|alpha");
  assert.equal(objectKey("v1", "ConfigMap", "alpha"), objectKey("v1", "ConfigMap", "alpha"));
  assert.equal(objectKey("apps/v1", "Deployment", undefined), "apps/Deployment|");
  assert.equal(objectKey("apps/v1beta1", "Deployment", "web"), objectKey("apps/v1", "Deployment", "web"));
  assert.notEqual(objectKey("v1", "ConfigMap", "alpha"), objectKey("v1", "Secret", "alpha"));
});

test("object keys stay right past the number of names one kind remembers", () => {
  const names = 40_000;
  for (let round = 0; round < 2; round++) {
    for (let i = 0; i < names; i++) assert.equal(objectKey("v1", "Pod", `pod-${i}`), `/Pod|pod-${i}`);
  }
  assert.equal(objectKey("v1", "Pod", "pod-0"), "/Pod|pod-0");
});

// kernel.ts lines 521-720 (mutation survivors): the change feed's external writes, before and after the kernel
// trims its log of them.
test("a simulation's change feed names the external cells written since a cursor, and says everything once its log no longer reaches back", () => {
  const s = createSimulation({ seed: 1 });
  s.defineExternal("a", 0);
  s.defineExternal("b", 0);
  const feed = changeFeedOf(s.view());
  assert.ok(feed !== undefined, "a simulation's view has a change feed");
  const start = feed.cursor();
  assert.deepEqual(feed.since(start), { everything: false, kinds: [], objects: [], externals: [] });
  s.external("a").set(1);
  const afterOne = feed.cursor();
  s.external("b").set(1);
  assert.deepEqual(feed.since(start).externals, ["a", "b"]);
  assert.deepEqual(feed.since(afterOne).externals, ["b"]);
  const beforeStore = feed.cursor();
  s.store.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: "ns" } });
  assert.deepEqual(feed.since(beforeStore), { everything: false, kinds: ["/Namespace"], objects: ["/Namespace|ns"], externals: [] }, "a cursor taken after the last external write sees none");
  const beforeMany = feed.cursor();
  const written = 4096;
  let middle = beforeMany;
  for (let i = 0; i < written - 2; i++) {
    s.external("a").set(i);
    if (i === 2999) middle = feed.cursor();
  }
  const atLimit = feed.since(start);
  assert.deepEqual([atLimit.everything, atLimit.externals.length], [false, written], "the log keeps 4096 writes");
  s.external("b").set(2);
  const trimmed = feed.cursor();
  s.external("b").set(3);
  assert.equal(feed.since(start).everything, true, "past 4096 writes the oldest are dropped: an old cursor sees everything");
  assert.deepEqual(feed.since(trimmed).externals, ["b"], "a recent cursor still sees exactly what was written");
  assert.equal(feed.since(beforeMany).everything, true, "the oldest half is dropped");
  assert.deepEqual(feed.since(middle), { everything: false, kinds: [], objects: [], externals: [...Array<string>(written - 3002).fill("a"), "b", "b"] }, "the newest half is kept");
});
