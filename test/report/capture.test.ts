// The capture re-runs a finding with an extra property and admission hook: it must not change the run,
// and it must give every write step the object before and after.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { fileURLToPath } from "node:url";
import { join } from "node:path";
import { readReplayFile, replayRunSpec } from "../../src/explore/findings.ts";
import { loadScenario } from "../../src/explore/load.ts";
import { runScenario } from "../../src/explore/run.ts";
import { captureProperty, captureRun } from "../../src/report/capture.ts";
import { reportDataFromReplayFile } from "../../src/report/model.ts";
import { toJsonl } from "../../src/sim/trace.ts";
import { journalPauseMs, writeJournalReplay } from "./journal-replay.ts";

const repo = fileURLToPath(new URL("../../", import.meta.url));
const fixture = join(repo, "test", "report", "fixtures", "ensemble-delta.json");

async function load() {
  const { file } = readReplayFile(fixture);
  const scenario = await loadScenario(join(repo, file.scenario));
  const spec = replayRunSpec(scenario, file, fixture);
  return { file, scenario, spec };
}

test("a captured re-run has the same trace, byte for byte, as a plain replay", async () => {
  const { file, scenario, spec } = await load();
  const plain = await runScenario(scenario, { ...spec, traceMode: "full" });
  const captured = await captureRun(scenario, spec);
  assert.equal(captured.outcome.traceHash, plain.traceHash);
  assert.equal(captured.outcome.traceHash, file.traceHash);
  assert.deepEqual(captured.outcome.verdict, plain.verdict);
  assert.deepEqual(captured.counters, plain.counters);
  assert.ok(!captured.counters.some((c) => c.name === captureProperty));
});

test("every step that bumps the store revision carries the objects it changed, before and after", async () => {
  const { scenario, spec } = await load();
  const { outcome, changes, versions } = await captureRun(scenario, spec);
  let writes = 0;
  outcome.trace.forEach((record, i) => {
    if (record.revisionAfter === record.revisionBefore) return;
    writes++;
    const list = changes[i]!;
    assert.ok(list.length > 0, `record ${i} (${record.label}) has changes`);
    for (const [, , after] of list) assert.equal(versions[after]!.revision, record.revisionAfter);
  });
  assert.ok(writes >= 3, "the ensemble finding writes at least three times");
  const create = outcome.trace.findIndex((r) => r.label === "create ConfigMap academy-lab/alpha-voice-3");
  assert.deepEqual(changes[create]!.map(([key, before]) => [key, before]), [["ConfigMap academy-lab/alpha-voice-3", -1]]);
  const patch = outcome.trace.findIndex((r) => r.label === "patch Ensemble academy-lab/alpha");
  const [[key, before, after]] = changes[patch] as [[string, number, number]];
  assert.equal(key, "Ensemble academy-lab/alpha");
  const voices = (v: number) => (versions[v]!.object as { spec: { voices: number } }).spec.voices;
  assert.equal(voices(before), 3);
  assert.ok(voices(after) > 3, "the user scaled up");
});

test("the world before the first step is the setup's objects and the default namespaces", async () => {
  const { scenario, spec } = await load();
  const { initial, versions } = await captureRun(scenario, spec);
  const keys = initial.map((i) => versions[i]!.key);
  for (const key of ["Ensemble academy-lab/alpha", "ConfigMap academy-lab/alpha-voice-0", "Namespace academy-lab", "Namespace default"]) {
    assert.ok(keys.includes(key), key);
  }
  const ensemble = versions[initial[keys.indexOf("Ensemble academy-lab/alpha")]!]!.object as { status?: { readyVoices?: number } };
  assert.equal(ensemble.status?.readyVoices, 3, "the setup's status write is part of the initial state");
});

test("the report data names the finding, its counters and the replay command, and says it reproduced", async () => {
  const data = await reportDataFromReplayFile(fixture, { cwd: repo });
  assert.equal(data.scenario, "ensemble");
  assert.equal(data.verdict.kind, "silent-divergence");
  assert.equal(data.verdict.property, "children == spec.voices");
  assert.equal(data.reproduced, true);
  assert.equal(data.replayCommand, "npx settle replay test/report/fixtures/ensemble-delta.json");
  assert.ok(data.counters.some((c) => c.name === "children == spec.voices" && c.failures === 1));
  assert.ok(data.changes.length >= 3);
});

test("deletes, external writes and log records line up with the steps that made them", async () => {
  const journal = (await import("./fixtures/journal/scenario.ts")).default;
  const spec = { variant: "plain", workload: "idle", params: {}, seed: 5, choices: [] as Array<[number, number]>, faults: [{ atStep: 8, kind: "crash", target: "scribe" }] };
  const plain = await runScenario(journal, { ...spec, traceMode: "full" });
  const { outcome, changes, versions, initial } = await captureRun(journal, spec);
  assert.equal(outcome.traceHash, plain.traceHash);
  assert.ok(outcome.trace.some((r) => r.kind === "log"), "the run has log records");
  assert.ok(outcome.trace.some((r) => r.kind === "fault" && r.label === "crash scribe"), "the crash was injected");
  const initialKeys = initial.map((i) => versions[i]!.key);
  assert.ok(initialKeys.includes("ConfigMap journal/cover") && initialKeys.includes("external ink"), "returned setup objects and external cells are the initial world");
  const at = (label: string) => outcome.trace.findIndex((r) => r.label === label);
  const [[, ink0, ink1]] = changes[at("write ink")] as [[string, number, number]];
  assert.deepEqual([versions[ink0]!.object, versions[ink1]!.object], [{ drops: 0 }, { drops: 1 }]);
  const [[key, before, after]] = changes[at("delete ConfigMap journal/cover")] as [[string, number, number]];
  assert.equal(key, "ConfigMap journal/cover");
  assert.deepEqual((versions[before]!.object as { data: unknown }).data, { title: "journal" });
  assert.equal(versions[after]!.object, null, "a deleted object has no after");
  outcome.trace.forEach((r, i) => {
    if (r.kind === "log" || r.revisionAfter === r.revisionBefore) return;
    assert.ok(changes[i]!.length > 0, `record ${i} ${r.label} has its change`);
  });
  assert.equal(changes[at("start scribe")]!.length, 0, "objects the setup returned are not reported as created by the first step");
});

test("the report model carries the facts of a crash, its restart, a skipped fault and a pause with its length", async () => {
  const dir = mkdtempSync(join(tmpdir(), "settle-report-facts-"));
  try {
    const data = await reportDataFromReplayFile(await writeJournalReplay(dir), { cwd: repo });
    assert.equal(data.reproduced, true);
    const faults = data.records.filter((r) => r.kind === "fault");
    assert.deepEqual(
      faults.map((r) => r.fault),
      [
        { kind: "crash", target: "scribe", applied: true },
        { kind: "pause", target: "scribe", applied: false },
        { kind: "pause", target: "scribe", applied: true, pauseMs: journalPauseMs },
      ],
    );
    const starts = data.records.filter((r) => r.kind === "start" && r.actor === "scribe");
    assert.deepEqual(
      starts.map((r) => r.restart),
      [undefined, true],
      "the first start is not a restart, the one after the crash is",
    );
    // The facts stay out of the hashed line: the exported trace has none of them.
    assert.doesNotMatch(toJsonl(data.records), /"applied"|"restart"|"pauseMs"/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
