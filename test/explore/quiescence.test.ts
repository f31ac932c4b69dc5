import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createSimulation, defineActor, fifoStrategy } from "../../src/sim/index.ts";
import { always } from "../../src/check/properties.ts";
import { runScenario } from "../../src/explore/run.ts";
import { scenario } from "../../src/explore/scenario.ts";
import { writeReplayFile } from "../../src/explore/findings.ts";
import { formatTimeline } from "../../src/report/text.ts";
import type { ActorContext } from "../../src/sim/types.ts";

const namespace = { apiVersion: "v1", kind: "Namespace", metadata: { name: "ns" } };
const configMap = (name: string, value: string) => ({ apiVersion: "v1", kind: "ConfigMap", metadata: { namespace: "ns", name }, data: { value } });

/** A world where one actor writes `kind` every 5 s forever (a ticker) and the workload does nothing. */
function ticker(kind: "ConfigMap" | "Lease") {
  const object =
    kind === "Lease"
      ? { apiVersion: "coordination.k8s.io/v1", kind: "Lease", metadata: { namespace: "ns", name: "tick" }, spec: { holderIdentity: "a", renewTime: "x" } }
      : configMap("tick", "0");
  return scenario({
    name: `ticker-${kind.toLowerCase()}`,
    variants: { only: { expect: "ok" } },
    faults: "none",
    setup: () => [namespace, object],
    actors: () => [
      defineActor({
        name: "ticker",
        async start(ctx: ActorContext) {
          for (let i = 1; ; i++) {
            await ctx.clock.sleep(5000);
            const current = await ctx.client.get({ apiVersion: object.apiVersion, kind, namespace: "ns", name: "tick" });
            await ctx.client.update({ object: { ...current, metadata: { ...current.metadata, annotations: { tick: String(i) } } } });
          }
        },
      }),
    ],
    workloads: { idle: async () => {} },
    properties: () => [always("nothing", () => true)],
    timing: { faultPhaseMs: 10_000, horizonMs: 120_000, settleWindowMs: 30_000 },
  });
}

test("a controller that writes every 5 s forever is no-convergence, and the verdict names what it kept writing", async () => {
  const outcome = await runScenario(ticker("ConfigMap"), { variant: "only", workload: "idle", params: {}, seed: 1, strategy: fifoStrategy() });
  assert.equal(outcome.verdict.kind, "no-convergence");
  assert.match(outcome.verdict.detail, /ticker kept changing ConfigMap ns\/tick \(6 of 6 changes in the last 30000 ms\)/);
});

test("a Lease renewed forever is a heartbeat: the world still settles", async () => {
  const outcome = await runScenario(ticker("Lease"), { variant: "only", workload: "idle", params: {}, seed: 1, strategy: fifoStrategy() });
  assert.equal(outcome.verdict.kind, "ok", outcome.verdict.detail);
});

test("under replay format 1 the same ticker was judged settled: old files keep their old semantics", async () => {
  const outcome = await runScenario(ticker("ConfigMap"), { variant: "only", workload: "idle", params: {}, seed: 1, strategy: fifoStrategy(), semantics: 1 });
  assert.equal(outcome.verdict.kind, "ok");
});

test("a tight retry loop moves the virtual clock: every request takes a seeded latency", async () => {
  const sim = createSimulation({ seed: 4, requestLatencyMs: [1, 20] });
  sim.store.create(namespace);
  let attempts = 0;
  sim.addActor(
    defineActor({
      name: "spinner",
      async start(ctx) {
        // Polls for an object nobody creates, with no sleep: on a real cluster each poll takes a round trip.
        for (; attempts < 500; attempts++) {
          try {
            await ctx.client.get({ apiVersion: "v1", kind: "ConfigMap", namespace: "ns", name: "never" });
          } catch {
            // NotFound: poll again.
          }
        }
      },
    }),
  );
  const run = await sim.run({ strategy: fifoStrategy(), maxSteps: 5000 });
  assert.equal(run.status, "idle");
  const elapsedMs = run.timeMs - run.trace[0]!.timeMs;
  assert.ok(elapsedMs >= 500 && elapsedMs <= 500 * 20, `500 polls took ${elapsedMs} virtual ms`);
});

test("the same seed gives the same latencies: two runs have the same trace hash", async () => {
  const hashes: string[] = [];
  for (let i = 0; i < 2; i++) {
    const sim = createSimulation({ seed: 11, requestLatencyMs: [1, 20] });
    sim.store.create(namespace);
    sim.addActor(
      defineActor({
        name: "writer",
        async start(ctx) {
          for (let n = 0; n < 20; n++) await ctx.client.create({ object: configMap(`c${n}`, "v") });
        },
      }),
    );
    hashes.push((await sim.run()).traceHash);
  }
  assert.equal(hashes[0], hashes[1]);
});

test("writes to external state are on the text timeline", async () => {
  const sim = createSimulation({ seed: 1 });
  sim.defineExternal("host", { booted: "v1" });
  sim.addActor(defineActor({ name: "daemon", start: (ctx) => ctx.external("host").write({ booted: "v2" }) }));
  const run = await sim.run({ strategy: fifoStrategy() });
  assert.ok(formatTimeline(run.trace).some((line) => /daemon\s+external write host/.test(line)));
});

test("replay files go under .settle/findings/<scenario name>, whatever the file is called", () => {
  const cwd = mkdtempSync(join(tmpdir(), "settle-findings-"));
  const file = { version: 2, scenario: "specs/h1.ts", variant: "buggy", workload: "w", params: {}, seed: 1, choices: [], faults: [], verdict: "silent-divergence" as const, property: "p", traceHash: "x", steps: 1 };
  const path = writeReplayFile(cwd, file, [], "widget-operator");
  assert.match(path, /^\.settle\/findings\/widget-operator\/buggy-[0-9a-f]{10}\.json$/);
  assert.ok(existsSync(join(cwd, path)));
});
