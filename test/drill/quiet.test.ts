import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { realClock } from "../../src/api/clock.ts";
import { drill } from "../../src/drill/drill.ts";
import { fixedQuietWindow, learnQuietWindow, quietFloorMs, QuietTracker, thinkFactor } from "../../src/drill/quiet.ts";
import { loadYamlScenario } from "../../src/scenario-yaml/index.ts";
import { yamlDrillTarget } from "../../src/drill/yaml-target.ts";

const repo = fileURLToPath(new URL("../..", import.meta.url));
const python = loadYamlScenario(join(repo, "examples/python-operator/scenario.yaml"));
const slowPython = (pauseMs: number) => ["/usr/bin/python3", "operator.py", `--slow-reconcile-ms=${pauseMs}`];

test("the learned quiet window is a multiple of the longest think time, with a floor, never above the reference's", () => {
  assert.equal(learnQuietWindow(10, 2000).ms, quietFloorMs);
  assert.equal(learnQuietWindow(300, 2000).ms, 300 * thinkFactor);
  assert.equal(learnQuietWindow(900, 2000).ms, 2000);
  assert.equal(learnQuietWindow(300, 2000).maxMs, 2000);
  assert.match(learnQuietWindow(300, 2000).why, /quiet window 900 ms \(3 x 300 ms; .* 300 ms\)/);
  assert.deepEqual(fixedQuietWindow(700), { ms: 700, maxMs: 700, adaptive: false, why: "quiet window 700 ms (given)" });
  assert.throws(() => learnQuietWindow(10, 0), /must be positive/);
});

test("a point whose controller thinks longer than the reference did widens its own window, up to the reference's", async () => {
  const quiet = new QuietTracker(learnQuietWindow(0, 1000), () => 0);
  assert.equal(quiet.currentMs, quietFloorMs);
  // A write before the controller's first watch is start-up, not a reaction: it teaches nothing.
  await realClock.sleep(250);
  quiet.writeRequested();
  assert.equal(quiet.thinkMaxMs, 0);
  quiet.watching();
  await realClock.sleep(250);
  quiet.writeRequested();
  assert.ok(quiet.currentMs >= 750 && quiet.currentMs <= 1000, `window ${quiet.currentMs}`);
  assert.ok(quiet.thinkMaxMs >= 250);
  await realClock.sleep(400);
  quiet.writeRequested();
  assert.equal(quiet.currentMs, 1000);
  quiet.stop();
});

test("after a failed request the window is the reference's own: the controller's retry timer was never measured", () => {
  // The reference run failed no request, so its think times say nothing of a retry after a backoff (the framework
  // examples' level handlers retry 500 ms later, as long as the floor): a point that fails one waits the longest.
  const quiet = new QuietTracker(learnQuietWindow(0, 1500), () => 0);
  assert.equal(quiet.currentMs, quietFloorMs);
  quiet.awaitRetry();
  assert.equal(quiet.currentMs, 1500);
  // The learned window arriving afterwards does not shrink it back.
  quiet.relearn(learnQuietWindow(10, 1500));
  assert.equal(quiet.currentMs, 1500);
  // A fixed window stays what was given.
  const fixed = new QuietTracker(fixedQuietWindow(700), () => 0);
  fixed.awaitRetry();
  assert.equal(fixed.currentMs, 700);
  quiet.stop();
  fixed.stop();
});

test("quiet is not reached while a request of the controller is in flight, and is once it ends", async () => {
  let inFlight = 1;
  const quiet = new QuietTracker(fixedQuietWindow(30), () => inFlight);
  let reached = false;
  void quiet.reached.then(() => (reached = true));
  quiet.ready("workload");
  quiet.ready("point");
  await realClock.sleep(150);
  assert.equal(reached, false, "quiet with a request in flight");
  inFlight = 0;
  quiet.requestEnded();
  await realClock.sleep(80);
  assert.equal(reached, true);
  quiet.stop();
});

test("a controller that pauses between writes is not declared quiet early: the points' window covers its pause", async () => {
  // The Python operator sleeps 300 ms after each child it creates. The reference run (1500 ms window) sees that
  // pause as its longest think time; the points wait 3 x that, and every kill point converges.
  const target = yamlDrillTarget(python, "level");
  const lines: string[] = [];
  const result = await drill({ target, command: slowPython(300), killPoints: [2, 4], concurrency: 2, onProgress: (l) => lines.push(l) });
  assert.equal(result.reference.verdict, "ok", result.reference.detail);
  assert.ok(result.reference.timings.thinkMaxMs! >= 300, `think ${result.reference.timings.thinkMaxMs}`);
  const window = lines.find((l) => l.startsWith("quiet window"));
  assert.match(window ?? "", /^quiet window (9\d\d|1[0-4]\d\d|1500) ms/, lines.join("\n"));
  assert.deepEqual(result.runs.map((r) => r.verdict), ["ok", "ok"], result.runs.map((r) => `${r.detail} ${r.world}`).join("; "));
  for (const run of result.runs) assert.ok(run.timings.quietWindowMs! >= 900, `window ${run.timings.quietWindowMs}`);
});

test("the same controller with a given window shorter than its pause is declared quiet mid-scale-up (the window is what protects)", async () => {
  const target = yamlDrillTarget(python, "level");
  const result = await drill({ target, command: slowPython(600), killPoints: [], quietMs: 200 });
  assert.equal(result.reference.verdict, "violated", result.reference.detail);
  assert.deepEqual(result.reference.failed, ["children == spec.voices"]);
});
