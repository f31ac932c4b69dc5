import { resolve } from "node:path";
import { readReplayFile, replayRunSpec, replayScenario, replayScenarioPath, scenarioDigest } from "../explore/findings.ts";
import { loadScenario } from "../explore/load.ts";
import { runScenario } from "../explore/run.ts";
import { firstDivergence } from "../sim/trace.ts";
import { formatFinding } from "../report/text.ts";
import { isFinding, isScenarioError } from "../check/verdict.ts";
import { BUILTIN_FAULT_KINDS } from "../sim/faults.ts";
import { parse, UsageError } from "./args.ts";
import { setModuleOutput } from "../module/output.ts";

export const replayUsage = `Usage: settle replay <replay-file> [--json] [--module-output]

Re-runs a finding from its replay file (seed, choices, faults) and compares the trace byte for byte.

Options:
  --json             print one JSON object on stdout instead of the text report
  --module-output    a scenario.yaml module variant: copy what the module writes to its process.stdout and
                     process.stderr during the replayed run to stderr (dropped otherwise; its console
                     lines are in the trace either way)

Exit codes: 1 the finding reproduced (same verdict, same trace), 0 the run now passes with the same trace
(impossible unless the file was edited), 2 a scenario error reproduced (the scenario's own code threw), 3 the run diverged (nondeterminism or changed code: the first
differing step is reported, and whether the scenario file changed since the replay was written), 2 bad input.
`;

export async function replayCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv, { json: { type: "boolean" }, "module-output": { type: "boolean" } });
  if (positionals.length !== 1) throw new UsageError("expects exactly one replay file");
  const path = resolve(positionals[0]!);
  const { file, trace } = readReplayFile(path);
  const scenario = replayScenario(await loadScenario(replayScenarioPath(process.cwd(), file)), file);
  const kinds = new Set<string>([...BUILTIN_FAULT_KINDS, ...(scenario.faultKinds ?? []).map((k) => k.name)]);
  const unknown = file.faults.find((f) => !kinds.has(f.kind));
  if (unknown !== undefined) throw new UsageError(`${positionals[0]}: fault kind "${unknown.kind}" is not one of ${[...kinds].join(", ")}`);
  if (!(file.variant in scenario.variants)) throw new UsageError(`${positionals[0]}: unknown variant "${file.variant}" (scenario ${scenario.name} has ${Object.keys(scenario.variants).join(", ")})`);
  if (!(file.workload in scenario.workloads)) throw new UsageError(`${positionals[0]}: unknown workload "${file.workload}" (scenario ${scenario.name} has ${Object.keys(scenario.workloads).join(", ")})`);
  const spec = replayRunSpec(scenario, file, positionals[0]!);
  // Only the replayed run's module output, never that of the load-time check of every variant.
  const previousOutput = values["module-output"] === true ? setModuleOutput((_fd, chunk) => process.stderr.write(chunk)) : undefined;
  let outcome;
  try {
    outcome = await runScenario(scenario, { ...spec, traceMode: "full" });
  } finally {
    if (values["module-output"] === true) setModuleOutput(previousOutput);
  }
  const sameTrace = outcome.traceHash === file.traceHash;
  const sameVerdict = outcome.verdict.kind === file.verdict && (outcome.verdict.property ?? null) === file.property;
  const reproduced = sameTrace && sameVerdict;
  const divergence = sameTrace ? undefined : trace === undefined ? { step: -1 } : (firstDivergence(trace, outcome.trace) ?? { step: -1 });
  if (values.json === true) {
    const divergedAtStep = divergence === undefined ? null : divergence.step;
    process.stdout.write(`${JSON.stringify({ verdict: outcome.verdict.kind, property: outcome.verdict.property ?? null, reproduced, traceHash: outcome.traceHash, divergedAtStep })}\n`);
  } else if (reproduced) {
    process.stdout.write(formatFinding({ scenario: scenario.name, variant: file.variant, workload: file.workload, verdict: outcome.verdict, counters: outcome.counters, trace: outcome.trace, faults: file.faults.length, choices: file.choices.length, replayPath: positionals[0]!, ...(outcome.finalWorld === undefined ? {} : { finalWorld: outcome.finalWorld }) }));
    process.stdout.write(`reproduced: same verdict, byte-identical trace (sha256 ${outcome.traceHash})\n`);
  } else {
    const where = divergence && divergence.step >= 0 ? `first differing step ${divergence.step}` : "no recorded trace to compare";
    const now = `verdict now ${outcome.verdict.kind}${outcome.verdict.property ? `: ${outcome.verdict.property}` : ""}`;
    // A run is a function of the scenario, the controller's code, settle and the file: name the change settle can see.
    const scenarioNow = scenarioDigest(replayScenarioPath(process.cwd(), file));
    if (file.scenarioSha256 !== undefined && scenarioNow !== file.scenarioSha256) {
      process.stdout.write(`changed: the scenario file ${file.scenario} is not the one this replay was written from (its sha256 differs), so the run diverged (${where}); ${now}\n`);
    } else {
      const same = file.scenarioSha256 === undefined ? "" : ", from the same scenario file";
      process.stdout.write(`nondeterminism: the replay diverged (${where}${same}; a change to the controller's code or to settle diverges too); ${now}\n`);
    }
    if (divergence && "expected" in divergence) process.stdout.write(`  expected: ${divergence.expected}\n  actual:   ${divergence.actual}\n`);
  }
  if (!sameTrace) return 3;
  if (!sameVerdict) {
    process.stderr.write(`settle replay: ${positionals[0]}: the file says ${file.verdict} but its own trace ends in ${outcome.verdict.kind}; was it edited?\n`);
    return 2;
  }
  if (isScenarioError(outcome.verdict)) return 2;
  return isFinding(outcome.verdict) ? 1 : 0;
}
