// Scale: one fault-free rollout v0 -> v1 of a 1,000-node and a 5,000-node bootc pool (maxUnavailable 10%,
// safety checked once per virtual second): wall time, steps and peak RSS of each, and how the time grows with
// the fleet (the ratio of CPU seconds per node, 5,000 against 1,000: 1 is linear), with the share of V8's garbage
// collection and the machine's load (wall time on a shared machine follows the load; CPU time does not).
// Each rollout runs the compiled package (dist/, what `npx settle` runs; `npm run bench` builds it first) in a
// child process of its own (`bench/scale-run.mjs`), so that no TypeScript loader's overhead is measured and the
// 5,000-node rollout's peak RSS and GC are not the 1,000-node one's leftovers. The rollout runs on the child's main
// thread with V8's default heap, as `settle explore --runs 1` runs a single run (explore workers get a larger young
// generation; `node bench/scale-run.mjs <nodes> <youngGenerationMb>` measures a worker). Benchmarks may read real time.
// Runnable alone after `npm run build`: `node --conditions=settle-source --import tsx bench/scale.ts [nodes...]`.
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { availableParallelism, loadavg } from "node:os";
import { fileURLToPath } from "node:url";

const runnerPath = fileURLToPath(new URL("./scale-run.mjs", import.meta.url));
const builtRunPath = fileURLToPath(new URL("../dist/explore/run.js", import.meta.url));

interface Rollout {
  /** Wall seconds of the rollout itself (loading the package and the scenario excluded). */
  seconds: number;
  /** CPU seconds of the child process (user and system): what the rollout costs on a machine shared with others. */
  cpuSeconds: number;
  steps: number;
  rssMb: number;
  /** Seconds V8 spent in garbage collection pauses (young and old generation) during the rollout. */
  gcSeconds: number;
  /** The 1-minute load average at the end: above the core count, wall time is mostly waiting for a core. */
  load: number;
  verdict: string;
  traceHash: string;
}

/** One rollout of `nodes` nodes in a child process on the compiled package. */
export async function fleetRollout(nodes: number): Promise<Rollout> {
  if (!existsSync(builtRunPath)) throw new Error("bench scale: dist/ is missing; run `npm run build` first");
  const stdout = await new Promise<string>((resolve, reject) => {
    execFile(process.execPath, [runnerPath, String(nodes)], { maxBuffer: 1 << 20 }, (error, out, err) => {
      if (error !== null) reject(new Error(`bench scale: the ${nodes}-node rollout failed: ${error.message}\n${err}`));
      else resolve(out);
    });
  });
  const figures = JSON.parse(stdout.trim().split("\n").pop()!) as Omit<Rollout, "load">;
  return { ...figures, load: loadavg()[0]! };
}

export async function benchScale(fleets: readonly number[] = [1000, 5000]): Promise<Record<string, string | number>> {
  const figures: Record<string, string | number> = {};
  const perNode: number[] = [];
  for (const nodes of fleets) {
    const r = await fleetRollout(nodes);
    figures[`${nodes}-node rollout: verdict`] = r.verdict;
    figures[`${nodes}-node rollout: wall time (s, goal < 30 at 5,000)`] = r.seconds.toFixed(1);
    figures[`${nodes}-node rollout: CPU time (s)`] = r.cpuSeconds.toFixed(1);
    figures[`${nodes}-node rollout: steps`] = r.steps;
    figures[`${nodes}-node rollout: trace hash`] = r.traceHash.slice(0, 16);
    figures[`${nodes}-node rollout: steps/s`] = Math.round(r.steps / r.seconds);
    figures[`${nodes}-node rollout: peak RSS (MB, goal < 2048)`] = r.rssMb.toFixed(0);
    figures[`${nodes}-node rollout: GC pauses (s of wall time, against CPU time)`] = `${r.gcSeconds.toFixed(1)} (${Math.round((100 * r.gcSeconds) / r.cpuSeconds)}%)`;
    figures[`${nodes}-node rollout: load average at the end (1 min, ${availableParallelism()} cores)`] = r.load.toFixed(1);
    perNode.push(r.cpuSeconds / nodes);
  }
  if (fleets.length >= 2) {
    const growth = perNode[perNode.length - 1]! / perNode[0]!;
    figures[`growth ${fleets[0]} -> ${fleets[fleets.length - 1]}: CPU time per node, ratio (1 = linear)`] = growth.toFixed(2);
  }
  return figures;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const fleets = process.argv.slice(2).map(Number);
  const figures = await benchScale(fleets.length > 0 ? fleets : undefined);
  for (const [key, value] of Object.entries(figures)) process.stdout.write(`${key}: ${value}\n`);
}
