// Go benchmark (issue 43 item 8): a client-go controller, unmodified, built for js/wasm and run in the simulator.
// Build time cold (a fresh settle build cache; Go's own build cache as it is) and cached; an incarnation's instance
// and package init, with a fresh memory and with a pooled one; steps per CPU-second against the same operator on
// settle's runtime (in one run, alternating slices) and where a Go run's CPU goes (go-split.ts); runs per second of
// the fixture's scenario; the Ensemble example's time to its delta variant's first finding (median of 10 seeds) and
// 100 runs of its level variant on 2 workers; and, in `go-determinism` (explicit: it takes hours at 1,000 seeds),
// trace-hash agreement across two processes for the fixture and every Go example. Benchmarks may read real time.
// `node --conditions=settle-source --import tsx bench/index.ts go`.
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { performance } from "node:perf_hooks";
import type { ActorDefinition } from "../src/sim/index.ts";
import { loadYamlExplore } from "../src/explore/yaml.ts";
import { loadYamlScenario } from "../src/scenario-yaml/load.ts";
import { goActor } from "../src/go/actor.ts";
import { buildGoProgram, wasmApi } from "../src/go/build.ts";
import { makeGoRuntime } from "../src/go/host.ts";
import { giveBackMemory, MEMORY_IMPORT, takeMemory } from "../src/go/memory.ts";
import { Rng } from "../src/sim/rng.ts";
import { besideBurner, childLines, childrenOperator, compareRates, firstFinding, median, parentsUser, runsPerSecond, stepsAndCpu } from "./lib.ts";
import { formatSplit, profileGoSplit } from "./go-split.ts";

const fixture = fileURLToPath(new URL("../test/go/fixtures/clientgo", import.meta.url));
const ensemble = fileURLToPath(new URL("../examples/go/ensemble/scenario.yaml", import.meta.url));
const examplesDir = fileURLToPath(new URL("../examples/go/", import.meta.url));
const repoDir = fileURLToPath(new URL("../", import.meta.url));
const configMapKind = { apiVersion: "v1", kind: "ConfigMap" };

/** The fixture's controller on settle's runtime: each parent ConfigMap gets its child labelled child-of. */
const runtimeOperator = () => childrenOperator((parent) => ({ metadata: { labels: { "child-of": parent.metadata.name! } } }));

/** The user of both operators: five parents a second apart. */
const user = (count = 5) => parentsUser((i) => ({ ...configMapKind, metadata: { name: `p${i}`, namespace: "default", labels: { role: "parent" } } }), count);

const goOperator = () => goActor({ name: "op", dir: fixture })[0]!;

/** CPU ms since `from` (process.cpuUsage), user and system. */
function cpuMsSince(from: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(from);
  return (used.user + used.system) / 1000;
}

/**
 * CPU milliseconds of one incarnation's start, median of `count` after `warm` more (V8 tiers the module's hot code
 * up over the first ones): the new instance (its memory and data segments) and the program's run until it exits
 * (the runtime's start and every package's init; main exits at once without a kubeconfig). With `reuse`, each
 * instance takes the memory of the one before from the pool, as a run's incarnation takes the last run's.
 */
function incarnationStartCpuMs(count: number, warm: number, reuse: boolean): { instanceMs: number; initMs: number } {
  const program = buildGoProgram(fixture);
  const instance: number[] = [];
  const init: number[] = [];
  for (let i = 0; i < warm + count; i++) {
    let exited: number | undefined;
    // A wall clock that is not zero: Go's runtime takes a zero nanotime for a broken clock and stops at once.
    const { runtime } = makeGoRuntime(program.toolchain.wasmExec, { clock: { now: () => Date.UTC(2026, 0, 1) }, rng: new Rng(i), cwd: fixture, schedule: () => undefined, cancel() {}, output() {}, lookup: () => undefined, dial: () => undefined, write() {}, close() {}, register() {}, unknownGlobal() {} });
    runtime.argv = ["clientgo"];
    runtime.env = { KUBECONFIG: "/nonexistent" };
    runtime.exit = (code) => void (exited = code);
    const started = process.cpuUsage();
    const memory = takeMemory(program.module, program);
    const made = new wasmApi.Instance(program.module, { ...runtime.importObject, [MEMORY_IMPORT.module]: { [MEMORY_IMPORT.name]: memory } });
    const instanceMs = cpuMsSince(started);
    const running = process.cpuUsage();
    void runtime.run(made);
    const initMs = cpuMsSince(running);
    // The fixture's main exits 1 when its kubeconfig cannot be read: every package's init ran before.
    if (exited !== 1) throw new Error(`the fixture without a kubeconfig exited ${exited}, not 1 after its package init`);
    if (reuse) giveBackMemory(program.module, memory);
    if (i < warm) continue;
    instance.push(instanceMs);
    init.push(initMs);
  }
  return { instanceMs: median(instance), initMs: median(init) };
}

/** The Go benchmark's figures: the item 8, each against its target or a baseline of the same run. */
export async function benchGo(): Promise<Record<string, string | number>> {
  const figures: Record<string, string | number> = {};
  const cache = mkdtempSync(join(tmpdir(), "settle-go-bench-"));
  const previous = process.env.SETTLE_GO_CACHE;
  process.env.SETTLE_GO_CACHE = cache;
  try {
    const started = performance.now();
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
  const fresh = incarnationStartCpuMs(21, 5, false);
  const reused = incarnationStartCpuMs(21, 5, true);
  figures["incarnation start, fresh memory: instance / runtime start and package init, CPU ms (median of 21)"] = `${fresh.instanceMs.toFixed(1)} / ${fresh.initMs.toFixed(1)}`;
  figures["incarnation start, pooled memory (as runs reuse them): the same, CPU ms"] = `${reused.instanceMs.toFixed(1)} / ${reused.initMs.toFixed(1)} (${((fresh.instanceMs + fresh.initMs) / (reused.instanceMs + reused.initMs)).toFixed(2)}x less)`;
  // Warm both paths, then measure them in the same run, in alternating slices.
  await compareRates({ runtime: runtimeOperator, go: goOperator }, user, 5, 5);
  const rates = await compareRates({ runtime: runtimeOperator, go: goOperator }, user, 30, 5);
  figures["steps/CPU-s, client-go controller (seeds 1-30, default faults)"] = `${rates.go.rate.toFixed(0)} (${rates.go.cpuMsPerRun.toFixed(0)} CPU ms a run)`;
  figures["steps/CPU-s, the same operator on settle's runtime"] = `${rates.runtime.rate.toFixed(0)} (${rates.runtime.cpuMsPerRun.toFixed(1)} CPU ms a run)`;
  figures["ratio go / runtime (target >= 0.1)"] = (rates.go.rate / rates.runtime.rate).toFixed(3);
  // The same comparison with ten times the parents in the same five seconds: an incarnation's start weighs on ten
  // times the steps, so the ratio tends to what a step costs each (the steady state).
  const busy = () => user(50);
  await compareRates({ runtime: runtimeOperator, go: goOperator }, busy, 2, 2);
  const steady = await compareRates({ runtime: runtimeOperator, go: goOperator }, busy, 10, 2);
  figures["steps/CPU-s with 50 parents in 5 s (seeds 1-10): go / runtime, ratio"] = `${steady.go.rate.toFixed(0)} / ${steady.runtime.rate.toFixed(0)} (${steady.go.cpuMsPerRun.toFixed(0)} / ${steady.runtime.cpuMsPerRun.toFixed(1)} CPU ms a run), ${(steady.go.rate / steady.runtime.rate).toFixed(3)}`;
  const split = await profileGoSplit(async () => void (await stepsAndCpu(goOperator, user, 1, 20)));
  figures["where a Go run's CPU goes (profiled, seeds 1-20)"] = formatSplit(split);
  const scenarioPath = join(fixture, "scenario.yaml");
  const scenario = await loadYamlExplore(loadYamlScenario(scenarioPath));
  const rps = await runsPerSecond(scenario, scenarioPath, "level", 30);
  figures["runs/s, client-go fixture scenario (level, 30 runs, one worker)"] = `${rps.runsPerSec.toFixed(2)} (${rps.stepsPerRun.toFixed(0)} steps/run, ${rps.findings} findings)`;
  if (existsSync(ensemble)) {
    const scenarioE = await loadYamlExplore(loadYamlScenario(ensemble));
    const first = await firstFinding(scenarioE, ensemble, "delta", { seeds: 10, runs: 200 });
    figures["Ensemble delta: first finding, median of 10 seeds (target < 2000), ms"] = `${first.detectMsMedian.toFixed(0)} to the detection, ${first.msMedian.toFixed(0)} with shrinking (${first.cpuMsMedian.toFixed(0)} CPU ms; runs median ${first.runsMedian}, max ${first.runsMax}, missed ${first.missed}; load ${loadavg()[0]!.toFixed(1)})`;
    const level = await runsPerSecond(scenarioE, ensemble, "level", 100, 2);
    figures["Ensemble level: 100 runs on 2 workers (target: within 120 s on 2 cores), s"] = `${level.seconds.toFixed(1)} (${level.runsPerSec.toFixed(2)} runs/s, ${level.findings} findings, load ${loadavg()[0]!.toFixed(1)})`;
  }
  return figures;
}

/** The scenarios the determinism check runs: the client-go fixture's and every Go example's. */
function goScenarios(): string[] {
  const examples = readdirSync(examplesDir).map((name) => join(examplesDir, name, "scenario.yaml")).filter((path) => existsSync(path));
  return [join(fixture, "scenario.yaml"), ...examples.sort()];
}

/**
 * Trace hashes of every variant of each Go scenario for seeds 1..`SETTLE_BENCH_GO_SEEDS` (default 1,000), with faults
 * drawn as `settle explore` draws them, from two processes run side by side beside a CPU burner.
 * `npm run bench -- go-determinism`; runs only when named (it takes hours at 1,000 seeds on a loaded machine).
 */
export async function benchGoDeterminism(): Promise<Record<string, string | number>> {
  const count = Number(process.env.SETTLE_BENCH_GO_SEEDS ?? 1000);
  const only = process.env.SETTLE_BENCH_GO_SCENARIOS?.split(",");
  const entry = fileURLToPath(new URL("../test/go/hashes-entry.ts", import.meta.url));
  const figures: Record<string, string | number> = { "seeds per scenario (every variant of each)": count };
  for (const path of goScenarios()) {
    const name = relative(repoDir, dirname(path));
    if (only !== undefined && !only.some((part) => name.includes(part))) continue;
    const started = performance.now();
    const [a, b] = await besideBurner(() => Promise.all([childLines(entry, [path, "1", String(count)]), childLines(entry, [path, "1", String(count)])]));
    const agree = a.filter((line, i) => line === b[i]).length;
    const findings = a.filter((line) => !line.endsWith(" ok")).length;
    figures[`${name}: trace hashes equal in both processes`] = `${agree} of ${a.length} runs (${b.length} in the other; ${findings} ended other than ok; ${((performance.now() - started) / 1000).toFixed(0)} s)`;
  }
  return figures;
}
