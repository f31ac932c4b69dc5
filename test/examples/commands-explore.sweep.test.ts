// Every example's every variant that settle explore runs meets its expectation under the command settle prints for
// it (issue 44; the catalogue and the judging are test/examples/commands.ts's, the drill commands are
// commands.test.ts's). A printed explore command runs 1000 runs of the variant, every finding shrunk; here each runs
// under the plan of the tour (`settle explore examples`): a buggy variant to its first finding (`--first`), a fixed one
// over the tour's runs (`--runs 100`). It must exit 1 or 0 as the variant expects, its summary line saying what it found.
// A sweep file (CPU only, in virtual time; scripts/run-tests.mjs runs it beside the other files): 8 to 12 minutes
// under `nice` on a 2-core machine shared with much other work (load average near 18), half of it the framework
// examples' modules; the README's tour, the same plan for the five TypeScript examples, takes 51 s on a calm one.
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { argvOf, isLong, mismatch, printedCommands, runSettle, tourPlan } from "./commands.ts";

const catalogue = printedCommands();
after(() => catalogue.remove());

for (const command of catalogue.commands.filter((c) => c.runner === "explore" && !isLong(c))) {
  const plan = tourPlan(command);
  test(`${command.run} ${plan.join(" ")}: expects ${command.expect === "finding" ? "a finding" : "none"}`, async () => {
    const ran = await runSettle([...argvOf(command.run), ...plan], catalogue.cwd);
    assert.equal(mismatch(command, ran), undefined);
  });
}
