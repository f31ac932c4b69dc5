import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { join } from "node:path";
import { drill } from "../../src/drill/drill.ts";
import ensemble from "../../examples/ensemble/scenario.ts";

const repo = fileURLToPath(new URL("../..", import.meta.url));
const operator = join(repo, "examples/ensemble/operator.ts");
const plainOperator = join(repo, "examples/ensemble/plain-operator.mjs");
const ctx = { variant: "level", workload: "scale-up", params: { ...ensemble.params, userDelayMs: 200 } };
const tsOperator = (...flags: string[]) => [process.execPath, "--import", "tsx", operator, "--slow-reconcile=50ms", ...flags];

test("the delta-mode operator process killed after its second write loses work the drill reports", async () => {
  const result = await drill({ scenario: ensemble, ctx, command: tsOperator("--delta-mode"), killPoints: [2], quietMs: 2500 });
  assert.equal(result.reference.verdict, "ok", result.reference.detail);
  assert.ok(result.reference.writes >= 6, `the reference run made ${result.reference.writes} writes`);
  const [run] = result.runs;
  assert.equal(run?.verdict, "violated", run?.detail);
  assert.equal(run?.write?.method, "POST");
  assert.ok(run?.failed.includes("children == spec.voices"));
  assert.equal(run?.world, "children 5 of spec.voices 8, status.readyVoices 3");
});

test("the level-triggered operator process converges after the same kill", async () => {
  const result = await drill({ scenario: ensemble, ctx, command: tsOperator(), killPoints: [2], quietMs: 2500 });
  assert.equal(result.reference.verdict, "ok", result.reference.detail);
  assert.equal(result.runs[0]?.verdict, "ok", result.runs[0]?.detail);
  assert.equal(result.runs[0]?.world, "children 8 of spec.voices 8, status.readyVoices 8");
});

test("a plain client-node controller, written without settle, is drilled the same way", async () => {
  const result = await drill({ scenario: ensemble, ctx, command: [process.execPath, plainOperator, "--slow-reconcile-ms=50"], killPoints: [2], quietMs: 2500 });
  assert.equal(result.reference.verdict, "ok", result.reference.detail);
  assert.equal(result.runs[0]?.verdict, "violated", result.runs[0]?.detail);
  assert.equal(result.runs[0]?.world, "children 5 of spec.voices 8, status.readyVoices 3");
});

test("a controller that exits before it watches anything is reported, not waited on", async () => {
  const result = await drill({ scenario: ensemble, ctx, command: [process.execPath, "-e", "process.exit(3)"], killPoints: [], quietMs: 200 });
  assert.equal(result.reference.verdict, "controller-failed");
  assert.match(result.reference.detail, /exited 3 before opening a watch/);
});

test("settle drill without a command after -- exits 2 with a usage message", async () => {
  const child = spawn(process.execPath, [join(repo, "bin/settle.js"), "drill", join(repo, "examples/ensemble")], { stdio: ["ignore", "pipe", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
  const code = await new Promise<number | null>((resolve) => child.on("exit", resolve));
  assert.equal(code, 2);
  assert.match(stderr, /expects the controller's command after --/);
});
