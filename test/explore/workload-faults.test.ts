import { test } from "node:test";
import assert from "node:assert/strict";
import { runIndexes, type RunSummary } from "../../src/explore/explore.ts";
import { scenario } from "../../src/explore/scenario.ts";
import { defineActor } from "../../src/sim/simulation.ts";
import { always } from "../../src/check/properties.ts";

// Every actor-targeted fault kind in the budget, at a high rate: only the controller may be hit.
const busy = scenario({
  name: "busy",
  variants: { only: { expect: "ok" } },
  actors: () => [
    defineActor({
      name: "worker",
      start: async (ctx) => {
        for (let i = 0; i < 20; i++) {
          await ctx.client.list({ apiVersion: "v1", kind: "ConfigMap", namespace: "default", resourceVersion: "0" }).catch(() => undefined);
          await ctx.clock.sleep(500);
        }
      },
    }),
  ],
  workloads: {
    writes: async (ctx) => {
      for (let i = 0; i < 20; i++) {
        await ctx.client.create({ object: { apiVersion: "v1", kind: "ConfigMap", metadata: { name: `c${i}`, namespace: "default" } } });
        await ctx.clock.sleep(500);
      }
    },
  },
  faults: { chance: [1, 2], counts: { crash: 5, pause: 5, "stale-read": 5, "fail-request": 5, "lost-response": 5, "delay-watch": 5, "close-watch": 5 } },
  properties: () => [always("always true", () => true)],
  timing: { faultPhaseMs: 20_000, horizonMs: 120_000, settleWindowMs: 5_000 },
});

test("random faults never target the workload actor: user code does not retry, so a fault there is noise", async () => {
  const summaries: RunSummary[] = [];
  const ctx = { scenario: busy, variant: "only", workload: undefined, params: {}, seed: 5, strategy: "random" as const, points: [] };
  await runIndexes(ctx, Array.from({ length: 30 }, (_, i) => i), undefined, (s) => summaries.push(s));
  const faults = summaries.flatMap((s) => s.faults);
  assert.ok(faults.length > 30, `only ${faults.length} faults drawn`);
  assert.ok(faults.some((f) => f.target === "worker"), "the worker was faulted");
  assert.deepEqual(faults.filter((f) => f.target === "user" || f.target.startsWith("user/")), []);
  assert.deepEqual(summaries.filter((s) => s.verdict.kind !== "ok").map((s) => s.verdict.detail), []);
});
