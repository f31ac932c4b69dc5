// Simulation workers get a larger young generation than V8's default (fewer short-lived objects promoted): the
// largest for a worker with one run, a middle one for a worker with many, scaled down where memory per core is short.
import { test } from "node:test";
import assert from "node:assert/strict";
import { workerYoungGenerationMb } from "../../src/explore/runs.ts";

const gib = 2 ** 30;

test("a worker with one run gets the largest young generation, one with many runs a middle one", () => {
  assert.equal(workerYoungGenerationMb({ runsPerWorker: 1, memoryBytes: 24 * gib, cores: 2 }), 192);
  assert.equal(workerYoungGenerationMb({ runsPerWorker: 1, memoryBytes: 256 * gib, cores: 64 }), 192);
  assert.equal(workerYoungGenerationMb({ runsPerWorker: 500, memoryBytes: 24 * gib, cores: 2 }), 96);
});

test("a worker's young generation shrinks to a sixteenth of the memory per core, never below V8's default", () => {
  assert.equal(workerYoungGenerationMb({ runsPerWorker: 1, memoryBytes: 64 * gib, cores: 64 }), 64);
  assert.equal(workerYoungGenerationMb({ runsPerWorker: 500, memoryBytes: 64 * gib, cores: 64 }), 64);
  assert.equal(workerYoungGenerationMb({ runsPerWorker: 1, memoryBytes: 16 * gib, cores: 128 }), 48);
  assert.equal(workerYoungGenerationMb({ runsPerWorker: 1, memoryBytes: 2 * gib, cores: 8 }), 48);
});
