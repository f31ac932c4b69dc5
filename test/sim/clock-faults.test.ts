// Clock faults (issue 47): an actor's wall clock may be skewed or stepped; only wall readings move (the actor's
// `clock.now()` and `Date` under the guards), never its timers, sleeps or monotonic readings, nor the store's
// timestamps; the offset belongs to the machine and survives a crash.
import { test } from "node:test";
import assert from "node:assert/strict";
import type { KubeObject } from "../../src/api/object.ts";
import { createSimulation, defineActor, fifoStrategy, type ActorContext, type PlannedFault, type TraceRecord } from "../../src/sim/index.ts";
import { faultParamErrors } from "../../src/api/faults.ts";
import { defaultFaultBudget } from "../../src/explore/scenario.ts";

interface Reading {
  incarnation: number;
  wall: number;
  date: number;
  newDate: number;
  monotonic: number;
}

/** An actor that reads every clock, sleeps a second, reads again, writes a ConfigMap, then sleeps long. */
function reader(name: string, readings: Reading[]) {
  const read = (ctx: ActorContext) =>
    readings.push({ incarnation: ctx.incarnation, wall: ctx.clock.now(), date: Date.now(), newDate: new Date().getTime(), monotonic: ctx.clock.monotonic!() });
  return defineActor({
    name,
    restartDelayMs: 500,
    async start(ctx) {
      read(ctx);
      await ctx.clock.sleep(1000);
      read(ctx);
      await ctx.client.create({ object: { apiVersion: "v1", kind: "ConfigMap", metadata: { namespace: "ns", name: `${name}-${ctx.incarnation}` } } });
      await ctx.clock.sleep(60_000);
    },
  });
}

function world(seed = 1) {
  const s = createSimulation({ seed });
  s.store.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: "ns" } });
  return s;
}

test("clock-skew moves only the target's wall readings (clock.now, Date.now, new Date); timers, monotonic time and the store's stamps stay true", async () => {
  const s = world();
  const skewed: Reading[] = [];
  const straight: Reading[] = [];
  s.addActor(reader("a", skewed));
  s.addActor(reader("b", straight));
  const start = s.clock.now();
  const run = await s.run({ strategy: fifoStrategy(), faults: [{ atStep: 0, kind: "clock-skew", target: "a", offsetMs: 12_000 }], untilMs: start + 10_000 });
  assert.equal(run.status, "until");
  const fault = run.trace.find((r) => r.kind === "fault")!;
  assert.equal(fault.result, "wall clock 12 s ahead");
  assert.deepEqual(fault.fault, { kind: "clock-skew", target: "a", applied: true, clockOffsetMs: 12_000 });
  for (const r of skewed) {
    assert.equal(r.wall, r.monotonic + 12_000);
    assert.equal(r.date, r.wall);
    assert.equal(r.newDate, r.wall);
  }
  for (const r of straight) assert.deepEqual([r.wall, r.date, r.newDate], [r.monotonic, r.monotonic, r.monotonic]);
  // The sleep of a second took a second on both clocks: timers keep the true rate.
  assert.equal(skewed[1]!.monotonic - skewed[0]!.monotonic, 1000);
  assert.equal(skewed[1]!.wall - skewed[0]!.wall, 1000);
  // The API server stamps with its own clock, not the writer's.
  const created = s.view().get({ apiVersion: "v1", kind: "ConfigMap", namespace: "ns", name: "a-0" }) as KubeObject;
  const stamped = Date.parse(created.metadata.creationTimestamp!);
  assert.ok(Math.abs(stamped - skewed[1]!.monotonic) < 1000, `creationTimestamp ${created.metadata.creationTimestamp} is on the server's clock`);
});

test("clock-step adds to the offset the clock had; a crash keeps the machine's offset", async () => {
  const s = world();
  const readings: Reading[] = [];
  s.addActor(reader("a", readings));
  const start = s.clock.now();
  const faults: PlannedFault[] = [
    { atStep: 0, kind: "clock-skew", target: "a", offsetMs: -5000 },
    { atStep: 0, kind: "clock-step", target: "a", deltaMs: 2000 },
    // After the create (steps: 0 start, 1 sleep timer, 2 create request ...): a crash, then a step back.
    { atStep: 4, kind: "crash", target: "a" },
    { atStep: 4, kind: "clock-step", target: "a", deltaMs: -1000 },
  ];
  const run = await s.run({ strategy: fifoStrategy(), faults, untilMs: start + 10_000 });
  const results = run.trace.filter((r: TraceRecord) => r.kind === "fault").map((r) => r.result);
  assert.deepEqual(results, ["wall clock 5 s behind", "wall clock 3 s behind", "crashed, restart in 500ms", "wall clock 4 s behind"]);
  assert.deepEqual(
    readings.map((r) => [r.incarnation, r.wall - r.monotonic]),
    [
      [0, -3000],
      [0, -3000],
      [1, -4000],
      [1, -4000],
    ],
  );
});

test("a clock fault aimed at no actor is skipped; its parameters are checked against the fault model", async () => {
  const s = world();
  s.addActor(reader("a", []));
  const run = await s.run({ strategy: fifoStrategy(), faults: [{ atStep: 0, kind: "clock-skew", target: "nobody", offsetMs: 1000 }], untilMs: s.clock.now() + 2000 });
  assert.equal(run.trace.find((r) => r.kind === "fault")!.result, "skipped: no actor nobody");
  assert.deepEqual(faultParamErrors("clock-skew", { offsetMs: 1.5 }).map((e) => e.field), ["offsetMs"]);
  assert.deepEqual(faultParamErrors("clock-step", { deltaMs: -86_400_001 }).map((e) => e.field), ["deltaMs"]);
  assert.deepEqual(faultParamErrors("clock-step", { deltaMs: -30_000 }), []);
});

test("a budget with clockSkewMs draws at most one skew per run from a stream of its own: every other fault of the run is drawn as without it", async () => {
  const kinds = new Map<string, number>();
  let skews = 0;
  for (let seed = 1; seed <= 40; seed++) {
    const runOnce = async (clockSkewMs: number | undefined) => {
      const s = world(seed);
      s.addActor(reader("a", []));
      s.addActor(reader("b", []));
      const budget = { ...defaultFaultBudget, chance: [1, 4] as const, ...(clockSkewMs === undefined ? { clockSkewMs: 0 } : { clockSkewMs }) };
      return s.run({ faultBudget: budget, untilMs: s.clock.now() + 20_000 });
    };
    const without = await runOnce(undefined);
    const withSkew = await runOnce(30_000);
    const skew = withSkew.faults.filter((f) => f.kind === "clock-skew");
    assert.ok(skew.length <= 1);
    assert.deepEqual(
      withSkew.faults.filter((f) => f.kind !== "clock-skew"),
      without.faults,
      `seed ${seed}: the other faults are drawn as without a skew`,
    );
    for (const f of skew) {
      skews++;
      assert.equal(f.atStep, 0);
      assert.ok(f.target === "a" || f.target === "b");
      const offset = f["offsetMs"] as number;
      assert.ok(offset !== 0 && Math.abs(offset) <= 30_000, `offset ${offset}`);
      kinds.set(offset > 0 ? "ahead" : "behind", (kinds.get(offset > 0 ? "ahead" : "behind") ?? 0) + 1);
    }
    if (skew.length === 0) assert.equal(withSkew.traceHash, without.traceHash, `seed ${seed}: a run that draws no skew is the run it was`);
  }
  assert.ok(skews > 10 && skews < 30, `about one run in two draws a skew (${skews} of 40)`);
  assert.ok((kinds.get("ahead") ?? 0) > 0 && (kinds.get("behind") ?? 0) > 0);
});

test("a clock set to true, at once or after a skew, reads true and counts as skewed no more: setting it again changes nothing", async () => {
  const s = world();
  const readings: Reading[] = [];
  s.addActor(reader("a", readings));
  const faults: PlannedFault[] = [
    { atStep: 0, kind: "clock-skew", target: "a", offsetMs: 0 },
    { atStep: 0, kind: "clock-skew", target: "a", offsetMs: 0 },
    { atStep: 0, kind: "clock-skew", target: "a", offsetMs: 3000 },
    { atStep: 0, kind: "clock-skew", target: "a", offsetMs: 0 },
    { atStep: 0, kind: "clock-skew", target: "a", offsetMs: 0 },
  ];
  const run = await s.run({ strategy: fifoStrategy(), faults, untilMs: s.clock.now() + 2000 });
  assert.equal(run.status, "until", run.message);
  const results = run.trace.filter((r) => r.kind === "fault").map((r) => r.result);
  assert.deepEqual(results, ["wall clock true", "wall clock true", "wall clock 3 s ahead", "wall clock true", "wall clock true"]);
  assert.ok(readings.length === 2 && readings.every((r) => r.wall === r.monotonic && r.date === r.monotonic), JSON.stringify(readings));
});
