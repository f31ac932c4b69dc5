// Acceptance for issue 18 item 7, run by `npm run acceptance` (not by `npm test`): the bug zoo through the real
// command line. Every case's fixed form explores clean over 2,000 runs with the default fault budget and covers
// every systematic fault point; every buggy form is found with `--first`, and its replay file reproduces it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { repo, settleIn } from "./cli.ts";

const zooDir = join(repo, "examples", "zoo");
const cases = readdirSync(zooDir)
  .filter((name) => statSync(join(zooDir, name)).isDirectory() && existsSync(join(zooDir, name, "scenario.ts")))
  .sort();
const { root, settle } = settleIn("settle-zoo-");

interface ExploreJson {
  runs: number;
  findings: Array<{ verdict: string; property: string | null; replay: string }>;
  stats: { faultPointsCovered: number; faultPoints?: number };
}

test("the zoo has at least 12 cases", () => {
  assert.ok(cases.length >= 12, cases.join(", "));
});

for (const name of cases) {
  test(`settle explore examples/zoo/${name} --variant fixed --runs 2000 finds nothing and covers every fault point`, async () => {
    const explored = await settle(["explore", join(zooDir, name), "--variant", "fixed", "--runs", "2000", "--json"]);
    const report = JSON.parse(explored.stdout) as ExploreJson;
    assert.deepEqual(report.findings.map((f) => `${f.verdict}:${f.property ?? ""}`), [], explored.stderr);
    assert.equal(explored.code, 0, explored.stderr);
    assert.equal(report.runs, 2000);
    assert.ok(report.stats.faultPointsCovered > 0, "the default budget gives systematic points");
    assert.equal(report.stats.faultPointsCovered, report.stats.faultPoints, "every systematic point of the reference run");
  });

  test(`settle explore examples/zoo/${name} --variant buggy --first finds it, and replay reproduces the finding`, async () => {
    const explored = await settle(["explore", join(zooDir, name), "--variant", "buggy", "--first", "--json"]);
    assert.equal(explored.code, 1, explored.stderr);
    const report = JSON.parse(explored.stdout) as ExploreJson;
    assert.equal(report.findings.length, 1, JSON.stringify(report.findings));
    const finding = report.findings[0]!;
    assert.ok(existsSync(join(root, finding.replay)), finding.replay);
    const replayed = await settle(["replay", finding.replay, "--json"]);
    assert.equal(replayed.code, 1, replayed.stderr);
    const answer = JSON.parse(replayed.stdout) as { verdict: string; reproduced: boolean };
    assert.equal(answer.verdict, finding.verdict);
    assert.equal(answer.reproduced, true, "byte-identical trace");
  });
}
