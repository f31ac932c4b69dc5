// The bounded search's reduction loses nothing under the preemption bound: on generated programs of a few actors
// reading, writing, listing and watching two ConfigMaps (fast-check, pinned seed), the reduced search at K=1 and
// K=2 reaches exactly the final worlds of the plain one, and so it does with one planned fault of the default budget
// placed at each systematic point. Each actor ends by writing what it saw into a ConfigMap of its own, so a world
// records the order of what happened, not only its result. A canary drops the origin order the reduction's argument
// rests on and must miss a world. A sweep file (CPU only, in virtual time), which scripts/run-tests.mjs runs beside
// the other files.
import { test } from "node:test";
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import fc from "fast-check";
import { explore, type ExploreOptions } from "../../src/explore/explore.ts";
import type { BoundedOptions } from "../../src/explore/bounded.ts";
import { eventually } from "../../src/check/properties.ts";
import { defineActor, scenario } from "../../src/public/sim.ts";
import type { Scenario } from "../../src/explore/scenario.ts";
import type { ActorContext } from "../../src/sim/types.ts";
import { loadScenario } from "../../src/explore/load.ts";
import { runScenario } from "../../src/explore/run.ts";
import { compareOrigins, fifoStrategy, type Strategy } from "../../src/sim/strategy.ts";

type Cell = "a" | "b";
type Op = ["read", Cell] | ["write", Cell] | ["sleep", number] | ["list"] | ["watch", number];

const ns = "gen";
const scenarioPath = fileURLToPath(import.meta.url);

/** The value of ConfigMap `name`'s `v`. */
const valueOf = (object: unknown): string => (object as { data: { v: string } }).data.v;

/** Runs one op, adding what it saw to `seen`; a watch waits for `n` events of `a` or `b` (forever if they never come). */
async function runOp(ctx: ActorContext, op: Op, tag: string, seen: string[]): Promise<void> {
  const kind = { apiVersion: "v1", kind: "ConfigMap", namespace: ns };
  switch (op[0]) {
    case "sleep":
      return ctx.clock.sleep(op[1]);
    case "read":
      seen.push(valueOf(await ctx.client.get({ ...kind, name: op[1] })));
      return;
    case "write":
      await ctx.client.patch({ ...kind, name: op[1], patchType: "merge", patch: { data: { v: tag } } });
      return;
    case "list": {
      const list = await ctx.client.list(kind);
      seen.push(list.items.filter((o) => o.metadata.name === "a" || o.metadata.name === "b").map((o) => `${o.metadata.name}=${valueOf(o)}`).join("+"));
      return;
    }
    case "watch": {
      let left = op[1];
      for await (const event of ctx.client.watch(kind)) {
        if (event.type === "BOOKMARK" || (event.object.metadata.name !== "a" && event.object.metadata.name !== "b")) continue;
        seen.push(`${event.type}:${event.object.metadata.name}=${valueOf(event.object)}`);
        if (--left === 0) return;
      }
    }
  }
}

/**
 * Actor i runs program i, then writes what it read into ConfigMap `log<i>`. With `faults`, the actors may crash (a
 * restarted one runs its program again) and the scenario takes the default fault budget, so the systematic points
 * give the search its fault placements.
 */
export function programScenario(programs: readonly Op[][], faults = false): Scenario {
  const configMap = (name: string) => ({ apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace: ns }, data: { v: "0" } });
  const actor = (ops: readonly Op[], i: number) =>
    defineActor({
      name: `p${i}`,
      crashable: faults,
      start: async (ctx) => {
        const seen: string[] = [];
        for (const [k, op] of ops.entries()) await runOp(ctx, op, `p${i}.${k}`, seen);
        await ctx.client.patch({ apiVersion: "v1", kind: "ConfigMap", namespace: ns, name: `log${i}`, patchType: "merge", patch: { data: { v: seen.join(",") } } });
      },
    });
  return scenario({
    name: "bounded-programs",
    variants: { all: { expect: "ok" } },
    setup: () => [{ apiVersion: "v1", kind: "Namespace", metadata: { name: ns } }, ...["a", "b", ...programs.map((_, i) => `log${i}`)].map(configMap)],
    actors: () => programs.map(actor),
    workloads: { none: async () => {} },
    ...(faults ? {} : { faults: "none" as const }),
    timing: { faultPhaseMs: 1_000, horizonMs: 60_000, settleWindowMs: 5_000, requestLatencyMs: [5, 5] },
    properties: () => [eventually("(test) runs end", () => true)],
  });
}

/** The final worlds (every ConfigMap's name, revision and value) a bounded search of `base` reaches. */
async function worldsOf(base: Scenario, bounded: BoundedOptions): Promise<{ worlds: Set<string>; schedules: number; pruned: number; placements: number }> {
  const worlds = new Set<string>();
  const record = eventually("(test) the final world is recorded", (view) => {
    worlds.add(JSON.stringify(view.list({ apiVersion: "v1", kind: "ConfigMap", namespace: ns }).map((o) => [o.metadata.name, o.metadata.resourceVersion, valueOf(o)])));
    return true;
  });
  const recording: Scenario = { ...base, properties: (ctx) => [...base.properties(ctx), record] };
  const options: ExploreOptions = { scenarioPath, variant: "all", params: {}, runs: Number.POSITIVE_INFINITY, seed: 1, workers: 1, strategy: "bounded", first: false, bounded };
  const result = await explore(recording, options, () => 0);
  assert.equal(result.bounded?.complete, true, "the search completes");
  return { worlds, schedules: result.bounded!.schedules, pruned: result.bounded!.pruned, placements: result.bounded!.placements };
}

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.tuple(fc.constant("read" as const), fc.constantFrom<Cell>("a", "b")),
  fc.tuple(fc.constant("write" as const), fc.constantFrom<Cell>("a", "b")),
  fc.tuple(fc.constant("sleep" as const), fc.constantFrom(5, 10)),
  fc.tuple(fc.constant("list" as const)),
  fc.tuple(fc.constant("watch" as const), fc.integer({ min: 1, max: 3 })),
);
const programsArb = fc.array(fc.array(opArb, { minLength: 1, maxLength: 3 }), { minLength: 2, maxLength: 4 });

/** What a reduced and a plain search of `programs` reach at K (and F), and the worlds the reduced one missed. */
async function compare(programs: readonly Op[][], preemptions: number, readyOrder: BoundedOptions["readyOrder"] = "origin", faultPoints = 0) {
  const base = programScenario(programs, faultPoints > 0);
  const reduced = await worldsOf(base, { preemptions, faultPoints, reduction: true, readyOrder });
  const plain = await worldsOf(base, { preemptions, faultPoints, reduction: false });
  return { reduced, plain, missed: [...plain.worlds].filter((w) => !reduced.worlds.has(w)) };
}

/**
 * Programs on which the reduction, counting preemptions in the kernel's ready order, missed a world of the plain
 * search (found by comparing the two on generated programs, then shrunk): cutting a schedule there relied on a
 * reordering that took one preemption more than the bound left.
 */
const boundGaps: Array<{ programs: Op[][]; preemptions: number }> = [
  {
    programs: [
      [["read", "a"], ["write", "b"]],
      [["sleep", 5], ["read", "a"], ["read", "b"]],
      [["write", "a"], ["write", "b"], ["write", "b"]],
      [["read", "b"], ["read", "b"]],
    ],
    preemptions: 1,
  },
  {
    programs: [
      [["list"], ["write", "a"], ["watch", 1]],
      [["list"], ["sleep", 5], ["sleep", 5]],
      [["write", "a"], ["list"], ["sleep", 5]],
    ],
    preemptions: 2,
  },
];

test("where ready order made the reduction lose a world under the bound, origin order loses none", async () => {
  for (const [i, { programs, preemptions }] of boundGaps.entries()) {
    const { reduced, plain, missed } = await compare(programs, preemptions);
    assert.deepEqual(missed, [], `gap ${i}: every final world of the plain search at K=${preemptions}`);
    assert.deepEqual([...reduced.worlds].sort(), [...plain.worlds].sort());
    assert.ok(reduced.pruned > 0 && reduced.schedules < plain.schedules, `gap ${i}: the reduction cut schedules (${reduced.schedules} of ${plain.schedules} ran)`);
    // The canary: the same reduction counting in the kernel's ready order misses a world, so this comparison can fail.
    const enqueued = await compare(programs, preemptions, "enqueued");
    assert.ok(enqueued.missed.length > 0, `gap ${i}: in the kernel's order the reduction misses a world`);
  }
});

test("on generated programs, the reduced search reaches every final world of the plain one at K=1 and K=2", async () => {
  let cut = 0;
  await fc.assert(
    fc.asyncProperty(programsArb, fc.constantFrom(1, 2), async (programs, preemptions) => {
      const { reduced, plain, missed } = await compare(programs, preemptions);
      assert.deepEqual(missed, [], `worlds the reduced search missed at K=${preemptions}`);
      assert.ok([...reduced.worlds].every((w) => plain.worlds.has(w)), "every world the reduced search reaches is one the plain search reaches");
      cut += reduced.pruned;
    }),
    { seed: 2312, numRuns: 60 },
  );
  assert.ok(cut > 0, "the reduction cut schedules on some of the programs");
});

test("with one planned fault per run (crashes, stale reads, lost responses...), the reduced search reaches every world of the plain one", async () => {
  let placements = 0;
  await fc.assert(
    fc.asyncProperty(programsArb, async (programs) => {
      const { reduced, plain, missed } = await compare(programs, 1, "origin", 1);
      assert.deepEqual(missed, [], "worlds the reduced search missed at K=1, F=1");
      assert.deepEqual([...reduced.worlds].sort(), [...plain.worlds].sort());
      placements += reduced.placements;
    }),
    { seed: 2313, numRuns: 12 },
  );
  assert.ok(placements > 12, "the programs had fault points to place");
});

test("along the FIFO run, origin order is the kernel's ready order, and keeping origins changes no trace", async () => {
  const examples = ["ensemble", "skyhook-config", "image-refresh", "zoo/stale-update", "zoo/fighting-controllers", "zoo/unobserved-delete"];
  for (const name of examples) {
    const loaded = await loadScenario(fileURLToPath(new URL(`../../examples/${name}/scenario.ts`, import.meta.url)));
    const variant = Object.keys(loaded.variants)[0]!;
    const spec = { variant, workload: Object.keys(loaded.workloads)[0]!, params: loaded.params, seed: 7 };
    let compared = 0;
    const checking: Strategy = {
      name: "fifo",
      ordersByOrigin: true,
      next(ready, _rng, step) {
        for (let i = 1; i < ready.length; i++) {
          assert.ok(compareOrigins(ready[i - 1]!.origin!, ready[i]!.origin!) < 0, `${name}: step ${step}: ready steps ${i - 1} and ${i} are in origin order`);
          compared++;
        }
        return 0;
      },
    };
    const plain = await runScenario(loaded, { ...spec, strategy: fifoStrategy() });
    const withOrigins = await runScenario(loaded, { ...spec, strategy: checking });
    assert.equal(withOrigins.traceHash, plain.traceHash, `${name}: the same trace with origins kept`);
    assert.ok(compared > 0, `${name}: steps met with more than one ready`);
  }
});
