// What an incarnation's load shares with the process (src/module/loader.ts, env.ts) must not change what the module
// sees: an optional dependency that is not installed is missing again after a restart (the same error, thrown
// again), and the restarted module's own state starts fresh.
import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { createSimulation, fifoStrategy } from "../../src/sim/index.ts";
import { moduleActor } from "../../src/module/actor.ts";

const fixture = fileURLToPath(new URL("fixtures/optional-require.cjs", import.meta.url));

test("a missing optional require throws MODULE_NOT_FOUND in every incarnation, the restarted one included", async () => {
  const sim = createSimulation({ seed: 1 });
  sim.addActor(moduleActor({ name: "op", module: fixture }));
  // Step 3 is after the first incarnation's load and a tick: the crash drops it, the restart loads it again.
  const result = await sim.run({ strategy: fifoStrategy(), maxSteps: 100, untilMs: sim.clock.now() + 5_000, faults: [{ atStep: 3, kind: "crash", target: "op" }] });
  const logs = result.trace.filter((r) => r.kind === "log" && r.actor === "op").map((r) => r.label);
  const misses = logs.filter((line) => line.startsWith("optional: "));
  assert.equal(misses.length, 2, logs.join("\n"));
  assert.match(misses[0]!, /^optional: MODULE_NOT_FOUND Cannot find module 'settle-fixture-not-installed'/);
  assert.equal(misses[1], misses[0]);
  assert.deepEqual(logs.filter((line) => line.startsWith("loaded")), ["loaded 1", "loaded 1"]);
  assert.ok(result.trace.some((r) => r.kind === "start" && r.label === "restart op"), "the module restarted");
});
