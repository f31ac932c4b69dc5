// Reports say each actor's clock offset when a clock fault left it off (issue 47 item 5), and nothing more when none
// did: "replica-b's clock 12 s ahead" in the text report and the HTML report's header, lane and step detail.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { loadScenario } from "../../src/explore/load.ts";
import { runScenario } from "../../src/explore/run.ts";
import { replayFormatVersion, writeReplayFile } from "../../src/explore/findings.ts";
import { fifoStrategy } from "../../src/sim/strategy.ts";
import type { PlannedFault } from "../../src/sim/types.ts";
import { clockOffsetLines, formatFinding } from "../../src/report/text.ts";
import { renderHtmlReport } from "../../src/report/html.ts";
import { reportDataFromReplayFile } from "../../src/report/model.ts";

const repo = fileURLToPath(new URL("../../", import.meta.url));
const scenarioPath = join(repo, "examples", "zoo", "skewed-expiry", "scenario.ts");

async function run(faults: PlannedFault[]) {
  const scenario = await loadScenario(scenarioPath);
  const outcome = await runScenario(scenario, { variant: "buggy", workload: "two-replicas", params: scenario.params, seed: 1, strategy: fifoStrategy(), faults, traceMode: "full" });
  return { scenario, outcome };
}

function textReport(outcome: Awaited<ReturnType<typeof run>>["outcome"]): string {
  return formatFinding({ scenario: "zoo-skewed-expiry", variant: "buggy", workload: "two-replicas", verdict: outcome.verdict, counters: [], trace: outcome.trace, faults: outcome.faults.length, choices: 0, replayPath: "x.json" });
}

test("the text report names each skewed clock, and says nothing of clocks when no clock fault applied", async () => {
  const skewed = await run([
    { atStep: 0, kind: "clock-skew", target: "replica-b", offsetMs: 12_000 },
    { atStep: 0, kind: "clock-skew", target: "replica-a", offsetMs: -1500 },
  ]);
  assert.deepEqual(clockOffsetLines(skewed.outcome.trace), ["replica-a's clock 1.5 s behind", "replica-b's clock 12 s ahead"]);
  assert.match(textReport(skewed.outcome), /wall clocks: replica-b's clock 12 s ahead/);
  // A skew set back to zero by a later step leaves the clock true: no line for it.
  const undone = await run([
    { atStep: 0, kind: "clock-skew", target: "replica-a", offsetMs: 3000 },
    { atStep: 0, kind: "clock-step", target: "replica-a", deltaMs: -3000 },
  ]);
  assert.deepEqual(clockOffsetLines(undone.outcome.trace), []);
  const plain = await run([{ atStep: 5, kind: "crash", target: "replica-a" }]);
  assert.deepEqual(clockOffsetLines(plain.outcome.trace), []);
  assert.doesNotMatch(textReport(plain.outcome), /clock/);
});

test("the HTML report says each skewed clock in its header and carries the offset in the fault's record", async () => {
  const dir = mkdtempSync(join(tmpdir(), "settle-clock-report-"));
  try {
    for (const [faults, shown] of [
      [[{ atStep: 0, kind: "clock-skew", target: "replica-b", offsetMs: 12_000 }], true],
      [[{ atStep: 5, kind: "crash", target: "replica-a" }], false],
    ] as const) {
      const { outcome } = await run([...faults]);
      const file = {
        version: replayFormatVersion,
        scenario: scenarioPath,
        variant: "buggy",
        workload: "two-replicas",
        params: {},
        seed: 1,
        choices: outcome.choices,
        faults: outcome.faults,
        verdict: outcome.verdict.kind,
        property: outcome.verdict.property ?? null,
        traceHash: outcome.traceHash,
        steps: outcome.steps,
      };
      const path = writeReplayFile(dir, file, outcome.trace, `clock-${String(shown)}`);
      const data = await reportDataFromReplayFile(path, { cwd: dir });
      assert.equal(data.reproduced, true);
      const html = renderHtmlReport(data);
      if (shown) {
        assert.match(html, /id="clock-offsets">wall clocks: replica-b&#39;s clock 12 s ahead|id="clock-offsets">wall clocks: replica-b's clock 12 s ahead/);
        assert.equal(data.records.find((r) => r.kind === "fault")?.fault?.clockOffsetMs, 12_000);
      } else {
        assert.doesNotMatch(html, /clock-offsets/);
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
