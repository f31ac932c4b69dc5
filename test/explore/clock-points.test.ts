// The systematic clock points (issue 47 items 3 and 7): each actor's wall clock skewed ahead and behind from the
// start, then stepped forward and back at its first write, planned after every other class so no earlier point
// moves; they find a lock judged by another machine's wall time, and never flag code that measures on the monotonic
// clock (client-go's leader election, as the settle runtime implements it, and the zoo case's fixed form).
import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { LeaderElector, type Lease } from "../../src/runtime/index.ts";
import { defineActor } from "../../src/sim/index.ts";
import { always } from "../../src/check/properties.ts";
import { referencePlan } from "../../src/explore/runs.ts";
import { loadScenario } from "../../src/explore/load.ts";
import { pointClasses, systematicClockOffsetMs, type FaultPoint } from "../../src/explore/plan.ts";
import { defaultFaultBudget, scenario, type Scenario } from "../../src/explore/scenario.ts";
import { runScenario } from "../../src/explore/run.ts";
import { fifoStrategy } from "../../src/sim/strategy.ts";

const repo = fileURLToPath(new URL("../../", import.meta.url));
const skewedExpiry = join(repo, "examples", "zoo", "skewed-expiry", "scenario.ts");
const clockClasses = new Set(["clock-skew", "clock-step"]);

async function runPoint(s: Scenario, variant: string, point: FaultPoint) {
  return runScenario(s, { variant, workload: point.workload, params: s.params, seed: 1, strategy: fifoStrategy(), faults: [point.fault] });
}

test("clock points come last, and a budget without clock skews plans exactly the points it planned before", async () => {
  const zoo = await loadScenario(skewedExpiry);
  const { points } = await referencePlan(zoo, { variant: "buggy", params: zoo.params, seed: 1 });
  const classes = points.map((p) => p.pointClass);
  assert.deepEqual(pointClasses.slice(-2), ["clock-skew", "clock-step"]);
  const first = classes.findIndex((c) => clockClasses.has(c));
  assert.ok(first > 0, classes.join(", "));
  assert.ok(classes.slice(first).every((c) => clockClasses.has(c)), "nothing is planned after the clock points");
  const clock = points.slice(first);
  const d = systematicClockOffsetMs;
  assert.deepEqual(
    clock.filter((p) => p.pointClass === "clock-skew").map((p) => [p.fault.atStep, p.fault.target, p.fault["offsetMs"]]),
    [
      [0, "replica-a", d],
      [0, "replica-a", -d],
      [0, "replica-b", d],
      [0, "replica-b", -d],
    ],
  );
  const steps = clock.filter((p) => p.pointClass === "clock-step");
  assert.deepEqual(
    steps.map((p) => [p.fault.target, p.fault["deltaMs"]]).sort(),
    [
      ["replica-a", -d],
      ["replica-a", d],
      ["replica-b", -d],
      ["replica-b", d],
    ],
  );
  assert.ok(steps.every((p) => p.fault.atStep > 0 && p.label.includes("after")));
  // The same scenario with a budget that draws no clock skew: the points before the clock classes, unchanged.
  const without: Scenario = { ...zoo, faults: { ...defaultFaultBudget, clockSkewMs: 0 } };
  const before = await referencePlan(without, { variant: "buggy", params: zoo.params, seed: 1 });
  assert.deepEqual(before.points, points.slice(0, first));
});

test("a clock-skew point finds the zoo's skewed-expiry lock; its fixed form is clean under every clock point", async () => {
  const zoo = await loadScenario(skewedExpiry);
  const { points } = await referencePlan(zoo, { variant: "buggy", params: zoo.params, seed: 1 });
  const clock = points.filter((p) => clockClasses.has(p.pointClass));
  const found: string[] = [];
  for (const point of clock) {
    const outcome = await runPoint(zoo, "buggy", point);
    if (outcome.verdict.kind === "safety-violation") found.push(point.label);
  }
  assert.ok(found.some((label) => label.includes("behind from the start")) && found.some((label) => label.includes("ahead from the start")), found.join("\n"));
  for (const point of clock) {
    const outcome = await runPoint(zoo, "fixed", point);
    assert.equal(outcome.verdict.kind, "ok", `${point.label}: ${outcome.verdict.detail}`);
  }
});

const leaseRef = { namespace: "default", name: "singleton" };
const leaseDurationMs = 15_000;

/**
 * Two candidates of client-go's leader election (the settle runtime's `LeaderElector`), and the property that the
 * lease changes hands only after its holder left it unrenewed for the lease duration on the API server's clock.
 */
function electionScenario(): Scenario {
  return scenario({
    name: "clock-immune-election",
    variants: { fixed: { expect: "ok" } },
    actors: () =>
      ["candidate-a", "candidate-b"].map((identity) =>
        defineActor({
          name: identity,
          async start(ctx) {
            const elector = new LeaderElector({ client: ctx.client, clock: ctx.clock, lease: leaseRef, identity, leaseDurationMs });
            for (;;) {
              if (!(await elector.acquire())) return;
              await elector.hold();
            }
          },
        }),
      ),
    workloads: { idle: async (ctx) => ctx.clock.sleep(1000) },
    timing: { faultPhaseMs: 20_000, horizonMs: 120_000, settleWindowMs: 30_000, stepsMax: 20_000 },
    properties: () => {
      let holder: string | undefined;
      let writtenAtMs = 0;
      return [
        always("the lease changes hands only after its holder left it unrenewed for the lease duration", (view, last) => {
          let held = true;
          for (const write of last.writes) {
            if (write.object.kind !== "Lease") continue;
            const next = (write.object as Lease).spec?.holderIdentity;
            if (holder !== undefined && next !== undefined && next !== holder && view.now() - writtenAtMs < leaseDurationMs) held = false;
            holder = next;
            writtenAtMs = view.now();
          }
          return held;
        }),
      ];
    },
  });
}

test("no false alarm: client-go's leader election (measured on the monotonic clock) is clean under every clock point", async () => {
  const election = electionScenario();
  const { points, references } = await referencePlan(election, { variant: "fixed", params: election.params, seed: 1 });
  assert.deepEqual(references, [], "the reference run is clean");
  const clock = points.filter((p) => clockClasses.has(p.pointClass));
  assert.equal(clock.filter((p) => p.pointClass === "clock-skew").length, 4);
  assert.equal(clock.filter((p) => p.pointClass === "clock-step").length, 4);
  for (const point of clock) {
    const outcome = await runPoint(election, "fixed", point);
    assert.equal(outcome.verdict.kind, "ok", `${point.label}: ${outcome.verdict.detail}`);
    assert.equal(outcome.faults.length, 1);
  }
  // Beyond the plan: each candidate's clock stepped forward and back while it follows the lease (after its third and
  // sixth read of it), where a follower that measured the lease's age on its wall clock would take it over early.
  const reference = await runScenario(election, { variant: "fixed", workload: "idle", params: election.params, seed: 1, strategy: fifoStrategy(), traceMode: "full" });
  let stepped = 0;
  for (const actor of ["candidate-a", "candidate-b"]) {
    const reads = reference.trace.filter((r) => r.actor === actor && r.kind === "request" && r.verb === "get");
    for (const read of [reads[2], reads[5]]) {
      assert.ok(read !== undefined, `${actor} reads the lease at least six times`);
      for (const deltaMs of [systematicClockOffsetMs, -systematicClockOffsetMs]) {
        const fault = { atStep: read.step + 1, kind: "clock-step", target: actor, deltaMs };
        const outcome = await runScenario(election, { variant: "fixed", workload: "idle", params: election.params, seed: 1, strategy: fifoStrategy(), faults: [fault] });
        assert.equal(outcome.verdict.kind, "ok", `${JSON.stringify(fault)}: ${outcome.verdict.detail}`);
        stepped++;
      }
    }
  }
  assert.equal(stepped, 8);
});
