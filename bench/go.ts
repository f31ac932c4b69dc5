// Go benchmark: a client-go controller, unmodified, built for js/wasm and run in the simulator. Build time cold (a
// fresh settle build cache; Go's own build cache as it is) and cached; instantiation per incarnation; steps per
// CPU-second against the same operator on settle's runtime (in one run, alternating slices); runs per second of the
// fixture's scenario; the Ensemble delta variant's time to its first finding when examples/go/ensemble exists; and
// trace-hash agreement across two processes (`go-determinism`, explicit: it takes minutes). Benchmarks may read real
// time. `node --conditions=settle-source --import tsx bench/index.ts go`.
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { performance } from "node:perf_hooks";
import { Action, defineController, isNotFound, runController, type KubeObject } from "../src/runtime/index.ts";
import { createSimulation, defineActor, randomStrategy, type ActorDefinition } from "../src/sim/index.ts";
import { defaultFaultBudget } from "../src/explore/scenario.ts";
import { loadYamlExplore } from "../src/explore/yaml.ts";
import { loadYamlScenario } from "../src/scenario-yaml/load.ts";
import { goActor } from "../src/go/actor.ts";
import { buildGoProgram, wasmApi } from "../src/go/build.ts";
import { makeGoRuntime } from "../src/go/host.ts";
import { Rng } from "../src/sim/rng.ts";
import { firstFinding, median, runsPerSecond } from "./lib.ts";

const fixture = fileURLToPath(new URL("../test/go/fixtures/clientgo", import.meta.url));
const ensemble = fileURLToPath(new URL("../examples/go/ensemble/scenario.yaml", import.meta.url));
const configMapKind = { apiVersion: "v1", kind: "ConfigMap" };

/** The fixture's controller on settle's runtime: each parent ConfigMap gets its child labelled child-of. */
function runtimeOperator(): ActorDefinition {
  const controller = defineController<KubeObject>({
    name: "children",
    for: configMapKind,
    async reconcile(parent, ctx) {
      if (parent.metadata.labels?.role !== "parent") return Action.awaitChange();
      const name = `${parent.metadata.name!}-child`;
      try {
        await ctx.client.get({ ...configMapKind, namespace: "default", name });
        return Action.awaitChange();
      } catch (error) {
        if (!isNotFound(error)) throw error;
      }
      await ctx.client.create({ object: { ...configMapKind, metadata: { name, namespace: "default", labels: { "child-of": parent.metadata.name! } } } });
      return Action.awaitChange();
    },
  });
  return defineActor({ name: "op", async start(ctx) {
    await runController(controller, { client: ctx.client, clock: ctx.clock, log: ctx.log }).done;
  } });
}

/** Steps and CPU µs of seeds `first`..: a user creates five parents a second apart; one simulated minute each. */
async function stepsAndCpu(actor: () => ActorDefinition, first: number, runs: number): Promise<{ steps: number; cpuUs: number }> {
  let steps = 0;
  const cpu = process.cpuUsage();
  for (let seed = first; seed < first + runs; seed++) {
    const sim = createSimulation({ seed, traceMode: "hash-only", requestLatencyMs: [1, 20] });
    sim.addActor(actor());
    sim.addActor(defineActor({ name: "user", faultable: false, crashable: false, async start(ctx) {
      for (let i = 0; i < 5; i++) {
        await ctx.clock.sleep(1000);
        await ctx.client.create({ object: { ...configMapKind, metadata: { name: `p${i}`, namespace: "default", labels: { role: "parent" } } } });
      }
    } }));
    const result = await sim.run({ strategy: randomStrategy(), maxSteps: 5000, untilMs: sim.clock.now() + 60_000, faultBudget: defaultFaultBudget });
    steps += result.steps;
  }
  const used = process.cpuUsage(cpu);
  return { steps, cpuUs: used.user + used.system };
}

/** Milliseconds of one incarnation's instantiation (a new instance and its package initialization), median of `count`. */
function instantiateMs(count: number): number {
  const program = buildGoProgram(fixture);
  const times: number[] = [];
  for (let i = 0; i < count; i++) {
    const started = performance.now();
    const { runtime } = makeGoRuntime(program.toolchain.wasmExec, { clock: { now: () => 0 }, rng: new Rng(i), cwd: fixture, schedule: () => undefined, cancel() {}, output() {}, lookup: () => undefined, dial: () => undefined, write() {}, close() {}, register() {}, unknownGlobal() {} });
    runtime.argv = ["clientgo"];
    // No kubeconfig: main exits at once, after every package's init ran.
    runtime.env = { KUBECONFIG: "/nonexistent" };
    runtime.exit = () => {};
    void runtime.run(new wasmApi.Instance(program.module, runtime.importObject));
    times.push(performance.now() - started);
  }
  return median(times);
}

export async function benchGo(): Promise<Record<string, string | number>> {
  const figures: Record<string, string | number> = {};
  const cache = mkdtempSync(join(tmpdir(), "settle-go-bench-"));
  const previous = process.env.SETTLE_GO_CACHE;
  process.env.SETTLE_GO_CACHE = cache;
  try {
    let started = performance.now();
    buildGoProgram(fixture);
    figures["build, settle's cache cold (Go's build cache as it is), ms"] = Math.round(performance.now() - started);
  } finally {
    if (previous === undefined) delete process.env.SETTLE_GO_CACHE;
    else process.env.SETTLE_GO_CACHE = previous;
    rmSync(cache, { recursive: true, force: true });
  }
  buildGoProgram(fixture);
  const started = performance.now();
  buildGoProgram(fixture);
  figures["build, cached (hash of the module, compiled module reused), ms"] = (performance.now() - started).toFixed(1);
  figures["instantiation per incarnation (instance + package init), median of 20, ms"] = instantiateMs(20).toFixed(1);
  const goOperator = () => goActor({ name: "op", dir: fixture })[0]!;
  const totals = { go: { steps: 0, cpuUs: 0 }, runtime: { steps: 0, cpuUs: 0 } };
  for (let first = 1; first <= 30; first += 5) {
    for (const [name, actor] of [["runtime", runtimeOperator], ["go", goOperator]] as const) {
      const part = await stepsAndCpu(actor, first, 5);
      totals[name].steps += part.steps;
      totals[name].cpuUs += part.cpuUs;
    }
  }
  const rate = (t: { steps: number; cpuUs: number }) => t.steps / (t.cpuUs / 1e6);
  figures["steps/CPU-s, client-go controller (seeds 1-30, default faults)"] = rate(totals.go).toFixed(0);
  figures["steps/CPU-s, the same operator on settle's runtime"] = rate(totals.runtime).toFixed(0);
  figures["ratio go / runtime (target >= 0.1)"] = (rate(totals.go) / rate(totals.runtime)).toFixed(3);
  const scenarioPath = join(fixture, "scenario.yaml");
  const scenario = await loadYamlExplore(loadYamlScenario(scenarioPath));
  const rps = await runsPerSecond(scenario, scenarioPath, "level", 30);
  figures["runs/s, client-go fixture scenario (level, 30 runs, one worker)"] = `${rps.runsPerSec.toFixed(2)} (${rps.stepsPerRun.toFixed(0)} steps/run, ${rps.findings} findings)`;
  if (existsSync(ensemble)) {
    const scenarioE = await loadYamlExplore(loadYamlScenario(ensemble));
    const first = await firstFinding(scenarioE, ensemble, "delta", { seeds: 10, runs: 200 });
    figures["Ensemble delta: first finding, median of 10 seeds (target < 2 s), ms"] = `${first.msMedian.toFixed(0)} (runs median ${first.runsMedian}, max ${first.runsMax}, missed ${first.missed})`;
    const level = await runsPerSecond(scenarioE, ensemble, "level", 20);
    figures["Ensemble level: runs/s on one worker (target: 100 runs in 2 min on 2 cores)"] = `${level.runsPerSec.toFixed(2)} (${level.findings} findings)`;
  }
  return figures;
}

/** Trace hashes of the fixture's scenario for seeds 1..`count` from two processes, one beside a CPU burner. */
export async function benchGoDeterminism(): Promise<Record<string, string | number>> {
  const count = Number(process.env.SETTLE_BENCH_GO_SEEDS ?? 1000);
  const entry = fileURLToPath(new URL("../test/go/hashes-entry.ts", import.meta.url));
  const run = () => new Promise<string>((resolve, reject) => {
    const child = spawn(process.execPath, ["--conditions=settle-source", "--import", "tsx", entry, join(fixture, "scenario.yaml"), "1", String(count)]);
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString("utf8")));
    child.on("error", reject);
    child.on("close", (code) => (code === 0 ? resolve(out) : reject(new Error(`hashes-entry exited ${code}`))));
  });
  const quiet = await run();
  const burner = spawn(process.execPath, ["-e", "while (true) {}"]);
  try {
    const loaded = await run();
    const a = quiet.trim().split("\n");
    const b = loaded.trim().split("\n");
    const agree = a.filter((line, i) => line === b[i]).length;
    return { "seeds (client-go fixture, drawn faults)": a.length, "trace hashes equal in both processes": `${agree} of ${a.length}` };
  } finally {
    burner.kill();
  }
}
