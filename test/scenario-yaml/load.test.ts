import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { createStore } from "../../src/store/index.ts";
import type { Store } from "../../src/store/types.ts";
import type { WorldView } from "../../src/sim/types.ts";
import { createWorld, isScenarioText, kindTable, compileWorldExpression, loadYamlScenario, scenarioSchema, ScenarioYamlError } from "../../src/scenario-yaml/index.ts";
import { yamlDrillTarget } from "../../src/drill/yaml-target.ts";

const repo = fileURLToPath(new URL("../..", import.meta.url));
const shellScenario = join(repo, "examples/shell-operator/scenario.yaml");

function scenarioFile(text: string): string {
  const dir = mkdtempSync(join(tmpdir(), "settle-yaml-"));
  writeFileSync(join(dir, "world.yaml"), readFileSync(join(repo, "examples/shell-operator/world.yaml")));
  const path = join(dir, "scenario.yaml");
  writeFileSync(path, text);
  return path;
}

function viewOf(store: Store): WorldView {
  return {
    get revision() {
      return store.revision;
    },
    now: () => 0,
    get: (ref) => {
      try {
        return store.get(ref);
      } catch {
        return undefined;
      }
    },
    list: (o) => store.list(o).items,
    external: () => {
      throw new Error("none");
    },
  };
}

const minimal = `name: t
variants:
  only: { command: [bash, -c, "sleep 1"], expect: ok }
world:
  files: [world.yaml]
properties:
  - eventually: three children
    expr: "size(list('ConfigMap', 'academy-lab', 'ensemble=alpha')) == 3"
`;

test("the shell operator's scenario loads: variants with their commands, the world from its file, CEL properties", () => {
  const scenario = loadYamlScenario(shellScenario);
  assert.equal(scenario.name, "shell-operator");
  assert.deepEqual(Object.keys(scenario.variants), ["delta", "level"]);
  assert.deepEqual(scenario.variants.delta?.command, ["bash", "operator.sh", "--delta"]);
  assert.deepEqual(scenario.world.map((o) => o.kind), ["CustomResourceDefinition", "Namespace", "Ensemble", "ConfigMap", "ConfigMap", "ConfigMap"]);
  assert.deepEqual(scenario.properties.map((p) => `${p.kind} ${p.name}`), ["always no more children than voices", "eventually children == spec.voices"]);
  assert.deepEqual(scenario.workload.map((s) => s.kind), ["sleep", "patch", "waitFor"]);
  const target = yamlDrillTarget(scenario, "delta");
  assert.equal(target.expect, "finding");
  assert.equal(target.defaults?.quietMs, 4000);
});

test("the world's properties evaluate over a store: true at the start, false once a child is gone", () => {
  const scenario = loadYamlScenario(shellScenario);
  const store = createStore({ now: () => 0 });
  createWorld(store, scenario.world);
  const view = viewOf(store);
  assert.deepEqual(scenario.properties.map((p) => p.predicate(view, { step: 0, actor: "", writes: [] })), [true, true]);
  store.delete({ apiVersion: "v1", kind: "ConfigMap", namespace: "academy-lab", name: "alpha-voice-2" });
  assert.deepEqual(scenario.properties.map((p) => p.predicate(view, { step: 0, actor: "", writes: [] })), [true, false]);
});

const helperCases: Array<[string, boolean]> = [
  ["get('Ensemble', 'academy-lab', 'alpha').spec.voices == 3", true],
  ["get('ensembles.academy.settle.dev', 'academy-lab', 'alpha').status.readyVoices == 3", true],
  ["get('ConfigMap', 'academy-lab', 'nope') == null", true],
  ["get('Namespace', 'academy-lab').metadata.name == 'academy-lab'", true],
  ["size(list('configmaps')) >= 3", true],
  ["list('ConfigMap', 'academy-lab', 'ensemble=alpha').all(c, c.metadata.ownerReferences[0].name == 'alpha')", true],
  ["size(list('ConfigMap', '', 'ensemble in (beta)')) == 0", true],
  ["get('Ensemble', 'academy-lab', 'alpha').spec.voices == 4", false],
];

for (const [expression, expected] of helperCases) {
  test(`world helper: ${expression} is ${expected}`, () => {
    const scenario = loadYamlScenario(shellScenario);
    const store = createStore({ now: () => 0 });
    createWorld(store, scenario.world);
    const compiled = compileWorldExpression(expression, kindTable(store));
    const view = viewOf(store);
    assert.equal(compiled.test(view), expected);
    assert.equal(compiled.lastError(view), undefined);
  });
}

test("an expression that fails at run time is false and keeps its error (an unknown kind)", () => {
  const store = createStore({ now: () => 0 });
  const compiled = compileWorldExpression("size(list('Gizmo')) == 0", kindTable(store));
  const view = viewOf(store);
  assert.equal(compiled.test(view), false);
  assert.match(compiled.lastError(view) ?? "", /unknown kind "Gizmo"/);
});

test("an evaluation error is kept per world: drill points in parallel share one compiled expression", () => {
  const scenario = loadYamlScenario(shellScenario);
  const worlds = [0, 1].map(() => {
    const store = createStore({ now: () => 0 });
    createWorld(store, scenario.world);
    return { store, view: viewOf(store) };
  });
  const compiled = compileWorldExpression("get('ConfigMap', 'academy-lab', 'alpha-voice-2').metadata.name == 'alpha-voice-2'", kindTable(worlds[0]!.store));
  worlds[1]!.store.delete({ apiVersion: "v1", kind: "ConfigMap", namespace: "academy-lab", name: "alpha-voice-2" });
  // The second world fails (its ConfigMap is gone, so the field access is on null), then the first evaluates cleanly.
  assert.equal(compiled.test(worlds[1]!.view), false);
  assert.equal(compiled.test(worlds[0]!.view), true);
  assert.notEqual(compiled.lastError(worlds[1]!.view), undefined);
  assert.equal(compiled.lastError(worlds[0]!.view), undefined);
});

test("a schema error names the file, the line and column, and the field", () => {
  const path = scenarioFile(minimal.replace("variants:\n", "variants:\n  other: { expect: maybe }\n"));
  assert.throws(() => loadYamlScenario(path), (error: Error) => {
    assert.ok(error instanceof ScenarioYamlError);
    assert.match(error.message, new RegExp(`${path.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}:3:\\d+: variants\\.other\\.expect: must be equal to one of the allowed values \\(finding, ok\\)`));
    return true;
  });
});

test("a CEL syntax error names the file, line, field and the expression", () => {
  const path = scenarioFile(minimal.replace("== 3\"", "== \""));
  assert.throws(() => loadYamlScenario(path), (error: Error) => {
    assert.match(error.message, /scenario\.yaml:8:\d+: properties\[0\]\.expr: "size\(list\('ConfigMap', 'academy-lab', 'ensemble=alpha'\)\) == ": /);
    return true;
  });
});

test("a world object the store refuses fails the load with the store's message", () => {
  const path = scenarioFile(`${minimal}  - always: fine\n    expr: "true"\n`.replace("files: [world.yaml]", "manifests:\n    - { apiVersion: v1, kind: ConfigMap, metadata: { name: Bad_Name } }"));
  assert.throws(() => loadYamlScenario(path), /world: ConfigMap Bad_Name: .*metadata\.name/);
});

test("a workload step with two actions is refused at its line", () => {
  const path = scenarioFile(`${minimal}workload:\n  - { sleep: 10, delete: { kind: ConfigMap, name: x } }\n`);
  assert.throws(() => loadYamlScenario(path), /scenario\.yaml:10:\d+: workload\[0\]: must NOT have more than 1 properties/);
});

test("a module variant resolves against the scenario's folder and drills as node MODULE ARGS with its env; a command wins", () => {
  const path = scenarioFile(minimal.replace("variants:\n", "variants:\n  mod: { module: op/main.js, args: [--delta, -v], env: { LEVEL: \"2\" }, expect: finding }\n  both: { module: op/main.js, command: [bash, run.sh] }\n"));
  const dir = join(path, "..");
  mkdirSync(join(dir, "op"));
  writeFileSync(join(dir, "op/main.js"), "");
  const scenario = loadYamlScenario(path);
  assert.equal(scenario.variants.mod?.module, join(dir, "op/main.js"));
  const target = yamlDrillTarget(scenario, "mod");
  assert.deepEqual(target.command, [process.execPath, join(dir, "op/main.js"), "--delta", "-v"]);
  assert.deepEqual(target.env, { LEVEL: "2" });
  assert.equal(target.cwd, dir);
  assert.equal(target.expect, "finding");
  assert.deepEqual(yamlDrillTarget(scenario, "both").command, ["bash", "run.sh"]);
});

test("a module that is not there fails the load naming the variant, the path as written and where it was looked for", () => {
  const path = scenarioFile(minimal.replace("variants:\n", "variants:\n  mod: { module: op/missing.js }\n"));
  assert.throws(() => loadYamlScenario(path), (error: Error) => {
    assert.ok(error instanceof ScenarioYamlError);
    assert.match(error.message, /scenario\.yaml:3:\d+: variants\.mod\.module: op\/missing\.js: no such file \(resolved against the scenario's folder: .*\/op\/missing\.js\)/);
    return true;
  });
  const folder = scenarioFile(minimal.replace("variants:\n", "variants:\n  mod: { module: . }\n"));
  assert.throws(() => loadYamlScenario(folder), /variants\.mod\.module: \.: not a file/);
});

test("args or replicas without a module or go, both module and go, and a module that is not a string, are errors", () => {
  assert.throws(() => loadYamlScenario(scenarioFile(minimal.replace("variants:\n", "variants:\n  a: { command: [x], args: [y] }\n"))), /variants\.a\.args: given without module or go/);
  assert.throws(() => loadYamlScenario(scenarioFile(minimal.replace("variants:\n", "variants:\n  a: { command: [x], replicas: 2 }\n"))), /variants\.a\.replicas: given without module or go/);
  assert.throws(() => loadYamlScenario(scenarioFile(minimal.replace("variants:\n", "variants:\n  a: { module: x.mjs, go: . }\n"))), /variants\.a: module and go both given/);
  assert.throws(() => loadYamlScenario(scenarioFile(minimal.replace("variants:\n", "variants:\n  a: { module: [x] }\n"))), /variants\.a\.module: must be string/);
});

test("a go variant names a folder inside a Go module, resolved against the scenario's folder", () => {
  const file = scenarioFile(minimal.replace("variants:\n", "variants:\n  g: { go: ./op, args: [--x] }\n"));
  const dir = dirname(file);
  assert.throws(() => loadYamlScenario(file), /variants\.g\.go: \.\/op: no such folder/);
  mkdirSync(join(dir, "op"));
  writeFileSync(join(dir, "op", "main.go"), "package main\nfunc main() {}\n");
  assert.throws(() => loadYamlScenario(file), /variants\.g\.go: \.\/op: no go\.mod in .* or any folder above it/);
  writeFileSync(join(dir, "go.mod"), "module example.com/op\n\ngo 1.26\n");
  assert.equal(loadYamlScenario(file).variants.g!.go, join(dir, "op"));
});

test("a scenario text is told apart from a manifest file", () => {
  assert.equal(isScenarioText(minimal), true);
  assert.equal(isScenarioText(readFileSync(join(repo, "examples/shell-operator/world.yaml"), "utf8")), false);
});

test("the committed JSON Schema for editors is the schema the loader validates with", () => {
  assert.deepEqual(JSON.parse(readFileSync(join(repo, "examples/scenario.schema.json"), "utf8")), scenarioSchema);
});
