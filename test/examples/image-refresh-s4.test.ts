// A regression from the 2,000-run acceptance sweep: the hourly helm upgrade rolled jobs-manager back to
// `repo:tag` while the fixed script's own re-image was rolling; rollout status reported the helm rollout done,
// and the script recorded a digest no workload ran (S4). The fixed script now records a digest only when every
// container of its image runs it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { readReplayFile, replayParams } from "../../src/explore/findings.ts";
import { runScenario } from "../../src/explore/run.ts";
import imageRefresh from "../../examples/image-refresh/scenario.ts";

const fixtureOf = (name: string) => fileURLToPath(new URL(`../fixtures/image-refresh/${name}.json`, import.meta.url));

async function replayFixed(fixture: string) {
  const { file } = readReplayFile(fixture);
  assert.equal(file.verdict, "safety-violation", "the fixture is a run that broke a safety property");
  const outcome = await runScenario(imageRefresh, {
    variant: "fixed",
    workload: file.workload,
    params: replayParams(imageRefresh, file, fixture),
    seed: file.seed,
    choices: file.choices,
    faults: file.faults,
    semantics: file.version,
  });
  return outcome;
}

test("the fixed script does not record a digest when a helm revert lands during its own rollout", async () => {
  const outcome = await replayFixed(fixtureOf("s4-helm-revert-during-reimage"));
  assert.equal(outcome.verdict.kind, "ok", outcome.verdict.detail);
});

test("the guard leaves first-observation records alone: a tick that also re-images still writes them (S2)", async () => {
  const outcome = await replayFixed(fixtureOf("s2-first-observation-with-reimage"));
  assert.equal(outcome.verdict.kind, "ok", outcome.verdict.detail);
});
