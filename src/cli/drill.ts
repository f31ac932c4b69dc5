import { expectationLine } from "./expectation.ts";
import { availableParallelism } from "node:os";
import { join } from "node:path";
import { resolve } from "node:path";
import { writeDrillArtifact, type DrillReplayInfo } from "../drill/artifact.ts";
import { DrillArtifactError, readDrillArtifact, replayCaveat, replayDrill, replayRepeatMax } from "../drill/replay.ts";
import { drill, drillFaultKinds, pointLabel, shortPath, unreachedLine, type DrillResult, type DrillRun } from "../drill/drill.ts";
import { targetFromScenario, type DrillTarget } from "../drill/target.ts";
import { loadScenario, resolveScenarioPath } from "../explore/load.ts";
import { resolveParams } from "../explore/scenario.ts";
import { isYamlScenarioPath, loadYamlScenario, ScenarioYamlError } from "../scenario-yaml/index.ts";
import { yamlDrillTarget } from "../drill/yaml-target.ts";
import { thrownLine } from "../check/thrown.ts";
import { intOption, paramOptions, parse, UsageError } from "./args.ts";

export const drillUsage = `Usage: settle drill <scenario.yaml | scenario-file | example-dir> [options] [-- <command...>]
       settle drill --replay ARTIFACT [--repeat N] [--parallel N] [-- <command...>]

Drills a real controller process, in any language, against the scenario: serves the scenario's world over a
Kubernetes-compatible API, runs the controller in its own process group with KUBECONFIG pointing at it, waits for
its first watch, applies the workload, and kills the whole group right after its k-th applied write (the write's
response held back until the group is dead), for every k of a reference run; then restarts it, waits for a quiet
window (no store write, no request in flight) and checks the scenario's properties. A report line per point. A
YAML scenario's variant declares its command; a command after -- overrides it.

The reference run waits the scenario's quiet window (drill.quietMs, default 2000 ms) and measures the controller's
longest think time (from a change of the world to its next write request); the points wait 3 times that (at least
500 ms, at most the reference's window) and widen it if the controller thinks longer; a point where a write of
the controller fails (fail-500, fail-409, lost-response, or an error the server answers itself, such as a 409
AlreadyExists) waits the reference's window, as a retry's backoff is no think time.
Points start while the reference run goes on. Controller processes start ahead of their turn (the one that
replaces a killed one, the next point's first), their API requests held until it comes: the server sees nothing
of them before.

At each point the drill applies the faults the scenario declares (scenario.yaml: faults.kinds, default [kill]),
or with --faults every kind of these:
  ${drillFaultKinds.join(", ")}

Options:
  --variant V         the variant (default: the first)
  --workload W        the workload to apply (TypeScript scenarios; default: the first)
  --param k=v         override a scenario parameter (TypeScript scenarios; repeatable)
  --kill-points LIST  comma-separated write numbers (default: every write of the reference run); numbers past
                      the reference run's last write are not drilled, and the report lists them
                      (scenario.yaml: faults.afterWrites)
  --faults            every kind at every point, not only the scenario's: besides the kill, time travel (kill,
                      then a stale first list of every resource), a closed watch, a failed write (500, 409), a
                      lost response; and, for each resource the controller watched in the reference run:
                      stale-kind (kill, then only that resource's first list stale), and the unobserved states of
                      its watch: coalesce (a window's events delivered as each object's last state, as after a
                      relist), delay-kind (its events held past the next event of another resource; planned when
                      it watches two or more) and hide-recreate (a delete and a create under the same name
                      delivered as the create alone); clock-ahead and clock-behind (from right after the write,
                      the controller's wall clock 30 s off, through libfaketime: planned only where Debian's
                      faketime package is installed, and the drill says so when it is not)
  --quiet-ms N        every run waits exactly this quiet window: no learning (default: learned, see above)
  --cold-start        start each controller process only at its turn (for a controller whose start-up, before
                      its first API request, acts outside the API server or reads what its predecessor wrote,
                      or a client that drops the path of the kubeconfig's server URL); scenario.yaml: drill.coldStart
  --timeout-ms N      bound of every run, each phase included (default 60000)
  --parallel N        points drilled at once, each with its own server and process (default: cores)
  --artifacts DIR     where failing points write their artifact (default .settle/drills/<scenario>);
                      \`settle report --html out.html <artifact>\` renders one
  --json              print { target, reference, runs } on stdout (no token, no timelines)
  --replay ARTIFACT   drill again exactly the point of a failing run's artifact (its scenario, variant, write
                      number, fault and resource); the scenario is loaded from where the artifact says
  --repeat N          with --replay: run the point N times (1 to ${replayRepeatMax}, default 1) and count how many
                      fail again as recorded. The controller is a real process, not deterministic: a replay is
                      the same point drilled again, not the recorded run reproduced byte for byte

Exit codes, as settle explore's: 0 every point passed, 1 a point failed (a finding), whatever the variant
expects; the last line says whether the variant expected that outcome, and ends "(unexpected)" when it did not.
2 usage or input error (also: in the reference run, the controller never watched or exited before watching, or
the workload failed), or a scenario error: a property, a TypeScript workload or the summary threw (reported
with the exception and its file:line, never as a finding).
`;

interface LoadedTarget {
  target: DrillTarget;
  /** A TypeScript scenario's parameters, as resolved. */
  params?: Record<string, unknown>;
}

async function loadTarget(path: string, values: Record<string, unknown>, givenParams?: Record<string, unknown>): Promise<LoadedTarget> {
  const variant = typeof values.variant === "string" ? values.variant : undefined;
  if (isYamlScenarioPath(path)) {
    if (values.param !== undefined || values.workload !== undefined) throw new UsageError("--param and --workload are for TypeScript scenarios; a YAML scenario has one workload");
    const scenario = loadYamlScenario(path);
    const name = variant ?? Object.keys(scenario.variants)[0]!;
    if (!(name in scenario.variants)) throw new UsageError(`--variant: scenario ${scenario.name} has no variant "${name}" (it has ${Object.keys(scenario.variants).join(", ")})`);
    return { target: yamlDrillTarget(scenario, name) };
  }
  const scenario = await loadScenario(resolveScenarioPath(path));
  let params;
  try {
    params = givenParams === undefined ? resolveParams(scenario, paramOptions(values.param as string[] | undefined)) : { ...scenario.params, ...(givenParams as typeof scenario.params) };
  } catch (error) {
    throw new UsageError(`--param: ${error instanceof Error ? error.message : String(error)}`);
  }
  const workload = typeof values.workload === "string" ? values.workload : Object.keys(scenario.workloads)[0]!;
  if (!(workload in scenario.workloads)) throw new UsageError(`--workload: scenario ${scenario.name} has no workload "${workload}"`);
  const name = variant ?? Object.keys(scenario.variants)[0]!;
  if (!(name in scenario.variants)) throw new UsageError(`--variant: scenario ${scenario.name} has no variant "${name}"`);
  return { target: targetFromScenario(scenario, { variant: name, workload, params }, path), params };
}

function killPointsOption(text: unknown): number[] | undefined {
  if (typeof text !== "string") return undefined;
  return text.split(",").map((t) => {
    const k = Number(t);
    if (!Number.isInteger(k) || k < 1) throw new UsageError(`--kill-points expects write numbers >= 1, got "${t}"`);
    return k;
  });
}

export async function drillCommand(argv: string[]): Promise<number> {
  try {
    return await drillMain(argv);
  } catch (error) {
    // A scenario.yaml that does not load: the message names the file, line and field (or expression).
    if (error instanceof DrillArtifactError) throw new UsageError(`--replay: ${error.message}`);
    if (!(error instanceof ScenarioYamlError)) throw error;
    process.stderr.write(`settle drill: ${error.message}\n`);
    return 2;
  }
}

async function drillMain(argv: string[]): Promise<number> {
  const dash = argv.indexOf("--");
  const command = dash < 0 ? undefined : argv.slice(dash + 1);
  if (command !== undefined && command.length === 0) throw new UsageError("expects the controller's command after --");
  const { values, positionals } = parse(dash < 0 ? argv : argv.slice(0, dash), {
    workload: { type: "string" },
    variant: { type: "string" },
    param: { type: "string", multiple: true },
    "kill-points": { type: "string" },
    faults: { type: "boolean" },
    "cold-start": { type: "boolean" },
    "quiet-ms": { type: "string" },
    "timeout-ms": { type: "string" },
    parallel: { type: "string" },
    artifacts: { type: "string" },
    json: { type: "boolean" },
    replay: { type: "string" },
    repeat: { type: "string" },
  });
  if (values.replay !== undefined) return replayMain(values, positionals, command);
  if (values.repeat !== undefined) throw new UsageError("--repeat is for --replay");
  if (positionals.length !== 1) throw new UsageError("expects exactly one scenario (a scenario.yaml, a scenario file or an example directory)");
  const { target, params } = await loadTarget(positionals[0]!, values);
  if (command === undefined && target.command === undefined) throw new UsageError("expects the controller's command after -- (the scenario's variant declares none)");
  const killPoints = killPointsOption(values["kill-points"]);
  const artifactsDir = typeof values.artifacts === "string" ? values.artifacts : join(".settle", "drills", target.name);
  const artifacts = new Map<DrillRun, string>();
  const replay: DrillReplayInfo = {
    path: resolve(positionals[0]!),
    variant: target.variant,
    workload: target.workload,
    ...(params === undefined ? {} : { params }),
    ...(command === undefined ? {} : { command }),
    ...(values["quiet-ms"] === undefined ? {} : { quietMs: intOption(values, "quiet-ms", 2000, 1) }),
    ...(values["timeout-ms"] === undefined ? {} : { timeoutMs: intOption(values, "timeout-ms", 60_000, 1) }),
    ...(values["cold-start"] === true ? { coldStart: true } : {}),
  };
  const result = await drill({
    target,
    ...(command === undefined ? {} : { command }),
    ...(values["quiet-ms"] === undefined ? {} : { quietMs: intOption(values, "quiet-ms", 2000, 1) }),
    ...(values["timeout-ms"] === undefined ? {} : { timeoutMs: intOption(values, "timeout-ms", 60_000, 1) }),
    concurrency: intOption(values, "parallel", availableParallelism(), 1),
    faults: values.faults === true,
    ...(values["cold-start"] === true ? { coldStart: true } : {}),
    ...(killPoints === undefined ? {} : { killPoints }),
    onProgress: (line) => process.stderr.write(`settle drill: ${line}\n`),
    onRun: (run) => {
      if (run.verdict !== "ok") artifacts.set(run, writeDrillArtifact(artifactsDir, { target }, run, rerunCommand(target, run, command), replay));
    },
  });
  const scenarioError = [result.reference, ...result.runs].find((r) => r.verdict === "scenario-error");
  if (result.reference.verdict === "controller-failed" || result.reference.verdict === "no-watch" || result.reference.verdict === "workload-failed") {
    process.stderr.write(`settle drill: ${result.reference.detail}\n${indent(result.reference.output ?? [])}`);
    return 2;
  }
  if (result.reference.verdict !== "ok") artifacts.set(result.reference, writeDrillArtifact(artifactsDir, { target }, result.reference, rerunCommand(target, result.reference, command)));
  if (values.json === true) process.stdout.write(`${JSON.stringify(jsonOf(result), null, 2)}\n`);
  else printText(result, artifacts);
  // The scenario's own error outranks findings (as in explore): it is no verdict on the controller.
  if (scenarioError !== undefined) {
    process.stderr.write(`settle drill: scenario ${target.name} --variant ${target.variant}: ${scenarioErrorText(scenarioError)}\n`);
    return 2;
  }
  const found = result.reference.verdict !== "ok" || result.runs.some((r) => r.verdict !== "ok");
  if (target.expect !== undefined && values.json !== true) {
    process.stdout.write(`${expectationLine(found, target.expect)}\n`);
  }
  return found ? 1 : 0;
}

/** `--replay ARTIFACT [--repeat N]`: the artifact's point, N times; exit 1 if any run failed again, else 0. */
async function replayMain(values: Record<string, unknown>, positionals: string[], command: string[] | undefined): Promise<number> {
  if (positionals.length > 0) throw new UsageError("--replay takes the scenario from the artifact: give no scenario");
  for (const option of ["variant", "workload", "param", "kill-points", "faults", "quiet-ms", "timeout-ms", "cold-start", "artifacts"]) {
    if (values[option] !== undefined) throw new UsageError(`--${option} does not go with --replay: the artifact says how its point was drilled`);
  }
  const path = values.replay as string;
  const artifact = readDrillArtifact(path);
  const repeat = intOption(values, "repeat", 1, 1);
  if (repeat > replayRepeatMax) throw new UsageError(`--repeat expects 1 to ${replayRepeatMax}, got ${repeat}`);
  const { target } = await loadTarget(artifact.replay.path, { variant: artifact.replay.variant, ...(isYamlScenarioPath(artifact.replay.path) ? {} : { workload: artifact.replay.workload }) }, artifact.replay.params);
  const label = pointLabel(artifact.run.point);
  const out = (line: string) => process.stdout.write(`${line}\n`);
  const replayed = await replayDrill(artifact, target, {
    repeat,
    concurrency: intOption(values, "parallel", availableParallelism(), 1),
    ...(command === undefined ? {} : { command }),
    onProgress: (line) => process.stderr.write(`settle drill: ${line}\n`),
  });
  const recorded = artifact.run;
  out(`${target.name} / ${target.variant} / ${target.workload}: ${label}, recorded ${recorded.verdict.toUpperCase()}${recorded.failed.length > 0 ? ` (${recorded.failed.join("; ")})` : ""}`);
  if (replayed.result.runs.length === 0) {
    process.stderr.write(`settle drill: the reference run ${replayed.result.reference.verdict}: ${replayed.result.reference.detail}\n${indent(replayed.result.reference.output ?? [])}`);
    return 2;
  }
  replayed.result.runs.forEach((run, i) => {
    out(`  run ${i + 1} of ${repeat}: ${run.verdict.toUpperCase()} (${run.timings.totalMs} ms)${run.failed.length > 0 ? `; false once quiet: ${run.failed.join("; ")}` : ""}${run.applied === undefined ? "" : `; ${run.applied}`}`);
  });
  out(`failed again as recorded in ${replayed.again} of ${repeat} run(s) of ${label}`);
  out(`note: ${replayCaveat}`);
  return replayed.again > 0 ? 1 : 0;
}

/** The command that drills the same point again (with the controller command given after --, if any). */
function rerunCommand(target: DrillTarget, run: DrillRun, command: readonly string[] | undefined): string {
  const point = run.point === undefined ? "" : ` --kill-points ${run.point.afterWrite}${run.point.fault === "kill" ? "" : " --faults"}`;
  const quoted = command?.map((a) => (/^[\w./@%+=:,-]+$/.test(a) ? a : `'${a.replace(/'/g, "'\\''")}'`)).join(" ");
  return `npx ${target.rerun}${point}${quoted === undefined ? "" : ` -- ${quoted}`}`;
}

/** The scenario error of a run: what threw, with the user's file:line, and the stack when it says more. */
function scenarioErrorText(run: DrillRun): string {
  if (run.error === undefined) return run.detail;
  const stack = run.error.stack.length > 1 ? `\n${run.error.stack.map((frame) => `    at ${frame}`).join("\n")}` : "";
  return `${thrownLine(run.error)} (not a finding about the controller)${stack}`;
}

function indent(lines: readonly string[]): string {
  return lines.map((l) => `      | ${l}\n`).join("");
}

/** The JSON report: no timelines (they are in the artifacts), paths without the token. */
function jsonOf(result: DrillResult): unknown {
  const strip = (run: DrillRun) => {
    const { timeline: _timeline, ...rest } = run;
    return rest;
  };
  return { target: result.target, reference: strip(result.reference), runs: result.runs.map(strip), ...(result.unreached === undefined ? {} : { unreached: result.unreached }) };
}

function printText(result: DrillResult, artifacts: Map<DrillRun, string>): void {
  const { reference, target } = result;
  const out = (line: string) => process.stdout.write(`${line}\n`);
  out(`${target.name} / ${target.variant} / ${target.workload}: reference run ${reference.verdict} in ${reference.timings.totalMs} ms, ${reference.writes} writes${reference.world ? `; ${reference.world}` : ""}`);
  if (reference.verdict === "scenario-error") out(`  SCENARIO ERROR (the scenario's own code threw; not a finding about the controller): ${reference.detail}`);
  else if (reference.verdict !== "ok") out(`  reference: ${reference.failed.length > 0 ? `false once quiet: ${reference.failed.join("; ")}` : reference.detail}`);
  const width = Math.max(28, ...result.runs.map((r) => (r.point === undefined ? 0 : pointLabel(r.point).length + 1)));
  for (const run of result.runs) {
    const where = run.write === undefined ? "" : ` ${run.write.method} ${shortPath(run.write.path)}`;
    const label = run.point === undefined ? "reference" : pointLabel(run.point);
    out(`  ${label.padEnd(width)}${where}: ${run.verdict.toUpperCase()} (${run.timings.totalMs} ms)${run.world ? `  [${run.world}]` : ""}`);
    if (run.verdict === "ok") continue;
    if (run.applied !== undefined) out(`      the fault: ${run.applied}`);
    if (run.verdict === "scenario-error") out(`      SCENARIO ERROR (the scenario's own code threw; not a finding about the controller): ${run.detail}`);
    else if (run.failed.length > 0) out(`      false once quiet: ${run.failed.join("; ")}`);
    else out(`      ${run.detail}`);
    const artifact = artifacts.get(run);
    if (artifact !== undefined) out(`      artifact: ${artifact}  (settle report --html report.html ${artifact})`);
    if ((run.output ?? []).length > 0) process.stdout.write(`      controller output (last lines):\n${indent((run.output ?? []).slice(-15))}`);
  }
  if (result.unreached !== undefined) out(unreachedLine(result.unreached, reference.writes));
  // A reference whose scenario threw leaves nothing to drill: say so rather than count zero points.
  if (reference.verdict === "scenario-error") {
    out("the reference run failed (a scenario error), so no point ran");
    return;
  }
  const failing = result.runs.filter((r) => r.verdict !== "ok").length;
  out(`${failing} of ${result.runs.length} points failed`);
}
