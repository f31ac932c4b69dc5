// Which systematic point classes find bugs: for every buggy variant of the bundled examples and the zoo, each
// point class's points are run (up to a cap per class) and counted as finding the bug or not. This is the
// measurement behind the order of `pointClasses` (src/explore/plan.ts): likeliest to find first. Per buggy variant,
// the first point in plan order that finds the bug (among those run), its class, and the mix run that covers it
// (the mix strategy gives point p to run 2p, so it is the (2p+1)-th run after the reference runs).
// Runnable alone: `node --conditions=settle-source --import tsx bench/points.ts`.
import { fileURLToPath } from "node:url";
import { join } from "node:path";
import { findExampleDirs, loadScenario, resolveScenarioPath } from "../src/explore/load.ts";
import { referencePlan } from "../src/explore/runs.ts";
import { pointClasses, type PointClass } from "../src/explore/plan.ts";
import { runScenario } from "../src/explore/run.ts";
import { fifoStrategy } from "../src/sim/strategy.ts";
import { isFinding } from "../src/check/verdict.ts";

const examples = fileURLToPath(new URL("../examples", import.meta.url));
/** Points run per class and scenario: enough to see a class work, bounded so the section ends in minutes. */
const perClassMax = 25;

export async function benchPoints(): Promise<Record<string, string | number>> {
  const dirs = [...findExampleDirs(examples), ...findExampleDirs(join(examples, "zoo"))].filter((d) => !d.endsWith("bootc-rollout"));
  const found = new Map<PointClass, { points: number; finding: number; scenarios: Set<string>; first: number }>();
  for (const cls of pointClasses) found.set(cls, { points: 0, finding: 0, scenarios: new Set(), first: 0 });
  let scenarios = 0;
  let withoutFault = 0;
  const perVariant: Record<string, string> = {};
  for (const dir of dirs) {
    const scenario = await loadScenario(resolveScenarioPath(dir));
    for (const [variant, info] of Object.entries(scenario.variants)) {
      if (info.expect !== "finding") continue;
      const { points, references } = await referencePlan(scenario, { variant, params: scenario.params, seed: 1 });
      // A bug the fault-free reference run already shows says nothing about which faults find bugs.
      if (references.length > 0) {
        withoutFault++;
        continue;
      }
      scenarios++;
      const ran = new Map<PointClass, number>();
      let firstClass: PointClass | undefined;
      let firstPoint = -1;
      for (const [index, point] of points.entries()) {
        const cls = point.pointClass;
        const count = ran.get(cls) ?? 0;
        if (count >= perClassMax) continue;
        ran.set(cls, count + 1);
        const outcome = await runScenario(scenario, { variant, workload: point.workload, params: scenario.params, seed: 1, strategy: fifoStrategy(), faults: [point.fault] });
        const entry = found.get(cls)!;
        entry.points++;
        if (!isFinding(outcome.verdict)) continue;
        entry.finding++;
        entry.scenarios.add(`${scenario.name}/${variant}`);
        if (firstClass === undefined) {
          firstClass = cls;
          firstPoint = index;
        }
      }
      if (firstClass !== undefined) found.get(firstClass)!.first++;
      const where = firstClass === undefined ? "no point run finds it" : `${firstClass}, point ${firstPoint + 1} of ${points.length}, mix run ${2 * firstPoint + 1}`;
      perVariant[`${scenario.name}/${variant}: first finding point (class, point, mix run)`] = where;
    }
  }
  const figures: Record<string, string | number> = {
    "buggy variants found by the fault-free reference run (left out)": withoutFault,
    "buggy variants measured": scenarios,
    "points run per class and variant, at most": perClassMax,
  };
  for (const cls of pointClasses) {
    const e = found.get(cls)!;
    figures[`${cls}: variants found / first class to find / points finding / points run`] = `${e.scenarios.size} / ${e.first} / ${e.finding} / ${e.points}`;
  }
  return { ...figures, ...perVariant };
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(await benchPoints());
