import { test } from "node:test";
import assert from "node:assert/strict";
import { createSimulation, defineActor, DEFAULT_EPOCH_MS, fifoStrategy } from "../../src/sim/index.ts";

const realDate = globalThis.Date;
const realRandom = Math.random;
const make = (seed = 1) => {
  const s = createSimulation({ seed });
  s.store.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: "ns" } });
  return s;
};

test("an actor awaiting a real setTimeout is reported by name, not hung on (the guard canary)", async () => {
  const s = make();
  s.addActor(defineActor({ name: "quiet", async start(ctx) { await ctx.clock.sleep(100_000); } }));
  s.addActor(
    defineActor({
      name: "canary",
      async start() {
        // Long enough that no loaded machine fires it before the simulator looks; unref'd so it cannot hold the
        // test process open once the run has reported it.
        await new Promise((resolve) => setTimeout(resolve, 10_000).unref());
      },
    }),
  );
  const run = await s.run({ strategy: fifoStrategy() });
  assert.equal(run.status, "outside-await");
  assert.equal(run.actor, "canary");
  assert.equal(run.message, "actor canary awaited something outside the simulation at step 1");
});

test("an actor whose start throws is an actor error with the message", async () => {
  const s = make();
  s.addActor(
    defineActor({
      name: "broken",
      async start(ctx) {
        await ctx.clock.sleep(10);
        throw new Error("boom");
      },
    }),
  );
  const run = await s.run();
  assert.equal(run.status, "actor-error");
  assert.equal(run.actor, "broken");
  assert.equal(run.message, "actor broken failed: boom");
});

test("a start that throws before it returns a promise, or rejects with nothing, is an actor error too", async () => {
  const failure = async (start: () => Promise<void>) => {
    const s = make();
    s.addActor(defineActor({ name: "broken", start }));
    const run = await s.run({ strategy: fifoStrategy() });
    return [run.status, run.actor, run.message];
  };
  assert.deepEqual(await failure(() => { throw new Error("boom"); }), ["actor-error", "broken", "actor broken failed: boom"]);
  assert.deepEqual(await failure(() => { throw undefined; }), ["actor-error", "broken", "actor broken failed: threw"]);
  assert.deepEqual(await failure(() => Promise.reject(undefined)), ["actor-error", "broken", "actor broken failed: rejected"]);
});

test("an unhandled rejection in an actor's background task is an actor error", async () => {
  const s = make();
  s.addActor(
    defineActor({
      name: "sloppy",
      async start(ctx) {
        void ctx.client.get({ apiVersion: "v1", kind: "ConfigMap", namespace: "ns", name: "missing" });
        await ctx.clock.sleep(1000);
      },
    }),
  );
  const run = await s.run({ strategy: fifoStrategy() });
  assert.equal(run.status, "actor-error");
  assert.equal(run.actor, "sloppy");
  assert.match(run.message ?? "", /left a rejection unhandled: configmaps "missing" not found/);
});

test("during a run Date and Math.random are the simulation's, and they are restored after", async () => {
  const s = make(42);
  const seen: number[] = [];
  s.addActor(
    defineActor({
      name: "clocky",
      async start(ctx) {
        await ctx.clock.sleep(1500);
        seen.push(Date.now(), new Date().getTime(), Math.random());
      },
    }),
  );
  await s.run();
  assert.equal(seen[0], DEFAULT_EPOCH_MS + 1500);
  assert.equal(seen[1], DEFAULT_EPOCH_MS + 1500);
  const again = make(42);
  const seenAgain: number[] = [];
  again.addActor(defineActor({ name: "clocky", async start() { seenAgain.push(Math.random()); } }));
  await again.run();
  assert.equal(seenAgain[0], seen[2], "Math.random is drawn from the seed");
  assert.equal(globalThis.Date, realDate, "the real Date is back");
  assert.equal(Math.random, realRandom, "the real Math.random is back");
});

test("every run answers Date from its own clock through one replacement class, so Date call sites stay monomorphic", async () => {
  const seen: Array<{ now: number; made: number; dateClass: DateConstructor }> = [];
  for (const delayMs of [100, 2500]) {
    const s = make(7);
    s.addActor(
      defineActor({
        name: "clocky",
        async start(ctx) {
          await ctx.clock.sleep(delayMs);
          seen.push({ now: Date.now(), made: new Date().getTime(), dateClass: globalThis.Date });
        },
      }),
    );
    await s.run();
  }
  assert.deepEqual(seen.map(({ now, made }) => [now, made]), [
    [DEFAULT_EPOCH_MS + 100, DEFAULT_EPOCH_MS + 100],
    [DEFAULT_EPOCH_MS + 2500, DEFAULT_EPOCH_MS + 2500],
  ]);
  assert.notEqual(seen[0]!.dateClass, realDate, "a run sees the simulation's Date");
  assert.equal(seen[0]!.dateClass, seen[1]!.dateClass, "both runs see the same replacement class");
  assert.equal(new (seen[0]!.dateClass)(5).getTime(), 5, "one argument passes through");
  assert.equal(new (seen[0]!.dateClass)(2026, 0, 2).getTime(), new realDate(2026, 0, 2).getTime(), "several arguments pass through");
  assert.equal(globalThis.Date, realDate, "the real Date is back");
});

test("run stops on maxSteps, untilMs and onStep, and a later run continues the same world", async () => {
  const s = make();
  let ticks = 0;
  s.addActor(
    defineActor({
      name: "ticker",
      async start(ctx) {
        for (;;) {
          await ctx.clock.sleep(30_000);
          ticks++;
        }
      },
    }),
  );
  const first = await s.run({ maxSteps: 3 });
  assert.equal(first.status, "max-steps");
  assert.equal(first.steps, 3);
  const second = await s.run({ untilMs: DEFAULT_EPOCH_MS + 3_600_000, maxSteps: 1_000_000 });
  assert.equal(second.status, "until");
  assert.equal(ticks, 120);
  assert.equal(second.timeMs, DEFAULT_EPOCH_MS + 3_600_000);
  assert.ok(s.idle(1000), "no timer within 1 s");
  assert.ok(!s.idle(60_000), "a timer within a minute");
  assert.equal(s.nextTimerAt(), DEFAULT_EPOCH_MS + 3_630_000);
  const third = await s.run({ onStep: (record) => (record.kind === "timer" ? "stop" : undefined) });
  assert.equal(third.status, "stopped");
  assert.equal(third.timeMs, DEFAULT_EPOCH_MS + 3_630_000);
});

test("the world view reads objects at the latest revision and external state", async () => {
  const s = make();
  s.defineExternal("registry", { tag: "v1" });
  s.addActor(
    defineActor({
      name: "pusher",
      async start(ctx) {
        await ctx.external<{ tag: string }>("registry").write((current) => ({ tag: `${current.tag}+1` }));
        await ctx.client.create({ object: { apiVersion: "v1", kind: "ConfigMap", metadata: { namespace: "ns", name: "a" } } });
      },
    }),
  );
  const views: string[] = [];
  const base = s.store.revision;
  await s.run({
    strategy: fifoStrategy(),
    onStep: (record, view) => {
      views.push(`${record.kind}:${view.revision - base}:${view.external<{ tag: string }>("registry").tag}:${view.list({ apiVersion: "v1", kind: "ConfigMap" }).length}`);
    },
  });
  assert.deepEqual(views, ["start:0:v1:0", "external:0:v1+1:0", "request:1:v1+1:1", "response:1:v1+1:1"]);
  assert.throws(() => (s.view().external("registry") as { tag: string }).tag = "x");
});
