import { test } from "node:test";
import assert from "node:assert/strict";
import { ProcessExit } from "../../src/api/exit.ts";
import { createSimulation, defineActor, fifoStrategy, type PlannedFault, type Simulation } from "../../src/sim/index.ts";
import { initialLife, stepLife, type Life, type LifeInput } from "../../src/sim/lifecycle.ts";

const make = (seed = 1): Simulation => {
  const s = createSimulation({ seed });
  s.store.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: "ns" } });
  return s;
};

test("an actor's life goes waiting, running, done, and crashed to running with the next incarnation", () => {
  let life: Life = initialLife;
  life = stepLife(life, { type: "start" });
  assert.deepEqual(life, { phase: "running", incarnation: 0, pausedUntil: 0 });
  life = stepLife(life, { type: "pause", untilMs: 50 });
  life = stepLife(life, { type: "pause", untilMs: 20 });
  assert.equal(life.pausedUntil, 50, "a second pause never shortens the first");
  life = stepLife(life, { type: "resume" });
  life = stepLife(life, { type: "settled" });
  assert.equal(life.phase, "done");
  life = stepLife(life, { type: "crash" });
  assert.deepEqual(life, { phase: "crashed", incarnation: 0, pausedUntil: 0 });
  life = stepLife(life, { type: "restart" });
  assert.deepEqual(life, { phase: "running", incarnation: 1, pausedUntil: 0 });
});

test("every transition the machine does not allow fails its named assertion", () => {
  const cases: Array<[Life, LifeInput, RegExp]> = [
    [initialLife, { type: "settled" }, /only a running start settles/],
    [initialLife, { type: "crash" }, /only a live actor crashes or exits/],
    [initialLife, { type: "pause", untilMs: 5 }, /only a live actor is paused/],
    [initialLife, { type: "restart" }, /only a crashed actor restarts/],
    [{ phase: "running", incarnation: 0, pausedUntil: 0 }, { type: "start" }, /starts for the first time from waiting/],
    [{ phase: "running", incarnation: 0, pausedUntil: 0 }, { type: "resume" }, /only a paused actor resumes/],
    [{ phase: "crashed", incarnation: 2, pausedUntil: 0 }, { type: "crash" }, /only a live actor crashes or exits/],
  ];
  for (const [life, input, message] of cases) assert.throws(() => stepLife(life, input), message, `${life.phase} + ${input.type}`);
});

test("an actor whose code exits with ProcessExit is restarted after its delay as the next incarnation", async () => {
  const s = make();
  const starts: Array<[number, number]> = [];
  s.addActor(
    defineActor({
      name: "leader",
      restartDelayMs: 500,
      async start(ctx) {
        starts.push([ctx.incarnation, ctx.clock.now()]);
        await ctx.clock.sleep(100);
        if (ctx.incarnation === 0) throw new ProcessExit("leadership lost", 3);
      },
    }),
  );
  const run = await s.run({ strategy: fifoStrategy() });
  assert.equal(run.status, "idle");
  const epoch = starts[0]![1];
  assert.deepEqual(
    starts.map(([incarnation, at]) => [incarnation, at - epoch]),
    [
      [0, 0],
      [1, 600],
    ],
  );
  const exit = run.trace.find((r) => r.label.startsWith("exit leader"));
  assert.equal(exit?.result, "exit code 3, restart in 500ms");
});

test("the trace records typed facts: verbs, objects, request numbers pairing responses, cached reads, watch ids", async () => {
  const s = make();
  s.defineExternal("registry", { tag: "v1" });
  s.addActor(
    defineActor({
      name: "reader",
      async start(ctx) {
        await ctx.client.create({ object: { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "a", namespace: "ns" } } });
        await ctx.client.list({ apiVersion: "v1", kind: "ConfigMap", namespace: "ns", resourceVersion: "0" });
        const watch = ctx.client.watch({ apiVersion: "v1", kind: "ConfigMap", namespace: "ns", resourceVersion: "0" });
        for await (const _event of watch) break;
        await ctx.external("registry").write({ tag: "v2" });
      },
    }),
  );
  const run = await s.run({ strategy: fifoStrategy() });
  const create = run.trace.find((r) => r.kind === "request" && r.verb === "create")!;
  assert.deepEqual(create.object, { kind: "ConfigMap", namespace: "ns", name: "a" });
  assert.equal(create.access, "write");
  const response = run.trace.find((r) => r.kind === "response" && r.requestSeq === create.requestSeq)!;
  assert.ok(response.step > create.step, "the response pairs with its request by number");
  const list = run.trace.find((r) => r.kind === "request" && r.verb === "list")!;
  assert.equal(list.cached, true);
  assert.equal(list.access, "read");
  const watchOpen = run.trace.find((r) => r.kind === "request" && r.verb === "watch")!;
  assert.equal(watchOpen.watchId, "reader/0/w0");
  assert.ok(run.trace.some((r) => r.kind === "watch" && r.watchId === "reader/0/w0"), "deliveries name their watch");
  const write = run.trace.find((r) => r.kind === "external")!;
  assert.deepEqual([write.verb, write.access, write.external], ["write", "write", "registry"]);
});

test("two simulations started at once run one after the other, each as it would alone", async () => {
  const build = (seed: number) => {
    const s = make(seed);
    s.addActor(
      defineActor({
        name: "writer",
        async start(ctx) {
          for (let i = 0; i < 5; i++) {
            await ctx.clock.sleep(Math.floor(Math.random() * 100));
            await ctx.client.create({ object: { apiVersion: "v1", kind: "ConfigMap", metadata: { name: `c${i}-${Date.now()}`, namespace: "ns" } } });
          }
        },
      }),
    );
    return s;
  };
  const alone = [(await build(1).run()).traceHash, (await build(2).run()).traceHash];
  const together = await Promise.all([build(1).run(), build(2).run()]);
  assert.deepEqual(
    together.map((r) => r.traceHash),
    alone,
  );
  assert.equal(together[0]!.status, "idle");
});

test("while an actor is paused the strategy sees every other ready step in ready order, and a crash withdraws all of an actor's steps", async () => {
  const s = make(5);
  s.store.create({ apiVersion: "v1", kind: "ConfigMap", metadata: { namespace: "ns", name: "c" } });
  const ref = { apiVersion: "v1", kind: "ConfigMap", namespace: "ns", name: "c" };
  for (const name of ["a", "b", "c"]) {
    s.addActor(
      defineActor({
        name,
        async start(ctx) {
          for (let round = 0; round < 6; round++) {
            await Promise.all([ctx.client.get(ref), ctx.client.get(ref), ctx.clock.sleep(10 * (round + 1))]);
          }
        },
      }),
    );
  }
  let pausedUntilMs = -1;
  let compared = 0;
  let withoutPaused = 0;
  const strategy = {
    name: "checking",
    next(ready: readonly { seq: number; actor: string }[], rng: { int(n: number): number }): number {
      const pausedNow = s.clock.now() < pausedUntilMs;
      const expected = s.readySteps().filter((step) => !(pausedNow && step.actor === "b"));
      assert.deepEqual(ready.map((step) => step.seq), expected.map((step) => step.seq));
      compared++;
      if (pausedNow && expected.length < s.readySteps().length) withoutPaused++;
      return rng.int(ready.length);
    },
  };
  const faults: PlannedFault[] = [
    { atStep: 4, kind: "pause", target: "b", durationMs: 25 },
    { atStep: 30, kind: "crash", target: "c" },
  ];
  const run = await s.run({
    strategy,
    faults,
    onStep: (record) => {
      if (record.kind === "fault" && record.label.startsWith("pause")) pausedUntilMs = record.timeMs + 25;
      if (record.kind === "fault" && record.label.startsWith("crash")) {
        assert.ok(!s.readySteps().some((step) => step.actor === "c" && step.kind !== "start"), "the crash left none of c's steps ready");
      }
    },
  });
  assert.equal(run.status, "idle");
  assert.ok(compared > 40 && withoutPaused > 0, "the pause held steps of b back while others ran");
});
