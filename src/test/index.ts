// `settle/test`: explore a scenario from a test runner (node:test, vitest, jest). `assertNoFindings` fails
// with the text report of each shrunk finding (its timeline, the failing property and the replay command) as
// the AssertionError's message; `assertFinds` is the regression test of a known bug; `explore` returns what
// `settle explore --json` prints. Runs use worker threads as the CLI does.
import { AssertionError } from "node:assert";
import { availableParallelism } from "node:os";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { realClock } from "../api/clock.ts";
import type { VerdictKind } from "../check/verdict.ts";
import { explore as exploreRuns } from "../explore/explore.ts";
import { loadScenario, resolveScenarioPath } from "../explore/load.ts";
import { strategyNames, type StrategyName } from "../explore/plan.ts";
import { resolveParams, type Params, type Scenario } from "../explore/scenario.ts";
import { summarizeVariant, type FindingSummary, type VariantSummary } from "../report/summary.ts";

export type { FindingSummary, VariantSummary };

export interface ExploreTestOptions {
  /** The variant to explore. Required unless the scenario has exactly one. */
  variant?: string;
  /** Runs to execute. Default 200 (the CLI's default is 1000: a test suite has many scenarios). */
  runs?: number;
  /** Fix the workload. Default: each run draws one. */
  workload?: string;
  /** Parameter overrides by name, typed like the scenario's defaults. Default: none. */
  params?: Readonly<Record<string, string | number | boolean>>;
  /** The exploration's seed. Default 1. */
  seed?: number;
  /** Worker threads. Default: the number of cores; results do not depend on it. */
  workers?: number;
  /** Default "mix", as the CLI. */
  strategy?: StrategyName;
  /** Stop at the first finding. Default false. */
  first?: boolean;
  /** Where `.settle/findings` replay files are written. Default: the working directory. */
  cwd?: string;
}

export interface AssertFindsOptions extends ExploreTestOptions {
  /** The verdict the finding must have (e.g. "silent-divergence"). Default: any. */
  verdict?: VerdictKind;
  /** The property the finding must name. Default: any. */
  property?: string;
}

/** A scenario file (or a folder holding `scenario.ts`), as a path relative to the working directory or a URL. */
export type ScenarioFile = string | URL;

const runsDefault = 200;
const runsMax = 1_000_000;

function checkCount(name: string, value: number | undefined, min: number, max: number): void {
  if (value === undefined) return;
  if (!Number.isInteger(value) || value < min || value > max) throw new TypeError(`settle/test: options.${name} must be an integer from ${min} to ${max}, got ${String(value)}`);
}

function pickVariant(scenario: Scenario, variant: string | undefined): string {
  const known = Object.keys(scenario.variants);
  if (variant === undefined) {
    if (known.length === 1) return known[0]!;
    throw new TypeError(`settle/test: options.variant is required: scenario ${scenario.name} has variants ${known.join(", ")}`);
  }
  if (!known.includes(variant)) throw new TypeError(`settle/test: scenario ${scenario.name} has no variant "${variant}" (known: ${known.join(", ")})`);
  return variant;
}

/** Checks the options at the boundary and fills in every default. */
function resolveOptions(scenario: Scenario, options: ExploreTestOptions) {
  checkCount("runs", options.runs, 1, runsMax);
  checkCount("seed", options.seed, 0, 2 ** 32 - 1);
  checkCount("workers", options.workers, 1, 1024);
  if (options.strategy !== undefined && !strategyNames.includes(options.strategy)) {
    throw new TypeError(`settle/test: options.strategy must be one of ${strategyNames.join(", ")}, got "${String(options.strategy)}"`);
  }
  if (options.workload !== undefined && !(options.workload in scenario.workloads)) {
    throw new TypeError(`settle/test: scenario ${scenario.name} has no workload "${options.workload}" (known: ${Object.keys(scenario.workloads).join(", ")})`);
  }
  const overrides = Object.fromEntries(Object.entries(options.params ?? {}).map(([key, value]) => [key, String(value)]));
  let params: Params;
  try {
    params = resolveParams(scenario, overrides);
  } catch (error) {
    throw new TypeError(`settle/test: options.params: ${error instanceof Error ? error.message : String(error)}`);
  }
  return {
    variant: pickVariant(scenario, options.variant),
    runs: options.runs ?? runsDefault,
    seed: options.seed ?? 1,
    workers: options.workers ?? availableParallelism(),
    strategy: options.strategy ?? "mix",
    first: options.first === true,
    cwd: options.cwd ?? process.cwd(),
    params,
  };
}

/** Explores one variant of the scenario in `file` and returns what `settle explore --json` prints for it. */
export async function explore(file: ScenarioFile, options: ExploreTestOptions = {}): Promise<VariantSummary> {
  return (await exploreWithReports(file, options)).summary;
}

async function exploreWithReports(file: ScenarioFile, options: ExploreTestOptions): Promise<{ summary: VariantSummary; reports: string[] }> {
  if (typeof file !== "string" && !(file instanceof URL)) {
    throw new TypeError(`settle/test: the first argument is the scenario file (a path or a file URL), got ${typeof file}: pass new URL("./my.scenario.ts", import.meta.url)`);
  }
  if (typeof options !== "object" || options === null) throw new TypeError("settle/test: options must be an object");
  const scenarioPath = resolveScenarioPath(file instanceof URL ? fileURLToPath(file) : resolve(file));
  const scenario = await loadScenario(scenarioPath);
  const o = resolveOptions(scenario, options);
  const spec = { scenarioPath, variant: o.variant, params: o.params, runs: o.runs, seed: o.seed, workers: o.workers, strategy: o.strategy, first: o.first };
  const result = await exploreRuns(scenario, { ...spec, ...(options.workload !== undefined ? { workload: options.workload } : {}) }, () => realClock.now());
  const { summary, reports } = summarizeVariant({ name: scenario.name, scenarioPath, variant: o.variant, params: o.params, result, cwd: o.cwd });
  return { summary, reports };
}

/** Explores the variant and throws an AssertionError whose message is the report of every finding. */
export async function assertNoFindings(file: ScenarioFile, options: ExploreTestOptions = {}): Promise<VariantSummary> {
  const { summary, reports } = await exploreWithReports(file, options);
  if (summary.findings.length === 0) return summary;
  const head = `settle: ${summary.scenario} --variant ${summary.variant}: ${summary.findings.length} finding(s) in ${summary.runs} runs`;
  throw new AssertionError({ message: [head, ...reports].join("\n\n"), actual: summary.findings, expected: [], operator: "assertNoFindings" });
}

/** Explores the variant and throws an AssertionError unless a finding matches `verdict` and `property`. */
export async function assertFinds(file: ScenarioFile, options: AssertFindsOptions = {}): Promise<FindingSummary> {
  const { summary } = await exploreWithReports(file, options);
  const match = summary.findings.find((f) => (options.verdict === undefined || f.verdict === options.verdict) && (options.property === undefined || f.property === options.property));
  if (match !== undefined) return match;
  const wanted = [options.verdict ?? "any verdict", options.property === undefined ? "any property" : `property "${options.property}"`].join(" on ");
  const found = summary.findings.map((f) => `${f.verdict} on "${f.property ?? "-"}"`).join(", ") || "no finding";
  throw new AssertionError({
    message: `settle: ${summary.scenario} --variant ${summary.variant}: expected a finding (${wanted}) in ${summary.runs} runs, got ${found}`,
    actual: summary.findings,
    expected: { verdict: options.verdict, property: options.property },
    operator: "assertFinds",
  });
}
