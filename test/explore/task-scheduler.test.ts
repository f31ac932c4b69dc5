// The task scheduler of the bounded search on worker threads (src/explore/task-scheduler.ts), driven by hand: tasks
// go out once each in search order, results fold into the tally in search order whatever order they come back in,
// and with `first` nothing after the task that stopped at a finding is kept, even a root's task that was out then.
import { test } from "node:test";
import assert from "node:assert/strict";
import fixture from "../fixtures/bounded/scenario.ts";
import type { Search, TaskResult } from "../../src/explore/bounded-search.ts";
import { SearchTally } from "../../src/explore/tally.ts";
import { TaskScheduler, type Place } from "../../src/explore/task-scheduler.ts";
import type { BoundedStats } from "../../src/explore/types.ts";

/** Four roots (four workloads, no fault point), no preemption: every task is a root's own run, without children. */
const bounds: BoundedStats = { complete: false, preemptions: 0, faultPoints: 0, reduction: true, schedules: 0, pruned: 0, placements: 0, placementsTotal: 4, runs: 0, latencyMs: 5 };

function search(first: boolean): Search {
  const options = { scenarioPath: "scenario.ts", variant: "racy", params: {}, runs: Number.POSITIVE_INFINITY, seed: 1, workers: 2, strategy: "bounded" as const, first };
  const workloads = ["a", "b", "c", "d"].map((workload) => ({ workload, pointIndexes: [] }));
  return { scenario: fixture, options, bounds, preemptions: 0, reduce: true, byOrigin: true, workloads, points: [] };
}

/** A root's task result: its one schedule, a finding when `finding` is given, and whether it stopped there (with `first`). */
function rootResult(root: number, finding?: string, stopped = false): TaskResult {
  const stats = { ...bounds, schedules: 1, placements: 1, runs: 1 };
  const verdict = { kind: "silent-divergence" as const, step: 3, elapsedMs: 1, detail: "test", property: finding ?? "" };
  const run = { index: 0, strategy: "bounded", workload: "a", seed: 1, verdict, steps: 3, choices: [], faults: [], traceHash: "", counters: [] };
  const found = finding === undefined ? [] : [{ key: finding, run, position: { root, choices: [] }, occurrences: 1 }];
  return { children: [], state: { root, stack: [], stats, steps: 3, counters: [], found, pointsCovered: [], units: [[root, -1, -1, 1]] }, stoppedAtFinding: stopped };
}

function handOut(scheduler: TaskScheduler, count: number): Place[] {
  return Array.from({ length: count }, () => scheduler.handOut()!);
}

test("tasks go out once each in search order, and results fold in search order whatever order they come back in", () => {
  const tally = SearchTally.empty(bounds);
  const scheduler = new TaskScheduler(search(false), tally, 0, []);
  const places = handOut(scheduler, 4);
  assert.deepEqual(places.map((p) => scheduler.task(p)), [{ root: 0 }, { root: 1 }, { root: 2 }, { root: 3 }]);
  assert.equal(scheduler.handOut(), undefined, "nothing left to hand out");
  scheduler.done(places[2]!, rootResult(2, "b-key"));
  scheduler.done(places[1]!, rootResult(1, "a-key"));
  assert.equal(tally.stats.schedules, 0, "nothing folds before root 0");
  scheduler.done(places[0]!, rootResult(0));
  assert.equal(tally.stats.schedules, 3);
  assert.deepEqual(tally.found.map((f) => [f.key, f.run.index]), [["a-key", 1], ["b-key", 2]], "findings in search order, with the search's run indexes");
  scheduler.done(places[3]!, rootResult(3));
  assert.equal(scheduler.stoppedBy(), undefined);
  assert.deepEqual(tally.units, [[0, -1, -1, 1], [1, -1, -1, 1], [2, -1, -1, 1], [3, -1, -1, 1]]);
});

test("with first, a root's task that comes back after the finding's root has folded is not kept", () => {
  const tally = SearchTally.empty(bounds);
  const scheduler = new TaskScheduler(search(true), tally, 0, []);
  const places = handOut(scheduler, 3);
  scheduler.done(places[0]!, rootResult(0));
  scheduler.done(places[1]!, rootResult(1, "found", true));
  assert.equal(scheduler.handOut(), undefined, "nothing after the finding goes out");
  // Root 2's task was out when root 1 stopped at its finding; the one-thread search never ran it.
  scheduler.done(places[2]!, rootResult(2));
  assert.equal(scheduler.stoppedBy(), "first");
  assert.equal(tally.stats.schedules, 2, "the one-thread search's schedules: roots 0 and 1");
  assert.equal(scheduler.root, 2);
});
