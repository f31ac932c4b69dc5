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
