// Writing report files: what `settle report` and `settle explore --html DIR --junit FILE` share.
import { existsSync, mkdirSync, renameSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { writeHtmlReport } from "./html.ts";
import { junitXml, type JunitCase, type JunitOptions } from "./junit.ts";
import { htmlReportName, reportDataFromReplayFile, type ReportData } from "./model.ts";

export interface HtmlTarget {
  /** Write `<dir>/<scenario>-<variant>-<id>.html`; the folder is created if missing. */
  dir?: string;
  /** Write exactly this file (its folder is created if missing). Wins over `dir`. */
  file?: string;
  /** Paths in the report are relative to this. Default: process.cwd(). */
  cwd?: string;
}

/** True when `target` names a folder: it ends with a separator or is an existing directory. */
export function isDirectoryTarget(target: string): boolean {
  return /[\\/]$/.test(target) || (existsSync(target) && statSync(target).isDirectory());
}

/**
 * Re-runs a replay file with object capture and writes its HTML report. Returns the path written and the
 * data (for a caller that also wants JUnit or the verdict). Throws ReplayFileError / ScenarioError.
 */
export async function writeHtmlForReplayFile(replayPath: string, target: HtmlTarget): Promise<{ path: string; data: ReportData }> {
  const cwd = target.cwd ?? process.cwd();
  const data = await reportDataFromReplayFile(replayPath, { cwd });
  let path: string;
  if (target.file !== undefined) path = resolve(cwd, target.file);
  else if (target.dir !== undefined) path = join(resolve(cwd, target.dir), htmlReportName({ scenario: data.scenarioPath }, replayPath));
  else throw new TypeError("writeHtmlForReplayFile: give target.file or target.dir");
  writeHtmlReport(path, data);
  return { path, data };
}

/** Writes the JUnit XML atomically, creating the folder if missing; returns `path`. */
export function writeJunitFile(path: string, cases: readonly JunitCase[], options: JunitOptions = {}): string {
  mkdirSync(dirname(resolve(path)), { recursive: true });
  const temp = `${path}.${process.pid}.tmp`;
  writeFileSync(temp, junitXml(cases, options));
  renameSync(temp, path);
  return path;
}

/** The JUnit case of one report: a single replay counts as one run. */
export function junitCaseOf(data: ReportData): JunitCase {
  const v = data.verdict;
  return {
    scenario: data.scenario,
    variant: data.variant,
    scenarioPath: data.scenarioPath,
    runs: 1,
    findings: v.kind === "ok" ? [] : [{ verdict: v.kind, property: v.property ?? null, replay: data.replayPath, detail: v.detail, seed: data.seed, steps: v.step }],
  };
}
