// JUnit XML for CI systems (Jenkins, GitLab, GitHub test reporters, CircleCI, Azure): one test suite per
// scenario, one test case per scenario x variant, one <failure> per finding with the verdict, the property
// and the command that replays it. Plus GitHub Actions `::error` annotations, which need no plugin at all.
import { assert } from "../api/assert.ts";
import { replayCommand } from "./model.ts";

export interface JunitFinding {
  verdict: string;
  property: string | null;
  /** The replay file (relative to the repository root, so the command works there). */
  replay: string;
  /** One line a person reads (the verdict's detail). */
  detail?: string;
  /** A scenario error's or an actor error's exception; its location is where an annotation points. */
  error?: { message: string; location?: string };
  seed?: number;
  steps?: number;
  /** In how many exploration runs it was seen. */
  occurrences?: number;
}

export interface JunitCase {
  scenario: string;
  variant: string;
  /** The scenario file, relative to the repository root: GitHub annotates it. */
  scenarioPath?: string;
  /** Exploration runs behind this case (0 for a single replay). */
  runs: number;
  /** Wall time of the exploration, if measured; JUnit wants seconds. Default 0. */
  wallMs?: number;
  findings: readonly JunitFinding[];
}

export interface JunitOptions {
  /** The name of the <testsuites> root. Default "settle". */
  name?: string;
}

export function escapeXml(text: string): string {
  // XML 1.0 forbids most control characters even escaped; a property name never has them, a detail might.
  const clean = text.replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/g, "?");
  return clean.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&apos;" })[c]!);
}

function seconds(ms: number | undefined): string {
  return ((ms ?? 0) / 1000).toFixed(3);
}

/** The one-line title of a finding: `silent-divergence: children == spec.voices`. */
export function findingTitle(finding: Pick<JunitFinding, "verdict" | "property">): string {
  return finding.property === null ? finding.verdict : `${finding.verdict}: ${finding.property}`;
}

function failureText(c: JunitCase, f: JunitFinding): string {
  const lines = [
    `verdict: ${f.verdict}`,
    `property: ${f.property ?? "(none)"}`,
    ...(f.detail === undefined ? [] : [`detail: ${f.detail}`]),
    `scenario: ${c.scenario}  variant: ${c.variant}`,
    ...(f.seed === undefined ? [] : [`seed: ${f.seed}`]),
    ...(f.steps === undefined ? [] : [`steps in the minimal run: ${f.steps}`]),
    ...(f.occurrences === undefined ? [] : [`seen in ${f.occurrences} run(s)`]),
    `replay: ${replayCommand(f.replay)}`,
  ];
  return lines.join("\n");
}

function testcase(c: JunitCase): string {
  const open = `    <testcase classname="settle.${escapeXml(c.scenario)}" name="${escapeXml(c.variant)}" time="${seconds(c.wallMs)}"`;
  if (c.findings.length === 0) return `${open}/>`;
  const failures = c.findings.map(
    (f) => `      <failure message="${escapeXml(findingTitle(f))}" type="${escapeXml(f.verdict)}">${escapeXml(failureText(c, f))}</failure>`,
  );
  return `${open}>\n${failures.join("\n")}\n    </testcase>`;
}

/** The JUnit XML document; cases keep their order, grouped into one suite per scenario in order of first appearance. */
export function junitXml(cases: readonly JunitCase[], options: JunitOptions = {}): string {
  const suites = new Map<string, JunitCase[]>();
  for (const c of cases) {
    assert(c.runs >= 0, "junit case runs is not negative");
    assert(c.scenario.length > 0 && c.variant.length > 0, "junit case names scenario and variant");
    suites.set(c.scenario, [...(suites.get(c.scenario) ?? []), c]);
  }
  const failed = (list: readonly JunitCase[]) => list.filter((c) => c.findings.length > 0).length;
  const wall = (list: readonly JunitCase[]) => list.reduce((sum, c) => sum + (c.wallMs ?? 0), 0);
  const body = [...suites.entries()].map(([scenario, list]) => {
    const head = `  <testsuite name="${escapeXml(scenario)}" tests="${list.length}" failures="${failed(list)}" errors="0" skipped="0" time="${seconds(wall(list))}">`;
    return [head, ...list.map(testcase), "  </testsuite>"].join("\n");
  });
  const root = `<testsuites name="${escapeXml(options.name ?? "settle")}" tests="${cases.length}" failures="${failed(cases)}" errors="0" time="${seconds(wall(cases))}">`;
  return ['<?xml version="1.0" encoding="UTF-8"?>', root, ...body, "</testsuites>", ""].join("\n");
}

/** GitHub's workflow-command escaping: `%`, CR and LF in the message; also `:` and `,` in property values. */
function escapeData(text: string): string {
  return text.replace(/%/g, "%25").replace(/\r/g, "%0D").replace(/\n/g, "%0A");
}

function escapeProperty(text: string): string {
  return escapeData(text).replace(/:/g, "%3A").replace(/,/g, "%2C");
}

/** One `::error` line per finding (no trailing newline). */
export function githubAnnotations(cases: readonly JunitCase[]): string[] {
  return cases.flatMap((c) =>
    c.findings.map((f) => {
      // A thrown error's location is the line to annotate (a scenario error's, an actor's); else the scenario file.
      const where = /^(.+):(\d+):(\d+)$/.exec(f.error?.location ?? "");
      const file = where === null ? (c.scenarioPath === undefined ? [] : [`file=${escapeProperty(c.scenarioPath)}`]) : [`file=${escapeProperty(where[1]!)}`, `line=${where[2]}`, `col=${where[3]}`];
      const props = [...file, `title=${escapeProperty(`settle ${c.scenario}/${c.variant}: ${f.verdict}`)}`];
      const message = `${findingTitle(f)}${f.detail === undefined ? "" : ` (${f.detail})`}\nreplay: ${replayCommand(f.replay)}`;
      return `::error ${props.join(",")}::${escapeData(message)}`;
    }),
  );
}

/** Writes the annotations to `write` when running in GitHub Actions (`GITHUB_ACTIONS=true`); returns how many. */
export function emitGithubAnnotations(
  cases: readonly JunitCase[],
  options: { env?: Readonly<Record<string, string | undefined>>; write?: (text: string) => void } = {},
): number {
  const env = options.env ?? process.env;
  if (env.GITHUB_ACTIONS !== "true") return 0;
  const write = options.write ?? ((text: string) => void process.stdout.write(text));
  const lines = githubAnnotations(cases);
  for (const line of lines) write(`${line}\n`);
  return lines.length;
}
