// How a step waits for what it released: in the macrotask it ran in (Node's report of a marker rejection says when
// the microtask and tick queues are empty), with an event-loop turn only now and then and for an actor that waits on
// the outside. These tests count turns and steps, never time.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { createSimulation, defineActor, fifoStrategy, type Simulation } from "../../src/sim/index.ts";
import { QUIET_WAITS_PER_TURN_MAX } from "../../src/sim/host.ts";
import { interleaved } from "./interleaved.ts";

const make = (seed = 1): Simulation => {
  const s = createSimulation({ seed });
  s.store.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: "ns" } });
  return s;
};

const target = { apiVersion: "v1", kind: "ConfigMap", namespace: "ns", name: "a" };

/** Counts event-loop turns while `body` runs: one `setImmediate` per turn of the loop. */
async function countTurns<T>(body: () => Promise<T>): Promise<{ value: T; turns: number }> {
  let turns = 0;
  let counting = true;
  const tick = () => {
    turns++;
    if (counting) setImmediate(tick);
  };
  setImmediate(tick);
  const value = await body();
  counting = false;
  return { value, turns };
}

test("steps continue in the macrotask they ran in: a long run takes one event-loop turn per 64 steps, not one per step (the canary)", async () => {
  const s = make();
  s.store.create({ apiVersion: "v1", kind: "ConfigMap", metadata: { namespace: "ns", name: "a" }, data: {} });
  s.addActor(
    defineActor({
      name: "poller",
      async start(ctx) {
        for (let i = 0; i < 500; i++) {
          await ctx.client.get(target);
          await ctx.clock.sleep(10);
        }
      },
    }),
  );
  const { value: run, turns } = await countTurns(() => s.run({ strategy: fifoStrategy() }));
  assert.equal(run.status, "idle");
  assert.equal(run.steps, 1 + 500 * 3, "a start, then a request, a response and a timer per round");
  // One step per turn was the floor before: this fails if any step waits by a turn of the loop.
  assert.ok(turns <= Math.ceil(run.steps / QUIET_WAITS_PER_TURN_MAX) + 2, `${turns} turns for ${run.steps} steps`);
});

test("a rejection left unhandled after microtask hops and a tick is blamed on the step that left it, not the next step", async () => {
  const s = make();
  s.addActor(
    defineActor({
      name: "sloppy",
      async start(ctx) {
        await ctx.clock.sleep(10);
        await null;
        await null;
        process.nextTick(() => void Promise.reject(new Error("dropped on the floor")));
        await ctx.clock.sleep(1000);
      },
    }),
  );
  // Always has a step ready: the step after sloppy's timer is one of its.
  s.addActor(
    defineActor({
      name: "busy",
      async start(ctx) {
        for (;;) await ctx.clock.sleep(1);
      },
    }),
  );
  const run = await s.run({ strategy: fifoStrategy() });
  assert.equal(run.status, "actor-error");
  assert.equal(run.actor, "sloppy");
  assert.match(run.message ?? "", /actor sloppy left a rejection unhandled: dropped on the floor/);
  const last = run.trace[run.trace.length - 1]!;
  assert.deepEqual([last.actor, last.label], ["sloppy", "sleep 10ms"], "the run ends with the step that left it");
});

test("a rejection handled only in a later step was unhandled when its step ended", async () => {
  const s = make();
  s.addActor(
    defineActor({
      name: "late",
      async start(ctx) {
        const failed = ctx.client.get(target);
        await ctx.clock.sleep(10);
        await failed.catch(() => undefined);
      },
    }),
  );
  const run = await s.run({ strategy: fifoStrategy() });
  assert.equal(run.status, "actor-error");
  assert.equal(run.actor, "late");
  assert.match(run.message ?? "", /left a rejection unhandled: configmaps "a" not found/);
});

test("real I/O of the process goes on during a long run: an actor that waits in virtual time for a file read ends", async () => {
  const s = make();
  let read = false;
  const reading = readFile(fileURLToPath(import.meta.url)).then(() => (read = true));
  let rounds = 0;
  s.addActor(
    defineActor({
      name: "patient",
      async start(ctx) {
        // Without event-loop turns the read never completes and this runs into maxSteps.
        while (!read) {
          rounds++;
          await ctx.clock.sleep(1);
        }
      },
    }),
  );
  const run = await s.run({ strategy: fifoStrategy(), maxSteps: 1_000_000 });
  await reading;
  assert.equal(run.status, "idle", `after ${rounds} rounds`);
});

test("an actor that waits on a real setImmediate and nothing of ours gets one event-loop turn, then goes on", async () => {
  const s = make();
  s.addActor(
    defineActor({
      name: "yielder",
      async start(ctx) {
        await ctx.clock.sleep(5);
        await new Promise((resolve) => setImmediate(resolve));
        await ctx.clock.sleep(5);
      },
    }),
  );
  const run = await s.run({ strategy: fifoStrategy() });
  assert.equal(run.status, "idle");
  assert.equal(run.steps, 3);
});

test("under --unhandled-rejections=strict every step waits by an event-loop turn, with the same trace", async () => {
  // Strict mode raises an unhandled rejection as an uncaught exception before any listener hears of it: the marker
  // would end the process, so the host never makes one there.
  const script = `
    import { createSimulation, fifoStrategy } from ${JSON.stringify(new URL("../../src/sim/index.ts", import.meta.url).href)};
    import { interleaved } from ${JSON.stringify(new URL("./interleaved.ts", import.meta.url).href)};
    const s = createSimulation({ seed: 1 });
    interleaved(s);
    const run = await s.run({ strategy: fifoStrategy() });
    console.log(JSON.stringify([run.status, run.steps, run.traceHash]));
  `;
  const child = spawnSync(process.execPath, ["--conditions=settle-source", "--import", "tsx", "--unhandled-rejections=strict", "--input-type=module", "-e", script], { encoding: "utf8" });
  assert.equal(child.status, 0, child.stderr);
  const s = createSimulation({ seed: 1 });
  interleaved(s);
  const here = await s.run({ strategy: fifoStrategy() });
  assert.equal(here.status, "idle");
  assert.deepEqual(JSON.parse(child.stdout.trim()), [here.status, here.steps, here.traceHash]);
});

/** Counts the quiet waits steps take while `body` runs (the host's `released`, which every waiting step calls). */
async function countWaits<T>(body: () => Promise<T>): Promise<{ value: T; waits: number }> {
  const { simulationHost } = await import("../../src/sim/host.ts");
  const released = simulationHost.released;
  let waits = 0;
  simulationHost.released = function (this: typeof simulationHost) {
    waits++;
    return released.call(this);
  };
  try {
    return { value: await body(), waits };
  } finally {
    simulationHost.released = released;
  }
}

/** A poller's 50 rounds: a request, its response and a timer each, after its start. */
const poller = defineActor({
  name: "poller",
  async start(ctx) {
    for (let i = 0; i < 50; i++) {
      await ctx.client.get(target);
      await ctx.clock.sleep(10);
    }
  },
});

test("a client request applied to a store that runs no code of others takes no wait: it settles nothing, so the next step follows at once", async () => {
  const s = make();
  s.store.create({ apiVersion: "v1", kind: "ConfigMap", metadata: { namespace: "ns", name: "a" }, data: {} });
  s.addActor(poller);
  const { value: run, waits } = await countWaits(() => s.run({ strategy: fifoStrategy() }));
  assert.equal(run.steps, 1 + 50 * 3);
  assert.equal(waits, run.steps - 50, "every step but the 50 requests waits");
});

test("with a store watch that is not the simulator's own open, or an admission plugin, every step waits, and the trace is the same", async () => {
  const plain = make();
  plain.store.create({ apiVersion: "v1", kind: "ConfigMap", metadata: { namespace: "ns", name: "a" }, data: {} });
  plain.addActor(poller);
  const reference = await plain.run({ strategy: fifoStrategy() });

  // A listener of the scenario's own may run any code: each event settles a promise here.
  const watched = make();
  watched.store.create({ apiVersion: "v1", kind: "ConfigMap", metadata: { namespace: "ns", name: "a" }, data: {} });
  let settled = 0;
  const watcher = watched.store.watch({ apiVersion: "v1", kind: "ConfigMap", fromRevision: watched.store.revision }, () => void Promise.resolve().then(() => settled++));
  watched.addActor(poller);
  const { value: run, waits } = await countWaits(() => watched.run({ strategy: fifoStrategy() }));
  assert.equal(waits, run.steps, "every step waits while the watch is open");
  assert.equal(run.traceHash, reference.traceHash);
  watcher.close();
  assert.equal(watched.store.selfContained?.(), true, "closing it gives the store back its own");

  const admitted = createSimulation({ seed: 1, admission: [{ name: "nothing", validate: () => undefined }] });
  admitted.store.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: "ns" } });
  admitted.store.create({ apiVersion: "v1", kind: "ConfigMap", metadata: { namespace: "ns", name: "a" }, data: {} });
  admitted.addActor(poller);
  const { value: admittedRun, waits: admittedWaits } = await countWaits(() => admitted.run({ strategy: fifoStrategy() }));
  assert.equal(admittedWaits, admittedRun.steps, "every step waits: a plugin is code of others");
  assert.equal(admittedRun.traceHash, reference.traceHash);
});
