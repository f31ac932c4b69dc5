// Acceptance for issue 10, run by `npm run acceptance` (not by `npm test`): through the real command line, each
// buggy variant of the image-refresh example is found within the default budget by the invariant the model says
// it breaks, shrunk and replayed byte for byte; the fixed variant has no finding over 2,000 runs of every scenario.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { propertyNames } from "../examples/image-refresh/properties.ts";
import { repo, settleIn } from "./cli.ts";

const exampleDir = join(repo, "examples", "image-refresh");
const { root, settle } = settleIn("settle-acceptance-image-refresh-");


interface ExploreJson {
  runs: number;
  findings: Array<{ verdict: string; property: string | null; replay: string; faults: number; choices: number; steps: number }>;
}

const expected: Array<[variant: string, property: string]> = [
  ["b0", propertyNames.repin],
  ["b1", propertyNames.bookkeeping],
  ["b2", propertyNames.loudLatch],
  ["b3", propertyNames.noThrash],
];

for (const [variant, property] of expected) {
  test(`settle explore --variant ${variant} finds "${property}" within the default 1000 runs, shrunk, and replay reproduces it`, async () => {
    const explored = await settle(["explore", exampleDir, "--variant", variant, "--first", "--json"]);
    assert.equal(explored.code, 1, explored.stderr);
    const report = JSON.parse(explored.stdout) as ExploreJson;
    assert.ok(report.runs <= 1000);
    assert.deepEqual(report.findings.map((f) => [f.verdict, f.property]), [["safety-violation", property]]);
    const finding = report.findings[0]!;
    assert.ok(existsSync(join(root, finding.replay)));
    const replayed = await settle(["replay", finding.replay, "--json"]);
    assert.equal(replayed.code, 1, replayed.stderr);
    const answer = JSON.parse(replayed.stdout) as { verdict: string; property: string; reproduced: boolean };
    assert.equal(answer.verdict, "safety-violation");
    assert.equal(answer.reproduced, true, "byte-identical trace");
  });
}

for (const workload of ["a-helm-revert", "b-notready-latch", "c-mirror-webhook", "d-rollout-timeout", "e-live-read-fails", "f-helm-rollback"]) {
  test(`settle explore --variant fixed --workload ${workload} --runs 2000 reports no finding`, async () => {
    const explored = await settle(["explore", exampleDir, "--variant", "fixed", "--workload", workload, "--runs", "2000", "--json"]);
    assert.equal(explored.code, 0, explored.stderr);
    const report = JSON.parse(explored.stdout) as ExploreJson;
    assert.equal(report.runs, 2000);
    assert.deepEqual(report.findings, []);
  });
}
