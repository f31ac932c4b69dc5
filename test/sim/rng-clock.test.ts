import { test } from "node:test";
import assert from "node:assert/strict";
import { Rng, VirtualClock, DEFAULT_EPOCH_MS, replayStrategy, pctStrategy } from "../../src/sim/index.ts";

test("an rng gives the same draws for the same seed and stays within its bounds", () => {
  const a = new Rng(42);
  const b = new Rng(42);
  const drawsA = Array.from({ length: 200 }, () => a.int(7));
  const drawsB = Array.from({ length: 200 }, () => b.int(7));
  assert.deepEqual(drawsA, drawsB);
  assert.ok(drawsA.every((n) => Number.isInteger(n) && n >= 0 && n < 7));
  assert.equal(new Set(drawsA).size, 7);
  assert.notDeepEqual(Array.from({ length: 20 }, () => new Rng(43).int(1000)), drawsA.slice(0, 20));
});

test("a forked stream depends on the label only, not on draws made before", () => {
  const early = new Rng(1);
  const late = new Rng(1);
  for (let i = 0; i < 50; i++) late.int(100);
  const forkedEarly = early.fork("faults");
  const x = Array.from({ length: 10 }, () => forkedEarly.int(1_000_000));
  const forkedLate = late.fork("faults");
  assert.deepEqual(Array.from({ length: 10 }, () => forkedLate.int(1_000_000)), x);
  const other = early.fork("strategy");
  assert.notDeepEqual(Array.from({ length: 10 }, () => other.int(1_000_000)), x);
});

test("chance takes integer ratios, with 0 never and 1 always", () => {
  const rng = new Rng(9);
  let hits = 0;
  for (let i = 0; i < 10_000; i++) if (rng.chance(1, 4)) hits++;
  assert.ok(hits > 2200 && hits < 2800, `${hits}`);
  assert.ok(!rng.chance(0, 5));
  assert.ok(rng.chance(5, 5));
  assert.throws(() => rng.chance(0.5, 1), /chance numerator/);
});

test("pick and shuffle draw from the array deterministically", () => {
  const items = ["a", "b", "c", "d"];
  assert.deepEqual(new Rng(3).shuffle([...items]), new Rng(3).shuffle([...items]));
  assert.deepEqual(new Rng(3).shuffle([...items]).sort(), items);
  assert.ok(items.includes(new Rng(5).pick(items)));
  assert.throws(() => new Rng(5).pick([]), /non-empty/);
});

test("the virtual clock starts at 2026-01-01 and fires timers in (dueAt, sequence) order", () => {
  const clock = new VirtualClock();
  assert.equal(clock.now(), DEFAULT_EPOCH_MS);
  assert.equal(new Date(clock.now()).toISOString(), "2026-01-01T00:00:00.000Z");
  const fired: string[] = [];
  clock.setTimer(20, () => fired.push(`b@${clock.now() - DEFAULT_EPOCH_MS}`));
  clock.setTimer(10, () => fired.push(`a@${clock.now() - DEFAULT_EPOCH_MS}`));
  clock.setTimer(20, () => fired.push(`c@${clock.now() - DEFAULT_EPOCH_MS}`));
  const cancelled = clock.setTimer(15, () => fired.push("cancelled"));
  cancelled.cancel();
  clock.advance(19);
  assert.deepEqual(fired, ["a@10"]);
  assert.equal(clock.nextDueAt(), DEFAULT_EPOCH_MS + 20);
  clock.advance(1);
  assert.deepEqual(fired, ["a@10", "b@20", "c@20"]);
  assert.equal(clock.nextDueAt(), undefined);
  assert.equal(new VirtualClock({ epochMs: 5 }).now(), 5);
});

test("a virtual sleep resolves when time passes and rejects when aborted", async () => {
  const clock = new VirtualClock();
  let slept = false;
  const sleep = clock.sleep(1000).then(() => (slept = true));
  clock.advance(999);
  await Promise.resolve();
  assert.equal(slept, false);
  clock.advance(1);
  await sleep;
  assert.equal(slept, true);
  const controller = new AbortController();
  const aborted = clock.sleep(1000, { signal: controller.signal });
  controller.abort(new Error("stop"));
  await assert.rejects(aborted, /stop/);
  assert.equal(clock.pendingTimers, 0);
});

test("replay follows recorded choices and chooses 0 elsewhere", () => {
  const strategy = replayStrategy([[2, 1], [5, 3]]);
  const rng = new Rng(0);
  const ready = [{ seq: 0, actor: "a", kind: "timer" as const, label: "x" }];
  assert.deepEqual([0, 1, 2, 3, 4, 5, 6].map((step) => strategy.next(ready, rng, step)), [0, 0, 1, 0, 0, 3, 0]);
});

test("PCT runs the highest-priority actor's oldest step", () => {
  const strategy = pctStrategy({ depth: 1 });
  const rng = new Rng(1);
  const ready = [
    { seq: 0, actor: "a", kind: "timer" as const, label: "a1" },
    { seq: 1, actor: "b", kind: "timer" as const, label: "b1" },
    { seq: 2, actor: "a", kind: "timer" as const, label: "a2" },
    { seq: 3, actor: "b", kind: "timer" as const, label: "b2" },
  ];
  const first = strategy.next(ready, rng, 0);
  assert.ok(first === 0 || first === 1);
  // Priorities stay fixed without change points: the same actor keeps winning.
  const rest = ready.filter((_, i) => i !== first);
  const second = rest[strategy.next(rest, rng, 1)]!;
  assert.equal(second.actor, ready[first]!.actor);
});

test("a trace line is the JSON of the record with its keys in canonical order", async () => {
  const { canonicalLine } = await import("../../src/sim/index.ts");
  const record = { result: "ok \"quoted\"", step: 3, timeMs: 5, actor: "a", kind: "log" as const, label: "x\ny", revisionBefore: 1, revisionAfter: 2, fields: { b: 1, a: [true] }, write: false, ref: "ConfigMap ns/a" };
  const line = canonicalLine(record);
  assert.deepEqual(JSON.parse(line), { ...record, fields: { a: [true], b: 1 } });
  assert.deepEqual(Object.keys(JSON.parse(line)), ["step", "timeMs", "actor", "kind", "label", "ref", "write", "revisionBefore", "revisionAfter", "result", "fields"]);
  assert.equal(line, JSON.stringify(JSON.parse(line)));
});
