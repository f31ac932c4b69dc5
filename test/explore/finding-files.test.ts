// Each finding gets its own replay file: the file name's id is made of the verdict and the property, or for an
// actor error, of the actor, so two actors' errors in one variant are two files (they were one, the later
// overwriting the earlier), and `settle merge` keeps them apart too.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import throwing from "../fixtures/throwing/scenario.ts";
import { explore } from "../../src/explore/explore.ts";
import { findingId, readReplayFile, writeReplayFile, type ReplayFile } from "../../src/explore/findings.ts";
import { summarizeVariant } from "../../src/report/summary.ts";

const scenarioPath = fileURLToPath(new URL("../fixtures/throwing/scenario.ts", import.meta.url));

function actorError(actor: string): ReplayFile {
  return {
    version: 2, scenario: "s.ts", variant: "v", workload: "main", params: {}, seed: 1, choices: [], faults: [],
    verdict: "actor-error", property: null, actor, traceHash: "0".repeat(64), steps: 3,
  };
}

test("two actors' errors in one variant are written to two replay files, each keeping its actor", () => {
  const cwd = mkdtempSync(join(tmpdir(), "settle-ff-"));
  const a = writeReplayFile(cwd, actorError("reconciler"), [], "s");
  const b = writeReplayFile(cwd, actorError("webhook"), [], "s");
  assert.notEqual(a, b);
  assert.equal(readReplayFile(join(cwd, a)).file.actor, "reconciler");
  assert.equal(readReplayFile(join(cwd, b)).file.actor, "webhook");
});

test("a property finding's file name is unchanged: the id of its verdict and property alone", () => {
  // sha256("eventually-violated\0converged"), first 10 hex digits: the name files written before had.
  assert.equal(findingId("eventually-violated", "converged"), "a937f11177");
  assert.equal(findingId("eventually-violated", "converged", "op"), "a937f11177", "the property decides when there is one");
  assert.notEqual(findingId("actor-error", null, "op"), findingId("actor-error", null, "other"));
});

test("an explored actor error's replay file names the actor that threw", async () => {
  const result = await explore(throwing, { scenarioPath, variant: "actor", params: {}, runs: 2, seed: 3, workers: 1, strategy: "mix", first: true }, () => 0);
  const cwd = mkdtempSync(join(tmpdir(), "settle-ff-"));
  const { summary } = summarizeVariant({ name: "throwing", scenarioPath, variant: "actor", params: {}, result, cwd });
  const replay = summary.findings[0]!.replay;
  const file = JSON.parse(readFileSync(join(cwd, replay), "utf8")) as ReplayFile;
  assert.equal(file.verdict, "actor-error");
  assert.equal(file.actor, "op");
});
