// `settle job --pvc`: the merge Job gives up on shards that never finish (a deadline, a message naming them, an exit
// code its pod failure policy fails the Job on), the claim's ReadWriteMany need is said, and each shard pod's CPU,
// memory and explore workers can be set.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseAllDocuments } from "yaml";
import { jobManifests, jobUsage, mergeTimeoutExitCode, type JobSpec } from "../../src/cli/job.ts";

type Container = { name: string; command: string[]; resources?: { requests: Record<string, string>; limits: Record<string, string> } };
type Job = { metadata: { name: string }; spec: { podFailurePolicy?: { rules: Array<{ action: string; onExitCodes: { values: number[] } }> }; template: { spec: { containers: Container[] } } } };

const base: JobSpec = {
  name: "settle-explore",
  namespace: undefined,
  image: "node:20",
  shards: 3,
  parallelism: 3,
  pvc: "findings",
  findingsDir: "/findings",
  workdir: "/app",
  exploreArgs: ["examples/ensemble"],
  resources: {},
  workersPerShard: undefined,
  mergeDeadlineS: 1,
};

test("the merge pod gives up after its deadline, naming the shards that never finished, and the Job fails without retries", () => {
  const dir = mkdtempSync(join(tmpdir(), "settle-merge-wait-"));
  try {
    mkdirSync(join(dir, "shard-0"));
    writeFileSync(join(dir, "shard-0.done"), "");
    const [, merge] = jobManifests({ ...base, findingsDir: dir }) as Job[];
    const container = merge!.spec.template.spec.containers[0]!;
    const pod = spawnSync("sh", ["-c", container.command[2]!], { encoding: "utf8" });
    assert.equal(pod.status, mergeTimeoutExitCode, pod.stderr);
    assert.match(pod.stderr, /gave up after 1 s: shard\(s\) 1 2 of 3 never finished \(see kubectl describe job\/settle-explore/);
    const rule = merge!.spec.podFailurePolicy!.rules[0]!;
    assert.equal(rule.action, "FailJob");
    assert.deepEqual(rule.onExitCodes.values, [mergeTimeoutExitCode]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

const bin = fileURLToPath(new URL("../../bin/settle.js", import.meta.url));

/** Runs `settle job` (the compiled CLI) and parses what it printed. */
async function printed(args: string[]): Promise<{ code: number; text: string; jobs: Job[] }> {
  const ran = spawnSync(process.execPath, [bin, "job", ...args], { encoding: "utf8" });
  const code = ran.status ?? -1;
  return { code, text: `${ran.stdout}${ran.stderr}`, jobs: code === 0 ? parseAllDocuments(ran.stdout).map((doc) => doc.toJS() as Job) : [] };
}

test("--cpu and --memory set each shard pod's requests and limits, and --cpu sets explore's workers", async () => {
  const { code, jobs } = await printed(["--shards", "2", "--image", "x", "--pvc", "c", "--cpu", "2500m", "--memory", "3Gi", "--", "examples"]);
  assert.equal(code, 0);
  const explore = jobs[0]!.spec.template.spec.containers[0]!;
  assert.deepEqual(explore.resources, { requests: { cpu: "2500m", memory: "3Gi" }, limits: { cpu: "2500m", memory: "3Gi" } });
  assert.match(explore.command[2]!, /settle explore examples --workers 2 --shard/);
  assert.equal(jobs[1]!.spec.template.spec.containers[0]!.resources, undefined, "the merge pod needs no shard's resources");
  const given = await printed(["--shards", "2", "--image", "x", "--cpu", "2", "--workers-per-shard", "5", "--", "examples"]);
  assert.match(given.jobs[0]!.spec.template.spec.containers[0]!.command[2]!, /--workers 5 --shard/);
});

test("bad resources and doubled workers are usage errors; the help and the output say the claim must be ReadWriteMany", async () => {
  assert.equal((await printed(["--shards", "2", "--image", "x", "--cpu", "two", "--", "examples"])).code, 2);
  assert.match((await printed(["--shards", "2", "--image", "x", "--memory", "-1Gi", "--", "examples"])).text, /--memory expects a positive Kubernetes quantity/);
  assert.match((await printed(["--shards", "2", "--image", "x", "--workers-per-shard", "2", "--", "examples", "--workers", "3"])).text, /give the workers once/);
  assert.match(jobUsage, /The claim must be ReadWriteMany/);
  assert.match(jobUsage, /--merge-deadline-s S/);
  assert.match((await printed(["--shards", "2", "--image", "x", "--pvc", "c", "--", "examples"])).text, /^# the claim c must be ReadWriteMany/m);
});
