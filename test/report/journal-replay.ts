// A replay file of the journal fixture with one fault of each shape the timeline draws: a crash (and so a restart),
// a pause planned while the actor is down (skipped), and a pause that applies, with its length.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { replayFormatVersion, type ReplayFile } from "../../src/explore/findings.ts";
import { runScenario } from "../../src/explore/run.ts";
import type { PlannedFault } from "../../src/sim/types.ts";
import journal from "./fixtures/journal/scenario.ts";

export const journalPauseMs = 1500;

const spec = {
  variant: "plain",
  workload: "idle",
  params: {},
  seed: 5,
  choices: [] as Array<[number, number]>,
  faults: [
    { atStep: 2, kind: "crash", target: "scribe" },
    { atStep: 2, kind: "pause", target: "scribe", durationMs: journalPauseMs },
    { atStep: 5, kind: "pause", target: "scribe", durationMs: journalPauseMs },
  ] as PlannedFault[],
};

/** Writes `journal-faults.json` into `dir` (the scenario path is relative to the repository) and returns its path. */
export async function writeJournalReplay(dir: string): Promise<string> {
  const plain = await runScenario(journal, { ...spec, traceMode: "hash-only" });
  const file: ReplayFile = {
    version: replayFormatVersion,
    scenario: "test/report/fixtures/journal/scenario.ts",
    ...spec,
    verdict: plain.verdict.kind,
    property: null,
    traceHash: plain.traceHash,
    steps: plain.steps,
  };
  const path = join(dir, "journal-faults.json");
  writeFileSync(path, `${JSON.stringify(file, null, 2)}\n`);
  return path;
}
