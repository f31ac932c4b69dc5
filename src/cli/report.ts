// `settle report`: re-runs a finding's replay file and renders it as an HTML timeline and/or JUnit XML.
import { formatFinding } from "../report/text.ts";
import { emitGithubAnnotations } from "../report/junit.ts";
import { reportDataFromReplayFile } from "../report/model.ts";
import { isDrillArtifactFile, reportDataFromDrillArtifact } from "../drill/artifact.ts";
import { writeHtmlReport } from "../report/html.ts";
import { htmlReportName } from "../report/model.ts";
import { isDirectoryTarget, junitCaseOf, writeJunitFile } from "../report/outputs.ts";
import { join } from "node:path";
import { parse, UsageError } from "./args.ts";

export const reportUsage = `Usage: settle report <replay-file | drill-artifact> [--html out.html | --html DIR/] [--junit out.xml]

Re-runs a finding from its replay file, capturing every object before and after each step, and renders it.

Options:
  --html PATH    one self-contained HTML page: a swimlane per actor on virtual time, the object revisions,
                 click a step for its record and the objects before/after; the failing property and its
                 counters on top. A PATH ending in "/" or naming a folder gets <scenario>-<variant>-<id>.html;
                 missing folders are created.
  --junit PATH   JUnit XML (one test case for the scenario x variant, a failure for the finding)
  Without --html or --junit, prints the text report.
  When GITHUB_ACTIONS=true, a finding is also printed as a GitHub "::error" annotation.

Exit codes: 1 the run is a finding, 0 it passes, 3 the re-run diverged from the recorded trace (the report
is still written, with a warning), 2 bad input.
`;

export async function reportCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv, { html: { type: "string" }, junit: { type: "string" } });
  if (positionals.length !== 1) throw new UsageError("expects exactly one replay file");
  const html = values.html as string | undefined;
  const junit = values.junit as string | undefined;
  if (html === "") throw new UsageError("--html expects a file or folder path");
  if (junit === "") throw new UsageError("--junit expects a file path");
  const replayPath = positionals[0]!;
  // A failed drill point leaves an artifact with its request timeline instead of a replay file.
  const drilled = isDrillArtifactFile(replayPath);
  const data = drilled ? reportDataFromDrillArtifact(replayPath) : await reportDataFromReplayFile(replayPath);
  const finding = data.verdict.kind !== "ok";
  if (html !== undefined) {
    const path = isDirectoryTarget(html) ? join(html, htmlReportName({ scenario: data.scenarioPath }, replayPath)) : html;
    writeHtmlReport(path, data);
    process.stderr.write(`settle report: wrote ${path}\n`);
  }
  if (junit !== undefined) {
    writeJunitFile(junit, [junitCaseOf(data)]);
    process.stderr.write(`settle report: wrote ${junit}\n`);
  }
  if (html === undefined && junit === undefined) {
    const text = formatFinding({
        scenario: data.scenario,
        variant: data.variant,
        workload: data.workload,
        verdict: data.verdict,
        counters: data.counters,
        trace: data.records,
        faults: data.faults.length,
        choices: data.choices,
        replayPath: data.replayPath,
      });
    // A drill point is not replayed step by step (the controller is a real process): it is drilled again.
    process.stdout.write(drilled ? text.replace(/^ {2}replay: npx settle replay .*$/m, `  drill again: ${data.replayCommand}`) : text);
  }
  emitGithubAnnotations([junitCaseOf(data)]);
  if (!data.reproduced) {
    process.stderr.write(`settle report: the re-run diverged from the recorded trace (recorded ${data.recorded.verdict}); the report shows today's run\n`);
    return 3;
  }
  return finding ? 1 : 0;
}
