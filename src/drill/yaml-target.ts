// A YAML scenario's variant as a drill target: the world created from its manifests, its CEL properties, and its
// workload steps applied through a real client (as an admin, straight to the server, never through the proxy).
import { dirname, relative, sep } from "node:path";
import { realClock } from "../api/clock.ts";
import type { Client } from "../api/client.ts";
import type { DrillTarget, WorkloadEvents } from "./target.ts";
import { GoBuildError, nativeGoBinary } from "./go-build.ts";
import type { WorldView } from "../sim/types.ts";
import { createWorld, ScenarioYamlError, type YamlScenario, type YamlVariant } from "../scenario-yaml/load.ts";
import { runWorkload } from "../scenario-yaml/workload.ts";
import { variantCommand } from "../explore/example-commands.ts";

export function yamlDrillTarget(scenario: YamlScenario, variant: string): DrillTarget {
  const declared = scenario.variants[variant];
  if (declared === undefined) throw new ScenarioYamlError(`${scenario.path}: no variant "${variant}"`);
  const shown = relative(process.cwd(), scenario.path) || scenario.path;
  const target: DrillTarget = {
    name: scenario.name,
    variant,
    workload: "steps",
    setup: (store) => createWorld(store, scenario.world),
    properties: scenario.properties,
    runWorkload: (client, view, events) => runSteps(scenario, client, view, events),
    // Properties whose CEL failed to evaluate are false; the summary says why, so a typo is not mistaken for a bug.
    summary: (view) => evaluationErrors(scenario, view),
    cwd: dirname(scenario.path),
    rerun: variantCommand("drill", shown, variant),
  };
  const faults = scenario.faults === "none" ? { faultKinds: [] as string[] } : { ...(scenario.faults.kinds === undefined ? {} : { faultKinds: scenario.faults.kinds }), ...(scenario.faults.afterWrites === undefined ? {} : { afterWrites: scenario.faults.afterWrites }) };
  target.defaults = { ...scenario.drill, ...faults };
  const command = controllerCommand(scenario, variant, declared);
  if (command !== undefined) target.command = command;
  const expect = declared.drillExpect ?? declared.expect;
  if (expect !== undefined) target.expect = expect;
  if (declared.env !== undefined) target.env = declared.env;
  return target;
}

/**
 * The variant's controller command. A module variant without a command runs as `node MODULE ARGS...` (this Node.js)
 * and a `go:` variant as a native build of its package (go-build.ts), so one scenario serves explore and drill.
 * `replicas: N` starts N instances in the one process group (replicasCommand).
 */
function controllerCommand(scenario: YamlScenario, name: string, declared: YamlVariant): string[] | undefined {
  if (declared.command !== undefined) return declared.command;
  let program: string[];
  if (declared.module !== undefined) program = [process.execPath, declared.module, ...(declared.args ?? [])];
  else if (declared.go !== undefined) program = [goBinary(scenario, name, declared.go), ...(declared.args ?? [])];
  else return undefined;
  return declared.replicas === undefined || declared.replicas === 1 ? program : replicasCommand(program, declared.replicas);
}

function goBinary(scenario: YamlScenario, name: string, dir: string): string {
  const given = relative(dirname(scenario.path), dir).split(sep).join("/");
  const label = `${relative(process.cwd(), scenario.path) || scenario.path}: variants.${name}.go: ${given === "" ? "." : given.startsWith("..") ? given : `./${given}`}`;
  try {
    return nativeGoBinary({ dir, label, onBuild: (line) => process.stderr.write(`settle drill: ${line}\n`) });
  } catch (error) {
    // A scenario error (exit code 2), never a finding: the program could not be built, so nothing was drilled.
    if (error instanceof GoBuildError) throw new ScenarioYamlError(error.message);
    throw error;
  }
}

/**
 * N instances of the program in one process group, each told its replica number (SETTLE_REPLICA, and POD_NAME as a
 * Deployment's pod would have it). The drill's kill takes the group, so every replica dies at a point at once; an
 * instance that exits by itself takes the others down with it, and the drill restarts the group as it restarts a
 * crashed controller.
 */
function replicasCommand(program: string[], replicas: number): string[] {
  const script = [
    `for i in $(seq 0 ${replicas - 1}); do SETTLE_REPLICA=$i POD_NAME="controller-$i" "$@" & done`,
    "wait -n; status=$?",
    "kill -KILL $(jobs -p) 2>/dev/null",
    "exit $status",
  ].join("\n");
  return ["bash", "-c", script, "settle-replicas", ...program];
}

function evaluationErrors(scenario: YamlScenario, view: WorldView): string {
  const errors: string[] = [];
  scenario.expressions.forEach((expression, i) => {
    // Evaluated once more on this run's final world: the property monitor evaluates through views of its own.
    expression.test(view);
    const error = expression.lastError(view);
    if (error !== undefined) errors.push(`properties[${i}] ${scenario.properties[i]!.name}: ${error}`);
  });
  return errors.length === 0 ? "" : `CEL errors: ${errors.join("; ")}`;
}

/**
 * The workload in real time: the shared interpreter, looking at the world again after each store write (it only
 * changes by writes, so there is nothing to poll). A timed-out `waitFor` ends the workload; its note goes to the run.
 */
async function runSteps(scenario: YamlScenario, client: Client, view: WorldView, events: WorkloadEvents): Promise<void> {
  await runWorkload(scenario, {
    client,
    now: () => realClock.now(),
    sleep: (ms) => realClock.sleep(ms),
    view,
    nextCheck: async (leftMs) => {
      let timer: { cancel(): void } | undefined;
      await Promise.race([events.nextChange(), new Promise<void>((wake) => (timer = realClock.setTimer(leftMs, wake)))]);
      timer?.cancel();
    },
    note: (line) => events.note?.(line),
  });
}
