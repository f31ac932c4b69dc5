// The Flux stable-pause example: the buggy proof must be found (a parent reconcile that starts between the
// quiescence check and the suspend leaves a frozen Reconciling=True), shrunk and replayed; the fixed proof must
// pass small sweeps of every workload, and each workload must end the way the model says.
import { test } from "node:test";
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import fluxScenario from "../../examples/flux-pause/scenario.ts";
import { l1Name, liveExecutions } from "../../examples/flux-pause/properties.ts";
import { lines, type ScriptOutput } from "../../examples/flux-pause/script.ts";
import { explore, type ExploreOptions, type ExploreResult } from "../../src/explore/explore.ts";
import { runScenario } from "../../src/explore/run.ts";
import type { Scenario } from "../../src/explore/scenario.ts";
import type { TraceRecord } from "../../src/sim/trace.ts";

const scenarioPath = fileURLToPath(new URL("../../examples/flux-pause/scenario.ts", import.meta.url));
const flux = fluxScenario as unknown as Scenario;
const params = flux.params;
const l1 = l1Name;

function options(variant: string, overrides: Partial<ExploreOptions> = {}): ExploreOptions {
  return { scenarioPath, variant, workload: "plain", params, runs: 60, seed: 2, workers: 1, strategy: "random", first: true, ...overrides };
}

let buggy: ExploreResult | undefined;
async function exploreBuggy(): Promise<ExploreResult> {
  buggy ??= await explore(flux, options("buggy"), () => 0);
  return buggy;
}

const isParent = (r: TraceRecord) => r.ref?.includes("flux-system/parent") === true;

test("exploring the buggy proof finds the frozen Reconciling=True on the suspended parent as an L1 violation", async () => {
  const result = await exploreBuggy();
  assert.deepEqual(result.findings.map((f) => f.key), [`safety-violation:${l1}`]);
  const { minimal, run } = result.findings[0]!;
  assert.ok(run.index < 60, `found at run ${run.index}`);
  assert.equal(minimal.outcome.verdict.property, l1);
  assert.ok(minimal.faults.length <= run.faults.length && minimal.choices.length <= run.choices.length, "shrinking never grows a run");
  assert.equal(minimal.faults.length, 0, "no fault is needed: only the moment the job arrives");
});

test("in the minimal buggy run the parent's Reconciling=True lands after the claim and is never cleared", async () => {
  const { minimal } = (await exploreBuggy()).findings[0]!;
  const trace = minimal.outcome.trace;
  const applied = (r: TraceRecord) => r.kind === "request" && r.write === true && r.revisionAfter !== r.revisionBefore;
  const claim = trace.findIndex((r) => applied(r) && r.actor === "script" && isParent(r) && r.label.startsWith("update"));
  assert.ok(claim >= 0, "the script claimed the parent");
  const statusWrites = trace.filter((r, i) => i > claim && applied(r) && isParent(r) && r.label.startsWith("patchStatus"));
  assert.equal(statusWrites.length, 1, "one status write after the suspend: Reconciling=True, never followed by Ready=True");
  assert.ok(trace.some((r) => r.actor === "script" && r.kind === "request" && r.label.startsWith("patch Deployment")), "the rollout restart ran");
});

test("replaying the minimal buggy run gives the same verdict and trace hash, and the fixed proof passes the same run", async () => {
  const finding = (await exploreBuggy()).findings[0]!;
  const spec = { workload: finding.run.workload, params, seed: finding.run.seed, choices: finding.minimal.choices, faults: finding.minimal.faults };
  const again = await runScenario(flux, { ...spec, variant: "buggy", traceMode: "full" });
  assert.equal(again.traceHash, finding.minimal.outcome.traceHash);
  assert.deepEqual(again.verdict, finding.minimal.outcome.verdict);
  const fixed = await runScenario(flux, { ...spec, variant: "fixed" });
  assert.equal(fixed.verdict.kind, "ok", fixed.verdict.detail);
});

test("a small sweep of the fixed proof over every workload finds nothing", async () => {
  for (const workload of Object.keys(flux.workloads)) {
    const result = await explore(flux, options("fixed", { workload, runs: 8, first: false, seed: 7 }), () => 0);
    assert.deepEqual(result.findings.map((f) => f.key), [], workload);
  }
});

/** Runs the scenario with an extra property that records the CI log, the way a user would read it. */
async function finalOutput(variant: string, workload: string, seed: number): Promise<{ out: ScriptOutput; kind: string }> {
  let last: ScriptOutput = { lines: [] };
  const recording: Scenario = {
    ...flux,
    properties: (ctx) => [
      ...flux.properties(ctx),
      {
        kind: "always",
        name: "record the CI log",
        predicate: (view) => {
          last = view.external<ScriptOutput>("ci/stdout");
          return true;
        },
      },
    ],
  };
  const outcome = await runScenario(recording, { variant, workload, params, seed });
  return { out: last, kind: outcome.verdict.kind };
}

test("the other writer makes the fixed proof time out with only the fixed counter line", async () => {
  const { out, kind } = await finalOutput("fixed", "other-writer", 11);
  assert.equal(kind, "ok");
  assert.equal(out.result, "fail");
  const timeout = out.lines.findIndex((l) => l.text === lines.timeout);
  assert.ok(timeout > 0, JSON.stringify(out.lines));
  assert.deepEqual(out.lines.slice(0, timeout).map((l) => l.text), [lines.restarted]);
  assert.equal(out.lines.length, timeout + 2, "the counter line is the last line");
  assert.match(out.lines[timeout + 1]!.text, /^observations=60 unreadable=0 child_not_owned=\d+ parent_not_owned=\d+ parent_changed=\d+ version_changes=\d+$/);
});

test("the buggy proof, comparing only the child's resourceVersion, says OK while the other writer changes the parent", async () => {
  const { out, kind } = await finalOutput("buggy", "other-writer", 11);
  assert.equal(kind, "safety-violation");
  assert.equal(out.result, "ok");
});

test("a parent frozen in Reconciling=True before the claim blocks at the pre-claim wait and is never claimed", async () => {
  const { out, kind } = await finalOutput("fixed", "frozen-condition-at-claim", 5);
  assert.equal(kind, "ok");
  assert.deepEqual(out.lines.map((l) => l.text), [lines.preClaimTimeout, "observations=60 unreadable=0 reconciling=60"]);
  assert.equal(out.result, "fail");
});

test("the fixed proof says OK two polls after the restart, with no execution of parent or child alive", async () => {
  let live: string[] | undefined;
  const recording: Scenario = {
    ...flux,
    properties: (ctx) => [
      ...flux.properties(ctx),
      { kind: "always", name: "record live executions at OK", predicate: (view) => ((live ??= view.external<ScriptOutput>("ci/stdout").result === "ok" ? liveExecutions(view) : undefined), true) },
    ],
  };
  const outcome = await runScenario(recording, { variant: "fixed", workload: "plain", params, seed: 4 });
  assert.equal(outcome.verdict.kind, "ok", outcome.verdict.detail);
  assert.deepEqual(live, []);
  const { out } = await finalOutput("fixed", "plain", 4);
  const restarted = out.lines.find((l) => l.text === lines.restarted)!;
  const ok = out.lines.find((l) => l.text === lines.ok)!;
  assert.equal(ok.atMs - restarted.atMs, 2 * Number(params.syncIntervalMs));
});
