// A module controller (a Node program run in the simulator) reads its machine's wall clock through `Date`, which the
// guards answer per actor: a clock skew moves its `Date.now()` and `new Date()` as it moves `ctx.clock.now()`
// (issue 47 item 2, the module layer).
import { test } from "node:test";
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { createSimulation, fifoStrategy } from "../../src/sim/index.ts";
import { moduleActor } from "../../src/module/actor.ts";

const program = fileURLToPath(new URL("./fixtures/reads-clock.mjs", import.meta.url));

test("a module controller's Date.now() and new Date() read its machine's skewed wall clock; another's stay true", async () => {
  const sim = createSimulation({ seed: 1 });
  sim.addActor(moduleActor({ name: "skewed", module: program }));
  sim.addActor(moduleActor({ name: "true", module: program }));
  const start = sim.clock.now();
  const run = await sim.run({ strategy: fifoStrategy(), faults: [{ atStep: 0, kind: "clock-skew", target: "skewed", offsetMs: -7000 }], untilMs: start + 5000 });
  assert.equal(run.status, "until", run.message);
  const readings = run.trace.filter((r) => r.kind === "log" && r.label.startsWith("{")).map((r) => ({ actor: r.actor, at: r.timeMs, ...(JSON.parse(r.label) as { now: number; date: number }) }));
  assert.equal(readings.length, 4, JSON.stringify(run.trace.filter((r) => r.kind === "log")));
  for (const r of readings) {
    const offset = r.actor === "skewed" ? -7000 : 0;
    assert.equal(r.now, r.at + offset, `${r.actor} Date.now()`);
    assert.equal(r.date, r.at + offset, `${r.actor} new Date()`);
  }
});

test("a clock step moves a module controller's Date, never its performance.now, process.hrtime or process.uptime", async () => {
  const stepped = fileURLToPath(new URL("./fixtures/reads-clocks-across-step.mjs", import.meta.url));
  const sim = createSimulation({ seed: 1 });
  sim.addActor(moduleActor({ name: "stepped", module: stepped }));
  const start = sim.clock.now();
  // The step comes after the first reading (the start, then its log), before the interval's first tick.
  const run = await sim.run({ strategy: fifoStrategy(), faults: [{ atStep: 2, kind: "clock-step", target: "stepped", deltaMs: 60_000 }], untilMs: start + 3500 });
  assert.equal(run.status, "until", run.message);
  const stepAt = run.trace.findIndex((r) => r.kind === "fault" && r.fault?.kind === "clock-step");
  assert.ok(stepAt > 0, "the step was applied");
  const readings = run.trace
    .map((r, i) => ({ r, i }))
    .filter(({ r }) => r.kind === "log" && r.label.startsWith("{"))
    .map(({ r, i }) => ({ at: r.timeMs, stepped: i > stepAt, ...(JSON.parse(r.label) as { wall: number; perf: number; hr: number; up: number }) }));
  assert.ok(readings.some((r) => !r.stepped) && readings.filter((r) => r.stepped).length >= 2, JSON.stringify(readings));
  for (const r of readings) {
    assert.equal(r.wall, r.at + (r.stepped ? 60_000 : 0), "the wall clock is a minute ahead from the step on");
    for (const monotonic of [r.perf, r.hr, r.up]) assert.equal(Math.round(monotonic), r.at - start, "monotonic time keeps counting from the start at the true rate");
  }
});
