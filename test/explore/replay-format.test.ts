import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { readReplayFile, replayRunSpec, replayScenarioPath, ReplayFileError } from "../../src/explore/findings.ts";
import { loadScenario } from "../../src/explore/load.ts";
import { runScenario } from "../../src/explore/run.ts";

const repo = resolve(import.meta.dirname, "..", "..");
const fixture = join(repo, "test", "report", "fixtures", "ensemble-delta.json");

// Replay files are long-lived (users commit them as regression tests): the one recorded by the first release
// must keep reproducing, byte for byte, under the semantics of the version it carries.
test("the version 1 replay file committed in test/report/fixtures still reproduces its finding with the same trace hash", async () => {
  const { file } = readReplayFile(fixture);
  assert.equal(file.version, 1);
  const scenario = await loadScenario(replayScenarioPath(repo, file));
  const outcome = await runScenario(scenario, { ...replayRunSpec(scenario, file, fixture), traceMode: "full" });
  assert.equal(outcome.verdict.kind, file.verdict);
  assert.equal(outcome.verdict.property, file.property);
  assert.equal(outcome.traceHash, file.traceHash);
  assert.equal(outcome.steps, file.steps);
});

test("a replay file of a version this settle does not know is refused with the version named", () => {
  const dir = mkdtempSync(join(tmpdir(), "settle-replay-"));
  const path = join(dir, "future.json");
  writeFileSync(path, JSON.stringify({ ...JSON.parse(readFileSync(fixture, "utf8")), version: 99 }));
  assert.throws(() => readReplayFile(path), (error: unknown) => error instanceof ReplayFileError && /format version 99 is not supported/.test(error.message));
});
