import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { WorkQueue, exponentialRateLimiter } from "../../src/runtime/workqueue.ts";
import { ManualClock, settle } from "./manual-clock.ts";

test("a key added twice before it is taken is handed out once", async () => {
  const queue = new WorkQueue<string>({ clock: new ManualClock() });
  queue.add("a");
  queue.add("a");
  queue.add("b");
  assert.equal(queue.len(), 2);
  assert.equal(await queue.get(), "a");
  assert.equal(await queue.get(), "b");
  assert.equal(queue.len(), 0);
});

test("a key added while it is processed is handed out again only after done", async () => {
  const queue = new WorkQueue<string>({ clock: new ManualClock() });
  queue.add("a");
  const key = await queue.get();
  assert.equal(key, "a");
  queue.add("a");
  assert.equal(queue.len(), 0, "not queued while processing");
  let second: string | undefined;
  void queue.get().then((k) => (second = k));
  await settle(2);
  assert.equal(second, undefined, "no second worker gets the key");
  queue.done("a");
  await settle(2);
  assert.equal(second, "a");
});

test("get waits for a key and resolves undefined when the queue shuts down", async () => {
  const queue = new WorkQueue<string>({ clock: new ManualClock() });
  const first = queue.get();
  queue.add("x");
  assert.equal(await first, "x");
  const second = queue.get();
  queue.shutDown();
  assert.equal(await second, undefined);
  queue.add("y");
  assert.equal(queue.len(), 0, "adds after shutdown are ignored");
  assert.equal(await queue.get(), undefined);
});

test("done for a key that is not being processed is an assertion failure", () => {
  const queue = new WorkQueue<string>({ clock: new ManualClock() });
  assert.throws(() => queue.done("never"), /queue-done-only-for-processing/);
});

test("addAfter adds on the clock and keeps the earlier of two due times", async () => {
  const clock = new ManualClock();
  const queue = new WorkQueue<string>({ clock });
  queue.addAfter("a", 100);
  queue.addAfter("a", 50);
  queue.addAfter("a", 500);
  assert.equal(queue.delayedLen(), 1);
  await clock.advance(49);
  assert.equal(queue.len(), 0);
  await clock.advance(1);
  assert.equal(queue.len(), 1);
  assert.equal(queue.delayedLen(), 0);
  await clock.advance(1000);
  assert.equal(queue.len(), 1, "the cancelled timers did not add it again");
});

test("the default rate limiter doubles from 5 ms to a 1000 s cap and forget resets it", () => {
  const limiter = exponentialRateLimiter<string>();
  const delays = Array.from({ length: 4 }, () => limiter.when("k"));
  assert.deepEqual(delays, [5, 10, 20, 40]);
  assert.equal(limiter.numRequeues("k"), 4);
  for (let i = 0; i < 100; i++) limiter.when("k");
  assert.equal(limiter.when("k"), 1_000_000);
  limiter.forget("k");
  assert.equal(limiter.numRequeues("k"), 0);
  assert.equal(limiter.when("k"), 5);
});

test("addRateLimited waits the limiter's delay and numRequeues counts retries", async () => {
  const clock = new ManualClock();
  const queue = new WorkQueue<string>({ clock, rateLimiter: exponentialRateLimiter({ baseDelayMs: 10, maxDelayMs: 40 }) });
  queue.addRateLimited("a");
  queue.addRateLimited("a");
  assert.equal(queue.numRequeues("a"), 2);
  await clock.advance(9);
  assert.equal(queue.len(), 0);
  await clock.advance(1);
  assert.equal(queue.len(), 1, "the earlier due time (10 ms) wins over the later one (20 ms)");
  queue.forget("a");
  assert.equal(queue.numRequeues("a"), 0);
});

test("shutDownWithDrain hands out queued keys and resolves when processing is done", async () => {
  const queue = new WorkQueue<string>({ clock: new ManualClock() });
  queue.add("a");
  queue.add("b");
  const a = await queue.get();
  let drained = false;
  void queue.shutDownWithDrain().then(() => (drained = true));
  assert.equal(await queue.get(), "b");
  assert.equal(await queue.get(), undefined);
  queue.done("b");
  await settle(2);
  assert.equal(drained, false, "a is still processing");
  queue.done(a as string);
  await settle(2);
  assert.equal(drained, true);
});

// A model of the queue: the same operations over plain sets and arrays, with time as a number.
interface Model {
  queue: string[];
  dirty: Set<string>;
  processing: string[];
  delayed: Map<string, { dueAtMs: number; sequence: number }>;
  nowMs: number;
  sequence: number;
}

function modelAdd(m: Model, key: string): void {
  if (m.dirty.has(key)) return;
  m.dirty.add(key);
  if (!m.processing.includes(key)) m.queue.push(key);
}

function modelAdvance(m: Model, ms: number): void {
  const targetMs = m.nowMs + ms;
  const due = [...m.delayed.entries()]
    .filter(([, d]) => d.dueAtMs <= targetMs)
    .sort(([, x], [, y]) => x.dueAtMs - y.dueAtMs || x.sequence - y.sequence);
  for (const [key] of due) {
    m.delayed.delete(key);
    modelAdd(m, key);
  }
  m.nowMs = targetMs;
}

type Op =
  | { op: "add"; key: string }
  | { op: "addAfter"; key: string; ms: number }
  | { op: "get" }
  | { op: "done"; index: number }
  | { op: "advance"; ms: number };

const keyArb = fc.constantFrom("a", "b", "c", "d");
const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ op: fc.constant("add" as const), key: keyArb }),
  fc.record({ op: fc.constant("addAfter" as const), key: keyArb, ms: fc.integer({ min: 0, max: 50 }) }),
  fc.record({ op: fc.constant("get" as const) }),
  fc.record({ op: fc.constant("done" as const), index: fc.nat({ max: 3 }) }),
  fc.record({ op: fc.constant("advance" as const), ms: fc.integer({ min: 1, max: 40 }) }),
);

test("the queue behaves like its model under any sequence of operations", async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(opArb, { maxLength: 60 }), async (ops) => {
      const clock = new ManualClock(0);
      const queue = new WorkQueue<string>({ clock });
      const m: Model = { queue: [], dirty: new Set(), processing: [], delayed: new Map(), nowMs: 0, sequence: 0 };
      for (const op of ops) {
        if (op.op === "add") {
          queue.add(op.key);
          modelAdd(m, op.key);
        } else if (op.op === "addAfter") {
          queue.addAfter(op.key, op.ms);
          if (op.ms <= 0) modelAdd(m, op.key);
          else {
            const dueAtMs = m.nowMs + op.ms;
            const existing = m.delayed.get(op.key);
            if (existing === undefined || existing.dueAtMs > dueAtMs) m.delayed.set(op.key, { dueAtMs, sequence: m.sequence++ });
          }
        } else if (op.op === "get") {
          if (m.queue.length === 0) continue; // a get on an empty queue would wait; the unit tests cover that
          const expected = m.queue.shift() as string;
          m.dirty.delete(expected);
          m.processing.push(expected);
          assert.equal(await queue.get(), expected);
        } else if (op.op === "done") {
          if (m.processing.length === 0) continue;
          const [key] = m.processing.splice(op.index % m.processing.length, 1) as [string];
          queue.done(key);
          if (m.dirty.has(key)) m.queue.push(key);
        } else {
          await clock.advance(op.ms);
          modelAdvance(m, op.ms);
        }
        queue.checkInvariants();
        assert.equal(queue.len(), m.queue.length);
        assert.equal(queue.processingLen(), m.processing.length);
        assert.equal(queue.delayedLen(), m.delayed.size);
      }
    }),
    { seed: 42, numRuns: 150 },
  );
});

test("shutDown drops the queued keys: len is 0 and get hands none of them out", async () => {
  const queue = new WorkQueue<string>({ clock: new ManualClock() });
  queue.add("a");
  queue.add("b");
  queue.shutDown();
  assert.equal(queue.len(), 0);
  assert.equal(await queue.get(), undefined);
  queue.checkInvariants();
});

test("shutting down cancels the delayed keys, and addAfter after shutdown is ignored", async () => {
  for (const stop of ["shutDown", "shutDownWithDrain"] as const) {
    const clock = new ManualClock();
    const queue = new WorkQueue<string>({ clock });
    queue.addAfter("a", 10);
    queue.addRateLimited("b");
    assert.equal(queue.delayedLen(), 2);
    if (stop === "shutDown") queue.shutDown();
    else void queue.shutDownWithDrain();
    assert.equal(queue.delayedLen(), 0, `${stop} empties the delayed set`);
    assert.equal(clock.pendingCount(), 0, `${stop} cancels the delayed keys' timers`);
    queue.addAfter("c", 10);
    assert.equal(queue.delayedLen(), 0, `addAfter after ${stop} sets no timer`);
    assert.equal(clock.pendingCount(), 0, `addAfter after ${stop} sets no timer`);
    await clock.advance(1000);
    assert.equal(queue.len(), 0, `no delayed key comes back after ${stop}`);
  }
});

test("a key re-added while it is processed is dropped at done once the queue shuts down", async () => {
  for (const stop of ["shutDown", "shutDownWithDrain"] as const) {
    const queue = new WorkQueue<string>({ clock: new ManualClock() });
    queue.add("a");
    const key = await queue.get();
    queue.add("a");
    let drained = false;
    if (stop === "shutDown") queue.shutDown();
    else void queue.shutDownWithDrain().then(() => (drained = true));
    queue.done(key as string);
    assert.equal(queue.len(), 0, `${stop}: the re-added key is not queued again`);
    assert.equal(await queue.get(), undefined, `${stop}: get hands nothing out`);
    queue.checkInvariants();
    await settle(2);
    if (stop === "shutDownWithDrain") assert.equal(drained, true, "the drain ends with the processed key");
  }
});

test("a get waiting when shutDownWithDrain starts on an empty queue resolves undefined, and so does the drain", async () => {
  const queue = new WorkQueue<string>({ clock: new ManualClock() });
  let woken: string | undefined | "waiting" = "waiting";
  void queue.get().then((k) => (woken = k));
  await settle(2);
  assert.equal(woken, "waiting");
  let drained = false;
  void queue.shutDownWithDrain().then(() => (drained = true));
  await settle(2);
  assert.equal(woken, undefined);
  assert.equal(drained, true, "nothing queued or processing: the drain ends at once");
});

test("addAfter with the same due time as a waiting key keeps the key's first timer and its place", async () => {
  const clock = new ManualClock();
  const queue = new WorkQueue<string>({ clock });
  queue.addAfter("a", 10);
  queue.addAfter("b", 10);
  queue.addAfter("a", 10);
  await clock.advance(10);
  assert.equal(await queue.get(), "a", "a's timer was set first and is still the one that fires");
  assert.equal(await queue.get(), "b");
});

test("the rate limiter refuses a base delay that is not positive and a cap below the base", () => {
  assert.throws(() => exponentialRateLimiter({ baseDelayMs: 0 }), /rate-limiter-base-positive/);
  assert.throws(() => exponentialRateLimiter({ baseDelayMs: 10, maxDelayMs: 9 }), /rate-limiter-max-at-least-base/);
  assert.equal(exponentialRateLimiter<string>({ baseDelayMs: 10, maxDelayMs: 10 }).when("k"), 10, "a cap equal to the base is allowed");
});

test("a key added while two gets wait goes to the first get, and the second keeps waiting for the next key", async () => {
  const queue = new WorkQueue<string>({ clock: new ManualClock() });
  const taken: Array<string | undefined> = [];
  void queue.get().then((k) => taken.push(k));
  void queue.get().then((k) => taken.push(k));
  await settle(2);
  queue.add("a");
  await settle(2);
  assert.deepEqual(taken, ["a"], "the second get is not woken with undefined while the queue runs");
  // A get waiting on an empty queue is a legal state, not a broken invariant.
  queue.checkInvariants();
  queue.add("b");
  await settle(2);
  assert.deepEqual(taken, ["a", "b"]);
});

test("shutDownWithDrain with keys queued and none taken resolves only once each was handed out and done", async () => {
  const queue = new WorkQueue<string>({ clock: new ManualClock() });
  queue.add("a");
  queue.add("b");
  let drained = false;
  void queue.shutDownWithDrain().then(() => (drained = true));
  await settle(2);
  assert.equal(drained, false, "two keys are still queued");
  assert.equal(await queue.get(), "a");
  assert.equal(await queue.get(), "b");
  queue.done("a");
  await settle(2);
  assert.equal(drained, false, "b is still processing");
  queue.done("b");
  await settle(2);
  assert.equal(drained, true);
});

test("a queue that has handed out many keys keeps the order and the count of the rest", async () => {
  // Enough keys that the queue's storage drops its consumed prefix (past 64 taken) while keys remain queued.
  const queue = new WorkQueue<string>({ clock: new ManualClock() });
  const keys = Array.from({ length: 150 }, (_, i) => `k${i}`);
  for (const key of keys.slice(0, 100)) queue.add(key);
  for (const [i, key] of keys.slice(0, 70).entries()) {
    assert.equal(await queue.get(), key);
    assert.equal(queue.len(), 99 - i);
  }
  for (const key of keys.slice(100)) queue.add(key);
  assert.equal(queue.len(), 80);
  for (const key of keys.slice(70)) assert.equal(await queue.get(), key);
  assert.equal(queue.len(), 0);
  queue.checkInvariants();
});

test("addAfter with a delay that is not a finite number is an assertion failure that names it", () => {
  const queue = new WorkQueue<string>({ clock: new ManualClock() });
  assert.throws(() => queue.addAfter("a", Number.NaN), /queue-delay-finite/);
  assert.throws(() => queue.addAfter("a", Number.POSITIVE_INFINITY), /queue-delay-finite/);
  assert.equal(queue.delayedLen(), 0);
});
