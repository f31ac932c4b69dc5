// Acceptance for issue 8, run by `npm run acceptance` (not by `npm test`): the bootc rollout through the real
// command line with the default budget, the fixed variant over 2,000 runs and every crash point of its own
// actors, and one rollout of a 1,000-node pool.
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import bootcScenario from "../examples/bootc-rollout/scenario.ts";
import { staleStatusFault } from "../examples/bootc-rollout/faults.ts";
import { faultPointsOf } from "../src/explore/plan.ts";
import { runScenario } from "../src/explore/run.ts";
import type { Scenario } from "../src/explore/scenario.ts";
import { fifoStrategy } from "../src/sim/strategy.ts";
import type { PlannedFault } from "../src/sim/types.ts";
import { repo, settleIn } from "./cli.ts";

const dir = join(repo, "examples", "bootc-rollout");
const { root, settle } = settleIn("settle-bootc-");
const bootc = bootcScenario as unknown as Scenario;
const oneReboot = "one reboot per approval: reboots(node, image) <= 1";
const budget = "disrupted nodes <= maxUnavailable";


interface ExploreJson {
  runs: number;
  findings: Array<{ verdict: string; property: string | null; replay: string; faults: number; choices: number; workload: string }>;
}

interface ReplayFile {
  variant: string;
  workload: string;
  seed: number;
  params: Record<string, string | number | boolean>;
  choices: Array<[number, number]>;
  faults: PlannedFault[];
}

test("settle explore --variant buggy finds a second reboot outside the gate, shrunk to the stale read, and replay reproduces it", async () => {
  const explored = await settle(["explore", dir, "--variant", "buggy", "--json"]);
  assert.equal(explored.code, 1, explored.stderr);
  const report = JSON.parse(explored.stdout) as ExploreJson;
  assert.equal(report.runs, 1000);
  const finding = report.findings.find((f) => f.verdict === "safety-violation" && (f.property === oneReboot || f.property === budget));
  assert.ok(finding, JSON.stringify(report.findings));

  const replay = JSON.parse(readFileSync(join(root, finding.replay), "utf8")) as ReplayFile;
  assert.ok(replay.faults.some((f) => f.kind === staleStatusFault), "the stale read is in the shrunk run");
  const outcome = await runScenario(bootc, { variant: "buggy", workload: replay.workload, params: replay.params, seed: replay.seed, choices: replay.choices, faults: replay.faults, traceMode: "full" });
  assert.equal(outcome.verdict.property, finding.property);
  const stale = outcome.trace.find((r) => r.kind === "log" && r.label === "bootc status: early-boot read returned the pre-reboot deployments");
  assert.ok(stale, "the daemon acted on a stale read");
  const node = stale.actor.replace("bootcd-", "");
  const reboots = outcome.trace.filter((r) => r.actor === `kubelet-${node}` && r.label === "kubelet: rebooting");
  assert.ok(reboots.length >= 2 && reboots.at(-1)!.step > stale.step, "the node rebooted again after the stale read");
  if (replay.workload === "mid-rollout-change") {
    assert.ok(outcome.trace.some((r) => r.label === "stage cancelled: the desired image changed"), "the v1 -> v2 change cancelled a stage");
  }

  const replayed = await settle(["replay", finding.replay, "--json"]);
  assert.equal(replayed.code, 1, replayed.stderr);
  const answer = JSON.parse(replayed.stdout) as { verdict: string; reproduced: boolean };
  assert.equal(answer.verdict, "safety-violation");
  assert.equal(answer.reproduced, true);
});

test("settle explore --variant fixed --runs 2000 reports no finding", async () => {
  const explored = await settle(["explore", dir, "--variant", "fixed", "--runs", "2000", "--json"]);
  assert.equal(explored.code, 0, explored.stderr);
  const report = JSON.parse(explored.stdout) as ExploreJson;
  assert.equal(report.runs, 2000);
  assert.deepEqual(report.findings, []);
});

test("the fixed variant survives a kill of the pool controller or any daemon after every one of their writes", async () => {
  const crashable = new Set(["bootc-operator", "bootcd-n1", "bootcd-n2", "bootcd-n3"]);
  for (const workload of Object.keys(bootc.workloads)) {
    const reference = await runScenario(bootc, { variant: "fixed", workload, params: bootc.params, seed: 5, strategy: fifoStrategy(), traceMode: "full" });
    assert.equal(reference.verdict.kind, "ok");
    const points = faultPointsOf({ workload, trace: reference.trace, crashable, faultable: crashable, kinds: new Set(["crash"]) });
    assert.ok(points.length > 40);
    for (const point of points) {
      const outcome = await runScenario(bootc, { variant: "fixed", workload, params: bootc.params, seed: 5, strategy: fifoStrategy(), faults: [point.fault] });
      assert.equal(outcome.verdict.kind, "ok", `${point.label}: ${outcome.verdict.detail}`);
    }
  }
});

test("one rollout of a 1,000-node pool with maxUnavailable 10% completes in the simulator", async () => {
  const params = ["--param", "nodes=1000", "--param", "maxUnavailable=10%", "--param", "safetyChecks=per-second"];
  const explored = await settle(["explore", dir, "--variant", "fixed", "--workload", "rollout", ...params, "--strategy", "random", "--runs", "1", "--json"]);
  assert.equal(explored.code, 0, explored.stderr);
  const report = JSON.parse(explored.stdout) as ExploreJson;
  assert.equal(report.runs, 1);
  assert.deepEqual(report.findings, [], "every node ends on v1, reports it, Idle and uncordoned, within the budget throughout");
});
