// Module benchmark: an unmodified client-node operator in the simulator against the same operator written on
// settle's runtime (steps per CPU-second, in one run), the ceiling of that ratio (what the operator's own code path
// alone allows, from a profiled module run: module-split.ts), the cost of one incarnation's fresh load, and the time
// to the first finding of each framework example's delta variant under the default fault budget. Benchmarks may read
// real time. Runnable alone: `node --conditions=settle-source --import tsx bench/index.ts module`; the determinism
// check across processes is the section `module-determinism`.
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { performance } from "node:perf_hooks";
import { createSimulation, defineActor, type ActorDefinition } from "../src/sim/index.ts";
import { explore } from "../src/explore/explore.ts";
import { moduleActor } from "../src/module/actor.ts";
import { compileModule } from "../src/module/loader.ts";
import { makeBindings } from "../src/module/env.ts";
import { loadYamlExplore } from "../src/explore/yaml.ts";
import { loadYamlScenario } from "../src/scenario-yaml/load.ts";
import { quietly } from "../test/module/quietly.ts";
import { profileCpuSplit, type CpuSplit } from "./module-split.ts";
import { childrenOperator, compareRates, parentsUser, stepsAndCpu } from "./lib.ts";

const operator = fileURLToPath(new URL("../test/module/fixtures/client-node-operator.mjs", import.meta.url));
const configMapKind = { apiVersion: "v1", kind: "ConfigMap" };

/** The fixture operator's level variant, on settle's runtime: each parent ConfigMap gets its child, a copy of its data. */
const runtimeOperator = () => childrenOperator((parent) => ({ metadata: {}, data: (parent as { data?: Record<string, string> }).data ?? {} }), 30_000);

/** The user of both operators: five parents a second apart, each with data the child copies. */
const user = () => parentsUser((i) => ({ ...configMapKind, metadata: { name: `p${i}`, namespace: "default", labels: { role: "parent" } }, data: { i: String(i) } }));

const moduleOperator = () => moduleActor({ name: "op", module: operator, args: ["--mode=level"] });

/** Steps per CPU-second of both operators over seeds 1..runs, in alternating slices of `slice` runs. */
function compareModule(runs: number, slice: number): Promise<{ module: { rate: number; cpuMsPerRun: number }; runtime: { rate: number; cpuMsPerRun: number } }> {
  return compareRates({ runtime: runtimeOperator, module: moduleOperator }, user, runs, slice);
}

/** Milliseconds to evaluate the operator fresh (one incarnation's load), median of `count`. */
async function loadMs(count: number): Promise<number> {
  const compiled = compileModule(operator);
  const times: number[] = [];
  for (let i = 0; i < count; i++) {
    const sim = createSimulation({ seed: i, traceMode: "hash-only" });
    let measured = 0;
    sim.addActor(defineActor({ name: "probe", start(ctx) {
      const bindings = makeBindings({ ctx, modulePath: operator, args: ["--mode=level"], env: { KUBECONFIG: "/nonexistent" }, schedule: () => undefined, cancel: () => {}, exit: () => { throw new Error("exit"); }, connect: () => { throw new Error("no connection in the load benchmark"); } });
      const started = performance.now();
      // The top level throws at loadFromDefault (no kubeconfig): everything before it, the imports, is the load.
      return compiled.instantiate(bindings).then(
        () => undefined,
        () => undefined,
      ).finally(() => void (measured = performance.now() - started));
    } }));
    await sim.run({ maxSteps: 1 });
    times.push(measured);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)]!;
}

const percent = (share: number) => `${(share * 100).toFixed(0)}%`;

/**
 * What a module run's CPU split says about the ratio: the rate the operator's own code path alone would allow (its
 * fresh load, its libraries, Node's HTTP client and their part of the collections, with settle's side costing
 * nothing), as a ratio to the runtime figure of the same run; the same counting none of the collections as the
 * module's (the most generous bound); and whether that bound rules the 0.3 target out.
 */
function ceilingFigures(split: CpuSplit, moduleRate: number, runtimeRate: number): Record<string, string> {
  const s = split.share;
  const own = moduleRate / split.moduleOwnShare;
  const generous = moduleRate / (s.load + s.libraries + s["http-client"]);
  const steady = moduleRate / split.steadyOwnShare;
  // CPU µs per step: the whole module run, its own path at the most generous, and what 0.3 of the runtime's rate allows.
  const wholeUs = 1e6 / moduleRate;
  const generousUs = 1e6 / generous;
  const allowedUs = 1e6 / (0.3 * runtimeRate);
  const verdict = generousUs > allowedUs
    ? `ruled out by the module's own code path: even without collections it takes ${generousUs.toFixed(0)} CPU µs per step, 0.3 allows ${allowedUs.toFixed(0)}`
    : `not ruled out: settle's side (collections and undecided included) would have to fall from ${(wholeUs - generousUs).toFixed(0)} to at most ${(allowedUs - generousUs).toFixed(0)} CPU µs per step`;
  const figure = (rate: number) => `${rate.toFixed(0)} = ${(rate / runtimeRate).toFixed(3)} of the runtime figure`;
  return {
    "module run, profiled CPU split (seeds 1-30): load / libraries / Node's HTTP client | settle / Node's HTTP server | GC | undecided":
      `${percent(s.load)} / ${percent(s.libraries)} / ${percent(s["http-client"])} | ${percent(s.settle)} / ${percent(s["http-server"])} | ${percent(split.gcShare)} | ${percent(s.undecided)}`,
    "its allocated bytes, same columns (GC is split by them)":
      `${percent(split.allocShare.load)} / ${percent(split.allocShare.libraries)} / ${percent(split.allocShare["http-client"])} | ${percent(split.allocShare.settle)} / ${percent(split.allocShare["http-server"])} | - | ${percent(split.allocShare.undecided)}`,
    "the operator's own path alone (load, libraries, HTTP client, their GC): steps/CPU-s": figure(own),
    "the same counting no GC as the module's (most generous bound)": figure(generous),
    "the same without the fresh load per incarnation (item 4 requires it)": figure(steady),
    "target 0.3": verdict,
  };
}

const examplesDir = fileURLToPath(new URL("../examples/frameworks/", import.meta.url));
/** The framework examples, as the issue names them. */
const frameworks = ["client-node", "dot-i-operator", "fluent-client"] as const;


/**
 * Time to the first finding of an example's delta variant as `settle explore --first --workers 1` finds it, in
 * process: real and CPU ms from the start of the exploration to the detection (shrinking excluded), median over
 * seeds 1..count (CPU time says what a loaded machine hides in the real time). The scenario is loaded (and its module bundled) before. Undefined with the reason when the variant ends
 * in something else than its finding (a scenario error, a crash of the harness).
 */
async function firstFinding(example: string, count: number): Promise<{ medianMs: number; medianCpuMs: number; medianRuns: number } | { skipped: string }> {
  const path = join(examplesDir, example, "scenario.yaml");
  const scenario = await loadYamlExplore(loadYamlScenario(path));
  const times: number[] = [];
  const cpuTimes: number[] = [];
  const runs: number[] = [];
  for (let seed = 1; seed <= count; seed++) {
    // The explorer reads its clock at the start and at the detection first: both real and CPU time are kept.
    const readings: Array<{ wallMs: number; cpuMs: number }> = [];
    const clock = () => {
      const cpu = process.cpuUsage();
      readings.push({ wallMs: performance.now(), cpuMs: (cpu.user + cpu.system) / 1000 });
      return readings.at(-1)!.wallMs;
    };
    const result = await explore(scenario, { scenarioPath: path, variant: "delta", params: {}, runs: 500, seed, workers: 1, strategy: "mix", first: true }, clock);
    const finding = result.findings[0];
    if (finding === undefined) return { skipped: `seed ${seed}: no finding in ${result.runs} runs` };
    const verdict = finding.run.verdict;
    if (verdict.kind === "scenario-error" || verdict.kind === "actor-error") return { skipped: `seed ${seed}: ${verdict.kind}: ${verdict.detail.slice(0, 160)}` };
    times.push(result.detectMs);
    cpuTimes.push(readings[1]!.cpuMs - readings[0]!.cpuMs);
    runs.push(result.runs);
  }
  return { medianMs: median(times), medianCpuMs: median(cpuTimes), medianRuns: median(runs) };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

export async function benchModule(): Promise<Record<string, string | number>> {
  const compileStarted = performance.now();
  compileModule(operator);
  const compileMs = performance.now() - compileStarted;
  // Warm both paths, then measure them in the same run.
  await compareModule(5, 5);
  const { module, runtime } = await compareModule(100, 10);
  const split = await profileCpuSplit(async () => void (await stepsAndCpu(moduleOperator, user, 1, 30)), operator);
  const load = await loadMs(21);
  const findings: Record<string, string> = {};
  for (const example of frameworks) {
    const found = await quietly(() => firstFinding(example, 10));
    findings[`time to first finding, ${example} delta, in process, median of seeds 1-10: real / CPU ms (target < 1000)`] =
      "skipped" in found ? `skipped (${found.skipped})` : `${found.medianMs.toFixed(0)} / ${found.medianCpuMs.toFixed(0)} (median ${found.medianRuns} runs)`;
  }
  return {
    "client-node operator: bundle + compile, once per process (ms)": compileMs.toFixed(0),
    "client-node operator: fresh load per incarnation, median (ms)": load.toFixed(1),
    "steps/CPU-s, client-node operator in the simulator": module.rate.toFixed(0),
    "steps/CPU-s, same operator on settle's runtime": runtime.rate.toFixed(0),
    "ratio (target >= 0.3)": (module.rate / runtime.rate).toFixed(3),
    "CPU ms per run (1 simulated minute, default faults): module / runtime": `${module.cpuMsPerRun.toFixed(1)} / ${runtime.cpuMsPerRun.toFixed(1)}`,
    ...ceilingFigures(split, module.rate, runtime.rate),
    "load average (1 min) at the end": loadavg()[0]!.toFixed(1),
    ...findings,
  };
}

/** Seeds of each framework example the determinism section checks (SETTLE_BENCH_DETERMINISM_SEEDS overrides). */
const determinismSeeds = Number(process.env.SETTLE_BENCH_DETERMINISM_SEEDS ?? 1000);
const hashesEntry = fileURLToPath(new URL("../test/module/hashes-entry.ts", import.meta.url));

/** Runs hashes-entry.ts: one line `example variant seed hash` per run. */
function hashes(examples: readonly string[], first: number, count: number): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--conditions=settle-source", "--import", "tsx", hashesEntry, examples.join(","), String(first), String(count)], { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    // The examples log to stderr once per event: only its end is kept, to say why a child failed.
    let stderrTail = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString("utf8")));
    child.stderr.on("data", (chunk: Buffer) => (stderrTail = (stderrTail + chunk.toString("utf8")).slice(-3000)));
    child.on("error", reject);
    child.on("close", (code) => (code === 0 ? resolve(stdout.trim().split("\n")) : reject(new Error(`hashes-entry.ts ${examples.join(",")} ${first} ${count} exited ${code}:\n${stderrTail}`))));
  });
}

/**
 * Issue 31's determinism check: the same seeds of each framework example in two processes give the same trace
 * hashes, the two run side by side with a CPU burner beside them (a busy loop in a third process, started first and
 * killed at the end), so their schedules by the OS differ from any quiet run's.
 * `npm run bench -- module-determinism`; runs only when named (1,000 seeds of three examples take many minutes).
 */
export async function benchModuleDeterminism(): Promise<Record<string, string | number>> {
  const examples = frameworks.filter((example) => existsSync(join(examplesDir, example, "scenario.yaml")));
  const burner = spawn(process.execPath, ["-e", "for (;;) {}"], { stdio: "ignore" });
  const started = performance.now();
  const loadBefore = loadavg()[0]!;
  let plain: string[];
  let loaded: string[];
  try {
    [plain, loaded] = await Promise.all([hashes(examples, 1, determinismSeeds), hashes(examples, 1, determinismSeeds)]);
  } finally {
    burner.kill("SIGKILL");
  }
  const loadAfter = loadavg()[0]!;
  const byKey = new Map(loaded.map((line) => [line.split(" ").slice(0, 3).join(" "), line]));
  const perExample: Record<string, string> = {};
  for (const example of examples) {
    const mine = plain.filter((line) => line.startsWith(`${example} `));
    const differing = mine.filter((line) => byKey.get(line.split(" ").slice(0, 3).join(" ")) !== line);
    const first = differing[0];
    perExample[`${example}: runs compared, mismatches`] = `${mine.length}, ${differing.length}${first === undefined ? "" : ` (first: ${first.split(" ").slice(0, 3).join(" ")})`}`;
  }
  return {
    "seeds per example (delta and level in turn)": determinismSeeds,
    ...perExample,
    "wall time (s)": ((performance.now() - started) / 1000).toFixed(0),
    "load average (1 min) before / after": `${loadBefore.toFixed(1)} / ${loadAfter.toFixed(1)}`,
  };
}
