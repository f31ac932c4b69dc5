// Reports end with the final world: the scenario's summary line, or, without one, the objects the failing property
// read (its predicate run once more through a recording view), each on one bounded line.
import { test } from "node:test";
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import type { KubeObject } from "../../src/api/object.ts";
import { always, eventually } from "../../src/check/properties.ts";
import type { WorldView } from "../../src/sim/types.ts";
import { finalObjectCharsMax, finalObjectsMax, finalWorld } from "../../src/explore/final-world.ts";
import { formatFinding } from "../../src/report/text.ts";
import { runScenario } from "../../src/explore/run.ts";
import { loadScenario } from "../../src/explore/load.ts";
import { explore } from "../../src/explore/explore.ts";

function configMap(name: string, data: Record<string, string>): KubeObject {
  return { apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace: "lab", generation: 1 }, data } as KubeObject;
}

function viewOf(objects: KubeObject[]): WorldView {
  return {
    revision: 9,
    now: () => 0,
    get: (ref) => objects.find((o) => o.kind === ref.kind && o.metadata.name === ref.name),
    list: (options) => objects.filter((o) => o.kind === options.kind),
    external: <T>() => ({ booted: "v2" }) as T,
  };
}

test("without a summary, the objects the failing property read, absent ones and external cells included", () => {
  const objects = [configMap("a", { x: "1" }), configMap("b", { x: "y".repeat(500) })];
  const property = eventually("a and b agree", (view) => {
    view.list({ apiVersion: "v1", kind: "ConfigMap" });
    view.get({ apiVersion: "v1", kind: "Secret", namespace: "lab", name: "missing" });
    view.external("host/n1");
    return false;
  });
  const lines = finalWorld(viewOf(objects), undefined, property);
  assert.equal(lines[0], 'objects "a and b agree" read:');
  assert.equal(lines[1], '  ConfigMap lab/a generation 1 data {"x":"1"}');
  assert.ok(lines[2]!.startsWith("  ConfigMap lab/b generation 1 data {") && lines[2]!.endsWith("...") && lines[2]!.length === finalObjectCharsMax + 2);
  assert.equal(lines[3], '  external host/n1: {"booted":"v2"}');
  assert.equal(lines[4], "  Secret lab/missing: absent");
});

test("a summary wins; a throwing summary or predicate is described, and many objects are cut to a bound", () => {
  const many = Array.from({ length: finalObjectsMax + 5 }, (_, i) => configMap(`c${i}`, {}));
  const property = always("all", (view) => view.list({ apiVersion: "v1", kind: "ConfigMap" }).length < 0);
  assert.deepEqual(finalWorld(viewOf(many), (view) => `children ${view.list({ apiVersion: "v1", kind: "ConfigMap" }).length}`, property), [`summary: children ${many.length}`]);
  assert.match(finalWorld(viewOf(many), () => { throw new Error("no"); }, property)[0]!, /^summary: the scenario's summary threw: no \(at .*final-world\.test\.ts:\d+:\d+\)$/);
  const lines = finalWorld(viewOf(many), undefined, property);
  assert.equal(lines.length, 1 + finalObjectsMax + 1);
  assert.equal(lines.at(-1), "  ... 5 more");
  assert.deepEqual(finalWorld(viewOf(many), undefined, undefined), []);
});

test("a finding's text report of the Ensemble's delta bug ends with the scenario's summary of the final world", async () => {
  const scenarioPath = fileURLToPath(new URL("../../examples/ensemble/scenario.ts", import.meta.url));
  const scenario = await loadScenario(scenarioPath);
  const result = await explore(scenario, { scenarioPath, variant: "delta", params: scenario.params, runs: 200, seed: 1, workers: 1, strategy: "mix", first: true }, () => 0);
  const outcome = result.findings[0]!.minimal.outcome;
  assert.match(outcome.finalWorld?.[0] ?? "", /^summary: children \d+ of spec\.voices \d+, status\.readyVoices \d+$/);
  const text = formatFinding({ scenario: "ensemble", variant: "delta", workload: "w", verdict: outcome.verdict, counters: outcome.counters, trace: outcome.trace, faults: 0, choices: 0, replayPath: "r.json", finalWorld: outcome.finalWorld! });
  assert.match(text, /replay: npx settle replay r\.json\n\n {2}final world:\n {4}summary: children \d+ of spec\.voices \d+, status\.readyVoices \d+\n$/);
  const run = result.findings[0]!.run;
  const hashOnly = await runScenario(scenario, { variant: "delta", workload: run.workload, params: scenario.params, seed: run.seed, choices: run.choices, faults: run.faults });
  assert.notEqual(hashOnly.verdict.kind, "ok");
  assert.equal(hashOnly.finalWorld, undefined, "runs without a full trace (the explorer's many) do not work it out");
});
