import { test } from "node:test";
import assert from "node:assert/strict";
import { ProcessExit } from "../../src/api/exit.ts";
import type { KubeObject } from "../../src/api/object.ts";
import { createSimulation, defineActor, fifoStrategy, type ActorContext, type PlannedFault, type ReadyStep, type Simulation } from "../../src/sim/index.ts";
import { timerIndexBase } from "../../src/sim/strategy.ts";
import { internalError } from "../../src/api/errors.ts";
import type { AdmissionRequest } from "../../src/store/types.ts";
import { initialLife, statusWord, stepLife, type Life, type LifeInput } from "../../src/sim/lifecycle.ts";

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
    [{ phase: "running", incarnation: 0, pausedUntil: 0 }, { type: "pause", untilMs: Infinity }, /a pause ends at a finite time/],
  ];
  for (const [life, input, message] of cases) assert.throws(() => stepLife(life, input), message, `${life.phase} + ${input.type}`);
});

test("the status word of a life is what a skipped fault says: waiting before the first start, down while crashed, running otherwise", () => {
  const running: Life = stepLife(initialLife, { type: "start" });
  const done = stepLife(running, { type: "settled" });
  const crashed = stepLife(done, { type: "crash" });
  assert.deepEqual(
    [initialLife, running, done, crashed, stepLife(crashed, { type: "restart" })].map(statusWord),
    ["waiting", "running", "running", "down", "running"],
  );
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

test("the trace tells an actor's life in the words replay files keep: started, fired, crashed, restart, paused, skipped: down", async () => {
  const s = make();
  s.addActor(
    defineActor({
      name: "w",
      restartDelayMs: 100,
      async start(ctx) {
        await ctx.clock.sleep(10);
        await ctx.clock.sleep(1000);
      },
    }),
  );
  // Steps under FIFO: 0 start, 1 the 10 ms sleep; the crash comes before step 2, the restart is step 2, its sleep step 3.
  const faults: PlannedFault[] = [
    { atStep: 2, kind: "crash", target: "w" },
    { atStep: 2, kind: "pause", target: "w", durationMs: 50 },
    { atStep: 4, kind: "pause", target: "w", durationMs: 50 },
  ];
  const run = await s.run({ strategy: fifoStrategy(), faults });
  assert.equal(run.status, "idle", run.message);
  // A restart runs as its timer's step, so its record says the timer's "fired"; the restart fact is what marks it.
  const told = run.trace.slice(0, 7).map((r) => [r.step, r.kind, r.label, r.result, r.restart]);
  assert.deepEqual(told, [
    [0, "start", "start w", "started", undefined],
    [1, "timer", "sleep 10ms", "fired", undefined],
    [2, "fault", "crash w", "crashed, restart in 100ms", undefined],
    [2, "fault", "pause w durationMs=50", "skipped: down", undefined],
    [2, "start", "restart w", "fired", true],
    [3, "timer", "sleep 10ms", "fired", undefined],
    [4, "fault", "pause w durationMs=50", "paused until +50ms", undefined],
  ]);
});

test("a simulation refuses bad kernel options and a second actor of one name, saying what is wrong", () => {
  const refused: Array<[Parameters<typeof createSimulation>[0], RegExp]> = [
    [{ watchQueueMax: 0 }, /watchQueueMax is positive/],
    [{ readyStepsMax: 0 }, /readyStepsMax is positive/],
    [{ requestLatencyMs: [1.5, 2] }, /requestLatencyMs is \[min, max\] in whole ms, 0 <= min <= max/],
    [{ requestLatencyMs: [-1, 5] }, /requestLatencyMs is \[min, max\] in whole ms, 0 <= min <= max/],
    [{ requestLatencyMs: [0, 2.5] }, /requestLatencyMs is \[min, max\] in whole ms, 0 <= min <= max/],
    [{ requestLatencyMs: [5, 2] }, /requestLatencyMs is \[min, max\] in whole ms, 0 <= min <= max/],
  ];
  for (const [options, message] of refused) assert.throws(() => createSimulation(options), message, JSON.stringify(options));
  assert.doesNotThrow(() => createSimulation({ watchQueueMax: 1, readyStepsMax: 1, requestLatencyMs: [3, 3] }));
  const s = make();
  s.addActor(defineActor({ name: "twin", async start() {} }));
  assert.throws(() => s.addActor(defineActor({ name: "twin", async start() {} })), /actor "twin" is added once/);
});

test("code of a crashed incarnation that wakes up after the restart is ignored: its logs are dropped and its failure ends nothing", async () => {
  const s = make();
  // A promise from outside the actor's simulation objects, resolved later by another actor's step: the only way old
  // code runs again once its incarnation's timers, steps and watches have vanished.
  let wake = () => {};
  const woken = new Promise<void>((resolve) => (wake = resolve));
  s.addActor(
    defineActor({
      name: "a",
      restartDelayMs: 100,
      async start(ctx) {
        if (ctx.incarnation > 0) return ctx.clock.sleep(10_000);
        // The nap keeps the incarnation busy in the simulation while it waits on the promise.
        void ctx.clock.sleep(60_000);
        await woken;
        ctx.log("zombie woke");
        throw new Error("zombie failed");
      },
    }),
  );
  s.addActor(
    defineActor({
      name: "b",
      async start(ctx) {
        await ctx.clock.sleep(500);
        wake();
      },
    }),
  );
  // Steps under FIFO: 0 start a, 1 start b; the crash before step 2; a restarts at +100 ms, b wakes a's old code at +500 ms.
  const run = await s.run({ strategy: fifoStrategy(), faults: [{ atStep: 2, kind: "crash", target: "a" }] });
  assert.equal(run.status, "idle", run.message);
  const wokeAt = run.trace.find((r) => r.actor === "b" && r.kind === "timer")!;
  const restart = run.trace.find((r) => r.restart === true)!;
  assert.ok(restart.step < wokeAt.step, "a's new incarnation runs when the old code wakes");
  assert.ok(!run.trace.some((r) => r.kind === "log"), "the old incarnation's log line is dropped");
});

test("request latencies are drawn per actor incarnation: within the range, varying request to request, different per actor and per incarnation, and an incarnation's draws do not depend on the one before", async () => {
  const range = [1, 1000] as const;
  /** Latencies each incarnation of "a" (and "b", when added) saw; incarnation 0 of "a" makes `firstRequests` requests, then exits. */
  const latencies = async (firstRequests: number, withB: boolean) => {
    const s = createSimulation({ seed: 9, requestLatencyMs: range });
    s.store.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: "ns" } });
    const seen = new Map<string, number[]>();
    const getter = (name: string) =>
      defineActor({
        name,
        restartDelayMs: 100,
        async start(ctx) {
          const mine: number[] = [];
          seen.set(`${name}/${ctx.incarnation}`, mine);
          const requests = name === "a" && ctx.incarnation === 0 ? firstRequests : 5;
          for (let i = 0; i < requests; i++) {
            const sentMs = ctx.clock.now();
            await ctx.client.get({ apiVersion: "v1", kind: "Namespace", name: "ns" });
            mine.push(ctx.clock.now() - sentMs);
          }
          if (name === "a" && ctx.incarnation === 0) throw new ProcessExit("again", 1);
        },
      });
    s.addActor(getter("a"));
    if (withB) s.addActor(getter("b"));
    const run = await s.run({ strategy: fifoStrategy() });
    assert.equal(run.status, "idle", run.message);
    return seen;
  };
  const one = await latencies(1, true);
  const three = await latencies(3, true);
  const alone = await latencies(3, false);
  const all = [...three.values()].flat();
  assert.ok(all.every((ms) => ms >= range[0] && ms <= range[1]), all.join(", "));
  for (const [incarnation, drawn] of three) assert.ok(new Set(drawn).size > 1, `requests of ${incarnation} draw anew: ${drawn.join(", ")}`);
  assert.notDeepEqual(three.get("a/0"), three.get("b/0")!.slice(0, 3), "another actor has a stream of its own");
  assert.notDeepEqual(three.get("a/1"), three.get("b/0"), "another actor has a stream of its own");
  assert.notDeepEqual(three.get("a/0"), three.get("a/1")!.slice(0, 3), "a restart starts a stream of its own");
  assert.deepEqual(one.get("a/1"), three.get("a/1"), "the restarted incarnation's latencies do not depend on what the first drew");
  assert.deepEqual(alone.get("a/0"), three.get("a/0"), "one actor's latencies do not depend on another's requests");
  assert.deepEqual(alone.get("a/1"), three.get("a/1"), "one actor's latencies do not depend on another's requests");
});

test("a timer cancelled after it came due, by a timer due at the same time, is withdrawn and never fires", async () => {
  const s = make();
  const fired: string[] = [];
  s.addActor(
    defineActor({
      name: "w",
      async start(ctx) {
        const second = { cancel: () => {} };
        ctx.clock.setTimer(100, () => {
          fired.push("first");
          second.cancel();
        });
        second.cancel = ctx.clock.setTimer(100, () => fired.push("second")).cancel;
        await ctx.clock.sleep(200);
      },
    }),
  );
  const run = await s.run({ strategy: fifoStrategy() });
  assert.equal(run.status, "idle", run.message);
  assert.deepEqual(fired, ["first"]);
  assert.deepEqual(
    run.trace.map((r) => r.label),
    ["start w", "timer 100ms", "sleep 200ms"],
  );
});

test("a write that leaves garbage is followed by a garbage collection step: a deleted owner's dependent goes", async () => {
  const s = make();
  s.addActor(
    defineActor({
      name: "w",
      async start(ctx) {
        const owner = await ctx.client.create<KubeObject>({ object: { apiVersion: "v1", kind: "ConfigMap", metadata: { namespace: "ns", name: "owner" } } });
        const ownerReferences = [{ apiVersion: "v1", kind: "ConfigMap", name: "owner", uid: owner.metadata.uid! }];
        await ctx.client.create({ object: { apiVersion: "v1", kind: "ConfigMap", metadata: { namespace: "ns", name: "dependent", ownerReferences } } });
        await ctx.client.delete({ apiVersion: "v1", kind: "ConfigMap", namespace: "ns", name: "owner" });
      },
    }),
  );
  const run = await s.run({ strategy: fifoStrategy() });
  assert.equal(run.status, "idle", run.message);
  const gc = run.trace.filter((r) => r.kind === "gc");
  assert.ok(gc.length > 0 && gc.every((r) => r.actor === "gc" && r.label === "collect garbage"), JSON.stringify(gc));
  assert.equal(s.view().get({ apiVersion: "v1", kind: "ConfigMap", namespace: "ns", name: "dependent" }), undefined);
});

test("ready steps carry their origin only when the simulation keeps origins: the step that made them, as its how-manieth", async () => {
  const originsSeen = async (stepOrigins: boolean | undefined) => {
    const s = createSimulation({ seed: 1, ...(stepOrigins === undefined ? {} : { stepOrigins }) });
    s.store.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: "ns" } });
    s.addActor(defineActor({ name: "w", start: (ctx) => ctx.client.get({ apiVersion: "v1", kind: "Namespace", name: "ns" }).then(() => {}) }));
    const seen: Array<ReadyStep["origin"]> = [];
    const strategy = { name: "recording", next: (ready: readonly ReadyStep[]) => (seen.push(ready[0]!.origin), 0) };
    await s.run({ strategy });
    return seen;
  };
  assert.deepEqual(await originsSeen(undefined), [undefined, undefined, undefined]);
  assert.deepEqual(await originsSeen(false), [undefined, undefined, undefined]);
  const [start, request, response] = await originsSeen(true);
  assert.ok(start !== undefined && start.parent === undefined, "the start is made outside any step");
  assert.deepEqual([request?.parent, request?.index], [start, 0], "the request is the first thing the start step made");
  // With no latency the response is enqueued at once, not set as a timer: it counts among the steps made directly.
  assert.deepEqual([response?.parent, response?.index], [request, 0], "the response is the first thing its request step made");
});

// kernel.ts lines 521-720 (mutation survivors)

test("requests are numbered from 0 in the order they are made, and every step a strategy sees became ready after the ones before it", async () => {
  const s = make();
  s.addActor(
    defineActor({
      name: "w",
      async start(ctx) {
        const ns = { apiVersion: "v1", kind: "Namespace", name: "ns" };
        await Promise.all([ctx.client.get(ns), ctx.client.get(ns)]);
        await ctx.client.get(ns);
      },
    }),
  );
  const seqs: number[][] = [];
  const strategy = { name: "recording", next: (ready: readonly ReadyStep[]) => (seqs.push(ready.map((step) => step.seq)), 0) };
  const run = await s.run({ strategy });
  assert.equal(run.status, "idle", run.message);
  assert.deepEqual(
    run.trace.filter((r) => r.kind === "request").map((r) => r.requestSeq),
    [0, 1, 2],
  );
  assert.ok(
    seqs.some((list) => list.length > 1) && seqs.every((list) => list.every((seq, i) => i === 0 || seq > list[i - 1]!)),
    `ready lists in seq order: ${JSON.stringify(seqs)}`,
  );
});

test("with latency, a response's origin is still the request step that made it, and one step's two requests are its first and second", async () => {
  const s = createSimulation({ seed: 1, stepOrigins: true, requestLatencyMs: [5, 5] });
  s.store.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: "ns" } });
  s.addActor(
    defineActor({
      name: "w",
      async start(ctx) {
        const ns = { apiVersion: "v1", kind: "Namespace", name: "ns" };
        await Promise.all([ctx.client.get(ns), ctx.client.get(ns)]);
      },
    }),
  );
  const seen = new Map<string, ReadyStep["origin"]>();
  let chosen = 0;
  const strategy = {
    name: "recording",
    next: (ready: readonly ReadyStep[]) => {
      seen.set(`${chosen++} ${ready[0]!.kind}`, ready[0]!.origin);
      return 0;
    },
  };
  const run = await s.run({ strategy });
  assert.equal(run.status, "idle", run.message);
  const origins = [...seen.entries()];
  assert.deepEqual(
    origins.map(([key]) => key.split(" ")[1]),
    ["start", "request", "request", "response", "response"],
  );
  const [, first] = origins[1]!;
  const [, second] = origins[2]!;
  assert.deepEqual([first?.index, second?.index], [0, 1], "the start step made two requests, in order");
  const responses = origins.slice(3).map(([, origin]) => origin);
  assert.deepEqual(
    responses.map((origin) => [origin?.parent, origin?.readyMs]),
    [
      [first, first!.readyMs + 5],
      [second, second!.readyMs + 5],
    ],
    "each response comes from its own request step, ready when its latency is over",
  );
});

test("a run that makes more ready steps than readyStepsMax ends in a sim-error saying so; exactly the maximum runs", async () => {
  const runWith = async (readyStepsMax: number) => {
    const s = createSimulation({ seed: 1, readyStepsMax });
    s.store.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: "ns" } });
    s.addActor(
      defineActor({
        name: "w",
        async start(ctx) {
          const ns = { apiVersion: "v1", kind: "Namespace", name: "ns" };
          await Promise.all([ctx.client.get(ns), ctx.client.get(ns), ctx.client.get(ns)]);
        },
      }),
    );
    return s.run({ strategy: fifoStrategy() });
  };
  const over = await runWith(2);
  assert.deepEqual([over.status, over.message], ["sim-error", "more than 2 ready steps"]);
  const exact = await runWith(3);
  assert.equal(exact.status, "idle", exact.message);
});

test("reading an external cell nobody defined, or defining one twice, fails naming the cell", () => {
  const s = make();
  s.defineExternal("registry", { tag: "v1" });
  assert.deepEqual(s.view().external("registry"), { tag: "v1" });
  assert.throws(() => s.view().external("missing"), /external "missing" is defined/);
  assert.throws(() => s.defineExternal("registry", {}), /external "registry" is defined once/);
});

test("withdrawing a paused actor's due timer leaves every other actor's ready step eligible", async () => {
  const s = make();
  const shared = { cancel: () => {} };
  s.addActor(
    defineActor({
      name: "p",
      async start(ctx) {
        shared.cancel = ctx.clock.setTimer(100, () => {}).cancel;
        await ctx.clock.sleep(2000);
      },
    }),
  );
  s.addActor(
    defineActor({
      name: "q",
      async start(ctx) {
        await ctx.clock.sleep(150);
        const read = ctx.client.get({ apiVersion: "v1", kind: "Namespace", name: "ns" });
        // p is paused and its timer, due at 100 ms, waits in the ready list: cancelling it withdraws that step.
        shared.cancel();
        await read;
      },
    }),
  );
  const run = await s.run({ strategy: fifoStrategy(), faults: [{ atStep: 2, kind: "pause", target: "p", durationMs: 1000 }] });
  assert.equal(run.status, "idle", run.message);
  const start = run.trace[0]!.timeMs;
  const at = (label: string) => run.trace.filter((r) => r.label.startsWith(label)).map((r) => `${r.kind} +${r.timeMs - start}`);
  assert.deepEqual(at("get"), ["request +150", "response +150"], "q's read is not held back by p's pause");
  assert.deepEqual(at("timer"), [], "the withdrawn timer never fires");
});

// kernel.ts lines 721-940 (mutation survivors)

const namespaceNs = { apiVersion: "v1", kind: "Namespace", name: "ns" } as const;

/** Records what each ready step's origin was the first time a strategy saw it, keyed by kind and label. */
const originRecorder = () => {
  const seen = new Map<string, ReadyStep["origin"]>();
  const strategy = {
    name: "recording",
    next: (ready: readonly ReadyStep[]) => {
      for (const step of ready) if (!seen.has(`${step.kind} ${step.label}`)) seen.set(`${step.kind} ${step.label}`, step.origin);
      return 0;
    },
  };
  return { seen, strategy };
};

test("timers and delayed responses carry their origin: ready when due, made by the step that set them, after what it enqueued, in the order set", async () => {
  const originsOf = async (stepOrigins: boolean) => {
    const s = createSimulation({ seed: 1, stepOrigins, requestLatencyMs: [5, 5] });
    s.store.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: "ns" } });
    s.addActor(
      defineActor({
        name: "w",
        async start(ctx) {
          ctx.clock.setTimer(10, () => {});
          ctx.clock.setTimer(20, () => {});
          await ctx.client.get(namespaceNs);
        },
      }),
    );
    const epoch = s.clock.now();
    const { seen, strategy } = originRecorder();
    const run = await s.run({ strategy });
    assert.equal(run.status, "idle", run.message);
    return { seen, epoch };
  };
  const off = await originsOf(false);
  assert.deepEqual([...off.seen.values()], [undefined, undefined, undefined, undefined, undefined], "no step has an origin unless asked");
  const { seen, epoch } = await originsOf(true);
  const start = seen.get("start start w");
  const request = seen.get("request get Namespace ns");
  assert.ok(start !== undefined && start.parent === undefined, "the start is made outside any step");
  assert.deepEqual(request, { readyMs: epoch, parent: start, index: 0 }, "the request is the first step the start enqueued");
  assert.deepEqual(seen.get("timer timer 10ms"), { readyMs: epoch + 10, parent: start, index: timerIndexBase }, "the first timer set");
  assert.deepEqual(seen.get("timer timer 20ms"), { readyMs: epoch + 20, parent: start, index: timerIndexBase + 1 }, "the second timer set");
  assert.deepEqual(seen.get("response get Namespace ns"), { readyMs: epoch + 5, parent: request, index: timerIndexBase }, "a delayed response is its request's first timer");
});

test("a fault's origin is made outside any step, after the set-up's and the earlier faults': a crash's restart is its first timer", async () => {
  const s = createSimulation({ seed: 1, stepOrigins: true });
  for (const name of ["a", "b"]) s.addActor(defineActor({ name, restartDelayMs: 100, start: (ctx) => ctx.clock.sleep(50) }));
  const epoch = s.clock.now();
  const { seen, strategy } = originRecorder();
  const faults: PlannedFault[] = [
    { atStep: 2, kind: "crash", target: "a" },
    { atStep: 2, kind: "crash", target: "b" },
  ];
  const run = await s.run({ strategy, faults });
  assert.equal(run.status, "idle", run.message);
  assert.deepEqual(
    ["a", "b"].map((name) => seen.get(`start start ${name}`)),
    [
      { readyMs: epoch, parent: undefined, index: 0 },
      { readyMs: epoch, parent: undefined, index: 1 },
    ],
  );
  assert.deepEqual(
    ["a", "b"].map((name) => seen.get(`start restart ${name}`)),
    [
      { readyMs: epoch + 100, parent: { readyMs: epoch, parent: undefined, index: 2 }, index: timerIndexBase },
      { readyMs: epoch + 100, parent: { readyMs: epoch, parent: undefined, index: 3 }, index: timerIndexBase },
    ],
  );
});

test("a pause that ends before the next timer wakes the simulation when it ends, not at the timer", async () => {
  const s = make();
  s.addActor(defineActor({ name: "a", start: (ctx) => ctx.clock.sleep(10) }));
  s.addActor(defineActor({ name: "b", start: (ctx) => ctx.clock.sleep(1000) }));
  const run = await s.run({ strategy: fifoStrategy(), faults: [{ atStep: 2, kind: "pause", target: "a", durationMs: 50 }] });
  assert.equal(run.status, "idle", run.message);
  const pause = run.trace.find((r) => r.kind === "fault")!;
  const woke = run.trace.find((r) => r.actor === "a" && r.label === "sleep 10ms")!;
  assert.equal(woke.timeMs - pause.timeMs, 50);
});

/**
 * Actor a keeps the context of its first incarnation and sleeps; actor b, 50 ms in, reads a namespace through that
 * context: a call of a's made inside b's step.
 */
function addBorrowedCall(s: Simulation, lender: { restartDelayMs?: number } = {}): void {
  let lent: ActorContext | undefined;
  s.addActor(
    defineActor({
      name: "a",
      ...lender,
      async start(ctx) {
        lent ??= ctx;
        await ctx.clock.sleep(1000);
      },
    }),
  );
  s.addActor(
    defineActor({
      name: "b",
      async start(ctx) {
        await ctx.clock.sleep(50);
        void lent!.client.get(namespaceNs);
        await ctx.clock.sleep(10);
      },
    }),
  );
}

test("a call through a crashed incarnation's context is dropped: nothing is sent and the run goes on", async () => {
  const s = make();
  addBorrowedCall(s, { restartDelayMs: 100 });
  const run = await s.run({ strategy: fifoStrategy(), faults: [{ atStep: 2, kind: "crash", target: "a" }] });
  assert.equal(run.status, "idle", run.message);
  assert.ok(!run.trace.some((r) => r.kind === "request"), run.trace.map((r) => r.label).join(", "));
});

test("an actor's call made inside another actor's step is reported as awaiting the outside, by the caller's name", async () => {
  const s = make();
  addBorrowedCall(s);
  const run = await s.run({ strategy: fifoStrategy() });
  assert.equal(run.status, "outside-await");
  assert.equal(run.actor, "a");
  assert.equal(run.message, "actor a awaited something outside the simulation at step 2");
});

test("an actor that awaits the outside has its own explanation added to the report", async () => {
  const s = make();
  s.addActor(
    defineActor({
      name: "canary",
      explainOutsideAwait: () => "it waits on a real timer",
      async start() {
        // Unref'd so it cannot hold the test process open once the run has reported it.
        await new Promise((resolve) => setTimeout(resolve, 10_000).unref());
      },
    }),
  );
  const run = await s.run({ strategy: fifoStrategy() });
  assert.equal(run.status, "outside-await");
  assert.equal(run.message, "actor canary awaited something outside the simulation at step 0: it waits on a real timer");
});

test("a log line is recorded right after the record of the step it was written in", async () => {
  const s = make();
  s.addActor(
    defineActor({
      name: "w",
      async start(ctx) {
        ctx.log("started");
        await ctx.clock.sleep(10);
        ctx.log("woke");
      },
    }),
  );
  const run = await s.run({ strategy: fifoStrategy() });
  assert.equal(run.status, "idle", run.message);
  assert.deepEqual(
    run.trace.map((r) => [r.step, r.kind, r.label]),
    [
      [0, "start", "start w"],
      [0, "log", "started"],
      [1, "timer", "sleep 10ms"],
      [1, "log", "woke"],
    ],
  );
});

test("a request's record names the object it addressed", async () => {
  const s = make();
  s.addActor(defineActor({ name: "w", start: (ctx) => ctx.client.get(namespaceNs).then(() => {}) }));
  const run = await s.run({ strategy: fifoStrategy() });
  const request = run.trace.find((r) => r.kind === "request");
  assert.ok(request?.ref !== undefined, JSON.stringify(request));
  assert.equal(request.label, `get ${request.ref}`);
});

/** Runs everything else before garbage collection, and records the labels of the ready steps at each choice. */
const gcLast = () => {
  const readyLabels: string[][] = [];
  const strategy = {
    name: "gc-last",
    next: (ready: readonly ReadyStep[]) => {
      readyLabels.push(ready.map((step) => step.label));
      const other = ready.findIndex((step) => step.kind !== "gc");
      return other === -1 ? 0 : other;
    },
  };
  return { readyLabels, strategy };
};

const configMap = (name: string, owner?: KubeObject) => ({
  object: {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: {
      namespace: "ns",
      name,
      ...(owner === undefined ? {} : { ownerReferences: [{ apiVersion: "v1", kind: "ConfigMap", name: owner.metadata.name!, uid: owner.metadata.uid! }] }),
    },
  },
});
const configMapRef = (name: string) => ({ apiVersion: "v1", kind: "ConfigMap", namespace: "ns", name });

test("one garbage collection is queued at a time, and it queues the next while garbage remains: two dependents take two", async () => {
  const s = make();
  s.addActor(
    defineActor({
      name: "w",
      async start(ctx) {
        const owner = await ctx.client.create<KubeObject>(configMap("owner"));
        await ctx.client.create(configMap("one", owner));
        await ctx.client.create(configMap("two", owner));
        await ctx.client.delete(configMapRef("owner"));
        await ctx.client.create(configMap("unrelated"));
      },
    }),
  );
  const { strategy } = gcLast();
  const run = await s.run({ strategy });
  assert.equal(run.status, "idle", run.message);
  const gc = run.trace.filter((r) => r.kind === "gc");
  assert.equal(gc.length, 2, JSON.stringify(gc.map((r) => r.result)));
  assert.ok(!gc.some((r) => r.result === "nothing"), JSON.stringify(gc.map((r) => r.result)));
  assert.deepEqual(
    ["one", "two", "unrelated"].map((name) => s.view().get(configMapRef(name)) !== undefined),
    [false, false, true],
  );
});

test("garbage collection is ready as soon as a write leaves garbage, and says so when someone else removed it first", async () => {
  const s = make();
  s.addActor(
    defineActor({
      name: "w",
      async start(ctx) {
        const owner = await ctx.client.create<KubeObject>(configMap("owner"));
        await ctx.client.create(configMap("dependent", owner));
        await ctx.client.delete(configMapRef("owner"));
        await ctx.client.delete(configMapRef("dependent"));
      },
    }),
  );
  const { readyLabels, strategy } = gcLast();
  const run = await s.run({ strategy });
  assert.equal(run.status, "idle", run.message);
  const deleted = run.trace.find((r) => r.kind === "request" && r.label === "delete ConfigMap ns/owner")!;
  assert.ok(readyLabels[deleted.step + 1]!.includes("collect garbage"), JSON.stringify(readyLabels[deleted.step + 1]));
  assert.deepEqual(
    run.trace.filter((r) => r.kind === "gc").map((r) => r.result),
    ["nothing"],
  );
});

test("a log line written between steps is recorded at once, ahead of the next step's record", async () => {
  const s = make();
  let w: ActorContext | undefined;
  s.addActor(
    defineActor({
      name: "w",
      async start(ctx) {
        w = ctx;
        await ctx.clock.sleep(10);
      },
    }),
  );
  // A strategy runs between steps: what it makes an actor write belongs to no step.
  const strategy = {
    name: "logging",
    next: (_ready: readonly ReadyStep[], _rng: unknown, step: number) => {
      if (step === 1) w!.log("between");
      return 0;
    },
  };
  const run = await s.run({ strategy });
  assert.equal(run.status, "idle", run.message);
  assert.deepEqual(
    run.trace.map((r) => [r.step, r.kind, r.label]),
    [
      [0, "start", "start w"],
      [1, "log", "between"],
      [1, "timer", "sleep 10ms"],
    ],
  );
});

test("a garbage collection that fails is tried again as the next step, though it changed nothing", async () => {
  let refusals = 1;
  const refuseOnce = {
    name: "refuse-once",
    validate: (request: AdmissionRequest) => {
      if (request.operation === "DELETE" && request.oldObject?.metadata.name === "dependent" && refusals-- > 0) throw internalError("not now");
    },
  };
  const s = createSimulation({ seed: 1, admission: [refuseOnce] });
  s.store.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: "ns" } });
  s.addActor(
    defineActor({
      name: "w",
      async start(ctx) {
        const owner = await ctx.client.create<KubeObject>(configMap("owner"));
        await ctx.client.create(configMap("dependent", owner));
        await ctx.client.delete(configMapRef("owner"));
      },
    }),
  );
  const run = await s.run({ strategy: fifoStrategy() });
  assert.equal(run.status, "idle", run.message);
  const gc = run.trace.filter((r) => r.kind === "gc");
  assert.deepEqual(
    gc.map((r) => r.result),
    ["gc: delete ConfigMap ns/dependent (its owners are gone): failed: not now", "gc: delete ConfigMap ns/dependent (its owners are gone)"],
  );
  assert.equal(gc[1]!.step, gc[0]!.step + 1);
  assert.equal(s.view().get(configMapRef("dependent")), undefined);
});
