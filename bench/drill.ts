// Drill figures: kill points per minute, end to end (reference run included), for the Ensemble operator written
// with plain @kubernetes/client-node (a Node process) and for the Python operator on python3-kubernetes (through
// its YAML scenario), sequentially and with points drilled in parallel (each with its own server and process).
// SETTLE_BENCH_DRILL_PARALLEL (default 4, as the figures before the drill learned its quiet window) sets the parallel
// rows; `settle drill` itself defaults to the machine's cores. The quiet window is the drill's own (learned).
import { fileURLToPath } from "node:url";
import { drill, type DrillOptions } from "../src/drill/drill.ts";
import { loadYamlScenario } from "../src/scenario-yaml/index.ts";
import { yamlDrillTarget } from "../src/drill/yaml-target.ts";
import ensemble from "../examples/ensemble/scenario.ts";

async function perMinute(label: string, options: DrillOptions): Promise<Record<string, string | number>> {
  const start = performance.now();
  const result = await drill(options);
  const wallS = (performance.now() - start) / 1000;
  return {
    [`${label}: kill points`]: result.runs.length,
    [`${label}: wall s`]: wallS.toFixed(1),
    [`${label}: kill points per minute`]: ((result.runs.length * 60) / wallS).toFixed(1),
    [`${label}: points failed`]: result.runs.filter((r) => r.verdict !== "ok").length,
    [`${label}: quiet window ms`]: result.runs[0]?.timings.quietWindowMs ?? "-",
  };
}

export async function benchDrill(): Promise<Record<string, string | number>> {
  const plain = fileURLToPath(new URL("../examples/ensemble/plain-operator.mjs", import.meta.url));
  const ctx = { variant: "level", workload: "scale-up", params: { ...ensemble.params, userDelayMs: 200 } };
  const plainOptions: DrillOptions = { scenario: ensemble, ctx, command: [process.execPath, plain, "--slow-reconcile-ms=100"] };
  const python = yamlDrillTarget(loadYamlScenario(fileURLToPath(new URL("../examples/python-operator/scenario.yaml", import.meta.url))), "level");
  const concurrency = Number(process.env.SETTLE_BENCH_DRILL_PARALLEL ?? 4);
  return {
    ...(await perMinute("plain client-node operator, 1 at a time", plainOptions)),
    ...(await perMinute(`plain client-node operator, ${concurrency} at a time`, { ...plainOptions, concurrency })),
    ...(await perMinute(`python3-kubernetes operator, ${concurrency} at a time`, { target: python, concurrency })),
  };
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(await benchDrill());
