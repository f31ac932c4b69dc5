// The bug zoo (examples/zoo): every case's buggy form must be found by a default exploration (no fault budget
// declared, so the default serves) with the verdict and property the case is about, its shrunk run must replay
// to the same verdict, and every fixed form must be clean over a modest sweep. The 2,000-run sweeps of the fixed
// forms are in acceptance/zoo.test.ts.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { explore, type ExploreOptions } from "../../src/explore/explore.ts";
import { loadScenario } from "../../src/explore/load.ts";
import { runScenario } from "../../src/explore/run.ts";
import type { Scenario } from "../../src/explore/scenario.ts";

const repo = fileURLToPath(new URL("../../", import.meta.url));
const zooDir = join(repo, "examples", "zoo");

/** Each case and the finding its buggy form must produce: `verdict:property` (the property is empty for a hot loop). */
const zooCases: Readonly<Record<string, string>> = {
  "cache-mutation": "silent-divergence:configmap replicas == spec.replicas",
  "fighting-controllers": "no-convergence:",
  "finalizer-external-gone": "silent-divergence:a deleted Bucket object is removed",
  "generate-name-duplicates": "safety-violation:workers <= spec.replicas",
  "generation-filter": "silent-divergence:configmap tier == widget tier",
  "map-drops-namespace": "silent-divergence:widget status.level == settings data.level",
  "observed-generation-early": "silent-divergence:configmap size == spec.size",
  "recreated-parent": "safety-violation:a child of a live Shard is never deleted",
  "resync-off-drift": "silent-divergence:configmap data == spec.settings",
  "scale-down-wrong-member": "safety-violation:members 0..spec.members-1 are never removed",
  "skewed-expiry": "safety-violation:the lock changes hands only after its holder left it unrenewed for its time to live",
  "selector-overlap": "safety-violation:a member below its pool's spec.members is never deleted",
  "stale-delete": "safety-violation:a member is deleted only while it is marked retire=true",
  "stale-update": "silent-divergence:the backup tool's latest stamp is on the ConfigMap",
  "swallowed-error": "silent-divergence:every Widget has its ConfigMap",
  "time-travel": "safety-violation:at most one address per Gateway",
  "unobserved-delete": "silent-divergence:no DNS record outlives its Site",
};

/** Runs a buggy form may take before its first finding: every case is found well within this at seed 1. */
const buggyRunsMax = 80;
const fixedRuns = 150;

function scenarioPath(name: string): string {
  return join(zooDir, name, "scenario.ts");
}

function options(name: string, scenario: Scenario, variant: string, overrides: Partial<ExploreOptions>): ExploreOptions {
  return { scenarioPath: scenarioPath(name), variant, params: scenario.params, runs: buggyRunsMax, seed: 1, workers: 1, strategy: "mix", first: true, ...overrides };
}

for (const [name, expected] of Object.entries(zooCases)) {
  test(`zoo ${name}: the buggy form is found as ${expected}, shrunk, and replayed to the same verdict`, async () => {
    const scenario = await loadScenario(scenarioPath(name));
    assert.equal(scenario.faults, undefined, "a zoo case declares no fault budget: the default serves");
    assert.deepEqual(Object.fromEntries(Object.entries(scenario.variants).map(([v, info]) => [v, info.expect])), { buggy: "finding", fixed: "ok" });
    const result = await explore(scenario, options(name, scenario, "buggy", {}), () => 0);
    assert.deepEqual(result.findings.map((f) => f.key), [expected], `after ${result.runs} runs`);
    const { run, minimal } = result.findings[0]!;
    assert.ok(minimal.faults.length <= run.faults.length && minimal.choices.length <= run.choices.length, "shrinking never grows a run");
    const spec = { variant: "buggy", workload: run.workload, params: scenario.params, seed: run.seed, choices: minimal.choices, faults: minimal.faults };
    const again = await runScenario(scenario, { ...spec, traceMode: "full" });
    assert.equal(again.traceHash, minimal.outcome.traceHash, "the minimal run replays byte for byte");
    assert.equal(`${again.verdict.kind}:${again.verdict.property ?? ""}`, expected);
  });

  test(`zoo ${name}: the fixed form is clean over ${fixedRuns} runs`, async () => {
    const scenario = await loadScenario(scenarioPath(name));
    const result = await explore(scenario, options(name, scenario, "fixed", { runs: fixedRuns, first: false, seed: 7 }), () => 0);
    assert.equal(result.runs, fixedRuns);
    assert.deepEqual(result.findings.map((f) => `${f.key} (${f.run.verdict.detail})`), []);
  });
}

test("settle list-examples examples/zoo lists every zoo case, each with a buggy and a fixed variant", async () => {
  const ran = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const child = spawn(process.execPath, [join(repo, "bin", "settle.js"), "list-examples", zooDir, "--json"], { cwd: repo, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
  assert.equal(ran.code, 0, ran.stderr);
  const rows = JSON.parse(ran.stdout) as Array<{ path: string; name: string; variants: Record<string, { expect: string }> }>;
  assert.ok(rows.length >= 12, `${rows.length} cases`);
  assert.deepEqual(rows.map((r) => r.path.split("/").pop()).sort(), Object.keys(zooCases).sort());
  for (const row of rows) {
    assert.equal(row.name, `zoo-${row.path.split("/").pop()}`);
    assert.deepEqual(Object.keys(row.variants), ["buggy", "fixed"], row.name);
  }
});
