// Deadlines counted from a moment the workload marks, and properties over the writes of the last step, in
// whole scenario runs: the API a controller author uses to say "the child exists within 5 s of the label"
// and "no child is deleted while its owner exists".
import { test } from "node:test";
import assert from "node:assert/strict";
import { always, eventually } from "../../src/check/properties.ts";
import { scenario, type WorkloadContext } from "../../src/explore/scenario.ts";
import { runScenario } from "../../src/explore/run.ts";
import { defineActor } from "../../src/sim/simulation.ts";
import { Action, defineController, runController } from "../../src/runtime/controller.ts";
import { isAlreadyExists } from "../../src/api/errors.ts";
import type { KubeObject } from "../../src/api/object.ts";

const cmKind = { apiVersion: "v1", kind: "ConfigMap" } as const;
const ns = "default";
const parentRef = { ...cmKind, namespace: ns, name: "parent" };
const childRef = { ...cmKind, namespace: ns, name: "parent-child" };

/** Makes a child for a labelled parent `delayMs` after it sees the label; the "reaper" variant then deletes it. */
function childMaker(delayMs: number, reap: boolean) {
  return defineController({
    name: "child-maker",
    for: cmKind,
    async reconcile(parent, ctx) {
      if (parent.metadata.labels?.["make-child"] !== "yes") return Action.awaitChange();
      await ctx.clock.sleep(delayMs);
      const child: KubeObject = { ...cmKind, metadata: { namespace: ns, name: `${parent.metadata.name}-child` } };
      try {
        await ctx.client.create({ object: child });
      } catch (error) {
        if (!isAlreadyExists(error)) throw error;
        if (reap) await ctx.client.delete(childRef);
      }
      return Action.awaitChange();
    },
  });
}

const seen: { timing?: WorkloadContext["timing"]; startMs?: number; markedAtMs?: number } = {};

const marked = scenario({
  name: "marks",
  variants: { fast: { expect: "ok" }, slow: { expect: "finding" }, reaper: { expect: "finding" } },
  setup: () => [{ ...cmKind, metadata: { namespace: ns, name: "parent" } }],
  actors: ({ variant }) => [
    defineActor({
      name: "operator",
      async start(ctx) {
        const controller = childMaker(variant === "slow" ? 8000 : 1000, variant === "reaper");
        await runController(controller, { client: ctx.client, clock: ctx.clock }).done;
      },
    }),
  ],
  workloads: {
    // Labels the parent well after the fault phase; the deadline counts from the label, not from heal start.
    label: async (ctx) => {
      await ctx.clock.sleep(ctx.timing.faultPhaseMs + 20_000);
      const parent = await ctx.client.get(parentRef);
      await ctx.client.update({ object: { ...parent, metadata: { ...parent.metadata, labels: { "make-child": "yes" } } } });
      ctx.mark("labelled");
      Object.assign(seen, { timing: ctx.timing, startMs: ctx.startMs, markedAtMs: ctx.clock.now() });
      // The reaper deletes on its second reconcile; touching the parent causes one.
      await ctx.clock.sleep(3000);
      const again = await ctx.client.get(parentRef);
      await ctx.client.update({ object: { ...again, data: { touched: "yes" } } });
    },
  },
  // Instant requests, so the marks fall on the exact milliseconds the assertions name.
  timing: { faultPhaseMs: 10_000, horizonMs: 120_000, settleWindowMs: 10_000, requestLatencyMs: [0, 0] },
  properties: () => [
    eventually("the child exists within 5 s of the label", (view) => view.get(childRef) !== undefined, { withinMs: 5000, from: "labelled" }),
    always("no child is deleted while its parent exists", (view, last) =>
      last.writes.every((w) => w.type !== "deleted" || w.object.metadata.name !== "parent-child" || view.get(parentRef) === undefined),
    ),
  ],
});

test("a child made 1 s after the label meets a 5 s deadline counted from the workload's mark", async () => {
  const outcome = await runScenario(marked, { variant: "fast", workload: "label", params: {}, seed: 1 });
  assert.equal(outcome.verdict.kind, "ok", outcome.verdict.detail);
  assert.deepEqual(seen.timing, { faultPhaseMs: 10_000, horizonMs: 120_000, settleWindowMs: 10_000, stepsMax: 200_000, requestLatencyMs: [0, 0], heartbeats: [{ kind: "Lease" }] });
  assert.equal((seen.markedAtMs ?? 0) - (seen.startMs ?? 0), 30_000, "the workload sees the run's start and timing");
});

test("a child made 8 s after the label misses the deadline, reported at the mark plus withinMs", async () => {
  const outcome = await runScenario(marked, { variant: "slow", workload: "label", params: {}, seed: 1 });
  assert.equal(outcome.verdict.kind, "deadline-missed", outcome.verdict.detail);
  assert.equal(outcome.verdict.property, "the child exists within 5 s of the label");
  assert.equal(outcome.verdict.elapsedMs, 30_000 + 5000);
  assert.match(outcome.verdict.detail, /5000 ms after the mark "labelled"; the world was still busy/);
});

test("a property over the last step's writes catches a child deleted while its parent exists", async () => {
  const outcome = await runScenario(marked, { variant: "reaper", workload: "label", params: {}, seed: 1, traceMode: "full" });
  assert.equal(outcome.verdict.kind, "safety-violation", outcome.verdict.detail);
  assert.equal(outcome.verdict.property, "no child is deleted while its parent exists");
  const lastWrite = outcome.trace.filter((r) => r.revisionAfter > r.revisionBefore).at(-1);
  assert.equal(lastWrite?.actor, "operator", "the violating step is the operator's delete");
  assert.match(lastWrite?.ref ?? "", /parent-child/);
});
