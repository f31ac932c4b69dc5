import { test } from "node:test";
import assert from "node:assert/strict";
import { isApiError } from "../../src/api/errors.ts";
import type { KubeObject } from "../../src/api/object.ts";
import type { Store } from "../../src/store/types.ts";
import { newStore } from "./helpers.ts";

// A Scaler CRD whose schema carries the kinds of rules real CRDs use: a cross-field rule with a message, one with
// a messageExpression, one without either (so the rule text is the message), a fieldPath, a reason, an
// immutability transition rule, a "may only grow" transition rule, and a rule on items of a map-list.
const schema = {
  type: "object",
  properties: {
    spec: {
      type: "object",
      "x-kubernetes-validations": [
        { rule: "self.minReplicas <= self.maxReplicas", message: "minReplicas cannot be larger than maxReplicas" },
        { rule: "self.maxReplicas <= 100", messageExpression: "'maxReplicas is ' + string(self.maxReplicas) + ', at most 100 allowed'" },
        { rule: "!has(self.mode) || self.mode != 'legacy'", fieldPath: ".mode", reason: "FieldValueForbidden", message: "legacy mode is gone" },
      ],
      properties: {
        minReplicas: { type: "integer" },
        maxReplicas: { type: "integer" },
        mode: { type: "string" },
        region: { type: "string", "x-kubernetes-validations": [{ rule: "self == oldSelf", message: "region is immutable" }] },
        generation: { type: "integer", "x-kubernetes-validations": [{ rule: "self >= oldSelf" }] },
        name: { type: "string", "x-kubernetes-validations": [{ rule: "self.startsWith('s-')" }] },
        ports: {
          type: "array",
          "x-kubernetes-list-type": "map",
          "x-kubernetes-list-map-keys": ["name"],
          items: {
            type: "object",
            properties: { name: { type: "string" }, port: { type: "integer" } },
            "x-kubernetes-validations": [{ rule: "self.port > 0 && self.port < 65536", message: "port out of range" }, { rule: "self.port == oldSelf.port", message: "a port's number is fixed" }],
          },
        },
      },
      required: ["minReplicas", "maxReplicas"],
    },
  },
};

function scalerCrd(rules: unknown = schema): KubeObject {
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: "scalers.example.com" },
    spec: {
      group: "example.com",
      scope: "Namespaced",
      names: { plural: "scalers", kind: "Scaler" },
      versions: [{ name: "v1", served: true, storage: true, schema: { openAPIV3Schema: rules } }],
    },
  };
}

function scaler(spec: Record<string, unknown>): KubeObject {
  return { apiVersion: "example.com/v1", kind: "Scaler", metadata: { name: "s", namespace: "default" }, spec };
}

function messageOf(write: () => unknown): string | undefined {
  try {
    write();
    return undefined;
  } catch (error) {
    if (!isApiError(error)) throw error;
    assert.equal(error.code, 422);
    assert.equal(error.reason, "Invalid");
    return error.message;
  }
}

const base = { minReplicas: 1, maxReplicas: 3, region: "eu", generation: 1, ports: [{ name: "http", port: 80 }] };

const createCases: Array<{ name: string; spec: Record<string, unknown>; message?: string }> = [
  { name: "an object that keeps every rule is created", spec: base },
  { name: "a broken rule with a message names the rule's node and its schema type", spec: { ...base, minReplicas: 5 }, message: 'Scaler.example.com "s" is invalid: spec: Invalid value: "object": minReplicas cannot be larger than maxReplicas' },
  { name: "a messageExpression is evaluated into the message", spec: { ...base, maxReplicas: 200 }, message: 'spec: Invalid value: "object": maxReplicas is 200, at most 100 allowed' },
  { name: "a rule without a message is quoted as the message", spec: { ...base, name: "x" }, message: 'spec.name: Invalid value: "string": failed rule: self.startsWith(\'s-\')' },
  { name: "fieldPath and reason choose the field and the cause", spec: { ...base, mode: "legacy" }, message: "spec.mode: Forbidden: legacy mode is gone" },
  { name: "a rule on items of a list names the item", spec: { ...base, ports: [{ name: "http", port: 80 }, { name: "bad", port: 70000 }] }, message: 'spec.ports[1]: Invalid value: "object": port out of range' },
  { name: "transition rules do not run on create", spec: { ...base, region: "us", generation: 0 } },
];

for (const c of createCases) {
  test(`CEL rules on create: ${c.name}`, () => {
    const store = newStore();
    store.create(scalerCrd());
    const message = messageOf(() => store.create(scaler(c.spec)));
    if (c.message === undefined) assert.equal(message, undefined);
    else assert.ok(message?.includes(c.message), `got ${message}`);
  });
}

function updated(store: Store, change: Record<string, unknown>): string | undefined {
  const current = store.get({ apiVersion: "example.com/v1", kind: "Scaler", namespace: "default", name: "s" });
  return messageOf(() => store.update({ ...current, spec: { ...(current.spec as object), ...change } }));
}

const updateCases: Array<{ name: string; change: Record<string, unknown>; message?: string }> = [
  { name: "an immutable field changed is refused with the rule's message", change: { region: "us" }, message: 'spec.region: Invalid value: "string": region is immutable' },
  { name: "a value that may only grow is refused when it shrinks", change: { generation: 0 }, message: 'spec.generation: Invalid value: "integer": failed rule: self >= oldSelf' },
  { name: "a value that may only grow is accepted when it grows", change: { generation: 2 } },
  { name: "map-list items correlate by key, so a changed port number is refused", change: { ports: [{ name: "http", port: 81 }] }, message: "spec.ports[0]: Invalid value: \"object\": a port's number is fixed" },
  { name: "a new map-list item has no old value, so its transition rule does not run", change: { ports: [{ name: "http", port: 80 }, { name: "https", port: 443 }] } },
  { name: "a cross-field rule broken by an update is refused", change: { maxReplicas: 0 }, message: "minReplicas cannot be larger than maxReplicas" },
];

for (const c of updateCases) {
  test(`CEL rules on update: ${c.name}`, () => {
    const store = newStore();
    store.create(scalerCrd());
    store.create(scaler(base));
    const message = updated(store, c.change);
    if (c.message === undefined) assert.equal(message, undefined);
    else assert.ok(message?.includes(c.message), `got ${message}`);
  });
}

test("a failed CEL write changes nothing: the stored object and the revision stay", () => {
  const store = newStore();
  store.create(scalerCrd());
  store.create(scaler(base));
  const revision = store.revision;
  assert.ok(updated(store, { region: "us" }) !== undefined);
  assert.equal(store.revision, revision);
  assert.equal((store.get({ apiVersion: "example.com/v1", kind: "Scaler", namespace: "default", name: "s" }).spec as { region: string }).region, "eu");
});

test("a CRD whose rule is not valid CEL is refused with the rule's schema path", () => {
  const store = newStore();
  const bad = { type: "object", properties: { spec: { type: "object", "x-kubernetes-validations": [{ rule: "self.a <" }] } } };
  const message = messageOf(() => store.create(scalerCrd(bad)));
  assert.match(message ?? "", /spec\.versions\[0\]\.schema\.openAPIV3Schema\.properties\[spec\]\.x-kubernetes-validations\[0\]\.rule: Invalid value: "self\.a <": compilation failed/);
});

test("a rule at the schema's root reads metadata and prints as the nil path, as the API server does", () => {
  const store = newStore();
  store.create(scalerCrd({ type: "object", "x-kubernetes-validations": [{ rule: "self.metadata.name != 'reserved'", message: "that name is reserved" }], properties: { spec: { type: "object" } } }));
  const message = messageOf(() => store.create({ apiVersion: "example.com/v1", kind: "Scaler", metadata: { name: "reserved", namespace: "default" }, spec: {} }));
  assert.equal(message, 'Scaler.example.com "reserved" is invalid: <nil>: Invalid value: "object": that name is reserved');
  assert.equal(messageOf(() => store.create({ apiVersion: "example.com/v1", kind: "Scaler", metadata: { name: "fine", namespace: "default" }, spec: {} })), undefined);
});

test("a rule whose evaluation fails is reported with the error and the rule", () => {
  const store = newStore();
  store.create(scalerCrd({ type: "object", properties: { spec: { type: "object", "x-kubernetes-validations": [{ rule: "self.missing > 1" }] } } }));
  const message = messageOf(() => store.create(scaler({})));
  assert.match(message ?? "", /spec: Invalid value: "object": .*missing.* evaluating rule: self\.missing > 1/);
});
