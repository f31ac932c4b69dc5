// How a scenario's or an actor's exception is described for reports (src/check/thrown.ts), and the verdict helpers
// every command's exit code rests on (src/check/verdict.ts).
import { test } from "node:test";
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { describeThrown, stackFramesMax, thrownLine } from "../../src/check/thrown.ts";
import { findingKey, isFinding, isScenarioError, type Verdict, type VerdictKind } from "../../src/check/verdict.ts";

const settleSrc = fileURLToPath(new URL("../../src/", import.meta.url));

function thrownWith(stack: string[], error: Error = new Error("boom")): Error {
  error.stack = [`${error.name}: ${error.message}`, ...stack].join("\n");
  return error;
}

test("describeThrown keeps the user's frames, relative to the working directory, and leaves out settle's, node's and node_modules'", () => {
  const error = thrownWith([
    `    at Kernel.execute (${settleSrc}sim/kernel.ts:10:5)`,
    "    at process.processTicksAndRejections (node:internal/process/task_queues:95:5)",
    "    at check (/work/proj/node_modules/lib/index.js:1:1)",
    "    at native",
    "    at <anonymous>:1:1",
    "    at relative.ts:1:1",
    "    at file://remote-host/x.ts:1:1",
    "    at settled (/work/proj/scenario.ts:12:9)",
    "    at file:///work/proj/helper.ts?v=3:3:4",
    "    at outside (/elsewhere/lib.ts:7:1)",
    "    at loaded (/work/proj/loaded.ts?tsx-namespace=1:5:6)",
    "    at tail (/work/proj/t.ts:1:2) and more words",
    "not a frame",
  ], new Error("boom    at m (/work/proj/message.ts:1:1)"));
  const thrown = describeThrown('property "p"', error, "/work/proj");
  assert.deepEqual(thrown, {
    source: 'property "p"',
    message: "boom    at m (/work/proj/message.ts:1:1)",
    stack: ["settled (scenario.ts:12:9)", "helper.ts:3:4", "outside (/elsewhere/lib.ts:7:1)", "loaded (loaded.ts:5:6)"],
    location: "scenario.ts:12:9",
  });
  assert.equal(thrownLine(thrown), 'property "p" threw: boom    at m (/work/proj/message.ts:1:1) (at scenario.ts:12:9)');
});

test("describeThrown names the error's class unless it is a plain Error, says what else was thrown, and keeps at most 8 frames", () => {
  assert.equal(describeThrown("actor op", new TypeError("bad"), "/w").message, "TypeError: bad");
  assert.equal(describeThrown("actor op", new Error("plain"), "/w").message, "plain");
  const notAnError = describeThrown('workload "main"', 42, "/w");
  assert.deepEqual(notAnError, { source: 'workload "main"', message: "non-error thrown: 42", stack: [] });
  assert.equal(thrownLine(notAnError), 'workload "main" threw: non-error thrown: 42', "no location: none in the line");
  const deep = thrownWith(Array.from({ length: 12 }, (_, i) => `    at f${i} (/w/a.ts:${i + 1}:1)`));
  const kept = describeThrown("actor op", deep, "/w");
  assert.equal(stackFramesMax, 8);
  assert.deepEqual(kept.stack, Array.from({ length: 8 }, (_, i) => `f${i} (a.ts:${i + 1}:1)`));
  assert.equal(kept.location, "a.ts:1:1");
  const onlyOwn = describeThrown("actor op", thrownWith([`    at x (${settleSrc}a.ts:1:1)`]), "/w");
  assert.equal("location" in onlyOwn, false, "no user frame: no location");
  const noStack = new Error("s");
  noStack.stack = undefined;
  assert.deepEqual(describeThrown("actor op", noStack, "/w").stack, []);
});

test("a verdict is a finding unless ok; only scenario-error is the scenario's own; findings dedupe by kind and property or actor", () => {
  const verdict = (kind: VerdictKind, extra: Partial<Verdict> = {}): Verdict => ({ kind, step: 1, elapsedMs: 0, detail: "", ...extra });
  const kinds: VerdictKind[] = ["ok", "safety-violation", "silent-divergence", "deadline-missed", "no-convergence", "actor-error", "nondeterminism", "scenario-error"];
  assert.deepEqual(kinds.filter((k) => isFinding(verdict(k))), kinds.slice(1));
  assert.deepEqual(kinds.filter((k) => isScenarioError(verdict(k))), ["scenario-error"]);
  assert.equal(findingKey(verdict("safety-violation", { property: "p", actor: "a" })), "safety-violation:p");
  assert.equal(findingKey(verdict("actor-error", { actor: "op" })), "actor-error:op");
  assert.equal(findingKey(verdict("no-convergence")), "no-convergence:");
});
