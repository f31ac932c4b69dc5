// Custom resources defaulted from their schema, as the API server defaults them (structural defaulting): absent
// fields and non-nullable nulls get the default, nested defaults apply inside defaulted and present values, in
// arrays and maps, on every write; a field with no default stays absent.
import { test } from "node:test";
import assert from "node:assert/strict";
import type { KubeObject } from "../../src/api/object.ts";
import { newStore, ref, widget, widgetCrd } from "./helpers.ts";

const schema = {
  type: "object",
  properties: {
    spec: {
      type: "object",
      default: {},
      properties: {
        size: { type: "integer", default: 3 },
        mode: { type: "string", nullable: true, default: "fast" },
        strict: { type: "string", default: "yes" },
        plain: { type: "string" },
        limits: { type: "object", default: { cpu: "1" }, properties: { cpu: { type: "string" }, memory: { type: "string", default: "1Gi" } } },
        ports: { type: "array", items: { type: "object", properties: { port: { type: "integer" }, protocol: { type: "string", default: "TCP" } } } },
        labels: { type: "object", additionalProperties: { type: "object", properties: { weight: { type: "integer", default: 1 } } } },
      },
    },
    status: { type: "object", properties: { phase: { type: "string", default: "Pending" } } },
  },
};

function crd(): KubeObject {
  const base = widgetCrd();
  const spec = base.spec as { versions: Array<Record<string, unknown>> };
  spec.versions = [{ name: "v1", served: true, storage: true, schema: { openAPIV3Schema: schema }, subresources: { status: {} } }];
  return base;
}

test("a custom resource gets its schema's defaults, nested ones too, in arrays and maps; absent fields without one stay absent", () => {
  const store = newStore();
  store.create(crd());
  const created = store.create(widget("w", { ports: [{ port: 80 }], labels: { a: {}, b: { weight: 5 } }, mode: null, strict: null }));
  assert.deepEqual(created.spec, {
    ports: [{ port: 80, protocol: "TCP" }],
    labels: { a: { weight: 1 }, b: { weight: 5 } },
    mode: null,
    strict: "yes",
    size: 3,
    limits: { cpu: "1", memory: "1Gi" },
  });
  assert.equal(created.status, undefined, "an absent status with no default of its own stays absent");
  const withStatus = store.updateStatus({ ...created, status: {} });
  assert.deepEqual(withStatus.status, { phase: "Pending" }, "a status written is defaulted");
  assert.equal((created.spec as Record<string, unknown>).plain, undefined);
  // A whole object defaulted from nothing, its own defaults inside it.
  const bare = store.create({ apiVersion: "example.com/v1", kind: "Widget", metadata: { name: "bare", namespace: "default" } });
  assert.deepEqual(bare.spec, { size: 3, mode: "fast", strict: "yes", limits: { cpu: "1", memory: "1Gi" } });
});

test("every write is defaulted: a field an update leaves out comes back, and a merge patch that removes it too", () => {
  const store = newStore();
  store.create(crd());
  const created = store.create(widget("w", { size: 7 }));
  const updated = store.update({ ...created, spec: { size: 7 } });
  assert.equal((updated.spec as Record<string, unknown>).mode, "fast");
  const restored = store.patch({ ...ref(created), patchType: "merge", patch: { spec: { limits: { memory: null } } } });
  assert.equal(restored.metadata.resourceVersion, updated.metadata.resourceVersion, "the removed field defaulted back: nothing changed, no new revision");
  const patched = store.patch({ ...ref(created), patchType: "merge", patch: { spec: { size: null } } });
  assert.deepEqual(patched.spec, { size: 3, mode: "fast", strict: "yes", limits: { cpu: "1", memory: "1Gi" } });
});
