// The full drill sweep of the seed's exercise: every kill point of the reference run, for the delta-mode and
// the level-triggered Ensemble operator as real processes, and for a plain client-node controller.
import { test } from "node:test";
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { join } from "node:path";
import { drill } from "../src/drill/drill.ts";
import ensemble from "../examples/ensemble/scenario.ts";

const repo = fileURLToPath(new URL("..", import.meta.url));
const ctx = { variant: "level", workload: "scale-up", params: { ...ensemble.params, userDelayMs: 200 } };
const tsOperator = (...flags: string[]) => [process.execPath, "--import", "tsx", join(repo, "examples/ensemble/operator.ts"), "--slow-reconcile=100ms", ...flags];

test("delta mode loses work at every kill point between its first child create and its status write", async () => {
  const result = await drill({ scenario: ensemble, ctx, command: tsOperator("--delta-mode"), quietMs: 2500 });
  assert.equal(result.reference.verdict, "ok");
  const violated = result.runs.filter((r) => r.verdict === "violated");
  assert.ok(violated.length >= 4, `violated at ${violated.length} kill points`);
  assert.ok(result.runs.some((r) => r.world === "children 5 of spec.voices 8, status.readyVoices 3"), "the drill's 5 of 8");
});

test("the level-triggered operator passes every kill point", async () => {
  const result = await drill({ scenario: ensemble, ctx, command: tsOperator(), quietMs: 2500 });
  assert.equal(result.reference.verdict, "ok");
  assert.ok(result.runs.length >= 6);
  for (const run of result.runs) assert.equal(run.verdict, "ok", `kill after write ${run.killAfterWrite}: ${run.detail}`);
});

test("the plain client-node controller is drilled the same way and loses work", async () => {
  const result = await drill({ scenario: ensemble, ctx, command: [process.execPath, join(repo, "examples/ensemble/plain-operator.mjs"), "--slow-reconcile-ms=100"], quietMs: 2500 });
  assert.equal(result.reference.verdict, "ok");
  assert.ok(result.runs.some((r) => r.verdict === "violated"));
});
