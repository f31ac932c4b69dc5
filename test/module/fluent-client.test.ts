// kubernetes-fluent-client 3.11 (examples/frameworks/fluent-client), unmodified, in the simulator: its bundled undici
// reaches the in-process server, the same seed gives the same trace in two processes, the delta variant is found
// and replays; what the module prints stays out of the output unless asked; module code that resumes after real
// asynchronous work and then makes a request is a finding that says so. Seeds pinned. The level variant's 500-run
// sweep is test/examples/frameworks-level.sweep.test.ts.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { explore } from "../../src/explore/explore.ts";
import { runScenario } from "../../src/explore/run.ts";
import { loadYamlScenario } from "../../src/scenario-yaml/load.ts";
import { yamlExploreScenario } from "../../src/explore/yaml.ts";
import { setModuleOutput } from "../../src/module/output.ts";
import { moduleActor } from "../../src/module/actor.ts";
import { createSimulation, defineActor, randomStrategy } from "../../src/sim/index.ts";

const here = dirname(fileURLToPath(import.meta.url));
const repo = join(here, "../..");
const scenarioPath = join(repo, "examples/frameworks/fluent-client/scenario.yaml");
// Built without the load-time check of every variant (`loadYamlExplore`): each module is still bundled and checked.
const fluent = yamlExploreScenario(loadYamlScenario(scenarioPath));

/** Seeds whose runs draw faults and take the fluent watch's paths (a relist, a closed watch, a crash). */
const seeds = [1, 3, 4, 11];

const hashScript = `
import { loadYamlScenario } from ${JSON.stringify(join(repo, "src/scenario-yaml/load.ts"))};
import { yamlExploreScenario } from ${JSON.stringify(join(repo, "src/explore/yaml.ts"))};
import { runScenario } from ${JSON.stringify(join(repo, "src/explore/run.ts"))};
import { randomStrategy } from ${JSON.stringify(join(repo, "src/sim/index.ts"))};
const scenario = yamlExploreScenario(loadYamlScenario(${JSON.stringify(scenarioPath)}));
for (const seed of ${JSON.stringify(seeds)}) {
  const o = await runScenario(scenario, { variant: "delta", workload: "steps", params: {}, seed, strategy: randomStrategy(), drawFaults: true });
  console.log(seed, o.traceHash, o.steps, o.faults.length);
}
`;

function hashes(): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--conditions=settle-source", "--import", "tsx", "--input-type=module", "-e", hashScript], { cwd: repo });
    let out = "";
    let err = "";
    child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (err += chunk.toString()));
    child.on("error", reject);
    child.on("close", (code) => (code === 0 ? resolve(out.trim()) : reject(new Error(`exit ${code}: ${err}`))));
  });
}

/** The same runs in this process. */
async function hashesHere(): Promise<string> {
  const lines: string[] = [];
  for (const seed of seeds) {
    const o = await runScenario(fluent, { variant: "delta", workload: "steps", params: {}, seed, strategy: randomStrategy(), drawFaults: true });
    lines.push(`${seed} ${o.traceHash} ${o.steps} ${o.faults.length}`);
  }
  return lines.join("\n");
}

test("determinism: the fluent-client example gives the same trace hash for each seed in two processes", async () => {
  // Before the module's fs finished its reads at the call, the service-account token read before each watch
  // completed in real time, and the watch request landed in one step or another. The other process is a fresh
  // one; this one has run other simulations before (it must not matter).
  const other = hashes();
  const first = await hashesHere();
  const second = await other;
  const lines = first.split("\n");
  assert.equal(lines.length, seeds.length, first);
  for (const line of lines) assert.match(line, /^\d+ [0-9a-f]{64} \d+ \d+$/);
  assert.equal(first, second);
  // Faults were drawn and real runs taken.
  assert.ok(lines.some((line) => Number(line.split(" ")[3]) > 0), first);
});

test("the delta variant is found at once and its minimal run replays identically (pinned seed)", async () => {
  const delta = await explore(fluent, { scenarioPath, variant: "delta", params: {}, runs: 20, seed: 1, workers: 1, strategy: "mix", first: true }, () => 0);
  assert.equal(delta.findings.length, 1);
  const finding = delta.findings[0]!;
  assert.ok(delta.runs <= 3, `found after ${delta.runs} runs`);
  assert.equal(finding.run.verdict.property, "children == spec.voices");
  const { run, minimal } = finding;
  for (let i = 0; i < 2; i++) {
    const replay = await runScenario(fluent, { variant: "delta", workload: run.workload, params: {}, seed: run.seed, choices: minimal.choices, faults: minimal.faults, traceMode: "full" });
    assert.equal(replay.traceHash, minimal.outcome.traceHash);
    assert.equal(replay.verdict.property, "children == spec.voices");
  }
  // The minimal run is the bug: a crash between the children of one scale-up.
  assert.ok(minimal.faults.some((fault) => fault.kind === "crash"), JSON.stringify(minimal.faults));
});

test("the module's stdout and stderr are dropped unless a sink is set (settle replay --module-output)", async () => {
  const written: string[] = [];
  const real = process.stderr.write.bind(process.stderr);
  process.stderr.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
    written.push(String(chunk));
    return (real as (...args: unknown[]) => boolean)(chunk, ...rest);
  }) as typeof process.stderr.write;
  const spec = { variant: "level", workload: "steps", params: {}, seed: 2 };
  try {
    await runScenario(fluent, spec);
    assert.deepEqual(written.filter((line) => line.includes('"msg":"started"')), []);
    const captured: string[] = [];
    setModuleOutput((fd, chunk) => captured.push(`${fd} ${chunk.toString()}`));
    try {
      await runScenario(fluent, spec);
    } finally {
      setModuleOutput(undefined);
    }
    assert.ok(captured.includes('2 {"msg":"started","mode":"level"}\n'), captured.join(""));
  } finally {
    process.stderr.write = real;
  }
});

test("module code that resumes after real asynchronous work and then connects is a finding naming it", async () => {
  const sim = createSimulation({ seed: 1, traceMode: "hash-only" });
  sim.addActor(moduleActor({ name: "op", module: join(here, "fixtures/stray.mjs") }));
  // Steps of another actor, every virtual millisecond, while the module's real work completes.
  sim.addActor(defineActor({ name: "ticker", crashable: false, faultable: false, async start(ctx) {
    for (;;) await ctx.clock.sleep(1);
  } }));
  const result = await sim.run({ strategy: randomStrategy(), maxSteps: 200_000, untilMs: Date.UTC(2026, 0, 1) + 3_600_000 });
  assert.equal(result.status, "outside-await", result.message);
  assert.match(result.message!, /opened a connection to kubernetes\.settle\.sim \(http\) outside any step of the simulation/);
});

test("a module watch fails mid-stream (close-watch with relistAtRevision): an ERROR event with the 500, the end, and fluent-client relists", async () => {
  const spec = { variant: "level", workload: "steps", params: {}, seed: 2, traceMode: "full" as const };
  const reference = await runScenario(fluent, spec);
  assert.equal(reference.verdict.kind, "ok");
  const opened = reference.trace.find((r) => r.actor === "controller" && r.kind === "response" && r.result === "200 watching");
  assert.ok(opened?.watchId !== undefined, "the watch opens");
  const captured: string[] = [];
  setModuleOutput((_fd, chunk) => captured.push(chunk.toString()));
  let run;
  try {
    run = await runScenario(fluent, { ...spec, faults: [{ atStep: opened.step + 1, kind: "close-watch", target: opened.watchId, relistAtRevision: opened.revisionAfter }] });
  } finally {
    setModuleOutput(undefined);
  }
  const at = run.trace.findIndex((r) => r.kind === "fault");
  assert.match(run.trace[at]?.result ?? "", /^failed with 500, next cached read of Ensemble at revision \d+$/);
  const later = run.trace.slice(at + 1);
  const after = later.filter((r) => r.watchId === opened.watchId && r.kind === "watch").map((r) => r.result);
  assert.deepEqual(after, ["ERROR Status @", "END"]);
  // fluent-client hands the ERROR event's Status to the handler as if it were an object of the kind (the handler
  // reads spec.voices of it and throws: "handler failed"), then lists and watches again.
  assert.ok(captured.some((line) => line.includes('"msg":"handler failed"') && line.includes("reading 'voices'")), captured.join(""));
  const again = later.filter((r) => r.actor === "controller" && r.kind === "request" && r.object?.kind === "Ensemble").map((r) => r.label.replace(/ controller\/\d+\/w\d+/, ""));
  assert.deepEqual(again.slice(0, 2), ["list Ensemble academy-lab", "watch Ensemble academy-lab"]);
  assert.equal(run.verdict.kind, "ok", run.verdict.detail);
});
