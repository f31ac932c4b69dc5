// A module's process.exit called from a callback Node runs outside any step (@dot-i/k8s-operator exits from a
// request's 'error' handler, which Node emits on the next tick after the wire reset the connection): the exit ends
// the incarnation, which restarts; it must never reach the process as an uncaught exception (it ended the whole
// explorer at seed 51 of the dot-i example's level variant, found by the bench's module-determinism section).
import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { runScenario } from "../../src/explore/run.ts";
import { loadYamlExplore } from "../../src/explore/yaml.ts";
import { loadYamlScenario } from "../../src/scenario-yaml/load.ts";

const repo = fileURLToPath(new URL("../..", import.meta.url));

test("process.exit from a request's error handler on the next tick ends the incarnation, not the process", async () => {
  const scenario = await loadYamlExplore(loadYamlScenario(join(repo, "examples/frameworks/dot-i-operator/scenario.yaml")));
  const write = process.stderr.write;
  // The example logs every event to stderr: not this test's output.
  process.stderr.write = (() => true) as typeof process.stderr.write;
  let outcome;
  try {
    outcome = await runScenario(scenario, { variant: "level", workload: "steps", params: {}, seed: 51, drawFaults: true, traceMode: "full" });
  } finally {
    process.stderr.write = write;
  }
  assert.equal(outcome.verdict.kind, "ok", outcome.verdict.detail);
  // The incarnation that exited was started again.
  assert.ok(outcome.trace.some((r) => r.kind === "start" && r.label.startsWith("restart ")), "a restart");
});
