// Acceptance for issue 5, run by `npm run acceptance` (not by `npm test`): the full default sweeps of the
// Ensemble drill through the real command line, as a user types them.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { repo, settleIn } from "./cli.ts";

const ensembleDir = join(repo, "examples", "ensemble");
const canaryDir = join(repo, "test", "fixtures", "canary");
const { root, settle } = settleIn("settle-acceptance-");


interface ExploreJson {
  runs: number;
  findings: Array<{ verdict: string; property: string | null; replay: string; faults: number; choices: number }>;
  stats: { faultPointsCovered: number; faultPoints?: number };
}

test("settle explore examples/ensemble --variant delta finds silent divergence shrunk to one crash, and replay reproduces it", async () => {
  const explored = await settle(["explore", ensembleDir, "--variant", "delta", "--json"]);
  assert.equal(explored.code, 1, explored.stderr);
  const report = JSON.parse(explored.stdout) as ExploreJson;
  assert.equal(report.runs, 1000, "the default is 1000 runs, all executed");
  const divergence = report.findings.find((f) => f.verdict === "silent-divergence");
  assert.ok(divergence, JSON.stringify(report.findings));
  assert.equal(divergence.property, "children == spec.voices");
  assert.equal(divergence.faults, 1, "shrunk to one crash");
  assert.equal(divergence.choices, 0);
  assert.ok(existsSync(join(root, divergence.replay)));

  const replayed = await settle(["replay", divergence.replay, "--json"]);
  assert.equal(replayed.code, 1, replayed.stderr);
  const answer = JSON.parse(replayed.stdout) as { verdict: string; reproduced: boolean; divergedAtStep: number | null };
  assert.equal(answer.verdict, "silent-divergence");
  assert.equal(answer.reproduced, true, "byte-identical trace");
  assert.equal(answer.divergedAtStep, null);
});

test("settle explore examples/ensemble --variant level --runs 2000 reports no finding and covers every crash point", async () => {
  const explored = await settle(["explore", ensembleDir, "--variant", "level", "--runs", "2000", "--json"]);
  assert.equal(explored.code, 0, explored.stderr);
  const report = JSON.parse(explored.stdout) as ExploreJson;
  assert.equal(report.runs, 2000);
  assert.deepEqual(report.findings, []);
  assert.ok(report.stats.faultPointsCovered > 0);
  assert.equal(report.stats.faultPointsCovered, report.stats.faultPoints, "every systematic crash point of the reference runs");

  const text = await settle(["explore", ensembleDir, "--variant", "level", "--runs", "300"]);
  assert.equal(text.code, 0, text.stderr);
  const covered = /systematic fault points covered (\d+)\/(\d+)/.exec(text.stdout);
  assert.ok(covered, text.stdout);
  assert.equal(covered[1], covered[2], "the text report says all of them were covered");
});

test("the canary scenario's always-false property is found by a default exploration (the checker can fail)", async () => {
  const explored = await settle(["explore", canaryDir, "--variant", "always-false", "--runs", "100", "--json"]);
  assert.equal(explored.code, 1, explored.stderr);
  const report = JSON.parse(explored.stdout) as ExploreJson;
  assert.deepEqual(report.findings.map((f) => [f.verdict, f.property]), [["safety-violation", "canary: never true"]]);
});
