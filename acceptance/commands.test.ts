// Issue 44, the long part, run by `npm run acceptance` (not by `npm test`): the printed commands of
// test/examples/commands.ts's `longCommands` (more than a few minutes each), judged as test/examples/commands.test.ts
// judges the others; and the README's tour, `settle explore examples`, whose every variant's line must say what the
// variant expects (each buggy variant found, each fixed one clean) and whose exit code is 1 (the buggy variants' findings).
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { argvOf, isLong, longCommands, mismatch, printedCommands, runSettle, tourPlan } from "../test/examples/commands.ts";
import { repo } from "./cli.ts";
import { join } from "node:path";

const catalogue = printedCommands();
after(() => catalogue.remove());
const long = catalogue.commands.filter(isLong);

test("every long command is in the catalogue", () => {
  assert.equal(long.length, Object.keys(longCommands).length, JSON.stringify(long.map((c) => c.run)));
});

for (const command of long) {
  const plan = tourPlan(command);
  test(`${command.run}${plan.length > 0 ? ` ${plan.join(" ")}` : ""}: expects ${command.expect === "finding" ? "a finding" : "none"}`, async () => {
    const ran = await runSettle([...argvOf(command.run), ...plan], catalogue.cwd);
    assert.equal(mismatch(command, ran), undefined);
  });
}

test("the tour, settle explore examples, finds every buggy variant and no fixed one, and names each skipped one's drill command", async () => {
  const ran = await runSettle(["explore", join(repo, "examples")], catalogue.cwd);
  assert.equal(ran.code, 1, ran.stderr.slice(-3000));
  // The tour walks the folders right under examples/: their code scenarios' variants, each with its line.
  const toured = catalogue.commands.filter((c) => c.runner === "explore" && c.kind === "code" && !c.example.includes("/zoo/"));
  assert.ok(toured.length >= 14, JSON.stringify(toured.map((c) => c.run)));
  for (const command of toured) {
    const line = ran.stdout.split("\n").find((l) => l.startsWith(`${command.scenarioName} --variant ${command.variant}: `));
    const said = command.expect === "finding" ? / [1-9]\d* finding\(s\)/ : / no finding/;
    assert.ok(line !== undefined && said.test(line), `${command.run}: ${line}`);
  }
  for (const name of ["mirror-operator", "python-operator", "shell-operator"]) {
    const hint = new RegExp(`${name}/scenario\\.yaml: skipped, .*\\(run it with settle drill \\S+${name}/scenario\\.yaml --variant [\\w-]+\\)`);
    assert.match(ran.stderr, hint);
  }
});
