// A scenario's setup is built once per worker and restored from a snapshot in later runs: the world, and so the
// whole run, must be the same as when setup runs again.
import { test } from "node:test";
import assert from "node:assert/strict";
import ensembleScenario from "../../examples/ensemble/scenario.ts";
import { runScenario } from "../../src/explore/run.ts";
import { setupOnce } from "../../src/explore/setup-cache.ts";
import type { Scenario } from "../../src/explore/scenario.ts";
import { createStore } from "../../src/store/index.ts";
import { randomStrategy } from "../../src/sim/strategy.ts";

const ensemble = ensembleScenario as unknown as Scenario;

/** A copy of the scenario (its own cache entry) whose setup counts its calls. */
function counted(): { scenario: Scenario; calls: () => number } {
  let calls = 0;
  const setup = ensemble.setup!;
  const scenario: Scenario = { ...ensemble, setup: (ctx, world) => (calls++, setup(ctx, world)) };
  return { scenario, calls: () => calls };
}

test("a run whose setup comes from the worker's snapshot has the trace of a run that built it", async () => {
  const spec = { variant: "level", workload: "scale-up", params: ensemble.params, seed: 11, drawFaults: true, traceMode: "full" as const };
  const cached = counted();
  const built = await runScenario(cached.scenario, { ...spec, strategy: randomStrategy() });
  const restored = await runScenario(cached.scenario, { ...spec, strategy: randomStrategy() });
  assert.equal(cached.calls(), 1, "the second run restored the snapshot instead of calling setup");
  const fresh = counted();
  const again = await runScenario(fresh.scenario, { ...spec, strategy: randomStrategy() });
  assert.equal(fresh.calls(), 1);
  assert.equal(restored.traceHash, built.traceHash);
  assert.equal(again.traceHash, built.traceHash);
  assert.deepEqual(restored.verdict, built.verdict);
  assert.ok(built.steps > 10);
});

test("a restored store holds the same objects, revision and next uid as one built by setup", () => {
  const { scenario } = counted();
  const ctx = { variant: "level", workload: "scale-up", params: ensemble.params };
  const world = (store: ReturnType<typeof createStore>) => ({
    create: <T,>(o: T) => store.create(structuredClone(o) as never) as T,
    updateStatus: <T,>(o: T) => store.updateStatus(structuredClone(o) as never) as T,
  });
  const stores = [createStore(), createStore(), createStore()];
  for (const store of stores) setupOnce(scenario, ctx, store, () => void (scenario.setup?.(ctx, world(store) as never) ?? []).forEach((o) => store.create(o)));
  const dump = (store: ReturnType<typeof createStore>) => ({
    revision: store.revision,
    objects: store.resources().flatMap((r) => store.list({ apiVersion: r.group === "" ? r.version : `${r.group}/${r.version}`, kind: r.kind }).items),
    next: store.create({ apiVersion: "v1", kind: "ConfigMap", metadata: { namespace: "default", generateName: "x-" } }).metadata,
  });
  const first = dump(stores[0]!);
  assert.ok(first.objects.length > 5);
  assert.deepEqual(dump(stores[1]!), first);
  assert.deepEqual(dump(stores[2]!), first);
});
