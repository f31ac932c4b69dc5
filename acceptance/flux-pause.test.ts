// Acceptance for issue 9, run by `npm run acceptance` (not by `npm test`): the Flux stable-pause example through
// the real command line. The buggy proof is found with the default budget and replayed; the fixed proof passes
// 2,000 runs of every workload, the other writer included (where it must still time out).
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { repo, settleIn } from "./cli.ts";

const exampleDir = join(repo, "examples", "flux-pause");
const { root, settle } = settleIn("settle-flux-pause-");

const l1 = "L1: with no other writer the pause is OK within two polls after the restart and the last failed read";
const workloads = ["plain", "frozen-condition-at-claim", "transient-reconcile", "other-writer", "flaky-reads"];


interface ExploreJson {
  runs: number;
  findings: Array<{ verdict: string; property: string | null; workload: string; replay: string; faults: number; choices: number }>;
}

test("settle explore examples/flux-pause --variant buggy finds the frozen Reconciling=True as a minimal run, and replay reproduces it", async () => {
  const explored = await settle(["explore", exampleDir, "--variant", "buggy", "--json"]);
  assert.equal(explored.code, 1, explored.stderr);
  const report = JSON.parse(explored.stdout) as ExploreJson;
  assert.equal(report.runs, 1000);
  const frozen = report.findings.find((f) => f.property === l1);
  assert.ok(frozen, JSON.stringify(report.findings));
  assert.equal(frozen.verdict, "safety-violation");
  assert.equal(frozen.faults, 0, "no fault is needed, only the moment the job arrives");
  assert.ok(existsSync(join(root, frozen.replay)));

  const replayed = await settle(["replay", frozen.replay, "--json"]);
  assert.equal(replayed.code, 1, replayed.stderr);
  const answer = JSON.parse(replayed.stdout) as { verdict: string; reproduced: boolean };
  assert.equal(answer.verdict, "safety-violation");
  assert.equal(answer.reproduced, true, "byte-identical trace");

  const text = await settle(["replay", frozen.replay]);
  assert.match(text.stdout, /script +request +update Kustomization flux-system\/parent/, "the timeline shows the claim");
});

for (const workload of workloads) {
  test(`settle explore examples/flux-pause --variant fixed --workload ${workload} --runs 2000 reports no finding`, async () => {
    const explored = await settle(["explore", exampleDir, "--variant", "fixed", "--workload", workload, "--runs", "2000", "--json"]);
    assert.equal(explored.code, 0, explored.stderr);
    const report = JSON.parse(explored.stdout) as ExploreJson;
    assert.equal(report.runs, 2000);
    assert.deepEqual(report.findings, []);
  });
}
