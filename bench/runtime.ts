// Runtime figures: reconciles per second for a controller with 1,000 owners x 5 children in the simulator,
// and the informer's memory per cached object. Benchmarks may read real time; tests never do.
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { createSimulation, defineActor } from "../src/sim/index.ts";
import type { KubeObject } from "../src/api/object.ts";
import { Action, defineController, ensureOwned, runController, Informer } from "../src/runtime/index.ts";
import type { ControllerHandle } from "../src/runtime/index.ts";
import { createStore } from "../src/store/index.ts";
import { FakeClient } from "../test/runtime/fake-client.ts";
import { ManualClock } from "../test/runtime/manual-clock.ts";

const cmKind = { apiVersion: "v1", kind: "ConfigMap" };
const secretKind = { apiVersion: "v1", kind: "Secret" };

function childrenController(childrenPerOwner: number) {
  return defineController({
    name: "children",
    for: cmKind,
    owns: [secretKind],
    maxConcurrentReconciles: 4,
    async reconcile(owner, ctx) {
      const secrets = ctx.lister(secretKind);
      for (let i = 0; i < childrenPerOwner; i++) {
        const desired = { ...secretKind, metadata: { name: `${owner.metadata.name}-${i}`, labels: { owner: owner.metadata.name as string } }, data: {} };
        await ensureOwned(owner, desired, { client: ctx.client, lister: secrets });
      }
      return Action.awaitChange();
    },
  });
}

async function reconcilesInSimulator(owners: number, childrenPerOwner: number): Promise<Record<string, string | number>> {
  const sim = createSimulation({ seed: 1, createStore, traceMode: "hash-only" });
  sim.store.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: "ns" } });
  for (let i = 0; i < owners; i++) sim.store.create({ ...cmKind, metadata: { name: `app-${i}`, namespace: "ns" }, data: {} });
  let handle: ControllerHandle | undefined;
  sim.addActor(
    defineActor({
      name: "controller",
      async start(ctx) {
        handle = runController(childrenController(childrenPerOwner), { client: ctx.client, clock: ctx.clock });
        await handle.done;
      },
    }),
  );
  const startedMs = performance.now();
  const result = await sim.run({ maxSteps: 10_000_000, untilMs: sim.clock.now() + 60 * 60 * 1000 });
  const seconds = (performance.now() - startedMs) / 1000;
  const reconciles = handle?.reconcileCount() ?? 0;
  const children = sim.view().list({ ...secretKind, namespace: "ns" }).length;
  return {
    "sim run status": result.status,
    "sim children created": `${children} / ${owners * childrenPerOwner}`,
    "sim reconciles": reconciles,
    "sim steps": result.steps,
    "sim wall s": seconds.toFixed(2),
    "sim reconciles/s": Math.round(reconciles / seconds),
    "sim steps/s": Math.round(result.steps / seconds),
  };
}

function collectGarbage(): void {
  setFlagsFromString("--expose-gc");
  (runInNewContext("gc") as () => void)();
}

function configMap(i: number): KubeObject {
  return {
    ...cmKind,
    metadata: { name: `cm-${i}`, namespace: `ns-${i % 10}`, labels: { app: `app-${i % 100}`, tier: "web" }, annotations: { note: "benchmark" } },
    data: { key: `value-${i}`, other: "x".repeat(64) },
  };
}

async function informerMemory(objects: number): Promise<Record<string, string | number>> {
  const client = new FakeClient();
  for (let i = 0; i < objects; i++) await client.create({ object: configMap(i) });
  const listed = await client.list({ ...cmKind });
  const jsonBytes = JSON.stringify(listed.items).length / objects;
  collectGarbage();
  const before = process.memoryUsage().heapUsed;
  const informer = new Informer({ client, clock: new ManualClock(), kind: cmKind, listPageSize: objects });
  void informer.start();
  await informer.waitForSync();
  collectGarbage();
  const after = process.memoryUsage().heapUsed;
  informer.stop();
  return {
    "informer cached objects": informer.lister.size,
    "informer bytes/object (heap, with indexes)": Math.round((after - before) / objects),
    "object JSON bytes": Math.round(jsonBytes),
  };
}

export async function benchRuntime(): Promise<Record<string, string | number>> {
  return { ...(await reconcilesInSimulator(1000, 5)), ...(await informerMemory(20_000)) };
}
