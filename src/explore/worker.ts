// A worker thread of `explore`: loads the scenario itself and runs the indexes it was given, or, for the bounded
// search, serves the tasks it is sent (src/explore/bounded-parallel.ts).
import { parentPort, workerData } from "node:worker_threads";
import { loadScenario } from "./load.ts";
import { FirstFindingBound, runIndexes } from "./explore.ts";
import type { FaultPoint, StrategyName } from "./plan.ts";
import type { Params } from "./scenario.ts";
import type { BoundedJob } from "./bounded-search.ts";
import { serveTasks } from "./bounded-parallel.ts";
import { adoptModuleBundles, adoptPreflightedModules, type ModuleBundle } from "../module/loader.ts";
import { adoptGoPrograms, type GoProgram } from "../go/build.ts";

interface Job {
  scenarioPath: string;
  variant: string;
  workload: string | undefined;
  params: Params;
  seed: number;
  strategy: StrategyName;
  points: FaultPoint[];
  indexes: number[];
  /** With `--first`: the shared lowest finding index (see FirstFindingBound). */
  firstBound: SharedArrayBuffer | undefined;
}

const job = workerData as (Job | BoundedJob) & { moduleBundles?: ModuleBundle[]; preflightedModules?: string[]; goPrograms?: GoProgram[] };
// The main thread's bundles of the scenario's modules: loading the scenario here compiles them without esbuild. And
// the module variants it found to load: loading the scenario here does not evaluate each of them again.
adoptModuleBundles(job.moduleBundles ?? []);
adoptPreflightedModules(job.preflightedModules ?? []);
// And its Go programs, built and compiled: a worker compiles none again.
adoptGoPrograms(job.goPrograms ?? []);
const scenario = await loadScenario(job.scenarioPath);
if ("kind" in job) serveTasks(scenario, job);
else await runPlanned(job);

async function runPlanned(job: Job): Promise<void> {
  const ctx = { scenario, variant: job.variant, workload: job.workload, params: job.params, seed: job.seed, strategy: job.strategy, points: job.points };
  const first = job.firstBound === undefined ? undefined : new FirstFindingBound(job.firstBound);
  await runIndexes(ctx, job.indexes, first, (summary) => parentPort!.postMessage(summary));
}
