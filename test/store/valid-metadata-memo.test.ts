// The store remembers names and label pairs it found valid, so that writing the same objects again (every run of a
// scenario does) skips their checks. These tests show that what it remembers never lets an invalid name or label
// through, however it sits next to valid ones.
import { test } from "node:test";
import assert from "node:assert/strict";
import { isApiError } from "../../src/api/errors.ts";
import { configMap, newStore } from "./helpers.ts";

const invalid = (error: unknown) => isApiError(error) && error.code === 422;

test("a valid label pair seen before does not vouch for an invalid pair beside it", () => {
  const store = newStore({ namespaces: ["default"] });
  store.create(configMap("a", { labels: { app: "web", tier: "front" } }));
  assert.throws(() => store.create(configMap("b", { labels: { app: "web", "bad key!": "x" } })), invalid);
  assert.throws(() => store.create(configMap("c", { labels: { app: "web", tier: "-front" } })), invalid);
  assert.throws(() => store.create(configMap("d", { labels: { app: "web\u0000tier" } })), invalid);
  store.create(configMap("e", { labels: { tier: "front", app: "web" } }));
  assert.equal(store.list({ apiVersion: "v1", kind: "ConfigMap", namespace: "default" }).items.length, 2);
});

test("a valid name seen before under one rule does not vouch for it under a stricter one", () => {
  const store = newStore({ namespaces: ["default"] });
  // A dotted name is a valid DNS-1123 subdomain (ConfigMap names) but not a DNS-1123 label (Namespace names).
  store.create(configMap("a.b"));
  assert.throws(() => store.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: "a.b" } }), invalid);
  assert.throws(() => store.create(configMap("Upper")), invalid);
  store.create(configMap("a.c"));
});
