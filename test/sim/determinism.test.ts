import { test } from "node:test";
import assert from "node:assert/strict";
import { randomStrategy, pctStrategy, fifoStrategy } from "../../src/sim/index.ts";
import { smallWorld } from "./world.ts";

const budget = { chance: [1, 20] as const, counts: { crash: 1, "fail-request": 2, "lost-response": 1, "stale-read": 1, "delay-watch": 1, pause: 1 } };

test("the same seed gives the identical trace hash across 1,000 seeded runs, and seeds explore many interleavings", async () => {
  const hashes = new Set<string>();
  for (let seed = 0; seed < 1000; seed++) {
    const first = await smallWorld({ seed, traceMode: "hash-only" }).run({ maxSteps: 2000, faultBudget: budget });
    const second = await smallWorld({ seed, traceMode: "hash-only" }).run({ maxSteps: 2000, faultBudget: budget });
    assert.equal(second.traceHash, first.traceHash, `seed ${seed}`);
    assert.deepEqual(second.choices, first.choices, `seed ${seed}`);
    assert.equal(first.status, "idle", `seed ${seed}: ${first.message ?? ""}`);
    hashes.add(first.traceHash);
  }
  // Three actors racing over ~50 steps, with faults: nearly every seed is its own interleaving.
  assert.ok(hashes.size > 500, `only ${hashes.size} distinct traces`);
});

test("hash-only mode gives the same hash as a full trace", async () => {
  const full = await smallWorld({ seed: 7 }).run({ maxSteps: 2000 });
  const hashOnly = await smallWorld({ seed: 7, traceMode: "hash-only" }).run({ maxSteps: 2000 });
  assert.equal(hashOnly.traceHash, full.traceHash);
  assert.equal(hashOnly.trace.length, 0);
  assert.ok(full.trace.length > 20);
});

test("FIFO makes no choices and PCT is deterministic per seed", async () => {
  const fifo = await smallWorld({ seed: 3 }).run({ strategy: fifoStrategy() });
  assert.deepEqual(fifo.choices, []);
  const pctHashes = new Set<string>();
  for (let seed = 0; seed < 30; seed++) {
    const a = await smallWorld({ seed }).run({ strategy: pctStrategy({ depth: 3, stepsHint: 60 }) });
    const b = await smallWorld({ seed }).run({ strategy: pctStrategy({ depth: 3, stepsHint: 60 }) });
    assert.equal(a.traceHash, b.traceHash);
    pctHashes.add(a.traceHash);
  }
  assert.ok(pctHashes.size > 3, `pct explored only ${pctHashes.size} traces`);
});

test("replaying the recorded choices and faults reproduces the trace hash", async () => {
  for (let seed = 0; seed < 50; seed++) {
    const original = await smallWorld({ seed }).run({ strategy: randomStrategy(), faultBudget: budget });
    const replay = await smallWorld({ seed }).run({ choices: original.choices, faults: original.faults, expectTrace: original.trace });
    assert.equal(replay.status, original.status, replay.message);
    assert.equal(replay.traceHash, original.traceHash, `seed ${seed}`);
    assert.deepEqual(replay.faults, original.faults);
  }
});

test("a replay is independent of the seed's other streams: another seed with the same choices replays too", async () => {
  const original = await smallWorld({ seed: 11 }).run({ faultBudget: budget });
  const replay = await smallWorld({ seed: 99 }).run({ choices: original.choices, faults: original.faults });
  assert.equal(replay.traceHash, original.traceHash);
});

test("a replay that diverges reports the first differing step", async () => {
  const original = await smallWorld({ seed: 5 }).run({});
  assert.ok(original.choices.length > 0, "seed 5 makes some non-FIFO choice");
  const [step] = original.choices[0]!;
  const replay = await smallWorld({ seed: 5 }).run({ choices: [], expectTrace: original.trace });
  assert.equal(replay.status, "divergence");
  assert.match(replay.message ?? "", new RegExp(`^replay diverged at step ${step}: expected`));
});

test("removing faults or choices from a recorded run still gives a valid run", async () => {
  for (let seed = 0; seed < 40; seed++) {
    const original = await smallWorld({ seed }).run({ faultBudget: { ...budget, chance: [1, 4] } });
    for (let drop = 0; drop < original.faults.length; drop++) {
      const faults = original.faults.filter((_, i) => i !== drop);
      const shrunk = await smallWorld({ seed }).run({ choices: original.choices.slice(0, drop), faults });
      assert.ok(["idle", "max-steps"].includes(shrunk.status), `${shrunk.status}: ${shrunk.message ?? ""}`);
      const again = await smallWorld({ seed }).run({ choices: original.choices.slice(0, drop), faults });
      assert.equal(again.traceHash, shrunk.traceHash);
    }
  }
});

test("out-of-range replay choices are clamped to the last ready step", async () => {
  const run = await smallWorld({ seed: 0 }).run({ choices: [[0, 99], [1, 7]] });
  assert.equal(run.status, "idle");
  // Three starts are ready at step 0; carol's list joins alice and bob at step 1.
  assert.deepEqual(run.choices.slice(0, 2), [[0, 2], [1, 2]]);
});

test("a run continued in phases replays with the same phases, expected trace included", async () => {
  const phases = async (seed: number, replay?: { choices: Array<[number, number]>; faults: import("../../src/sim/index.ts").PlannedFault[]; trace: readonly import("../../src/sim/index.ts").TraceRecord[] }) => {
    const s = smallWorld({ seed });
    const first = await s.run({
      maxSteps: 25,
      ...(replay ? { choices: replay.choices, faults: replay.faults, expectTrace: replay.trace } : { faultBudget: budget }),
    });
    assert.equal(first.status, "max-steps");
    s.stopFaults();
    return s.run({ ...(replay ? { choices: replay.choices, expectTrace: replay.trace } : {}) });
  };
  for (let seed = 0; seed < 20; seed++) {
    const original = await phases(seed);
    const replay = await phases(seed, { choices: original.choices, faults: original.faults, trace: original.trace });
    assert.equal(replay.status, original.status, replay.message);
    assert.equal(replay.traceHash, original.traceHash);
  }
});
