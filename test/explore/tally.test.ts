// The bounded search's tally (src/explore/tally.ts), the only writer of its counts: a part folded in adds its
// figures and rebases its findings' run indexes, and what must hold is asserted (units in search order, a finding key
// once, the same bounds).
import { test } from "node:test";
import assert from "node:assert/strict";
import { SearchTally, type TallyData } from "../../src/explore/tally.ts";
import type { BoundedStats, Unit } from "../../src/explore/types.ts";

const bounds: BoundedStats = { complete: false, preemptions: 1, faultPoints: 0, reduction: true, schedules: 0, pruned: 0, placements: 0, placementsTotal: 2, runs: 0, latencyMs: 5 };

/** A part of the search: `schedules` schedules in `units`, and a finding per key of `keys` at the part's run index 1. */
function part(units: Unit[], keys: string[] = [], stats: Partial<BoundedStats> = {}): TallyData {
  const schedules = units.reduce((n, u) => n + u[3], 0);
  const verdict = { kind: "silent-divergence" as const, step: 3, elapsedMs: 1, detail: "test" };
  const found = keys.map((key) => ({ key, run: { index: 1, strategy: "bounded", workload: "w", seed: 1, verdict, steps: 3, choices: [], faults: [], traceHash: "", counters: [] }, position: { root: units[0]![0], choices: [] }, occurrences: 1 }));
  return { stats: { ...bounds, schedules, runs: schedules + 1, pruned: 1, ...stats }, steps: 10, counters: [], found, pointsCovered: [], units };
}

test("a part folded in adds its figures and units, and its findings' run indexes follow the tally's", () => {
  const tally = SearchTally.empty(bounds);
  tally.fold(part([[0, -1, -1, 1], [0, 2, 1, 3]], ["a"]));
  tally.fold(part([[0, 4, 1, 2]], ["a", "b"]));
  assert.deepEqual({ schedules: tally.stats.schedules, runs: tally.stats.runs, pruned: tally.stats.pruned, steps: tally.steps }, { schedules: 6, runs: 8, pruned: 2, steps: 20 });
  assert.deepEqual(tally.units, [[0, -1, -1, 1], [0, 2, 1, 3], [0, 4, 1, 2]]);
  assert.deepEqual(tally.found.map((f) => [f.key, f.run.index, f.occurrences]), [["a", 1, 2], ["b", 5, 1]]);
});

test("a part that comes before what the tally holds, a finding key twice, or other bounds are refused", () => {
  const tally = SearchTally.empty(bounds);
  tally.fold(part([[1, -1, -1, 1]]));
  assert.throws(() => tally.fold(part([[0, 3, 1, 2]])), /tally-units-in-search-order/);
  assert.throws(() => tally.fold(part([[1, -1, -1, 1]])), /tally-units-in-search-order/, "a unit is met once");
  assert.throws(() => tally.fold(part([[1, 2, 1, 1]], ["a", "a"])), /tally-finding-once/);
  assert.throws(() => tally.fold(part([[1, 2, 1, 1]], [], { preemptions: 2 })), /tally-same-bounds/);
  assert.throws(() => new SearchTally(part([[0, 2, 1, 1], [0, 1, 1, 1]])), /tally-units-in-search-order/, "a checkpoint's units too");
  assert.equal(tally.stats.schedules, 1, "nothing refused was counted");
});

test("a search finishes once, and a finished search counts no more runs", () => {
  const tally = SearchTally.empty(bounds);
  tally.runStarted();
  tally.finish(undefined);
  assert.equal(tally.stats.complete, true);
  assert.throws(() => tally.runStarted(), /a complete search starts no run/);
  assert.throws(() => tally.finish("budget"), /a search finishes once/);
});
