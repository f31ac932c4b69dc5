// settle/test runs a scenario from a test runner: assertNoFindings fails with the shrunk finding's text report
// and its replay command, assertFinds guards a known bug, explore returns what `settle explore --json` prints.
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { AssertionError } from "node:assert";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { assertFinds, assertNoFindings, explore } from "../../src/test/index.ts";
import { loadScenario } from "../../src/explore/load.ts";
import { ScenarioError } from "../../src/explore/run.ts";

const canary = new URL("../fixtures/canary/scenario.ts", import.meta.url);
const repo = fileURLToPath(new URL("../../", import.meta.url));
const cwd = mkdtempSync(join(tmpdir(), "settle-test-api-"));
after(() => rmSync(cwd, { recursive: true, force: true }));

test("assertNoFindings passes on a healthy variant and returns the exploration's summary", async () => {
  const summary = await assertNoFindings(canary, { variant: "healthy", runs: 6, workers: 1, cwd });
  assert.equal(summary.runs, 6);
  assert.deepEqual(summary.findings, []);
});

test("assertNoFindings fails with the text report of the shrunk finding and the command that replays it", async () => {
  // The 4 runs asked for: the fault-free reference run, which already fails, and 3 planned runs.
  await assert.rejects(assertNoFindings(canary, { variant: "always-false", runs: 4, workers: 2, cwd }), (error: unknown) => {
    assert.ok(error instanceof AssertionError, "an AssertionError, which every test runner shows with its message");
    assert.match(error.message, /^settle: canary --variant always-false: 1 finding\(s\) in 4 runs/);
    assert.match(error.message, /FINDING safety-violation: canary: never true/);
    assert.match(error.message, /replay: npx settle replay \S+always-false-\w+\.json/);
    return true;
  });
});

test("assertFinds returns the matching finding and fails when the expected verdict is not found", async () => {
  const finding = await assertFinds(canary, { variant: "eventually-false", runs: 4, workers: 1, verdict: "silent-divergence", property: "canary: never true", cwd });
  assert.equal(finding.verdict, "silent-divergence");
  await assert.rejects(assertFinds(canary, { variant: "healthy", runs: 3, workers: 1, cwd }), /expected a finding \(any verdict on any property\) in 3 runs, got no finding/);
});

test("options are checked at the boundary, with the scenario's known names", async () => {
  await assert.rejects(explore(canary, { runs: 2, cwd }), /options\.variant is required: scenario canary has variants always-false, /);
  await assert.rejects(explore(canary, { variant: "nope", cwd }), /scenario canary has no variant "nope" \(known: always-false/);
  await assert.rejects(explore(canary, { variant: "healthy", runs: 0, cwd }), /options\.runs must be an integer from 1 to/);
  await assert.rejects(explore(canary, { variant: "healthy", params: { unknown: 1 }, cwd }), /options\.params: unknown param "unknown"/);
});

test("explore returns the object settle explore --json prints, apart from timings", async () => {
  const summary = await explore(canary, { variant: "deadline", runs: 5, seed: 3, workers: 1, cwd });
  const cli = spawnSync(process.execPath, [join(repo, "bin/settle.js"), "explore", fileURLToPath(canary), "--variant", "deadline", "--runs", "5", "--seed", "3", "--workers", "1", "--json"], { cwd, encoding: "utf8" });
  assert.equal(cli.status, 1, cli.stderr);
  const printed = JSON.parse(cli.stdout) as typeof summary;
  // Timings (wallMs, runsPerSec and any other *Ms or *PerSec figure) differ between two runs; nothing else may.
  const untimed = (s: typeof summary) => ({ ...s, stats: Object.fromEntries(Object.entries(s.stats).map(([key, value]) => [key, /(Ms|PerSec)$/.test(key) ? 0 : value])) });
  assert.deepEqual(untimed(summary), untimed(printed));
});

test("a file that does not default-export scenario(...) fails to load with the file and what was expected", async () => {
  const path = fileURLToPath(new URL("../fixtures/not-a-scenario/scenario.ts", import.meta.url));
  await assert.rejects(loadScenario(path), (error: unknown) => {
    assert.ok(error instanceof ScenarioError);
    assert.equal(error.message, `${path}: expected a scenario file that default-exports scenario({ ... }) from "settle/sim" (export default scenario({ name, setup, actors, workloads, properties, ... })), but there is no default export (exports name, variants)`);
    return true;
  });
});
