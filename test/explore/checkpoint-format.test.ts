// Checkpoints of the bounded search saved by the code before its tally and task scheduler were classes of their own
// (issue 46), kept in test/fixtures/bounded/checkpoints: the racy variant at K=1, F=1, stopped by --runs in one
// thread (depth-first.json), saved mid-search on two threads with roots under way (tasks.json), and saved complete
// (complete.json). A search resumes from either partial one to the complete one's figures and findings, and writes
// the complete one's state, byte for byte: the file format has not moved.
import { test } from "node:test";
import assert from "node:assert/strict";
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { explore, type ExploreOptions, type ExploreResult } from "../../src/explore/explore.ts";
import { loadScenario } from "../../src/explore/load.ts";

const fixturePath = fileURLToPath(new URL("../fixtures/bounded/scenario.ts", import.meta.url));
const checkpoints = fileURLToPath(new URL("../fixtures/bounded/checkpoints/", import.meta.url));

interface SavedFile {
  version: number;
  engine: string;
  state: { stats: NonNullable<ExploreResult["bounded"]>; found: Array<{ key: string; run: { index: number }; occurrences: number }> };
  frontier?: unknown[];
}

const read = (path: string) => JSON.parse(readFileSync(path, "utf8")) as SavedFile;
const complete = read(join(checkpoints, "complete.json"));

/**
 * Resumes the search from a copy of checkpoint `name` (changed by `edit` first, when given) with `workers` threads;
 * returns its result and the file it left.
 */
async function resume(name: string, workers: number, edit?: (saved: SavedFile) => void): Promise<{ result: ExploreResult; saved: string }> {
  const dir = mkdtempSync(join(tmpdir(), "settle-checkpoint-format-"));
  try {
    const checkpoint = join(dir, name);
    copyFileSync(join(checkpoints, name), checkpoint);
    if (edit !== undefined) {
      const saved = read(checkpoint);
      edit(saved);
      writeFileSync(checkpoint, JSON.stringify(saved));
    }
    const scenario = await loadScenario(fixturePath);
    const options: ExploreOptions = { scenarioPath: fixturePath, variant: "racy", params: scenario.params, runs: Number.POSITIVE_INFINITY, seed: 1, workers, strategy: "bounded", first: false, bounded: { preemptions: 1, faultPoints: 1, checkpoint } };
    const result = await explore(scenario, options, () => 0);
    return { result, saved: readFileSync(checkpoint, "utf8") };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function assertLikeComplete(result: ExploreResult, saved: string, engine: string): void {
  assert.deepEqual(result.bounded, complete.state.stats);
  const found = complete.state.found.map((f) => ({ key: f.key, run: f.run.index, occurrences: f.occurrences }));
  assert.deepEqual(result.search!.found.map((f) => ({ key: f.key, run: f.run, occurrences: f.occurrences })), found);
  const file = JSON.parse(saved) as SavedFile;
  assert.equal(file.engine, engine);
  assert.equal(file.frontier, undefined, "a complete search saves no roots under way");
  assert.equal(JSON.stringify(file.state), JSON.stringify(complete.state), "the complete search's state, byte for byte");
}

test("the fixture checkpoints are what they stand for: one stopped by --runs, one with roots under way, one complete", () => {
  const depthFirst = read(join(checkpoints, "depth-first.json"));
  assert.equal(depthFirst.engine, "depth-first");
  assert.equal(depthFirst.state.stats.stoppedBy, "runs");
  const tasks = read(join(checkpoints, "tasks.json"));
  assert.equal(tasks.engine, "tasks");
  assert.ok((tasks.frontier ?? []).length > 0, "roots under way");
  assert.ok(tasks.state.stats.runs > 0 && tasks.state.stats.runs < complete.state.stats.runs, "some roots folded, not all");
  assert.equal(complete.state.stats.complete, true);
  assert.ok(complete.state.found.length > 0, "the racy variant has findings");
});

test("a search in one thread resumes from a checkpoint saved before issue 46 to the complete search, and saves its state byte for byte", async () => {
  const { result, saved } = await resume("depth-first.json", 1);
  assertLikeComplete(result, saved, "depth-first");
});

test("a search on two threads resumes from a checkpoint saved before issue 46 with roots under way to the complete search", async () => {
  const { result, saved } = await resume("tasks.json", 2);
  assertLikeComplete(result, saved, "tasks");
});

test("a checkpoint saved while an earlier child's task was still out (a gap, null in its JSON) resumes to the complete search", async () => {
  // Tasks finish out of order on several threads, so a checkpoint can hold a child's result after a gap; JSON writes
  // the gap as null. (Before issue 46, resuming from it threw a TypeError while folding the root.)
  const { result, saved } = await resume("tasks.json", 2, (file) => {
    const frontier = (file.frontier ?? []) as Array<{ childResults: unknown[] }>;
    const work = frontier.find((w) => w.childResults.length >= 2);
    assert.ok(work !== undefined, "a root with two child results or more");
    work.childResults[0] = null;
  });
  assertLikeComplete(result, saved, "tasks");
});
