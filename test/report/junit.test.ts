// JUnit XML as CI systems read it, and GitHub Actions annotations.
import { test } from "node:test";
import assert from "node:assert/strict";
import { validateXML } from "xmllint-wasm";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { emitGithubAnnotations, githubAnnotations, junitXml, type JunitCase } from "../../src/report/junit.ts";
import { writeJunitFile } from "../../src/report/outputs.ts";
import { parseXml, type XmlElement } from "./xml.ts";

const schema = fileURLToPath(new URL("./fixtures/junit.xsd", import.meta.url));

const cases: JunitCase[] = [
  {
    scenario: "ensemble",
    variant: "delta",
    scenarioPath: "examples/ensemble/scenario.ts",
    runs: 100,
    wallMs: 1234,
    findings: [
      { verdict: "silent-divergence", property: "children == spec.voices", replay: ".settle/findings/ensemble/delta-559e2e44d0.json", detail: "the world settled", seed: 7, steps: 35, occurrences: 12 },
      { verdict: "safety-violation", property: "no <overshoot> & \"quotes\" 'too'", replay: ".settle/findings/ensemble/delta-0123456789.json" },
    ],
  },
  { scenario: "ensemble", variant: "level", runs: 100, wallMs: 1000, findings: [] },
  { scenario: "canary", variant: "always-false", runs: 1, findings: [{ verdict: "actor-error", property: null, replay: "x y/canary.json" }] },
];

function children(element: XmlElement, name: string): XmlElement[] {
  return element.children.filter((c) => c.name === name);
}

test("the JUnit XML has one test case per scenario x variant and one failure per finding", () => {
  const root = parseXml(junitXml(cases));
  assert.equal(root.name, "testsuites");
  assert.deepEqual([root.attributes.tests, root.attributes.failures, root.attributes.errors], ["3", "2", "0"]);
  const suites = children(root, "testsuite");
  assert.deepEqual(suites.map((s) => s.attributes.name), ["ensemble", "canary"]);
  const ensemble = suites[0]!;
  assert.deepEqual([ensemble.attributes.tests, ensemble.attributes.failures, ensemble.attributes.time], ["2", "1", "2.234"]);
  const [delta, level] = children(ensemble, "testcase");
  assert.deepEqual([delta!.attributes.classname, delta!.attributes.name], ["settle.ensemble", "delta"]);
  assert.equal(children(level!, "failure").length, 0);
  const failures = children(delta!, "failure");
  assert.equal(failures.length, 2);
  assert.equal(failures[0]!.attributes.type, "silent-divergence");
  assert.equal(failures[0]!.attributes.message, "silent-divergence: children == spec.voices");
  assert.match(failures[0]!.text, /^replay: npx settle replay \.settle\/findings\/ensemble\/delta-559e2e44d0\.json$/m);
  assert.match(failures[0]!.text, /^seed: 7$/m);
  assert.equal(failures[1]!.attributes.message, "safety-violation: no <overshoot> & \"quotes\" 'too'", "markup in names survives escaping");
  const canary = children(children(suites[1]!, "testcase")[0]!, "failure")[0]!;
  assert.equal(canary.attributes.message, "actor-error");
  assert.match(canary.text, /replay: npx settle replay 'x y\/canary\.json'/, "a path with a space is quoted");
});

test("the JUnit XML validates against the schema CI systems read (xmllint)", async () => {
  // libxml2's xmllint compiled to WebAssembly (xmllint-wasm, a dev dependency): the same schema check as
  // Debian's xmllint, with nothing to install beside npm ci.
  const dir = mkdtempSync(join(tmpdir(), "settle-junit-"));
  try {
    const path = writeJunitFile(join(dir, "nested", "junit.xml"), cases);
    const xsd = { fileName: "junit.xsd", contents: readFileSync(schema, "utf8") };
    const good = await validateXML({ xml: { fileName: "junit.xml", contents: readFileSync(path, "utf8") }, schema: xsd });
    assert.deepEqual(good.errors.map((e) => e.message), [], "the report validates");
    assert.equal(good.valid, true);
    const bad = await validateXML({ xml: { fileName: "bad.xml", contents: readFileSync(path, "utf8").replace('tests="3"', 'tests="three"') }, schema: xsd });
    assert.equal(bad.valid, false, "the schema rejects a bad count");
    assert.match(bad.errors.map((e) => e.message).join("\n"), /tests.*three/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a run without findings is a passing suite", () => {
  const root = parseXml(junitXml([{ scenario: "ensemble", variant: "level", runs: 10, findings: [] }]));
  assert.equal(root.attributes.failures, "0");
  assert.equal(children(children(root, "testsuite")[0]!, "testcase")[0]!.children.length, 0);
});

test("GitHub Actions annotations are one ::error line per finding, escaped, and only when GITHUB_ACTIONS is true", () => {
  const lines = githubAnnotations(cases);
  assert.equal(lines.length, 3);
  assert.equal(
    lines[0],
    "::error file=examples/ensemble/scenario.ts,title=settle ensemble/delta%3A silent-divergence::silent-divergence: children == spec.voices (the world settled)%0Areplay: npx settle replay .settle/findings/ensemble/delta-559e2e44d0.json",
  );
  assert.ok(lines.every((l) => !l.includes("\n")));
  const written: string[] = [];
  assert.equal(emitGithubAnnotations(cases, { env: {}, write: (t) => written.push(t) }), 0);
  assert.equal(emitGithubAnnotations(cases, { env: { GITHUB_ACTIONS: "true" }, write: (t) => written.push(t) }), 3);
  assert.deepEqual(written, lines.map((l) => `${l}\n`));
});
