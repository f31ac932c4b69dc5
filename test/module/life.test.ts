// The lives of a wire connection and of a watch on it (src/module/life.ts): every transition the wire takes, and
// each illegal one crashing with the invariant's name, as `stepLife` does for an actor.
import assert from "node:assert/strict";
import { test } from "node:test";
import { AssertionError } from "../../src/api/assert.ts";
import { initialConnection, initialWatch, stepConnection, stepWatch, type ConnectionInput, type ConnectionLife, type WatchInput, type WatchLife } from "../../src/module/life.ts";

function run(inputs: ConnectionInput[], from: ConnectionLife = initialConnection): ConnectionLife {
  return inputs.reduce(stepConnection, from);
}

function illegal(step: () => unknown, name: string): void {
  assert.throws(step, (error: unknown) => error instanceof AssertionError && error.message === `assertion failed: ${name}`);
}

test("a connection delivers one step at a time: enqueued or deferred, then ran, back to idle", () => {
  assert.deepEqual(run([{ type: "enqueue" }]), { phase: "open", delivery: "enqueued", serverEnded: false });
  assert.deepEqual(run([{ type: "defer" }]), { phase: "open", delivery: "deferred", serverEnded: false });
  assert.deepEqual(run([{ type: "enqueue" }, { type: "ran" }]), initialConnection);
  assert.deepEqual(run([{ type: "defer" }, { type: "ran" }]), initialConnection);
  // A delay-watch fault takes a step due now back, to wait longer.
  assert.deepEqual(run([{ type: "enqueue" }, { type: "unschedule" }, { type: "defer" }]), { phase: "open", delivery: "deferred", serverEnded: false });
});

test("a connection's illegal delivery steps assert", () => {
  illegal(() => run([{ type: "enqueue" }, { type: "enqueue" }]), "a connection has one delivery step at a time");
  illegal(() => run([{ type: "defer" }, { type: "enqueue" }]), "a connection has one delivery step at a time");
  illegal(() => run([{ type: "ran" }]), "a delivery step runs only when scheduled");
  illegal(() => run([{ type: "defer" }, { type: "unschedule" }]), "only a step due now is taken back");
  illegal(() => run([{ type: "close" }, { type: "enqueue" }]), "only an open connection schedules a delivery");
  illegal(() => run([{ type: "drop" }, { type: "defer" }]), "only an open connection schedules a delivery");
});

test("closing takes an enqueued step back and leaves a deferred one to find the connection closed", () => {
  assert.deepEqual(run([{ type: "enqueue" }, { type: "close" }]), { phase: "closed", delivery: "idle", serverEnded: false });
  const deferred = run([{ type: "defer" }, { type: "close" }]);
  assert.deepEqual(deferred, { phase: "closed", delivery: "deferred", serverEnded: false });
  assert.deepEqual(stepConnection(deferred, { type: "ran" }), { phase: "closed", delivery: "idle", serverEnded: false });
  illegal(() => run([{ type: "close" }, { type: "close" }]), "only an open connection closes");
});

test("a connection is dropped once, open or closed, its delivery slot as it was", () => {
  assert.deepEqual(run([{ type: "drop" }]), { phase: "dropped", delivery: "idle", serverEnded: false });
  assert.deepEqual(run([{ type: "enqueue" }, { type: "drop" }]), { phase: "dropped", delivery: "enqueued", serverEnded: false });
  assert.deepEqual(run([{ type: "close" }, { type: "drop" }]), { phase: "dropped", delivery: "idle", serverEnded: false });
  illegal(() => run([{ type: "drop" }, { type: "drop" }]), "a connection is dropped once");
  illegal(() => run([{ type: "drop" }, { type: "close" }]), "only an open connection closes");
});

test("the server ends its side once", () => {
  assert.equal(run([{ type: "server-end" }]).serverEnded, true);
  assert.equal(run([{ type: "close" }, { type: "server-end" }]).serverEnded, true);
  illegal(() => run([{ type: "server-end" }, { type: "server-end" }]), "the server ends its side once");
});

function watch(inputs: WatchInput[], from: WatchLife = initialWatch): WatchLife {
  return inputs.reduce(stepWatch, from);
}

test("a watch is requested, opened (counted among the waiters), finished (no longer counted)", () => {
  assert.deepEqual(watch([{ type: "attach" }, { type: "opened" }]), { phase: "open", attached: true, pending: { type: "none" }, counted: true });
  assert.deepEqual(watch([{ type: "attach" }, { type: "opened" }, { type: "finished" }]), { phase: "ended", attached: true, pending: { type: "none" }, counted: false });
  // Answered without a stream: an error Status or an injected failure.
  assert.deepEqual(watch([{ type: "finished" }]), { phase: "ended", attached: false, pending: { type: "none" }, counted: false });
  // Finishing twice (its end delivered, then its connection closed) changes nothing more.
  const ended = watch([{ type: "opened" }, { type: "finished" }]);
  assert.deepEqual(stepWatch(ended, { type: "finished" }), ended);
  assert.deepEqual(watch([{ type: "opened" }, { type: "kill" }]), { phase: "ended", attached: false, pending: { type: "none" }, counted: false });
});

test("a fault asked of a watch before its stream is attached waits for it; a failure wins over a close", () => {
  const closing = watch([{ type: "close" }]);
  assert.deepEqual(closing.pending, { type: "close" });
  const error = new Error("expired");
  assert.deepEqual(watch([{ type: "close" }, { type: "fail", error }]).pending, { type: "fail", error });
  assert.deepEqual(watch([{ type: "fail", error }, { type: "close" }]).pending, { type: "fail", error });
  // Attached, the pending fault goes to the stream: nothing is left pending, and later faults act on the stream.
  assert.deepEqual(stepWatch(closing, { type: "attach" }).pending, { type: "none" });
  assert.deepEqual(watch([{ type: "attach" }, { type: "close" }]).pending, { type: "none" });
});

test("a watch's illegal steps assert", () => {
  illegal(() => watch([{ type: "attach" }, { type: "attach" }]), "a watch request gets one stream");
  illegal(() => watch([{ type: "opened" }, { type: "opened" }]), "a watch opens once, from requested");
  illegal(() => watch([{ type: "finished" }, { type: "opened" }]), "a watch opens once, from requested");
  illegal(() => watch([{ type: "finished" }, { type: "close" }]), "a fault acts on a watch that has not ended");
  illegal(() => watch([{ type: "kill" }, { type: "fail", error: new Error("x") }]), "a fault acts on a watch that has not ended");
});
