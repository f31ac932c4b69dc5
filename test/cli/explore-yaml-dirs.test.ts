// `settle explore DIR` walks the folders under DIR that hold a scenario.yaml as well as those with a scenario file:
// the variants that give a module are explored; those that give only a command (a process, which only `settle
// drill` runs) are skipped with a one-line hint, not an error. The framework examples sit a level further down
// (examples/frameworks/*), so the quick start's `settle explore examples` does not take their minutes.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { fileURLToPath } from "node:url";
import { findExampleDirs } from "../../src/explore/load.ts";

const repo = fileURLToPath(new URL("../..", import.meta.url));
const bin = join(repo, "bin/settle.js");
const operator = join(repo, "test/module/fixtures/client-node-operator.mjs");

const commandsOnly = `name: commands-only
variants:
  main:
    command: ["node", "operator.js"]
properties:
  - eventually: nothing
    expr: "true"
`;

const mixed = `name: mixed
variants:
  level:
    module: ${JSON.stringify(operator)}
    args: ["--mode=level"]
    expect: ok
  as-process:
    command: ["node", ${JSON.stringify(operator)}, "--mode=level"]
workload:
  - sleep: 1000
  - apply: { apiVersion: v1, kind: ConfigMap, metadata: { name: p1, labels: { role: parent } }, data: { a: "1" } }
properties:
  - eventually: every-parent-has-a-child
    expr: list("ConfigMap", "default", "role=parent").all(p, get("ConfigMap", "default", p.metadata.name + "-child") != null)
`;

test("explore DIR explores the module variants of each scenario.yaml folder and skips command variants with a drill hint", () => {
  const root = mkdtempSync(join(tmpdir(), "settle-explore-yaml-"));
  for (const [name, text] of [["a-commands", commandsOnly], ["b-mixed", mixed]] as const) {
    mkdirSync(join(root, "walk", name), { recursive: true });
    writeFileSync(join(root, "walk", name, "scenario.yaml"), text);
  }
  const ran = spawnSync(process.execPath, [bin, "explore", "walk", "--runs", "2", "--workers", "1"], { cwd: root, encoding: "utf8" });
  assert.equal(ran.status, 0, ran.stderr);
  const hints = ran.stderr.split("\n").filter((line) => line.includes("skipped"));
  assert.deepEqual(hints, [
    "settle explore: walk/a-commands/scenario.yaml: skipped, its variants run commands, not modules (run it with settle drill walk/a-commands/scenario.yaml --variant main)",
    "settle explore: walk/b-mixed/scenario.yaml --variant as-process: skipped, it runs a command, not a module (run it with settle drill walk/b-mixed/scenario.yaml --variant as-process)",
  ]);
  assert.match(ran.stdout, /^mixed --variant level: 2 runs, no finding/m);
  assert.doesNotMatch(ran.stdout, /as-process/);
});

test("the examples folder's walk holds the command-only YAML examples but not the framework examples a level down", () => {
  const walked = findExampleDirs(join(repo, "examples"), { yaml: true }).map((dir) => basename(dir));
  assert.ok(walked.includes("python-operator") && walked.includes("ensemble"), walked.join(", "));
  assert.ok(!walked.includes("frameworks"), walked.join(", "));
  const frameworks = findExampleDirs(join(repo, "examples", "frameworks"), { yaml: true }).map((dir) => basename(dir));
  assert.deepEqual(frameworks, ["client-go", "client-node", "controller-runtime", "dot-i-operator", "fluent-client"]);
  // Without yaml, the walk is the code scenarios only.
  assert.ok(!findExampleDirs(join(repo, "examples")).map((dir) => basename(dir)).includes("python-operator"));
});
