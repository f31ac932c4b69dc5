// A drill of a TypeScript scenario whose own code throws (a property, the workload) reports a scenario error, as
// explore does: exit 2, the exception and the user's file:line, and no point counted as VIOLATED for it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { drill } from "../../src/drill/drill.ts";
import { ScenarioError } from "../../src/explore/run.ts";
import { loadYamlScenario } from "../../src/scenario-yaml/index.ts";
import { yamlDrillTarget } from "../../src/drill/yaml-target.ts";
import throwing from "../fixtures/throwing-drill/scenario.ts";
import { runCli } from "./run-cli.ts";

const repo = fileURLToPath(new URL("../..", import.meta.url));
const scenarioPath = join(repo, "test/fixtures/throwing-drill/scenario.ts");

/** The smallest controller the drill accepts: it opens one watch and idles; it never writes. */
const watcher = [process.execPath, join(repo, "test/fixtures/throwing-drill/watcher.cjs")];

for (const [variant, source, message, line] of [
  ["always", 'property "safe"', "always boom", 18],
  ["eventually", 'property "done"', "TypeError: eventually boom", 22],
  ["workload", 'workload "main"', "workload boom", 12],
] as const) {
  test(`drill: ${source} (variant ${variant}) throwing is a scenario error with its message and file:line, not a violation`, async () => {
    const result = await drill({ scenario: throwing, ctx: { variant, workload: "main", params: {} }, command: watcher, quietMs: 200, timeoutMs: 20_000 });
    const reference = result.reference;
    assert.equal(reference.verdict, "scenario-error", reference.detail);
    assert.deepEqual(reference.failed, []);
    assert.equal(reference.error?.source, source);
    assert.equal(reference.error?.message, message);
    assert.match(reference.error?.location ?? "", new RegExp(`test/fixtures/throwing-drill/scenario\\.ts:${line}:\\d+$`));
    assert.match(reference.detail, new RegExp(`^${source} threw: ${message} \\(at .*scenario\\.ts:${line}:\\d+\\)$`));
    // Points drilled against a scenario that throws would only meet its error again.
    assert.deepEqual(result.runs, []);
  });
}

test("drill: a setup that throws stops the drill before it starts, a ScenarioError with its file:line", async () => {
  await assert.rejects(
    () => drill({ scenario: throwing, ctx: { variant: "setup", workload: "main", params: {} }, command: watcher }),
    (error: unknown) => error instanceof ScenarioError && /^scenario throwing-drill: setup threw: RangeError: setup boom \(at .*throwing-drill\/scenario\.ts:27:\d+\)/.test(error.message),
  );
});

test("settle drill exits 2 on a scenario error, with the exception and its file:line, and calls nothing VIOLATED", async () => {
  const cwd = mkdtempSync(join(tmpdir(), "settle-drill-se-"));
  try {
    const { code, stdout, stderr } = await runCli(["drill", scenarioPath, "--variant", "always", "--quiet-ms", "200", "--", ...watcher], cwd);
    assert.equal(code, 2, stderr);
    assert.match(stderr, /property "safe" threw: always boom \(at [^)]*throwing-drill\/scenario\.ts:18:\d+\)/);
    assert.match(stdout, /SCENARIO ERROR/);
    assert.doesNotMatch(stdout, /VIOLATED/);
    // No point ran against a reference whose scenario threw: the report says so, not "0 of 0 points failed".
    assert.match(stdout, /the reference run failed \(a scenario error\), so no point ran\n/);
    assert.doesNotMatch(stdout, /points failed/);
    assert.doesNotMatch(stdout + stderr, /the variant expects/);
  } finally {
    rmSync(cwd, { recursive: true, force: true });
  }
});

test("a scenario.yaml property whose CEL fails at run time is false, as documented, and the report names the error", async () => {
  const scenario = loadYamlScenario(join(repo, "test/fixtures/throwing-drill/scenario.yaml"));
  const result = await drill({ target: yamlDrillTarget(scenario, "only"), quietMs: 200, timeoutMs: 20_000, killPoints: [] });
  assert.equal(result.reference.verdict, "violated", result.reference.detail);
  assert.deepEqual(result.reference.failed, ["missing has a spec"]);
  assert.equal(result.reference.world, "CEL errors: properties[1] missing has a spec: field not found: spec");
  const cwd = mkdtempSync(join(tmpdir(), "settle-drill-cel-"));
  try {
    const cli = await runCli(["drill", join(repo, "test/fixtures/throwing-drill/scenario.yaml"), "--quiet-ms", "200", "--artifacts", "out"], cwd);
    assert.equal(cli.code, 1, cli.stderr);
    assert.match(cli.stdout, /reference run violated .*; CEL errors: properties\[1\] missing has a spec: field not found: spec\n/);
    assert.match(cli.stdout, /reference: false once quiet: missing has a spec\n/);
  } finally {
    rmSync(cwd, { recursive: true, force: true });
  }
});

test("--kill-points past the reference run's last write are not drilled, and the report says so", async () => {
  // The watcher never writes, so the reference makes 0 writes: write 1 does not exist in this drill.
  const result = await drill({ target: yamlDrillTarget(loadYamlScenario(join(repo, "test/fixtures/throwing-drill/scenario.yaml")), "only"), quietMs: 200, timeoutMs: 20_000, killPoints: [1] });
  assert.equal(result.reference.writes, 0);
  assert.deepEqual(result.runs, []);
  assert.deepEqual(result.unreached, [1]);
  const cwd = mkdtempSync(join(tmpdir(), "settle-drill-unreached-"));
  try {
    const cli = await runCli(["drill", join(repo, "test/fixtures/throwing-drill/scenario.yaml"), "--quiet-ms", "200", "--kill-points", "1,4", "--timeout-ms", "20000"], cwd);
    assert.match(cli.stdout, /not drilled: --kill-points 1,4, past the reference run's last write \(it made 0 write\(s\)/);
    assert.doesNotMatch(cli.stdout, /NO-QUIET/);
    assert.match(cli.stdout, /0 of 0 points failed\n/);
  } finally {
    rmSync(cwd, { recursive: true, force: true });
  }
});
