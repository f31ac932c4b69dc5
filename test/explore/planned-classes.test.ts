// The point classes issue 33 added to the systematic plan: per-kind time travel (a restart whose relist of one kind
// is served from before an earlier write while the other kinds list fresh) and the fault kinds a scenario declares,
// planned where the reference run reaches them. Both must add to the plan without moving a point planned before.
import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { defineActor, defineFaultKind } from "../../src/sim/index.ts";
import { explore } from "../../src/explore/explore.ts";
import { referencePlan } from "../../src/explore/runs.ts";
import { loadScenario } from "../../src/explore/load.ts";
import { pointClasses } from "../../src/explore/plan.ts";
import { scenario } from "../../src/explore/scenario.ts";
import { runScenario } from "../../src/explore/run.ts";
import { fifoStrategy } from "../../src/sim/strategy.ts";

const repo = fileURLToPath(new URL("../../", import.meta.url));
const recreatedParent = join(repo, "examples", "zoo", "recreated-parent", "scenario.ts");

test("per-kind time travel points come after every other class, cheapest first, one per write and listed kind", async () => {
  const zoo = await loadScenario(recreatedParent);
  const { points } = await referencePlan(zoo, { variant: "buggy", params: zoo.params, seed: 1 });
  const classes = points.map((p) => p.pointClass);
  const first = classes.indexOf("crash-kind-time-travel");
  assert.ok(first > 0, classes.join(", "));
  const after = classes.indexOf("watch-kind-time-travel");
  assert.ok(after > first, classes.join(", "));
  assert.ok(classes.slice(first, after).every((c) => c === "crash-kind-time-travel"), "the class is planned after every earlier one, so no earlier point moves");
  const travels = points.slice(first, after);
  for (const { fault } of travels) {
    assert.equal(fault.kind, "crash");
    assert.equal(fault.target, "shard-controller");
    assert.ok(fault.relistKind === "Shard" || fault.relistKind === "ConfigMap", String(fault.relistKind));
  }
  // Cheapest first: each relist hides no more revisions (crash revision minus relist revision) than the next.
  const reference = await runScenario(zoo, { variant: "buggy", workload: travels[0]!.workload, params: zoo.params, seed: 1, strategy: fifoStrategy(), traceMode: "full" });
  const revisionAt = (step: number) => reference.trace.find((r) => r.step === step && r.kind === "request")!.revisionAfter;
  const hidden = travels.map(({ fault }) => revisionAt(fault.atStep - 1) - Number(fault.relistAtRevision));
  assert.ok(hidden.every((h) => h > 0), String(hidden));
  assert.deepEqual(hidden, [...hidden].sort((a, b) => a - b));
  // The user's delete of the Shard is one of the writes the Shard relist is served from before, and that point
  // alone (one fault, FIFO schedule) pairs the old Shard with the new Shard's children; the fixed form survives it.
  const beforeDelete = travels.find((p) => p.fault.relistKind === "Shard" && p.label.includes("before user's delete Shard zoo/orders"));
  assert.ok(beforeDelete !== undefined, travels.map((p) => p.label).join("\n"));
  const found = await runScenario(zoo, { variant: "buggy", workload: beforeDelete.workload, params: zoo.params, seed: 1, strategy: fifoStrategy(), faults: [beforeDelete.fault] });
  assert.equal(`${found.verdict.kind}:${found.verdict.property}`, "safety-violation:a child of a live Shard is never deleted");
  const fixed = await runScenario(zoo, { variant: "fixed", workload: beforeDelete.workload, params: zoo.params, seed: 1, strategy: fifoStrategy(), faults: [beforeDelete.fault] });
  assert.equal(fixed.verdict.kind, "ok", fixed.verdict.detail);
});

test("a whole-actor time travel point (no kind) is planned as before the per-kind class existed", async () => {
  const zoo = await loadScenario(recreatedParent);
  const { points } = await referencePlan(zoo, { variant: "buggy", params: zoo.params, seed: 1 });
  const whole = points.filter((p) => p.pointClass === "crash-time-travel");
  assert.ok(whole.length > 0);
  assert.ok(whole.every((p) => p.fault.relistKind === undefined && typeof p.fault.relistAtRevision === "number"));
});

test("per-kind time travel after a failed watch comes last, cheapest first, and one such point alone finds recreated-parent", async () => {
  const zoo = await loadScenario(recreatedParent);
  const { points } = await referencePlan(zoo, { variant: "buggy", params: zoo.params, seed: 1 });
  const classes = points.map((p) => p.pointClass);
  const first = classes.indexOf("watch-kind-time-travel");
  assert.ok(first > classes.lastIndexOf("crash-kind-time-travel"), classes.join(", "));
  // Only the expired watches (a class added later, on the same terms) come after it.
  const end = classes.indexOf("expire-watch");
  assert.ok(end > first, classes.join(", "));
  assert.ok(classes.slice(first, end).every((c) => c === "watch-kind-time-travel"), "the class is planned after every earlier one, so no earlier point moves");
  // After them only the wall clocks (issue 47), added later still, on the same terms.
  const clocks = classes.findIndex((c) => c === "clock-skew" || c === "clock-step");
  assert.ok(clocks > end, classes.join(", "));
  assert.ok(classes.slice(end, clocks).every((c) => c === "expire-watch"));
  assert.ok(classes.slice(clocks).every((c) => c === "clock-skew" || c === "clock-step"));
  assert.deepEqual(pointClasses.slice(-4), ["watch-kind-time-travel", "expire-watch", "clock-skew", "clock-step"]);
  const travels = points.slice(first, end);
  const reference = await runScenario(zoo, { variant: "buggy", workload: travels[0]!.workload, params: zoo.params, seed: 1, strategy: fifoStrategy(), traceMode: "full" });
  const watchKind = new Map(reference.trace.filter((r) => r.verb === "watch" && r.kind === "request").map((r) => [r.watchId!, r.object!.kind]));
  for (const { fault } of travels) {
    assert.equal(fault.kind, "close-watch");
    assert.ok(fault.target.startsWith("shard-controller/"), fault.target);
    assert.ok(watchKind.get(fault.target) === "Shard" || watchKind.get(fault.target) === "ConfigMap", fault.target);
    assert.ok(typeof fault.relistAtRevision === "number" && fault.relistAtRevision > 0);
  }
  // Cheapest first: each relist hides no more revisions (the store's revision when the watch fails, minus the relist's) than the next.
  const revisionAt = (step: number) => reference.trace.find((r) => r.step === step)!.revisionAfter;
  const hidden = travels.map(({ fault }) => revisionAt(fault.atStep - 1) - Number(fault.relistAtRevision));
  assert.ok(hidden.every((h) => h > 0), String(hidden));
  assert.deepEqual(hidden, [...hidden].sort((a, b) => a - b));
  // The Shard watch failing after the new Shard's ADDED, its relist served from before the user's delete: the
  // controller holds the old Shard's uid while it sees the new Shard's children. The fixed form survives it.
  const beforeDelete = travels.find((p) => watchKind.get(p.fault.target) === "Shard" && p.label.includes("before user's delete Shard zoo/orders"));
  assert.ok(beforeDelete !== undefined, travels.map((p) => p.label).join("\n"));
  const found = await runScenario(zoo, { variant: "buggy", workload: beforeDelete.workload, params: zoo.params, seed: 1, strategy: fifoStrategy(), faults: [beforeDelete.fault], traceMode: "full" });
  assert.equal(`${found.verdict.kind}:${found.verdict.property}`, "safety-violation:a child of a live Shard is never deleted");
  assert.ok(found.trace.some((r) => r.kind === "fault" && r.result.startsWith("failed with 500, next cached read of Shard")), "the watch failed and armed the Shard relist");
  const fixed = await runScenario(zoo, { variant: "fixed", workload: beforeDelete.workload, params: zoo.params, seed: 1, strategy: fifoStrategy(), faults: [beforeDelete.fault] });
  assert.equal(fixed.verdict.kind, "ok", fixed.verdict.detail);
});

/** Two workloads; an actor that reads a registry cell three times and writes a cache cell; one declared kind. */
const outside = scenario({
  name: "declared-places",
  variants: { only: { expect: "ok" } },
  externals: () => ({ registry: { digest: "a" }, cache: [] as string[] }),
  actors: () => [
    defineActor({
      name: "puller",
      async start(ctx) {
        for (let i = 0; i < 3; i++) {
          await ctx.clock.sleep(1000);
          const { digest } = await ctx.external<{ digest: string }>("registry").read();
          await ctx.external<string[]>("cache").write((c) => [...c, digest]);
        }
      },
    }),
  ],
  workloads: {
    first: async (ctx) => ctx.clock.sleep(10),
    second: async (ctx) => ctx.clock.sleep(20),
  },
  faults: { chance: [1, 30], counts: { pause: 1, "registry-down": 1 } },
  faultKinds: [
    defineFaultKind({
      name: "registry-down",
      targets: () => ["registry"],
      apply: () => "the next registry read fails",
    }),
  ],
  properties: () => [],
});

test("a declared fault kind is planned after each actor's first touch of each external cell, every workload's in turn, ahead of the built-in classes", async () => {
  const { points } = await referencePlan(outside, { variant: "only", params: {}, seed: 1 });
  const declared = points.filter((p) => p.pointClass === "declared");
  assert.deepEqual(
    declared.map((p) => `${p.workload}: ${p.label}`),
    ["first: registry-down registry after puller read registry", "second: registry-down registry after puller read registry", "first: registry-down registry after puller write cache", "second: registry-down registry after puller write cache"],
  );
  assert.deepEqual(points.slice(0, declared.length), declared, "declared points lead the plan");
  assert.ok(points.length > declared.length, "the pause points follow");
  assert.equal(pointClasses[0], "declared");
  for (const point of declared) assert.deepEqual(Object.keys(point.fault).sort(), ["atStep", "kind", "target"]);
});

test("image-refresh b1, whose bug needs a failed registry read, is found by a planned declared-kind point within the first runs", async () => {
  const path = join(repo, "examples", "image-refresh", "scenario.ts");
  const imageRefresh = await loadScenario(path);
  const result = await explore(imageRefresh, { scenarioPath: path, variant: "b1", params: imageRefresh.params, runs: 8, seed: 1, workers: 1, strategy: "mix", first: true }, () => 0);
  assert.equal(result.findings.length, 1, `after ${result.runs} runs`);
  const { run } = result.findings[0]!;
  assert.equal(run.strategy, "systematic");
  assert.equal(result.points[run.point!]!.fault.kind, "registry-read-fail");
});

test("the bounded search places per-kind time travel like any planned fault: K=0, F=2 finds recreated-parent", async () => {
  const zoo = await loadScenario(recreatedParent);
  const options = { scenarioPath: recreatedParent, variant: "buggy", params: zoo.params, runs: Number.POSITIVE_INFINITY, seed: 1, workers: 1, strategy: "bounded" as const, first: true, bounded: { preemptions: 0, faultPoints: 2 } };
  const result = await explore(zoo, options, () => 0);
  assert.deepEqual(result.findings.map((f) => f.key), ["safety-violation:a child of a live Shard is never deleted"]);
  const faults = result.findings[0]!.run.faults;
  assert.ok(faults.some((f) => f.kind === "crash" && f.relistKind === "Shard"), JSON.stringify(faults));
});
