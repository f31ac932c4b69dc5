// What each client stack (three Node.js ones, controller-runtime and client-go) does under each fault class, in the
// simulator: the framework examples' `level-no-retry` variant (the library's behaviour after a failed handler is
// all there is) and `level` (the control: its own retry) explored in process with a fault budget that holds one
// class alone. Per cell: every systematic fault point of the class (one fault at one place of the fault-free
// reference run), then `runs` random schedules drawing faults of that class only; the first finding is shrunk and,
// with SETTLE_WRITE_FINDINGS=1, written to examples/frameworks/<name>/findings/<class>.json (the `level` control's
// as level-<class>.json), its scenario path relative to the repository root, so `npx settle replay <file>` from
// there reproduces it. The Go stacks are `go:` variants, built for js/wasm when their scenario loads.
// SETTLE_FRAMEWORKS picks stacks, SETTLE_FRAMEWORK_CLASSES classes (`resync` among them), SETTLE_FRAMEWORK_RUNS the
// random runs per cell. One thread: these machines are shared. Benchmarks may read real time.
// Runnable alone: `node --conditions=settle-source --import tsx bench/index.ts frameworks`.
import { existsSync, mkdirSync, renameSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { performance } from "node:perf_hooks";
import { loadYamlExplore } from "../src/explore/yaml.ts";
import { loadYamlScenario } from "../src/scenario-yaml/load.ts";
import type { RunSummary } from "../src/explore/explore.ts";
import { collectFindings, referencePlan, runSummary } from "../src/explore/runs.ts";
import { planRun, type FaultPoint, type PlanContext } from "../src/explore/plan.ts";
import { runScenario } from "../src/explore/run.ts";
import { defaultFaultBudget, type Scenario } from "../src/explore/scenario.ts";
import { replayFormatVersion, type ReplayFile } from "../src/explore/findings.ts";
import { isFinding, isScenarioError } from "../src/check/verdict.ts";
import type { FaultBudget, PlannedFault } from "../src/sim/types.ts";

const root = fileURLToPath(new URL("..", import.meta.url));

/**
 * The stacks measured: each has examples/frameworks/<name>/scenario.yaml with level and level-no-retry. The last two
 * are Go programs (`go:` variants), built for js/wasm once when their scenario loads and run in the simulator as the
 * Node.js stacks' modules are.
 */
export const frameworkNames = ["client-node", "fluent-client", "dot-i-operator", "controller-runtime", "client-go"] as const;

/** A fault class: the budget's one kind (and code), and which systematic points belong to it. */
interface FaultClass {
  name: string;
  /** The kinds the random runs may draw (the default budget's count of each); none: the class has points only. */
  kinds: readonly string[];
  failCode?: number;
  /** The chance a drawn close-watch expires its watch (410 mid-stream), so that the two watch classes stay apart. */
  closeWatchExpired?: readonly [number, number];
  /** The class's systematic points, from the points planned for every kind. */
  points(all: readonly FaultPoint[]): FaultPoint[];
}

const ofClass = (...classes: string[]) => (all: readonly FaultPoint[]) => all.filter((p) => classes.includes(p.pointClass));
/**
 * The planner fails each request with 500 (and each update or patch with 409 too); a 429 or a 504 is placed where
 * it places the 500s, the code swapped.
 */
const failedWith = (code: number) => (all: readonly FaultPoint[]) =>
  all.filter((p) => p.pointClass === "fail-write" || p.pointClass === "fail-read").map((p) => ({ ...p, fault: { ...p.fault, code }, label: p.label.replace(/ with 500$/, ` with ${code}`) }));

export const faultClasses: readonly FaultClass[] = [
  { name: "fail-500", kinds: ["fail-request"], failCode: 500, points: ofClass("fail-write", "fail-read") },
  { name: "fail-409", kinds: ["fail-request"], failCode: 409, points: ofClass("conflict") },
  { name: "fail-429", kinds: ["fail-request"], failCode: 429, points: failedWith(429) },
  { name: "fail-504", kinds: ["fail-request"], failCode: 504, points: failedWith(504) },
  { name: "lost-response", kinds: ["lost-response"], points: ofClass("lost-response") },
  // The default budget expires one drawn close-watch in four (a 410 ERROR event mid-stream); each class here draws
  // one of the two only.
  { name: "close-watch", kinds: ["close-watch"], closeWatchExpired: [0, 1], points: ofClass("close-watch") },
  { name: "expire-watch", kinds: ["close-watch"], closeWatchExpired: [1, 1], points: ofClass("expire-watch") },
  { name: "stale-read", kinds: ["stale-read"], points: ofClass("stale-read") },
  { name: "delay-watch", kinds: ["delay-watch"], points: ofClass("delay-watch") },
  { name: "crash", kinds: ["crash"], points: ofClass("crash") },
  { name: "time-travel", kinds: ["crash", "stale-read"], points: ofClass("crash-time-travel", "crash-kind-time-travel") },
  { name: "pause", kinds: ["pause"], points: ofClass("pause") },
];

function budgetOf(cls: FaultClass): FaultBudget {
  const counts: Record<string, number> = {};
  for (const kind of cls.kinds) counts[kind] = defaultFaultBudget.counts[kind]!;
  return {
    chance: defaultFaultBudget.chance,
    counts,
    ...(cls.failCode === undefined ? {} : { failCodes: [cls.failCode] }),
    ...(cls.closeWatchExpired === undefined ? {} : { closeWatchExpired: cls.closeWatchExpired }),
  };
}

/** One cell: a framework's variant under one fault class. */
export interface Cell {
  framework: string;
  variant: string;
  cls: string;
  points: number;
  pointsFailed: number;
  runs: number;
  runsFailed: number;
  /** Random runs that drew at least one fault (a drawn stale read acts only on a resourceVersion=0 read). */
  runsWithFault: number;
  /** Verdict kinds of every failing run (points and random), with their counts. */
  verdicts: Record<string, number>;
  first?: { run: RunSummary; label: string; replay?: string; minimal?: { verdict: string; property: string | null; detail: string; faults: PlannedFault[]; steps: number } };
  cpuMs: number;
}

const SEED = 1;

/**
 * Stacks whose informers resync only when told to: their `level-no-retry` is measured once more under fail-500 with
 * these arguments added, a period shorter than the 60 s settle window, so that a resync, if the library makes one,
 * falls inside the run. (Without one the runs end 60 s after the last change, long before controller-runtime's
 * default cache SyncPeriod of 10 hours.) No finding file is written for it: its variant is not in the scenario.
 */
const resyncArgs: Readonly<Record<string, readonly string[]>> = { "client-go": ["--resync=30s"] };

/** Runs one cell: every point of the class, then `runs` random runs; the first failing run shrunk. */
export async function runCell(framework: string, base: Scenario, variant: string, cls: FaultClass, allPoints: readonly FaultPoint[], runs: number, write: boolean): Promise<Cell> {
  const cpu = process.cpuUsage();
  const scenario: Scenario = { ...base, faults: budgetOf(cls) };
  const points = cls.points(allPoints);
  // A class no budget can draw has its points only.
  if (cls.kinds.length === 0) runs = 0;
  const common = { scenario, variant, workload: "steps", params: {}, seed: SEED };
  const systematic: PlanContext = { ...common, strategy: "systematic", points };
  const random: PlanContext = { ...common, strategy: "random", points: [] };
  const cell: Cell = { framework, variant, cls: cls.name, points: points.length, pointsFailed: 0, runs, runsFailed: 0, runsWithFault: 0, verdicts: {}, cpuMs: 0 };
  let first: { summary: RunSummary; label: string } | undefined;
  const total = points.length + runs;
  // A module's process.exit, wherever Node runs the code that calls it, ends its incarnation inside the simulation
  // (test/module/exit-unwind.test.ts): every run counts.
  for (let i = 0; i < total; i++) {
    const planned = i < points.length ? planRun(systematic, i) : planRun(random, i);
    const outcome = await runScenario(scenario, planned.spec);
    if (i >= points.length && outcome.faults.length > 0) cell.runsWithFault++;
    if (!isFinding(outcome.verdict)) continue;
    if (i < points.length) cell.pointsFailed++;
    else cell.runsFailed++;
    const kind = outcome.verdict.kind === "scenario-error" ? "scenario-error (workload's waitFor not met)" : outcome.verdict.kind;
    cell.verdicts[kind] = (cell.verdicts[kind] ?? 0) + 1;
    // The first controller finding is the one kept; a scenario error (the workload's waitFor never met) only when
    // nothing else failed.
    const label = i < points.length ? `point ${i}: ${points[i]!.label}` : `random run ${i - points.length} (seed ${planned.spec.seed})`;
    if (first === undefined || (isScenarioError(first.summary.verdict) && !isScenarioError(outcome.verdict))) {
      first = { summary: runSummary({ index: i, strategy: planned.strategy, workload: "steps", seed: planned.spec.seed, ...(planned.point === undefined ? {} : { point: planned.point }) }, outcome), label };
    }
  }
  if (first !== undefined) {
    const [finding] = await collectFindings(scenario, { scenarioPath: "", variant, params: {}, runs, seed: SEED, workers: 1, strategy: "systematic", first: false }, [first.summary]);
    const outcome = finding!.minimal.outcome;
    cell.first = {
      run: first.summary,
      label: first.label,
      minimal: { verdict: outcome.verdict.kind, property: outcome.verdict.property ?? null, detail: outcome.verdict.detail, faults: finding!.minimal.faults, steps: outcome.steps },
    };
    if (write) {
      const file: ReplayFile = {
        version: replayFormatVersion,
        scenario: `examples/frameworks/${framework}/scenario.yaml`,
        variant,
        workload: "steps",
        params: {},
        seed: first.summary.seed,
        choices: finding!.minimal.choices,
        faults: finding!.minimal.faults,
        verdict: outcome.verdict.kind,
        property: outcome.verdict.property ?? null,
        ...(outcome.verdict.actor === undefined ? {} : { actor: outcome.verdict.actor }),
        traceHash: outcome.traceHash,
        steps: outcome.steps,
        run: first.summary.index,
        ...(outcome.verdict.error === undefined ? {} : { error: outcome.verdict.error }),
      };
      cell.first.replay = writeFindingFile(framework, variant, cls.name, file);
    }
  }
  const used = process.cpuUsage(cpu);
  cell.cpuMs = (used.user + used.system) / 1000;
  return cell;
}

/** The finding file of a cell, relative to the repository root: `<class>.json`, `level-<class>.json` for the control. */
export function findingPath(framework: string, variant: string, cls: string): string {
  return join("examples", "frameworks", framework, "findings", `${variant === "level-no-retry" ? "" : `${variant}-`}${cls}.json`);
}

function writeFindingFile(framework: string, variant: string, cls: string, file: ReplayFile): string {
  const path = findingPath(framework, variant, cls);
  const absolute = resolve(root, path);
  mkdirSync(dirname(absolute), { recursive: true });
  const temp = `${absolute}.${process.pid}.tmp`;
  writeFileSync(temp, `${JSON.stringify(file, null, 2)}\n`);
  renameSync(temp, absolute);
  return path;
}

/** Every planned point of a variant, for every kind (each class keeps its own). */
async function allPointsOf(scenario: Scenario, variant: string): Promise<FaultPoint[]> {
  const every: FaultBudget = { chance: defaultFaultBudget.chance, counts: { crash: 1, pause: 1, "stale-read": 1, "delay-watch": 1, "close-watch": 1, "fail-request": 1, "lost-response": 1 } };
  const plan = await referencePlan({ ...scenario, faults: every }, { variant, workload: "steps", params: {}, seed: SEED });
  if (plan.references.length > 0) throw new Error(`${scenario.name} ${variant}: the fault-free reference run fails (${plan.references[0]!.verdict.detail})`);
  return plan.points;
}

/** `level-no-retry` under fail-500 with `extra` arguments added to the program's (a resync period). */
async function resyncCell(framework: string, path: string, extra: readonly string[], runs: number): Promise<Cell> {
  const yaml = loadYamlScenario(path);
  const variant = yaml.variants["level-no-retry"]!;
  const scenario = await loadYamlExplore({ ...yaml, variants: { ...yaml.variants, "level-no-retry": { ...variant, args: [...(variant.args ?? []), ...extra] } } });
  const all = await allPointsOf(scenario, "level-no-retry");
  return runCell(framework, scenario, "level-no-retry", faultClasses.find((c) => c.name === "fail-500")!, all, runs, false);
}

function describe(cell: Cell): string {
  const verdicts = Object.entries(cell.verdicts).map(([k, n]) => `${k} ${n}`).join(", ");
  const head = `points ${cell.pointsFailed}/${cell.points} failed, random ${cell.runsFailed}/${cell.runs} failed (${cell.runsWithFault} drew a fault)`;
  const found = cell.first === undefined ? "" : `; first: ${cell.first.label} -> ${cell.first.minimal!.verdict}${cell.first.minimal!.property === null ? "" : ` ${cell.first.minimal!.property}`} (minimal: ${cell.first.minimal!.faults.length} fault(s), ${cell.first.minimal!.steps} steps)${cell.first.replay === undefined ? "" : `; replay: npx settle replay ${cell.first.replay}`}`;
  return `${head}${verdicts === "" ? "" : ` [${verdicts}]`}${found}; ${(cell.cpuMs / 1000).toFixed(0)} CPU-s`;
}

/**
 * The module's own stderr (the operators log JSON lines there) would bury the figures: muted while the runs go
 * on, with progress written through the original.
 */
async function muted<T>(body: (say: (line: string) => void) => Promise<T>): Promise<T> {
  const original = process.stderr.write.bind(process.stderr);
  const say = (line: string) => void original(`${line}\n`);
  process.stderr.write = (() => true) as typeof process.stderr.write;
  try {
    return await body(say);
  } finally {
    process.stderr.write = original;
  }
}

export async function benchFrameworks(): Promise<Record<string, string | number>> {
  const runs = Number(process.env.SETTLE_FRAMEWORK_RUNS ?? 50);
  const write = process.env.SETTLE_WRITE_FINDINGS === "1";
  const onlyClass = process.env.SETTLE_FRAMEWORK_CLASSES?.split(",");
  const onlyFramework = process.env.SETTLE_FRAMEWORKS?.split(",");
  const figures: Record<string, string | number> = {};
  figures["strategy"] = `per cell: every systematic point of the class (fifo, one fault), then ${runs} random runs drawing that class alone (seed ${SEED}); one thread`;
  const started = performance.now();
  await muted(async (say) => {
    for (const framework of frameworkNames) {
      if (onlyFramework !== undefined && !onlyFramework.includes(framework)) continue;
      const path = join(root, "examples", "frameworks", framework, "scenario.yaml");
      if (!existsSync(path)) continue;
      const scenario = await loadYamlExplore(loadYamlScenario(path));
      for (const variant of ["level-no-retry", "level"]) {
        const all = await allPointsOf(scenario, variant);
        // A stale read acts on a resourceVersion=0 list or watch (served from the watch cache); the planner places
        // one at each such list of the reference run. Without any, drawn stale reads and time travel serve nothing.
        const cachedReads = all.some((p) => p.pointClass === "stale-read");
        for (const cls of faultClasses) {
          if (onlyClass !== undefined && !onlyClass.includes(cls.name)) continue;
          const cell = await runCell(framework, scenario, variant, cls, all, runs, write);
          const key = `${framework} ${variant} ${cls.name}`;
          const unserved = !cachedReads && cls.kinds.includes("stale-read") ? " (no resourceVersion=0 list or watch in the reference run: no stale state served)" : "";
          figures[key] = `${describe(cell)}${unserved}`;
          say(`${key}: ${figures[key]}`);
          if (cell.first?.minimal !== undefined) say(`    ${cell.first.minimal.detail}`);
        }
      }
      const extra = resyncArgs[framework];
      if (extra !== undefined && (onlyClass === undefined || onlyClass.includes("resync"))) {
        const key = `${framework} level-no-retry ${extra.join(" ")} fail-500`;
        figures[key] = describe(await resyncCell(framework, path, extra, runs));
        say(`${key}: ${figures[key]}`);
      }
    }
  });
  figures["wall time (s)"] = ((performance.now() - started) / 1000).toFixed(0);
  return figures;
}

