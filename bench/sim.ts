// Simulator benchmark: scheduler throughput, the cost of simulated hours, memory per pending step.
// Benchmarks may read real time. Runnable alone: `node --import tsx bench/sim.ts`.
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { performance } from "node:perf_hooks";
import type { KubeObject } from "../src/api/object.ts";
import type { Store, StoreOptions } from "../src/store/types.ts";
import { createStore } from "../src/store/index.ts";
import { createSimulation, defineActor, fifoStrategy, randomStrategy } from "../src/sim/index.ts";
import { benchSteps } from "./steps.ts";

type StoreFactory = (options: StoreOptions) => Store;

const configMap = (name: string, value: number): KubeObject => ({
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: { namespace: "bench", name },
  data: { value: String(value) },
});

/** Two actors ping-pong one ConfigMap: each waits for its turn (get), then hands the turn over (update). */
export async function pingPong(create: StoreFactory, operations: number): Promise<{ steps: number; seconds: number }> {
  const sim = createSimulation({ seed: 1, createStore: create, traceMode: "hash-only", historyRevisionsMax: 1000 });
  sim.store.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: "bench" } });
  sim.store.create(configMap("ball", 0));
  const ref = { apiVersion: "v1", kind: "ConfigMap", namespace: "bench", name: "ball" };
  for (const [name, parity] of [["ping", 0], ["pong", 1]] as const) {
    sim.addActor(
      defineActor({
        name,
        async start(ctx) {
          for (let done = 0; done < operations / 4; ) {
            const ball = await ctx.client.get<KubeObject>(ref);
            const value = Number((ball.data as { value: string }).value);
            if (value % 2 !== parity) continue;
            ball.data = { value: String(value + 1) };
            await ctx.client.update({ object: ball });
            done++;
          }
        },
      }),
    );
  }
  const started = performance.now();
  const result = await sim.run({ strategy: randomStrategy(), maxSteps: operations * 4 });
  const seconds = (performance.now() - started) / 1000;
  return { steps: result.steps, seconds };
}

/** Ten node agents and a controller resyncing every 30 s for one simulated hour. */
async function simulatedHour(create: StoreFactory): Promise<{ steps: number; seconds: number }> {
  const sim = createSimulation({ seed: 2, createStore: create, traceMode: "hash-only", historyRevisionsMax: 10_000 });
  sim.store.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: "bench" } });
  for (let i = 0; i < 10; i++) sim.store.create(configMap(`node-${i}`, 0));
  for (let i = 0; i < 10; i++) {
    sim.addActor(
      defineActor({
        name: `node-${i}`,
        async start(ctx) {
          const ref = { apiVersion: "v1", kind: "ConfigMap", namespace: "bench", name: `node-${i}` };
          for (;;) {
            await ctx.clock.sleep(30_000);
            const node = await ctx.client.get<KubeObject>(ref);
            node.data = { value: String(ctx.clock.now()) };
            await ctx.client.update({ object: node });
          }
        },
      }),
    );
  }
  sim.addActor(
    defineActor({
      name: "controller",
      async start(ctx) {
        const kind = { apiVersion: "v1", kind: "ConfigMap", namespace: "bench" };
        const list = await ctx.client.list({ ...kind, resourceVersion: "0" });
        const watch = ctx.client.watch({ ...kind, resourceVersion: list.metadata.resourceVersion });
        const resync = async () => {
          for (;;) {
            await ctx.clock.sleep(30_000);
            await ctx.client.list(kind);
          }
        };
        void resync();
        for await (const _event of watch) {
          // Level-triggered: an event only means "look again"; the resync does the looking.
        }
      },
    }),
  );
  const started = performance.now();
  const result = await sim.run({ strategy: fifoStrategy(), untilMs: sim.clock.now() + 3_600_000, maxSteps: 10_000_000 });
  return { steps: result.steps, seconds: (performance.now() - started) / 1000 };
}

function collect(): () => void {
  setFlagsFromString("--expose_gc");
  return runInNewContext("gc") as () => void;
}

/** Heap bytes per ready request step: one actor fires `count` gets without awaiting them. */
async function bytesPerPendingStep(create: StoreFactory, count: number): Promise<number> {
  const gc = collect();
  const sim = createSimulation({ seed: 3, createStore: create, traceMode: "hash-only" });
  sim.store.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: "bench" } });
  sim.store.create(configMap("x", 0));
  const ref = { apiVersion: "v1", kind: "ConfigMap", namespace: "bench", name: "x" };
  let pending: Array<Promise<unknown>> = [];
  sim.addActor(
    defineActor({
      name: "burst",
      async start(ctx) {
        pending = Array.from({ length: count }, () => ctx.client.get(ref));
        await Promise.all(pending);
      },
    }),
  );
  await sim.run({ strategy: fifoStrategy(), maxSteps: 1 });
  gc();
  const withSteps = process.memoryUsage().heapUsed;
  await sim.run({ strategy: fifoStrategy(), maxSteps: 1 + count * 2 });
  pending = [];
  gc();
  const without = process.memoryUsage().heapUsed;
  return Math.round((withSteps - without) / count);
}

export async function benchSim(): Promise<Record<string, string | number>> {
  const create: StoreFactory = createStore;
  const operations = 200_000;
  await pingPong(create, 20_000); // warm-up
  const ping = await pingPong(create, operations);
  const hour = await simulatedHour(create);
  const bytes = await bytesPerPendingStep(create, 100_000);
  return {
    ...(await benchSteps()),
    "ping-pong steps": ping.steps,
    "ping-pong steps/s (goal >= 150k)": Math.round(ping.steps / ping.seconds),
    "simulated hour, 10 nodes, 30 s resync: wall ms (goal < 1000)": Math.round(hour.seconds * 1000),
    "simulated hour steps": hour.steps,
    "bytes per pending request step": bytes,
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const figures = await benchSim();
  for (const [key, value] of Object.entries(figures)) process.stdout.write(`${key}: ${value}\n`);
}
