// Every CEL expression of a scenario.yaml is checked at load against the helpers it may call: an unknown function
// or method, a wrong number of arguments or an unknown identifier fails the load (exit 2 for the CLI) naming
// file:line:column of the mistake, where evaluation would otherwise fail at every check as a "violation".
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { loadYamlScenario, ScenarioYamlError } from "../../src/scenario-yaml/index.ts";

const repo = fileURLToPath(new URL("../..", import.meta.url));

function scenarioFile(properties: string): string {
  const dir = mkdtempSync(join(tmpdir(), "settle-cel-"));
  const path = join(dir, "scenario.yaml");
  const head = ["name: cel", "variants:", '  only: { command: ["true"] }', "world:", "  manifests:", "    - { apiVersion: v1, kind: ConfigMap, metadata: { name: a }, data: { x: '1' } }", "properties:"];
  writeFileSync(path, `${[...head, properties].join("\n")}\n`);
  return path;
}

function loadError(path: string): string {
  try {
    loadYamlScenario(path);
  } catch (error) {
    assert.ok(error instanceof ScenarioYamlError, String(error));
    return error.message;
  }
  assert.fail("the scenario loaded");
}

test("a misspelled function fails the load at its line and column, with the function and a hint", () => {
  const path = scenarioFile(["  - eventually: counted", "    expr: size(list('ConfigMap')) >= 0 && lenght(list('ConfigMap')) > 0"].join("\n"));
  const message = loadError(path);
  // Line 9; the expression starts at column 11 and `lenght` is 32 characters into it.
  assert.ok(message.startsWith(`${path}:9:43: properties[0].expr: `), message);
  assert.match(message, /unknown function lenght\(\) \(known: .*\bsize\b/);
});

test("an unknown identifier in a quoted expression is found at its column; macro variables are known", () => {
  const path = scenarioFile(["  - always: quoted", "    expr: \"list('ConfigMap').all(c, c.data.x == zz)\""].join("\n"));
  assert.ok(loadError(path).startsWith(`${path}:9:49: properties[0].expr: `));
  assert.match(loadError(path), /undeclared reference to "zz"/);
});

test("an unknown method in a block scalar is found on its own line, and a near name is suggested", () => {
  const path = scenarioFile(["  - always: block", "    expr: |", "      list('ConfigMap').all(c,", "        c.metadata.name.startsWth('a'))"].join("\n"));
  const message = loadError(path);
  assert.ok(message.startsWith(`${path}:11:25: properties[0].expr: `), message);
  assert.match(message, /unknown method \.startsWth\(\) \(did you mean startsWith\?\)/);
});

test("a helper called with the wrong number of arguments fails the load", () => {
  const path = scenarioFile(["  - always: arity", "    expr: get('ConfigMap', 'default', 'a', 'b') != null"].join("\n"));
  assert.match(loadError(path), /:9:11: .*function get\(\) takes 2 or 3 argument\(s\), not 4/);
});

test("correct expressions load: helpers, macros, methods, the strings extension and type names", () => {
  const path = scenarioFile(
    [
      "  - always: fine",
      "    expr: list('ConfigMap').all(c, c.data.x.lowerAscii() == '1' && type(c.metadata.name) == string) && list('ConfigMap').map(c, c.metadata.name).exists(n, n.startsWith('a')) && has(get('ConfigMap', 'a').data)",
    ].join("\n"),
  );
  assert.equal(loadYamlScenario(path).properties.length, 1);
});

test("settle drill exits 2 on a misspelled function, naming file:line:column, before it starts the command", () => {
  const path = scenarioFile(["  - eventually: counted", "    expr: lenght(list('ConfigMap')) == 1"].join("\n"));
  const ran = spawnSync(process.execPath, [join(repo, "bin", "settle.js"), "drill", path, "--", "true"], { encoding: "utf8" });
  assert.equal(ran.status, 2, ran.stderr);
  assert.match(ran.stderr, new RegExp(`scenario\\.yaml:9:11: properties\\[0\\]\\.expr: .*unknown function lenght\\(\\)`));
});
