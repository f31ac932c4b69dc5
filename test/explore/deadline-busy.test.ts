import { test } from "node:test";
import assert from "node:assert/strict";
import canary from "../fixtures/canary/scenario.ts";
import { runScenario } from "../../src/explore/run.ts";

test("a deadline missed while an actor still has a timer pending reports the world busy, not idle", async () => {
  const outcome = await runScenario(canary, { variant: "deadline-busy", workload: "touch", params: {}, seed: 3 });
  assert.equal(outcome.verdict.kind, "deadline-missed");
  assert.equal(outcome.verdict.idleAtDeadline, false);
  assert.match(outcome.verdict.detail, /still busy/);
});
