import { test } from "node:test";
import assert from "node:assert/strict";
import type { KubeObject } from "../../src/api/object.ts";
import { createSimulation, defineActor, fifoStrategy, type ActorContext } from "../../src/sim/index.ts";

const configMaps = { apiVersion: "v1", kind: "ConfigMap", namespace: "ns" } as const;

function world() {
  const s = createSimulation({ seed: 3 });
  s.store.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: "ns" } });
  return s;
}

/** Every write verb once, in one order, with `readOnly` set or not; what each response was. */
async function writes(ctx: ActorContext, readOnly: boolean | undefined): Promise<Array<{ verb: string; frozen: boolean; data: unknown }>> {
  const flag = readOnly === undefined ? {} : { readOnly };
  const seen: Array<{ verb: string; frozen: boolean; data: unknown }> = [];
  const note = (verb: string, object: KubeObject) => seen.push({ verb, frozen: Object.isFrozen(object) && Object.isFrozen(object.metadata), data: object.data });
  const created = await ctx.client.create({ ...flag, object: { apiVersion: "v1", kind: "ConfigMap", metadata: { namespace: "ns", name: "a" }, data: { n: "1" } } });
  note("create", created);
  note("update", await ctx.client.update({ ...flag, object: { ...created, data: { n: "2" } } }));
  note("patch", await ctx.client.patch({ ...flag, ...configMaps, name: "a", patchType: "merge", patch: { data: { n: "3" } } }));
  note("delete", await ctx.client.delete({ ...flag, ...configMaps, name: "a" }));
  return seen;
}

test("a write's response is a private copy unless the caller promises readOnly; then it is the store's frozen object", async () => {
  for (const readOnly of [undefined, false, true]) {
    const s = world();
    let seen: Awaited<ReturnType<typeof writes>> = [];
    s.addActor(defineActor({ name: "writer", start: async (ctx) => void (seen = await writes(ctx, readOnly)) }));
    const run = await s.run({ strategy: fifoStrategy() });
    assert.equal(run.status, "idle", run.message);
    const frozen = readOnly === true;
    assert.deepEqual(
      seen.map(({ verb, frozen }) => ({ verb, frozen })),
      ["create", "update", "patch", "delete"].map((verb) => ({ verb, frozen })),
      `readOnly ${String(readOnly)}`,
    );
    assert.deepEqual(seen.map(({ data }) => (data as { n: string }).n), ["1", "2", "3", "3"]);
  }
});

test("a private response may be changed by its actor without touching the store", async () => {
  const s = world();
  s.addActor(
    defineActor({
      name: "writer",
      async start(ctx) {
        const created = await ctx.client.create({ object: { apiVersion: "v1", kind: "ConfigMap", metadata: { namespace: "ns", name: "a" }, data: { n: "1" } } });
        (created.data as { n: string }).n = "changed by the actor";
      },
    }),
  );
  await s.run({ strategy: fifoStrategy() });
  assert.deepEqual(s.view().get({ ...configMaps, name: "a" })?.data, { n: "1" });
});

test("readOnly changes neither what the store is asked nor the trace", async () => {
  const traces: string[] = [];
  for (const readOnly of [false, true]) {
    const s = world();
    s.addActor(defineActor({ name: "writer", start: async (ctx) => void (await writes(ctx, readOnly)) }));
    const run = await s.run({ strategy: fifoStrategy() });
    traces.push(run.traceHash);
    assert.equal(run.trace.filter((r) => r.kind === "request" && r.write === true).length, 4);
  }
  assert.equal(traces[0], traces[1]);
});
