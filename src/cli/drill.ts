import { drill, type DrillRun } from "../drill/drill.ts";
import { loadScenario, resolveScenarioPath } from "../explore/load.ts";
import { resolveParams } from "../explore/scenario.ts";
import { intOption, paramOptions, parse, UsageError } from "./args.ts";

export const drillUsage = `Usage: settle drill <scenario-file-or-example-dir> [options] -- <command...>

Drills a real controller process, in any language, against the scenario: serves the scenario's world over a
Kubernetes-compatible API, runs <command> in its own process group with KUBECONFIG pointing at it, waits for its
first watch, applies the workload, and kills the whole group right after its k-th applied write (the write's
response held back until the group is dead), for every k of a reference run; then restarts it, waits for a
quiet window and checks the scenario's properties. A report line per kill point.

Options:
  --workload W        the workload to apply (default: the scenario's first)
  --variant V         the variant whose properties are checked (default: the first)
  --param k=v         override a scenario parameter (repeatable)
  --kill-points LIST  comma-separated write numbers to kill after (default: every write of the reference run)
  --quiet-ms N        no store change for this long counts as quiet (default 2000)
  --timeout-ms N      a run not quiet by then fails (default 60000)
  --json              print { reference, runs: [{ killAfterWrite, verdict, failed, writes }] } on stdout

Exit codes: 0 every kill point passed, 1 a property failed at some kill point, 2 usage or input error.
`;

export async function drillCommand(argv: string[]): Promise<number> {
  const dash = argv.indexOf("--");
  if (dash < 0) throw new UsageError("expects the controller's command after --");
  const command = argv.slice(dash + 1);
  if (command.length === 0) throw new UsageError("expects the controller's command after --");
  const { values, positionals } = parse(argv.slice(0, dash), {
    workload: { type: "string" },
    variant: { type: "string" },
    param: { type: "string", multiple: true },
    "kill-points": { type: "string" },
    "quiet-ms": { type: "string" },
    "timeout-ms": { type: "string" },
    json: { type: "boolean" },
  });
  if (positionals.length !== 1) throw new UsageError("expects exactly one scenario file or example directory before --");
  const scenario = await loadScenario(resolveScenarioPath(positionals[0]!));
  let params;
  try {
    params = resolveParams(scenario, paramOptions(values.param));
  } catch (error) {
    throw new UsageError(`--param: ${error instanceof Error ? error.message : String(error)}`);
  }
  const workload = typeof values.workload === "string" ? values.workload : Object.keys(scenario.workloads)[0]!;
  if (!(workload in scenario.workloads)) throw new UsageError(`--workload: scenario ${scenario.name} has no workload "${workload}"`);
  const variant = typeof values.variant === "string" ? values.variant : Object.keys(scenario.variants)[0]!;
  if (!(variant in scenario.variants)) throw new UsageError(`--variant: scenario ${scenario.name} has no variant "${variant}"`);
  const killPoints = typeof values["kill-points"] === "string" ? values["kill-points"].split(",").map((t) => {
    const k = Number(t);
    if (!Number.isInteger(k) || k < 1) throw new UsageError(`--kill-points expects write numbers >= 1, got "${t}"`);
    return k;
  }) : undefined;
  const result = await drill({
    scenario,
    ctx: { variant, workload, params },
    command,
    quietMs: intOption(values, "quiet-ms", 2000, 1),
    timeoutMs: intOption(values, "timeout-ms", 60_000, 1),
    ...(killPoints === undefined ? {} : { killPoints }),
    onProgress: (line) => process.stderr.write(`settle drill: ${line}\n`),
  });
  const bad = (r: DrillRun) => r.verdict !== "ok";
  if (result.reference.verdict === "controller-failed") {
    process.stderr.write(`settle drill: ${result.reference.detail}\n`);
    return 2;
  }
  if (values.json === true) {
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  } else {
    process.stdout.write(`${scenario.name} / ${workload}: reference run ${result.reference.verdict}, ${result.reference.writes} writes${result.reference.world ? `; ${result.reference.world}` : ""}\n`);
    for (const run of result.runs) {
      const where = run.write === undefined ? "" : ` ${run.write.method} ${run.write.path.replace(/^\/token\/[^/]+/, "").split("?")[0]}`;
      process.stdout.write(`  kill after write ${String(run.killAfterWrite).padEnd(3)}${where}: ${run.verdict.toUpperCase()}${run.world ? `  [${run.world}]` : ""}\n`);
      if (run.failed.length > 0) process.stdout.write(`      false once quiet: ${run.failed.join("; ")}\n`);
    }
    const failing = result.runs.filter(bad).length;
    process.stdout.write(`${failing} of ${result.runs.length} kill points failed\n`);
  }
  return bad(result.reference) || result.runs.some(bad) ? 1 : 0;
}
