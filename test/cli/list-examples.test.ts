// `settle list-examples` lists the scenario.yaml examples beside the code ones, a level down in a folder of examples
// too (examples/frameworks), and says for each variant whether settle explore runs it (it gives a module) or only
// settle drill (it gives only a command), with the command that runs it; --json carries the same.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const repo = fileURLToPath(new URL("../..", import.meta.url));
const bin = join(repo, "bin/settle.js");
const operator = join(repo, "test/module/fixtures/client-node-operator.mjs");

function listExamples(args: string[], cwd: string): { status: number | null; stdout: string; stderr: string } {
  return spawnSync(process.execPath, [bin, "list-examples", ...args], { cwd, encoding: "utf8" });
}

interface Row {
  path: string;
  scenario: string;
  kind: string;
  name: string;
  variants: Record<string, { expect: string; runsIn: string[]; run: string; commands: Array<{ runner: string; run: string; expect: string }> }>;
}

test("list-examples lists the bundled scenario.yaml examples, the framework ones a level down, with where each variant runs", () => {
  const text = listExamples([], repo);
  assert.equal(text.status, 0, text.stderr);
  // A code scenario as before; the framework examples under examples/frameworks; the command-only python operator.
  assert.match(text.stdout, /^examples\/ensemble {2}\(ensemble\)/m);
  assert.match(text.stdout, /^examples\/frameworks\/client-node {2}\(framework-client-node\)/m);
  assert.match(text.stdout, /^ {2}--variant delta +expect finding +explore\+drill +on an update/m);
  assert.match(text.stdout, /^ {2}explore: settle explore examples\/frameworks\/client-node\/scenario\.yaml --variant V$/m);
  assert.match(text.stdout, /^ {2}drill: +settle drill examples\/frameworks\/client-node\/scenario\.yaml --variant V/m);
  const python = text.stdout.split(/\n(?=\S)/).find((block) => block.startsWith("examples/python-operator "));
  assert.ok(python !== undefined, text.stdout);
  assert.match(python, /--variant delta +expect finding +drill only/);
  assert.doesNotMatch(python, /settle explore/);
  assert.match(python, /drill: +settle drill examples\/python-operator\/scenario\.yaml --variant V/);

  const json = listExamples(["--json"], repo);
  assert.equal(json.status, 0, json.stderr);
  const rows = JSON.parse(json.stdout) as Row[];
  const byPath = new Map(rows.map((row) => [row.path, row]));
  for (const framework of ["client-node", "dot-i-operator", "fluent-client"]) {
    const row = byPath.get(`examples/frameworks/${framework}`);
    assert.equal(row?.kind, "yaml", framework);
    for (const [name, variant] of Object.entries(row.variants)) {
      assert.deepEqual(variant.runsIn, ["explore", "drill"], `${framework} ${name}`);
      assert.equal(variant.run, `settle explore examples/frameworks/${framework}/scenario.yaml --variant ${name}`);
    }
  }
  const pythonRow = byPath.get("examples/python-operator")!;
  const drillDelta = "settle drill examples/python-operator/scenario.yaml --variant delta";
  assert.deepEqual(pythonRow.variants.delta, { expect: "finding", description: "creates new - old children from the watch event (the bug)", runsIn: ["drill"], run: drillDelta, commands: [{ runner: "drill", run: drillDelta, expect: "finding" }] });
  const ensemble = byPath.get("examples/ensemble")!;
  assert.equal(ensemble.kind, "code");
  assert.equal(ensemble.scenario, "examples/ensemble/scenario.ts");
  assert.deepEqual(ensemble.variants.delta?.runsIn, ["explore"]);
});

test("list-examples on a folder of one's own: a scenario.yaml mixing a module and a command variant; a bad one exits 2 naming it", () => {
  const root = mkdtempSync(join(tmpdir(), "settle-list-yaml-"));
  try {
    mkdirSync(join(root, "mine", "mixed", "gocontroller"), { recursive: true });
    // A go: variant names a main package inside a Go module; listing it builds nothing.
    writeFileSync(join(root, "mine", "mixed", "go.mod"), "module example.com/mixed\n\ngo 1.22\n");
    writeFileSync(join(root, "mine", "mixed", "gocontroller", "main.go"), "package main\n\nfunc main() {}\n");
    writeFileSync(
      join(root, "mine", "mixed", "scenario.yaml"),
      `name: mixed
variants:
  level:
    module: ${JSON.stringify(operator)}
    expect: ok
  as-process:
    command: ["node", ${JSON.stringify(operator)}]
  crashes-once:
    module: ${JSON.stringify(operator)}
    expect: finding
    drillExpect: ok
  in-go:
    go: gocontroller
    expect: ok
properties:
  - eventually: nothing
    expr: "true"
`,
    );
    const text = listExamples(["mine"], root);
    assert.equal(text.status, 0, text.stderr);
    assert.match(text.stdout, /--variant level +expect ok +explore\+drill/);
    assert.match(text.stdout, /--variant as-process +expect ok +drill only/);
    assert.match(text.stdout, /--variant in-go +expect ok +explore\+drill/);
    assert.match(text.stdout, /--variant crashes-once +expect finding +explore\+drill +\(settle drill expects none\)$/m);
    assert.match(text.stdout, /explore: settle explore mine\/mixed\/scenario\.yaml --variant V \(V: level, crashes-once, in-go\)/);
    const rows = JSON.parse(listExamples(["mine", "--json"], root).stdout) as Row[];
    assert.deepEqual(rows.map((r) => [r.path, r.kind, Object.values(r.variants).map((v) => v.run)]), [
      [
        "mine/mixed",
        "yaml",
        [
          "settle explore mine/mixed/scenario.yaml --variant level",
          "settle drill mine/mixed/scenario.yaml --variant as-process",
          "settle explore mine/mixed/scenario.yaml --variant crashes-once",
          "settle explore mine/mixed/scenario.yaml --variant in-go",
        ],
      ],
    ]);
    // Each command with what it finds: a drillExpect is settle drill's alone.
    assert.deepEqual(rows[0]!.variants["crashes-once"]!.commands, [
      { runner: "explore", run: "settle explore mine/mixed/scenario.yaml --variant crashes-once", expect: "finding" },
      { runner: "drill", run: "settle drill mine/mixed/scenario.yaml --variant crashes-once", expect: "ok" },
    ]);

    mkdirSync(join(root, "mine", "broken"));
    writeFileSync(join(root, "mine", "broken", "scenario.yaml"), "name: broken\nvariants: {}\n");
    const bad = listExamples(["mine"], root);
    assert.equal(bad.status, 2, bad.stdout);
    assert.match(bad.stderr, /mine\/broken\/scenario\.yaml/);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test("a reader that stops early (settle list-examples | head) ends settle quietly with SIGPIPE's status, no EPIPE stack", async () => {
  // The read end of settle's stdout is closed before settle has started, so its first write meets a closed pipe
  // whatever the machine's speed (a real `| head -1` may read everything first when settle writes it at once).
  const child = spawn(process.execPath, [bin, "list-examples"], { cwd: repo, stdio: ["ignore", "pipe", "pipe"] });
  child.stdout.destroy();
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const status = await new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
  assert.equal(status, 141, stderr);
  assert.doesNotMatch(stderr, /EPIPE|Unhandled/);
});
