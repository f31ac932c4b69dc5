// Every example's every variant meets its expectation under the command settle prints for it (issue 44): the
// catalogue of test/examples/commands.ts, from `settle list-examples --json`. A drill's command exits 1 when the
// variant expects a finding and 0 when it expects none, and its last line says so. The README files' plain commands
// for a variant, and settle explore's hints for the command-only examples it skips, are among the printed ones, so
// running these runs them too.
//
// This file runs the drill commands (real processes in real time: seconds to a minute and a half each, about 6
// minutes in all under `nice` on a 2-core machine shared with other work); commands-explore.sweep.test.ts runs the
// explore commands (CPU only, in virtual time, beside the other files). The commands in `longCommands` (commands.ts:
// more than a few minutes each) run in acceptance/commands.test.ts (`npm run acceptance`) instead.
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, realpathSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { resolveScenarioPath } from "../../src/explore/load.ts";
import { argvOf, isLong, mismatch, printedCommands, readmeCommands, repo, runSettle } from "./commands.ts";

const catalogue = printedCommands();
after(() => catalogue.remove());

/** The scenario file a printed command runs, as a real path (list-examples prints the scenario file). */
const scenarioOf = (run: string) => realpathSync(resolve(catalogue.cwd, argvOf(run)[1]!));

test("the catalogue holds every bundled example's every variant, each scenario.yaml variant with a drill command", () => {
  const examples = new Set(catalogue.commands.map((c) => c.scenarioName));
  // The five TypeScript examples, the zoo's 16 cases, three command-only and three framework scenario.yaml examples.
  assert.ok(examples.size >= 27, [...examples].join(", "));
  for (const name of ["mirror-operator", "python-operator", "shell-operator", "framework-client-node", "framework-dot-i-operator", "framework-fluent-client", "ensemble", "zoo-stale-update"]) {
    assert.ok(examples.has(name), name);
  }
  const yamlVariants = new Set(catalogue.commands.filter((c) => c.kind === "yaml").map((c) => `${c.scenarioName}/${c.variant}`));
  const drilled = new Set(catalogue.commands.filter((c) => c.runner === "drill").map((c) => `${c.scenarioName}/${c.variant}`));
  assert.deepEqual([...yamlVariants].filter((v) => !drilled.has(v)), []);
});

test("every plain command the README files give for a variant is one settle prints", () => {
  const printed = new Set(catalogue.commands.map((c) => `${c.runner} ${scenarioOf(c.run)} ${c.variant}`));
  const given = readmeCommands();
  assert.ok(given.length >= 5, JSON.stringify(given));
  for (const g of given) {
    const key = `${g.runner} ${realpathSync(resolveScenarioPath(join(repo, g.path)))} ${g.variant}`;
    assert.ok(printed.has(key), `${g.file}: settle ${g.runner} ${g.path} --variant ${g.variant} is not among the printed commands`);
  }
});

test("settle explore's hints for the command-only examples it skips name printed drill commands", async () => {
  // A folder of the command-only examples alone (links to them): the tour skips each with its hint and runs nothing.
  const dir = mkdtempSync(join(tmpdir(), "settle-hints-"));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const commandOnly = ["mirror-operator", "python-operator", "shell-operator"];
  for (const name of commandOnly) symlinkSync(join(repo, "examples", name), join(dir, name));
  const ran = await runSettle(["explore", dir], catalogue.cwd);
  assert.equal(ran.code, 0, ran.stderr);
  const hints = [...ran.stderr.matchAll(/\(run it with settle drill (\S+) --variant ([\w-]+)\)/g)];
  assert.equal(hints.length, commandOnly.length, ran.stderr);
  const printed = new Set(catalogue.commands.filter((c) => c.runner === "drill").map((c) => `${scenarioOf(c.run)} ${c.variant}`));
  for (const [, path, variant] of hints) assert.ok(printed.has(`${realpathSync(resolve(catalogue.cwd, path!))} ${variant}`), `${path} --variant ${variant}`);
});

for (const command of catalogue.commands.filter((c) => c.runner === "drill" && !isLong(c))) {
  test(`${command.run}: expects ${command.expect === "finding" ? "a finding" : "none"}`, async () => {
    const ran = await runSettle(argvOf(command.run), catalogue.cwd);
    assert.equal(mismatch(command, ran), undefined);
  });
}
