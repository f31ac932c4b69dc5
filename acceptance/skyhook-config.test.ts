// Acceptance for issue 7, run by `npm run acceptance` (not by `npm test`): the default sweeps of the Skyhook
// ConfigMap gate through the real command line, as a user types them.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { repo, settleIn } from "./cli.ts";

const exampleDir = join(repo, "examples", "skyhook-config");
const { root, settle } = settleIn("settle-acceptance-skyhook-");


interface ExploreJson {
  runs: number;
  findings: Array<{ verdict: string; property: string | null; replay: string; faults: number; choices: number; occurrences?: number }>;
}

const deadline = "ConfigMap == spec.packages[p].configMap within 270 s";

test("settle explore examples/skyhook-config --variant buggy finds the stale ConfigMap at the 270 s deadline, and replay reproduces it", async () => {
  const explored = await settle(["explore", exampleDir, "--variant", "buggy", "--json"]);
  assert.equal(explored.code, 1, explored.stderr);
  const report = JSON.parse(explored.stdout) as ExploreJson;
  // The default budget's 1000 runs, all executed, and the fault-free reference run, which already fails here.
  assert.equal(report.runs, 1001, "1000 runs and the failing reference run");
  const finding = report.findings.find((f) => f.verdict === "deadline-missed" && f.property === deadline);
  assert.ok(finding, JSON.stringify(report.findings));
  assert.ok(existsSync(join(root, finding.replay)));
  const replayed = await settle(["replay", finding.replay, "--json"]);
  assert.equal(replayed.code, 1, replayed.stderr);
  const answer = JSON.parse(replayed.stdout) as { verdict: string; reproduced: boolean };
  assert.equal(answer.verdict, "deadline-missed");
  assert.equal(answer.reproduced, true, "byte-identical trace");
});

for (const variant of ["fixed", "always-write-cm"]) {
  test(`settle explore examples/skyhook-config --variant ${variant} --runs 2000 reports no finding`, async () => {
    const explored = await settle(["explore", exampleDir, "--variant", variant, "--runs", "2000", "--json"]);
    assert.equal(explored.code, 0, explored.stdout + explored.stderr);
    const report = JSON.parse(explored.stdout) as ExploreJson;
    assert.equal(report.runs, 2000);
    assert.deepEqual(report.findings, []);
  });
}

test("settle explore examples/skyhook-config --variant clear-on-generation finds the same stale ConfigMap, never the stale-interrupt property", async () => {
  const explored = await settle(["explore", exampleDir, "--variant", "clear-on-generation", "--runs", "300", "--json"]);
  assert.equal(explored.code, 1, explored.stderr);
  const report = JSON.parse(explored.stdout) as ExploreJson;
  assert.ok(report.findings.some((f) => f.property === deadline), JSON.stringify(report.findings));
  assert.ok(!report.findings.some((f) => f.property === "no config-driven interrupt without a key changed in this generation"), JSON.stringify(report.findings));
});
