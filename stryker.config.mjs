// Mutation testing (StrykerJS) of the modules every verdict rests on, one group at a time, each mutated module run
// against the test files that cover it. `npm run mutation` runs every group; `npm run mutation -- rng shrink` runs
// some. Reports: reports/mutation/<group>.html (and .json); the closing table gives the score per module. Survivors
// kept on purpose are listed in docs/mutation.md. Not part of `npm test`.
//
// Run directly (node stryker.config.mjs [group...]) this file runs Stryker once per group, niced, one process at a
// time; imported by Stryker it is the configuration of the group named by SETTLE_MUTATION_GROUP.
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, relative } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = dirname(fileURLToPath(import.meta.url));

const planTests = ["test/explore/plan.test.ts", "test/explore/clock-points.test.ts"];

/** The simulator's own tests of its kernel: each takes a few seconds, all eight about 16 s. */
const kernelTests = ["test/sim/kernel.test.ts", "test/sim/step-waits.test.ts", "test/sim/guards.test.ts", "test/sim/client.test.ts", "test/sim/faults.test.ts", "test/sim/changes.test.ts", "test/sim/trace.test.ts", "test/sim/clock-faults.test.ts"];

/**
 * Each group: the modules it mutates and the test files run against them, the most direct first (a mutant stops
 * at the first test file that fails). Slow files that add little (trace-hash pins, CLI tests on dist/) stay out, so a
 * group takes minutes on one core.
 */
export const groups = {
  rng: { mutate: ["src/sim/rng.ts"], tests: ["test/sim/rng.test.ts", "test/sim/rng-clock.test.ts"] },
  shrink: { mutate: ["src/explore/shrink.ts"], tests: ["test/explore/shrink.test.ts"] },
  // The planner in two halves (about 300 mutants each): the run plan and faultPointsOf, then the time-travel and clock
  // points. Its own test and clock-points (4 s) only: planned-classes (18 s a run) would add half a minute to every
  // survivor for what test/explore/plan pins directly.
  "plan-a": { mutate: ["src/explore/plan.ts:1-246"], tests: planTests },
  "plan-b": { mutate: ["src/explore/plan.ts:247-380"], tests: planTests },
  // The kernel in two halves (about 400 mutants each), so that one run fits in the time a helper has.
  "kernel-a": { mutate: ["src/sim/lifecycle.ts", "src/sim/kernel.ts:1-520"], tests: kernelTests },
  "kernel-b": { mutate: ["src/sim/kernel.ts:521-940"], tests: kernelTests },
  check: { mutate: ["src/check/**/*.ts"], tests: ["test/check/thrown.test.ts", "test/check/properties.test.ts", "test/check/marks.test.ts", "test/explore/final-world.test.ts", "test/explore/deadline-busy.test.ts", "test/explore/quiescence.test.ts"] },
  runtime: { mutate: ["src/runtime/workqueue.ts", "src/runtime/informer-state.ts"], tests: ["test/runtime/workqueue.test.ts", "test/runtime/informer.test.ts", "test/runtime/controller.test.ts"] },
  store: {
    mutate: ["src/store/preconditions.ts", "src/store/revision-log.ts"],
    tests: ["test/store/preconditions.test.ts", "test/store/revision-log.test.ts", "test/store/writes.test.ts", "test/store/delete.test.ts", "test/store/reads.test.ts", "test/store/properties.test.ts", "test/store/handover.test.ts"],
  },
  server: { mutate: ["src/server/routes.ts"], tests: ["test/server/routes.test.ts", "test/server/paths.test.ts"] },
};

/**
 * Stryker's TypeScript checker, and Stryker itself where it rewrites tsconfig files in its sandbox, need the compiler
 * API, which the project's typescript (7, the Go port) does not have. They get TypeScript 5.9 from the local package
 * stryker/typescript-5 (see package.json) through a resolve hook in Stryker's own processes (its main process and its
 * checker's); the test processes and everything else keep typescript 7.
 */
function strykerImportsTypeScript5() {
  const typescript5 = createRequire(join(root, "stryker", "typescript-5", "package.json")).resolve("typescript");
  const hooks = `export async function resolve(specifier, context, next) {
    if (specifier === "typescript" && (context.parentURL ?? "").includes("/node_modules/@stryker-mutator/")) return next(${JSON.stringify(pathToFileURL(typescript5).href)}, context);
    return next(specifier, context);
  }`;
  const register = `import { register } from "node:module"; register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(hooks)}`)});`;
  return ["--import", `data:text/javascript,${encodeURIComponent(register)}`];
}

function config(name) {
  const group = groups[name];
  if (group === undefined) throw new Error(`stryker.config.mjs: SETTLE_MUTATION_GROUP is "${name}"; expected one of ${Object.keys(groups).join(", ")}`);
  return {
    $schema: "./node_modules/@stryker-mutator/core/schema/stryker-schema.json",
    plugins: ["@stryker-mutator/tap-runner", "@stryker-mutator/typescript-checker"],
    testRunner: "tap",
    tap: {
      testFiles: group.tests,
      // node runs each test file itself (not --test), with the source condition and tsx, reporting TAP.
      nodeArgs: ["--conditions=settle-source", "--import", "tsx", "--test-reporter=tap", "-r", "{{hookFile}}", "{{testFile}}"],
      forceBail: true,
    },
    // The tap runner measures coverage per test file: a mutant runs only the files that reach it.
    coverageAnalysis: "perTest",
    checkers: ["typescript"],
    tsconfigFile: "tsconfig.mutation.json",
    checkerNodeArgs: strykerImportsTypeScript5(),
    mutate: group.mutate,
    concurrency: 1,
    timeoutMS: 20_000,
    dryRunTimeoutMinutes: 15,
    // The sandbox copies the repository: leave out what no test here reads.
    ignorePatterns: ["dist", "dist.*", "reports", ".settle", ".scratch", "scratch", "test-artifacts", "acceptance", "bench", ".ci"],
    tempDirName: ".stryker-tmp",
    cleanTempDir: true,
    reporters: ["html", "json", "clear-text", "progress"],
    htmlReporter: { fileName: `reports/mutation/${name}.html` },
    jsonReporter: { fileName: `reports/mutation/${name}.json` },
    clearTextReporter: { allowColor: false, logTests: false, reportMutants: true, reportScoreTable: true },
  };
}

export default process.env.SETTLE_MUTATION_GROUP === undefined ? {} : config(process.env.SETTLE_MUTATION_GROUP);

/** The mutation score of each mutated module in a group's JSON report: killed (and timed out) of all valid mutants. */
function scores(name) {
  const file = join(root, "reports", "mutation", `${name}.json`);
  if (!existsSync(file)) return [];
  const report = JSON.parse(readFileSync(file, "utf8"));
  return Object.entries(report.files).map(([path, { mutants }]) => {
    const count = (status) => mutants.filter((m) => m.status === status).length;
    const detected = count("Killed") + count("Timeout");
    const valid = detected + count("Survived") + count("NoCoverage");
    return { module: relative(root, join(root, path)), detected, survived: count("Survived"), noCoverage: count("NoCoverage"), invalid: count("CompileError"), score: valid === 0 ? 100 : (100 * detected) / valid };
  });
}

function main(names) {
  const unknown = names.filter((n) => !(n in groups));
  if (unknown.length > 0) {
    console.error(`settle mutation: unknown group ${unknown.join(", ")} (groups: ${Object.keys(groups).join(", ")})`);
    process.exit(2);
  }
  const chosen = names.length > 0 ? names : Object.keys(groups);
  const stryker = join(root, "node_modules", "@stryker-mutator", "core", "bin", "stryker.js");
  let failed = false;
  for (const name of chosen) {
    console.log(`settle mutation: group ${name}`);
    const run = spawnSync("nice", ["-n", "15", process.execPath, ...strykerImportsTypeScript5(), stryker, "run", "stryker.config.mjs"], { cwd: root, stdio: "inherit", env: { ...process.env, SETTLE_MUTATION_GROUP: name } });
    if (run.status !== 0) failed = true;
  }
  console.log("\nmodule                          score  killed  survived  no-coverage  type-errors");
  for (const row of chosen.flatMap(scores)) {
    console.log(`${row.module.padEnd(31)} ${row.score.toFixed(1).padStart(5)}%  ${String(row.detected).padStart(6)}  ${String(row.survived).padStart(8)}  ${String(row.noCoverage).padStart(11)}  ${String(row.invalid).padStart(11)}`);
  }
  process.exit(failed ? 1 : 0);
}

if (process.argv[1] !== undefined && pathToFileURL(process.argv[1]).href === import.meta.url) main(process.argv.slice(2));
