// The process's one registry of hubs (src/module/hub.ts): a simulation's hub holds its connections; a crashed
// incarnation leaves none behind; the next simulation's first module drops every connection of the one before, so
// none of them serves it. Seeds pinned; the operator is the client-node fixture.
import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { createSimulation, fifoStrategy } from "../../src/sim/index.ts";
import { moduleActor } from "../../src/module/actor.ts";
import { hubs } from "../../src/module/hub.ts";

const operator = join(fileURLToPath(new URL(".", import.meta.url)), "fixtures/client-node-operator.mjs");

async function runFor(ms: number, crashAtStep?: number) {
  const sim = createSimulation({ seed: 1 });
  sim.addActor(moduleActor({ name: "op", module: operator, args: ["--mode=level"] }));
  const faults = crashAtStep === undefined ? [] : [{ atStep: crashAtStep, kind: "crash" as const, target: "op" }];
  const result = await sim.run({ strategy: fifoStrategy(), maxSteps: 500, untilMs: sim.clock.now() + ms, faults });
  return { result, hub: hubs.active };
}

test("a crashed incarnation leaves no connection in its hub; its restart opens its own", async () => {
  // Crashed once its watch is open, so it holds connections when it drops.
  const clean = await runFor(5_000);
  const watching = clean.result.trace.find((r) => r.actor === "op" && r.kind === "response" && r.result === "200 watching");
  assert.ok(watching !== undefined, "the operator opens a watch");
  const { result, hub } = await runFor(5_000, watching.step + 1);
  assert.ok(result.trace.some((r) => r.step === watching.step + 1 && r.kind === "fault" && r.label === "crash op"), "it crashed with its watch open");
  assert.ok(result.trace.some((r) => r.kind === "start" && r.label === "restart op"), "the module restarted");
  assert.ok(hub !== undefined);
  assert.deepEqual(hub.ownerNames(), ["op"]);
  // The restarted incarnation watches on connections of its own; the first one's are gone (asserted when it dropped).
  assert.ok(hub.connectionCount > 0, "the live incarnation holds its watch's connection");
});

test("the next simulation's first module drops every connection of the one before: none of them serves it", async () => {
  const first = await runFor(3_000);
  assert.ok(first.hub !== undefined && first.hub.connectionCount > 0, "the first simulation ended with its watch open");
  const second = await runFor(3_000);
  assert.notEqual(second.hub, first.hub, "each simulation has its own hub");
  assert.equal(first.hub.connectionCount, 0, "the first simulation's connections were dropped");
  assert.deepEqual(second.result.status, first.result.status);
  // The same seed and world give the same trace: nothing of the first run reached the second.
  assert.equal(second.result.trace.length, first.result.trace.length);
});
