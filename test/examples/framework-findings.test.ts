// The framework findings the survival tables cite (examples/frameworks/<name>/findings/*.json, written by
// `SETTLE_WRITE_FINDINGS=1 npm run bench -- frameworks`): each replays in process to the verdict, property and trace
// hash it records. A determinism guard: a change to the simulator, the wire or a framework that moves one of these
// runs shows here, and the documented replay commands keep meaning what they say. One Node.js stack's file, and
// every file of the Go stacks (controller-runtime and client-go, run as js/wasm programs), also go through the CLI
// from the repository root, as docs/unmodified.md and docs/go.md run them.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { readReplayFile } from "../../src/explore/findings.ts";
import { runScenario } from "../../src/explore/run.ts";
import type { Scenario } from "../../src/explore/scenario.ts";
import { loadYamlExplore } from "../../src/explore/yaml.ts";
import { loadYamlScenario } from "../../src/scenario-yaml/load.ts";

const repo = fileURLToPath(new URL("../../", import.meta.url));
const frameworksDir = join(repo, "examples", "frameworks");

/** Every committed finding file, relative to the repository root. */
function findingFiles(): string[] {
  const files: string[] = [];
  for (const framework of readdirSync(frameworksDir).sort()) {
    const dir = join(frameworksDir, framework, "findings");
    if (!existsSync(dir)) continue;
    for (const name of readdirSync(dir).sort()) if (name.endsWith(".json")) files.push(join("examples", "frameworks", framework, "findings", name));
  }
  return files;
}

const scenarios = new Map<string, Promise<Scenario>>();
function scenarioAt(path: string): Promise<Scenario> {
  let loaded = scenarios.get(path);
  if (loaded === undefined) {
    loaded = loadYamlExplore(loadYamlScenario(join(repo, path)));
    scenarios.set(path, loaded);
  }
  return loaded;
}

/** Replays one file in process: its verdict, property and trace hash, as recorded. */
async function replays(path: string): Promise<void> {
  const { file } = readReplayFile(join(repo, path));
  assert.match(file.scenario, /^examples\/frameworks\/[^/]+\/scenario\.yaml$/, `${path}: scenario is relative to the repository root`);
  const scenario = await scenarioAt(file.scenario);
  const outcome = await runScenario(scenario, { variant: file.variant, workload: file.workload, params: file.params, seed: file.seed, choices: file.choices, faults: file.faults, semantics: file.version, traceMode: "full" });
  assert.equal(outcome.verdict.kind, file.verdict, `${path}: ${outcome.verdict.detail}`);
  assert.equal(outcome.verdict.property ?? null, file.property, path);
  // A trace line naming the checkout's path would give another hash in every other clone (CI's among them).
  const local = outcome.trace.find((record) => JSON.stringify(record).includes(repo.replace(/\/$/, "")));
  assert.equal(local, undefined, `${path}: a trace line names this checkout's path: ${JSON.stringify(local)}`);
  assert.equal(outcome.traceHash, file.traceHash, `${path}: the trace moved`);
}

const files = findingFiles();

/** The Go probes: a `go:` variant each, so a replay builds the program for js/wasm (cached) before it runs. */
const goStacks = ["controller-runtime", "client-go"];
const goFiles = files.filter((f) => goStacks.some((stack) => f.includes(`/${stack}/`)));

test("the framework findings are committed for each stack that loses work in the simulator", () => {
  // controller-runtime calls a failed Reconcile again and loses no cell (docs/go.md), so it has none.
  for (const framework of ["client-node", "fluent-client", "dot-i-operator", "client-go"]) {
    assert.ok(files.some((f) => f.includes(`/${framework}/`)), `no finding files for ${framework}`);
  }
});

for (const path of files) {
  test(`${path} replays to its recorded verdict and trace hash`, async () => {
    const muted = process.stderr.write;
    // The operators log JSON lines to stderr: kept out of the test output.
    process.stderr.write = (() => true) as typeof process.stderr.write;
    try {
      await replays(path);
    } finally {
      process.stderr.write = muted;
    }
  });
}

test("settle replay reproduces a framework finding from the repository root, as the README runs it", () => {
  const path = files.find((f) => !goFiles.includes(f))!;
  const result = spawnSync(process.execPath, [join(repo, "bin", "settle.js"), "replay", path, "--json"], { cwd: repo, encoding: "utf8" });
  assert.equal(result.status, 1, `exit ${result.status}: ${result.stdout}${result.stderr}`);
  const line = JSON.parse(result.stdout.trim().split("\n").at(-1)!) as { reproduced: boolean; traceHash: string };
  assert.equal(line.reproduced, true, result.stdout);
  assert.equal(line.traceHash, readReplayFile(join(repo, path)).file.traceHash);
});

for (const path of goFiles) {
  test(`settle replay ${path} reproduces a Go stack's finding byte for byte from the repository root`, () => {
    const result = spawnSync(process.execPath, [join(repo, "bin", "settle.js"), "replay", path, "--json"], { cwd: repo, encoding: "utf8" });
    assert.equal(result.status, 1, `exit ${result.status}: ${result.stdout}${result.stderr}`);
    const line = JSON.parse(result.stdout.trim().split("\n").at(-1)!) as { reproduced: boolean; traceHash: string };
    assert.equal(line.reproduced, true, result.stdout);
    assert.equal(line.traceHash, readReplayFile(join(repo, path)).file.traceHash);
  });
}
