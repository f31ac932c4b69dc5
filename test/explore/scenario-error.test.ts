// A scenario's own error (a property, a workload or a setup that throws) is never reported as a finding about the
// controller: the run ends in a scenario-error verdict carrying the exception and the user's file:line, exploration
// stops there without shrinking, and the CLI exits 2 with the message in every report. Actor errors carry file:line.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import throwing from "../fixtures/throwing/scenario.ts";
import { explore, type ExploreOptions } from "../../src/explore/explore.ts";
import { runScenario, ScenarioError } from "../../src/explore/run.ts";
import { summarizeVariant } from "../../src/report/summary.ts";
import { githubAnnotations } from "../../src/report/junit.ts";

const scenarioPath = fileURLToPath(new URL("../fixtures/throwing/scenario.ts", import.meta.url));
const repo = fileURLToPath(new URL("../../", import.meta.url));

function options(variant: string): ExploreOptions {
  return { scenarioPath, variant, params: {}, runs: 6, seed: 3, workers: 1, strategy: "mix", first: false };
}

for (const [variant, source, message, line] of [
  ["always", 'property "safe"', "always boom", 30],
  ["eventually", 'property "done"', "boom", 34],
  ["workload", 'workload "main"', "workload boom", 24],
] as const) {
  test(`${source} (variant ${variant}) throwing ends the run in a scenario error with its message and file:line, found once and not shrunk`, async () => {
    const result = await explore(throwing, options(variant), () => 0);
    assert.deepEqual(result.findings.map((f) => f.key), ["scenario-error:"]);
    const finding = result.findings[0]!;
    // Exploration stops at the first scenario error: the other planned runs would only meet it again.
    assert.equal(result.runs, 1);
    assert.equal(finding.minimal.attempts, 0, "a scenario error is not shrunk");
    const verdict = finding.minimal.outcome.verdict;
    assert.equal(verdict.kind, "scenario-error");
    assert.equal(verdict.property, undefined);
    assert.equal(verdict.error?.source, source);
    assert.equal(verdict.error?.message, message);
    assert.match(verdict.error?.location ?? "", new RegExp(`test/fixtures/throwing/scenario\\.ts:${line}:\\d+$`));
    assert.match(verdict.detail, new RegExp(`^${source} threw: ${message} \\(at .*scenario\\.ts:${line}:\\d+\\)$`));
    const { reports, summary, line: summaryLine } = summarizeVariant({ name: "throwing", scenarioPath, variant, params: {}, result, cwd: mkdtempSync(join(tmpdir(), "settle-se-")) });
    assert.match(reports[0]!, /^SCENARIO ERROR/);
    assert.doesNotMatch(reports[0]!, /FINDING/);
    assert.ok(reports[0]!.includes(`${message} (at `));
    assert.equal(summary.findings[0]!.error?.message, message);
    assert.match(summaryLine, /a scenario error \(exit 2\)/);
  });
}

test("a setup that throws is a scenario error naming the setup and its file:line", async () => {
  await assert.rejects(
    runScenario(throwing, { variant: "setup", workload: "main", params: {}, seed: 1 }),
    (error: unknown) => error instanceof ScenarioError && /^scenario throwing: setup threw: RangeError: setup boom \(at .*throwing\/scenario\.ts:9:\d+\)/.test(error.message),
  );
});

test("an actor error stays a finding about the controller, and says where it was thrown", async () => {
  const outcome = await runScenario(throwing, { variant: "actor", workload: "main", params: {}, seed: 1 });
  assert.equal(outcome.verdict.kind, "actor-error");
  assert.match(outcome.verdict.detail, /^actor op failed: actor boom \(at .*throwing\/scenario\.ts:17:\d+\)$/);
  assert.equal(outcome.verdict.error?.message, "actor boom");
});

test("settle explore exits 2 on a scenario error and shows the exception in text, --json, the replay file and HTML", () => {
  const cwd = mkdtempSync(join(tmpdir(), "settle-se-cli-"));
  try {
    const bin = join(repo, "bin", "settle.js");
    const text = spawnSync(process.execPath, [bin, "explore", scenarioPath, "--variant", "eventually", "--runs", "3", "--workers", "1", "--html", "html"], { cwd, encoding: "utf8" });
    assert.equal(text.status, 2, text.stderr);
    assert.match(text.stdout, /SCENARIO ERROR/);
    assert.match(text.stdout, /property "done" threw: boom \(at .*scenario\.ts:34:\d+\)/);
    assert.match(text.stderr, /property "done" threw: boom/);
    const html = readdirSync(join(cwd, "html"));
    assert.equal(html.length, 1);
    assert.match(readFileSync(join(cwd, "html", html[0]!), "utf8"), /property &quot;done&quot; threw: boom \(at [^)]*scenario\.ts:34:\d+\)/);
    // Reports end with the final world; this property read nothing before it threw.
    assert.match(readFileSync(join(cwd, "html", html[0]!), "utf8"), /<pre id="final-world">done read no object<\/pre>/);
    assert.match(text.stdout, /final world:\n {4}done read no object\n/);
    const json = spawnSync(process.execPath, [bin, "explore", scenarioPath, "--variant", "eventually", "--runs", "3", "--workers", "1", "--json"], { cwd, encoding: "utf8" });
    assert.equal(json.status, 2);
    const finding = (JSON.parse(json.stdout) as { findings: Array<{ verdict: string; replay: string; error: { message: string; location: string } }> }).findings[0]!;
    assert.equal(finding.verdict, "scenario-error");
    assert.equal(finding.error.message, "boom");
    const replay = JSON.parse(readFileSync(join(cwd, finding.replay), "utf8")) as { error: { message: string; location: string } };
    assert.equal(replay.error.message, "boom");
    assert.match(replay.error.location, /scenario\.ts:34:\d+$/);
    const replayed = spawnSync(process.execPath, [bin, "replay", finding.replay], { cwd, encoding: "utf8" });
    assert.equal(replayed.status, 2, replayed.stderr);
    assert.match(replayed.stdout, /property "done" threw: boom/);
  } finally {
    rmSync(cwd, { recursive: true, force: true });
  }
});

test("a GitHub annotation of a scenario error points at the line that threw", () => {
  const [line] = githubAnnotations([{ scenario: "s", variant: "v", scenarioPath: "s/scenario.ts", runs: 1, findings: [{ verdict: "scenario-error", property: null, replay: "r.json", error: { message: "boom", location: "s/scenario.ts:34:13" } }] }]);
  assert.match(line!, /^::error file=s\/scenario\.ts,line=34,col=13,title=settle s\/v%3A scenario-error::/);
});
