// The keys the property monitor compares reads with writes are remembered per kind (`objectKey`, `kindKey`); these
// tests hold the remembered keys to the texts they stand for, across versions of a group, names that repeat, an
// absent name, and more names than one kind remembers (the memo starts again and must still answer the same).
import assert from "node:assert/strict";
import test from "node:test";
import { kindKey, objectKey } from "../../src/sim/changes.ts";

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
