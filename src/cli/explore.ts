import { expectationLine } from "./expectation.ts";
import { availableParallelism } from "node:os";
import { relative } from "node:path";
import { realClock } from "../api/clock.ts";
import { explore, type ExploreResult } from "../explore/explore.ts";
import { summarizeVariant } from "../report/summary.ts";
import { findExampleDirs, hasScenario, loadScenario, resolveScenarioPath } from "../explore/load.ts";
import { strategyNames, type StrategyName } from "../explore/plan.ts";
import type { BoundedOptions } from "../explore/bounded.ts";
import { resolveParams } from "../explore/scenario.ts";
import { emitGithubAnnotations, type JunitCase } from "../report/junit.ts";
import { writeHtmlForReplayFile, writeJunitFile } from "../report/outputs.ts";
import { thrownLine } from "../check/thrown.ts";
import { intOption, paramOptions, parse, shardOption, UsageError } from "./args.ts";
import { GO_MISSING, hasGoToolchain } from "../go/build.ts";
import { variantCommand } from "../explore/example-commands.ts";

/** Runs each fixed variant gets in a tour of a folder of examples (the help text says it from here). */
export const tourFixedRuns = 100;

export const exploreUsage = `Usage: settle explore <scenario-file-or-example-dir> [options]

Runs many seeded schedules of a scenario with faults, checks its properties, shrinks every finding to a
minimal run and writes a replay file to .settle/findings/<scenario>/<variant>-<id>.json.
A directory of examples (e.g. "examples") explores every example folder right under it (one holding a scenario
file or a scenario.yaml), every variant; a scenario.yaml's variants that give only a command are skipped with the
settle drill command that runs them (examples/frameworks holds the Node.js framework examples). Without --runs and
--first, it runs as a tour: each buggy variant (expect: finding) stops at its first finding (at most 1000
runs), each fixed variant (expect: ok) gets a sweep of ${tourFixedRuns} runs; the line of each variant says how
many ran. With --variant, the last line says whether the outcome is the one the variant expects, and ends
"(unexpected)" when it is not (the exit code is 1 for a finding, 0 for none, either way).
A scenario.yaml explores the variants that give a Node.js module (module:) or a Go main package (go:, built for
js/wasm; replicas: N), with args: and env:: each runs unmodified in the simulator, its HTTP requests served in
process (variants with only a command: run under settle drill). A run of a Go program takes a second or more: add
--first to stop at a buggy variant's first finding, or --runs N for a fixed variant's sweep.

Options:
  --variant V        the variant to explore (default: every variant)
  --workload W       fix the workload (default: each run draws one)
  --param k=v        override a scenario parameter (repeatable)
  --runs N           runs per variant, all executed unless --first (default 1000)
  --seed S           the exploration's seed (default 1); every run's seed derives from it
  --workers N        worker threads (default: the number of cores); results do not depend on it
  --strategy S       mix | random | pct | systematic | bounded (default mix: systematic fault points first,
                     then random and PCT schedules with random faults; bounded: every schedule within
                     --preemptions of FIFO order crossed with every placement of up to --fault-points
                     systematic faults, on --workers threads, reporting whether that space was complete;
                     --runs bounds it only when given, and then runs it in one thread)
  --preemptions K    bounded: choices of a ready step other than the oldest, per schedule (default 2)
  --fault-points F   bounded: planned faults per schedule, 0, 1 or 2 (default 1)
  --no-reduction     bounded: run schedules that differ only by commuting steps too
  --checkpoint FILE  bounded: save the search to FILE as it goes and resume from it when it exists
  --shard i/n        run only shard i of n (0-based, as $JOB_COMPLETION_INDEX); combine with settle merge
                     (bounded: each shard writes its search record beside its findings, and settle merge
                     says whether all shards together were complete)
  --first            stop at the first finding
  --json             print one JSON object on stdout instead of the text report
  --html DIR         also write an HTML timeline per finding into DIR (created if missing)
  --junit FILE       also write JUnit XML (one test case per scenario x variant, a failure per finding);
                     GitHub Actions annotations are printed when GITHUB_ACTIONS=true

Exit codes: 0 no finding, 1 a finding, 2 usage or input error, or a scenario error: a property, a workload or
a setup of the scenario threw (reported with the exception and its file:line, never as a finding).
`;

interface Target {
  path: string;
  variants: string[] | undefined;
}

export async function exploreCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv, {
    variant: { type: "string" },
    workload: { type: "string" },
    param: { type: "string", multiple: true },
    runs: { type: "string" },
    seed: { type: "string" },
    workers: { type: "string" },
    strategy: { type: "string" },
    shard: { type: "string" },
    first: { type: "boolean" },
    preemptions: { type: "string" },
    "fault-points": { type: "string" },
    "no-reduction": { type: "boolean" },
    checkpoint: { type: "string" },
    json: { type: "boolean" },
    html: { type: "string" },
    junit: { type: "string" },
  });
  if (positionals.length !== 1) throw new UsageError("expects exactly one scenario file or example directory");
  const strategy = (values.strategy ?? "mix") as StrategyName;
  if (!strategyNames.includes(strategy)) throw new UsageError(`--strategy expects one of ${strategyNames.join(", ")}, got "${strategy}"`);
  // The bounded search runs its whole space unless --runs is given.
  const runs = intOption(values, "runs", strategy === "bounded" ? Number.POSITIVE_INFINITY : 1000, 1);
  const bounded = boundedOptions(values);
  const seed = intOption(values, "seed", 1, 0);
  const workers = intOption(values, "workers", availableParallelism(), 1);
  const shard = shardOption(values.shard);
  const overrides = paramOptions(values.param);
  const json = values.json === true;
  const target = positionals[0]!;
  // A scenario file, or a folder holding one, is one target; otherwise a folder of examples is many.
  const examples = hasScenario(target) ? [] : findExampleDirs(target, { yaml: true });
  const targets: Target[] = examples.length > 0 ? examples.map((path) => ({ path, variants: undefined })) : [{ path: target, variants: undefined }];
  // A folder of examples with no --runs or --first is a tour: show every bundled bug fast, still sweep the fixes.
  const tour = examples.length > 0 && values.runs === undefined && values.first !== true && strategy !== "bounded";
  const plan = (expect: "finding" | "ok") => (tour ? { runs: expect === "finding" ? runs : tourFixedRuns, first: expect === "finding" } : { runs, first: values.first === true });

  const results: object[] = [];
  const cases: JunitCase[] = [];
  let findings = 0;
  let scenarioErrors = 0;
  const runsText = tour ? `buggy variants to their first finding (at most ${runs} runs), fixed variants ${tourFixedRuns} runs` : `runs ${Number.isFinite(runs) ? runs : "all"}`;
  process.stderr.write(`settle explore: seed ${seed}, ${runsText}, strategy ${strategy}, workers ${workers}${shard ? `, shard ${shard.index}/${shard.count}` : ""}\n`);
  for (const t of targets) {
    const scenarioPath = resolveScenarioPath(t.path);
    const shown = relative(process.cwd(), scenarioPath) || scenarioPath;
    // Variants that run a command are processes, which only settle drill runs: a hint, not an error, unless named.
    const drillOnly = await drillOnlyVariants(scenarioPath);
    if (examples.length > 0 && drillOnly.every) {
      process.stderr.write(`settle explore: ${shown}: skipped, its variants run commands, not modules (run it with ${variantCommand("drill", shown, drillOnly.names[0] ?? "V")})\n`);
      continue;
    }
    if (examples.length > 0 && drillOnly.go && !hasGoToolchain()) {
      process.stderr.write(`settle explore: ${shown}: skipped, it runs Go programs and there is ${GO_MISSING}\n`);
      continue;
    }
    const scenario = await loadScenario(scenarioPath);
    const params = paramsOrUsage(scenario, overrides);
    const variants = typeof values.variant === "string" ? [values.variant] : Object.keys(scenario.variants);
    for (const variant of variants) {
      if (!(variant in scenario.variants)) throw new UsageError(`--variant: scenario ${scenario.name} has no variant "${variant}" (known: ${Object.keys(scenario.variants).join(", ")})`);
      if (typeof values.variant !== "string" && drillOnly.names.includes(variant)) {
        process.stderr.write(`settle explore: ${shown} --variant ${variant}: skipped, it runs a command, not a module (run it with ${variantCommand("drill", shown, variant)})\n`);
        continue;
      }
      if (typeof values.workload === "string" && !(values.workload in scenario.workloads)) {
        throw new UsageError(`--workload: scenario ${scenario.name} has no workload "${values.workload}" (known: ${Object.keys(scenario.workloads).join(", ")})`);
      }
      const progress = progressReporter(`${scenario.name}/${variant}`);
      const planned = plan(scenario.variants[variant]!.expect);
      const result = await explore(
        scenario,
        {
          scenarioPath,
          variant,
          ...(typeof values.workload === "string" ? { workload: values.workload } : {}),
          params,
          runs: planned.runs,
          seed,
          workers,
          strategy,
          ...(shard ? { shard } : {}),
          first: planned.first,
          ...(strategy === "bounded" ? { bounded: checkpointPer(bounded, scenario.name, variant, targets.length === 1 && typeof values.variant === "string") } : {}),
          onProgress: progress.update,
        },
        () => realClock.now(),
      );
      progress.done(result);
      const summary = report(scenario.name, scenarioPath, variant, params, result, json);
      const errors = summary.findings.filter((f) => f.verdict === "scenario-error");
      scenarioErrors += errors.length;
      findings += summary.findings.length - errors.length;
      for (const error of errors) process.stderr.write(`settle explore: scenario ${scenario.name} --variant ${variant}: ${error.error === undefined ? "scenario error" : thrownLine(error.error)}\n`);
      results.push(summary);
      // One variant asked for: the last line says whether what was found is what the variant expects, as the drill's.
      if (!json && typeof values.variant === "string") process.stdout.write(`${expectationLine(summary.findings.length - errors.length > 0, scenario.variants[variant]!.expect)}\n`);
      cases.push({ scenario: scenario.name, variant, scenarioPath: relative(process.cwd(), scenarioPath), runs: result.runs, wallMs: result.wallMs, findings: summary.findings });
      if (typeof values.html === "string") {
        for (const finding of summary.findings) {
          const { path } = await writeHtmlForReplayFile(finding.replay, { dir: values.html });
          process.stderr.write(`html report: ${relative(process.cwd(), path)}\n`);
        }
      }
    }
  }
  if (typeof values.junit === "string") {
    writeJunitFile(values.junit, cases);
    process.stderr.write(`junit report: ${values.junit}\n`);
  }
  // With --json, stdout holds one JSON object only: annotations go to stderr, which Actions reads too.
  emitGithubAnnotations(cases, json ? { write: (text) => void process.stderr.write(text) } : {});
  if (json) process.stdout.write(`${JSON.stringify(results.length === 1 ? results[0] : { results }, null, 2)}\n`);
  // The scenario's own error outranks findings: they may be its consequences, and CI must not take it for a bug.
  return scenarioErrors > 0 ? 2 : findings > 0 ? 1 : 0;
}

/**
 * The variants of a scenario.yaml that give a command and no module or Go program (`every`: all of them; `go`:
 * whether any runs a Go program). A scenario.yaml that does not load gives none here: loading it for the exploration
 * reports it.
 */
async function drillOnlyVariants(path: string): Promise<{ names: string[]; every: boolean; go: boolean }> {
  if (!/\.ya?ml$/i.test(path)) return { names: [], every: false, go: false };
  const { loadYamlScenario } = await import("../scenario-yaml/load.ts");
  let variants;
  try {
    variants = Object.entries(loadYamlScenario(path).variants);
  } catch {
    return { names: [], every: false, go: false };
  }
  const names = variants.filter(([, v]) => v.module === undefined && v.go === undefined).map(([name]) => name);
  return { names, every: names.length === variants.length, go: variants.some(([, v]) => v.go !== undefined) };
}

function boundedOptions(values: Record<string, unknown>): BoundedOptions {
  const faultPoints = intOption(values, "fault-points", 1, 0);
  if (faultPoints > 2) throw new UsageError(`--fault-points expects 0, 1 or 2, got "${String(values["fault-points"])}"`);
  const options: BoundedOptions = { preemptions: intOption(values, "preemptions", 2, 0), faultPoints, reduction: values["no-reduction"] !== true };
  if (typeof values.checkpoint === "string") options.checkpoint = values.checkpoint;
  return options;
}

/** One checkpoint file per explored variant: FILE itself for a single one, FILE.<scenario>.<variant> otherwise. */
function checkpointPer(options: BoundedOptions, scenario: string, variant: string, single: boolean): BoundedOptions {
  if (options.checkpoint === undefined || single) return options;
  return { ...options, checkpoint: `${options.checkpoint}.${scenario}.${variant}` };
}

function paramsOrUsage(scenario: Parameters<typeof resolveParams>[0], overrides: Record<string, string>) {
  try {
    return resolveParams(scenario, overrides);
  } catch (error) {
    throw new UsageError(`--param: ${error instanceof Error ? error.message : String(error)}`);
  }
}

function report(name: string, scenarioPath: string, variant: string, params: Record<string, unknown>, result: ExploreResult, json: boolean) {
  const { summary, reports, line } = summarizeVariant({ name, scenarioPath, variant, params, result, cwd: process.cwd() });
  if (!json) {
    for (const text of reports) process.stdout.write(`${text}\n`);
    process.stdout.write(`${line}\n`);
    for (const c of result.counters) {
      process.stdout.write(`  ${c.kind.padEnd(10)} ${c.name}: failed ${c.failures} of ${c.evaluations} checks${c.everHeld ? "" : " (never held)"}\n`);
    }
  }
  return summary;
}

function progressReporter(label: string): { update(p: { done: number; total: number; findings: number }): void; done(r: ExploreResult): void } {
  const tty = process.stderr.isTTY === true;
  const startMs = realClock.now();
  let lastTenth = -1;
  return {
    update({ done, total, findings }) {
      const rate = Math.round((done * 1000) / Math.max(1, realClock.now() - startMs));
      if (tty) {
        const width = 30;
        const filled = Math.round((done / total) * width);
        process.stderr.write(`\r${label} [${"#".repeat(filled)}${".".repeat(width - filled)}] ${done}/${total} runs, ${findings} failing, ${rate} runs/s `);
        return;
      }
      const tenth = Math.floor((done * 10) / total);
      if (tenth !== lastTenth) {
        lastTenth = tenth;
        process.stderr.write(`${label}: ${done}/${total} runs, ${findings} failing, ${rate} runs/s\n`);
      }
    },
    done(result) {
      if (tty) process.stderr.write("\n");
      if (result.findings.length > 0) process.stderr.write(`${label}: shrunk ${result.findings.length} finding(s)\n`);
    },
  };
}
