// The text report of a finding: what failed, how often each property failed, the minimal run as a
// timeline, and the command that replays it.
import type { TraceRecord } from "../sim/trace.ts";
import type { PropertyCounter } from "../check/properties.ts";
import type { Verdict } from "../check/verdict.ts";
import { describeClockOffset } from "../sim/faults.ts";

export interface FindingReport {
  scenario: string;
  variant: string;
  workload: string;
  verdict: Verdict;
  counters: readonly PropertyCounter[];
  trace: readonly TraceRecord[];
  faults: number;
  choices: number;
  occurrences?: number;
  replayPath: string;
  /** The final world (RunOutcome.finalWorld): the report ends with it. */
  finalWorld?: readonly string[];
}

/** Records a person reads: steps that did something, log lines and faults; sleeps, idle timers and no-op reads go. */
function interesting(record: TraceRecord): boolean {
  if (record.kind === "fault" || record.kind === "log" || record.kind === "start") return true;
  if (record.kind === "request") return record.write === true;
  // A write to external state (a host's booted image, a registry) can break a property as surely as an API write.
  if (record.kind === "external") return record.access === "write";
  if (record.kind === "watch") return true;
  if (record.kind === "response") return record.result !== "ok";
  return record.revisionAfter !== record.revisionBefore;
}

/**
 * Each actor's wall-clock offset at the end of a run, in words (`replica-b's clock 12.581 s ahead`), for the actors
 * whose clock a clock fault left off the simulation's; empty when no clock fault applied (reports unchanged then).
 */
export function clockOffsetLines(trace: readonly TraceRecord[]): string[] {
  const offsets = new Map<string, number>();
  for (const record of trace) {
    const fault = record.fault;
    if (fault === undefined || !fault.applied || fault.clockOffsetMs === undefined) continue;
    offsets.set(fault.target, fault.clockOffsetMs);
  }
  const lines: string[] = [];
  for (const [actor, offsetMs] of [...offsets].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    if (offsetMs !== 0) lines.push(`${actor}'s clock ${describeClockOffset(offsetMs)}`);
  }
  return lines;
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(3).padStart(8)}s`;
}

export function formatTimeline(trace: readonly TraceRecord[], linesMax = 80): string[] {
  const start = trace[0]?.timeMs ?? 0;
  let rows = trace.filter(interesting);
  // Too long to read whole: writes, faults, starts and logs tell the story; watch deliveries go first.
  if (rows.length > linesMax) rows = rows.filter((r) => r.kind !== "watch");
  const shown = rows.length > linesMax ? [...rows.slice(0, linesMax / 2), undefined, ...rows.slice(-linesMax / 2)] : rows;
  return shown.map((r) => {
    if (r === undefined) return `  ... ${rows.length - linesMax} more lines ...`;
    const rev = r.revisionAfter !== r.revisionBefore ? `rev ${r.revisionBefore}->${r.revisionAfter}` : `rev ${r.revisionAfter}`;
    const mark = r.kind === "fault" ? "!!" : "  ";
    return `${mark}${seconds(r.timeMs - start)}  #${String(r.step).padEnd(5)} ${r.actor.padEnd(10)} ${r.kind.padEnd(8)} ${r.label}  [${rev}] ${r.result}`;
  });
}

/** The heading of a report: a finding about the controller, or the scenario's own error (never called a finding). */
export function findingHeading(v: Verdict): string {
  if (v.kind === "scenario-error") return "SCENARIO ERROR (the scenario's own code threw; not a finding about the controller)";
  return `FINDING ${v.kind}${v.property ? `: ${v.property}` : ""}`;
}

/** The stack of a thrown error, indented, for a report; none when the verdict has no error or one frame only. */
export function stackLines(v: Verdict): string[] {
  const stack = v.error?.stack ?? [];
  return stack.length > 1 || (stack.length === 1 && v.error?.location === undefined) ? stack.map((frame) => `    at ${frame}`) : [];
}

export function formatFinding(report: FindingReport): string {
  const v = report.verdict;
  const lines = [
    findingHeading(v),
    `  scenario ${report.scenario}  variant ${report.variant}  workload ${report.workload}`,
    `  ${v.detail}`,
    ...stackLines(v),
    `  minimal run: ${report.faults} fault(s), ${report.choices} non-default choice(s), ${report.trace.length} trace records, ${v.step} steps` +
      (report.occurrences ? `; seen in ${report.occurrences} run(s)` : ""),
    ...clockOffsetLines(report.trace).map((line) => `  wall clocks: ${line} (timers and the API server's clock keep the true time)`),
    "",
    "  property counters (evaluations / failures):",
    ...report.counters.map((c) => `    ${c.kind.padEnd(10)} ${c.name}: ${c.evaluations} / ${c.failures}${c.everHeld ? "" : "  (never held)"}`),
    "",
    "  timeline of the minimal run:",
    ...formatTimeline(report.trace).map((l) => `  ${l}`),
    "",
    `  replay: npx settle replay ${report.replayPath}`,
    ...(report.finalWorld === undefined || report.finalWorld.length === 0 ? [] : ["", "  final world:", ...report.finalWorld.map((l) => `    ${l}`)]),
  ];
  return `${lines.join("\n")}\n`;
}
