// Drill figures: kill points per minute, and the end-to-end time of the full sweep of the Ensemble operator
// (level-triggered, as a real Node process) with the drill's defaults.
import { fileURLToPath } from "node:url";
import { drill } from "../src/drill/drill.ts";
import ensemble from "../examples/ensemble/scenario.ts";

export async function benchDrill(): Promise<Record<string, string | number>> {
  const operator = fileURLToPath(new URL("../examples/ensemble/operator.ts", import.meta.url));
  const ctx = { variant: "level", workload: "scale-up", params: { ...ensemble.params, userDelayMs: 200 } };
  const start = performance.now();
  const result = await drill({ scenario: ensemble, ctx, command: [process.execPath, "--import", "tsx", operator, "--slow-reconcile=100ms"] });
  const wallS = (performance.now() - start) / 1000;
  return {
    "ensemble level sweep: kill points": result.runs.length,
    "ensemble level sweep: wall s (incl. reference run, quiet 2000 ms)": wallS.toFixed(1),
    "kill points per minute": ((result.runs.length * 60) / wallS).toFixed(1),
    "kill points that failed": result.runs.filter((r) => r.verdict !== "ok").length,
  };
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(await benchDrill());
