// `settle job` prints an Indexed Job that real kubectl accepts from `settle serve` (a server-side dry run and a
// real create), and whose shard scripts, run here with JOB_COMPLETION_INDEX set as Kubernetes sets it, produce
// findings that `settle merge` combines into exactly the unsharded run's. Spawns the compiled CLI.
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseAllDocuments } from "yaml";
import { kubectlPath } from "../server/helpers.ts";

const repo = fileURLToPath(new URL("../../", import.meta.url));
const bin = join(repo, "bin", "settle.js");
const ensemble = join(repo, "examples", "ensemble");
const root = mkdtempSync(join(tmpdir(), "settle-job-"));
after(() => rmSync(root, { recursive: true, force: true }));

const settle = (cwd: string, args: string[]) => spawnSync(process.execPath, [bin, ...args], { cwd, encoding: "utf8" });
type Job = { metadata: { name: string }; spec: { completionMode?: string; completions: number; template: { spec: { containers: Array<{ command: string[] }> } } } };

function manifests(args: string[]): { text: string; jobs: Job[] } {
  const printed = settle(root, ["job", ...args]);
  assert.equal(printed.status, 0, printed.stderr);
  return { text: printed.stdout, jobs: parseAllDocuments(printed.stdout).map((doc) => doc.toJS() as Job) };
}

test("the printed Indexed Job passes kubectl's server-side dry run against settle serve and is created", async () => {
  const { text, jobs } = manifests(["--shards", "4", "--image", "node:20", "--pvc", "findings", "--", "examples/ensemble", "--runs", "4000"]);
  assert.deepEqual(jobs.map((j) => j.metadata.name), ["settle-explore", "settle-explore-merge"]);
  assert.equal(jobs[0]!.spec.completionMode, "Indexed");
  assert.equal(jobs[0]!.spec.completions, 4);
  assert.match(jobs[0]!.spec.template.spec.containers[0]!.command[2]!, /settle explore examples\/ensemble --runs 4000 --shard "\$JOB_COMPLETION_INDEX\/4"/);
  const manifest = join(root, "job.yaml");
  writeFileSync(manifest, text);
  const kubeconfig = join(root, "kubeconfig");
  const serve = spawn(process.execPath, [bin, "serve", "--port", "0", "--kubeconfig-out", kubeconfig], { stdio: ["ignore", "pipe", "inherit"] });
  after(() => serve.kill("SIGTERM"));
  await new Promise<void>((resolve) => serve.stdout.on("data", (chunk: Buffer) => /listening on/.test(chunk.toString()) && resolve()));
  const env = { PATH: process.env.PATH ?? "", HOME: root, KUBECONFIG: kubeconfig, KUBECACHEDIR: join(root, "kube-cache") };
  const kubectl = (args: string[]) => execFileSync(kubectlPath, args, { env, encoding: "utf8" });
  assert.match(kubectl(["apply", "--server-side", "--dry-run=server", "-f", manifest]), /job\.batch\/settle-explore serverside-applied \(server dry run\)/);
  assert.equal(kubectl(["get", "jobs", "-o", "name"]), "", "a dry run stores nothing");
  assert.match(kubectl(["create", "-f", manifest]), /job\.batch\/settle-explore created\njob\.batch\/settle-explore-merge created/);
  assert.equal(kubectl(["get", "job", "settle-explore", "-o", "jsonpath={.spec.completionMode} {.spec.completions}"]), "Indexed 4");
});

test("the shard scripts, run with JOB_COMPLETION_INDEX 0..2, merge into the unsharded run's findings", () => {
  const findings = join(root, "findings");
  const args = [ensemble, "--variant", "delta", "--runs", "40", "--workers", "1"];
  const { jobs } = manifests(["--shards", "3", "--image", "node:20", "--pvc", "findings", "--findings-dir", findings, "--", ...args]);
  const script = jobs[0]!.spec.template.spec.containers[0]!.command;
  assert.deepEqual(script.slice(0, 2), ["sh", "-c"]);
  // The image has settle on PATH (node_modules/.bin); here a shim runs this repository's CLI.
  const shims = join(root, "bin");
  mkdirSync(shims, { recursive: true });
  writeFileSync(join(shims, "settle"), `#!/bin/sh\nexec "${process.execPath}" "${bin}" "$@"\n`);
  chmodSync(join(shims, "settle"), 0o755);
  const path = `${shims}:${process.env.PATH ?? ""}`;
  for (let index = 0; index < 3; index++) {
    // Each pod has its own working directory at the same depth, so replay files name the scenario alike.
    const cwd = join(root, `pod-${index}`, "app");
    mkdirSync(cwd, { recursive: true });
    const pod = spawnSync("sh", ["-c", script[2]!], { cwd, encoding: "utf8", env: { ...process.env, PATH: path, JOB_COMPLETION_INDEX: String(index) } });
    assert.equal(pod.status, 0, `shard ${index}: ${pod.stdout}\n${pod.stderr}`);
  }
  const merged = settle(root, ["merge", ...[0, 1, 2].map((i) => join(findings, `shard-${i}`)), "--out", join(root, "merged"), "--json"]);
  const full = join(root, "pod-full", "app");
  mkdirSync(full, { recursive: true });
  assert.equal(settle(full, ["explore", ...args]).status, 1, "the unsharded run finds the delta bug");
  const unsharded = settle(full, ["merge", join(full, ".settle", "findings"), "--out", join(root, "merged-full"), "--json"]);
  const rows = (out: string) => (JSON.parse(out) as { findings: Array<Record<string, unknown>> }).findings.map(({ replay: _, ...row }) => row);
  assert.ok(rows(unsharded.stdout).length > 0, "there is a finding to compare");
  assert.deepEqual(rows(merged.stdout), rows(unsharded.stdout));
});

test("a bounded search's shard scripts resume from checkpoints on the claim and merge into the unsharded search, complete", () => {
  const findings = join(root, "bounded-findings");
  const fixture = join(repo, "test", "fixtures", "bounded", "scenario.ts");
  const args = [fixture, "--variant", "safe", "--strategy", "bounded", "--preemptions", "1", "--fault-points", "1", "--workers", "1"];
  const { jobs } = manifests(["--shards", "2", "--image", "node:20", "--pvc", "findings", "--findings-dir", findings, "--", ...args]);
  const script = jobs[0]!.spec.template.spec.containers[0]!.command[2]!;
  assert.match(script, /--shard "\$JOB_COMPLETION_INDEX\/2" --checkpoint .*\/bounded-findings\/shard-"\$JOB_COMPLETION_INDEX"\.checkpoint/);
  const shims = join(root, "bin");
  mkdirSync(shims, { recursive: true });
  writeFileSync(join(shims, "settle"), `#!/bin/sh\nexec "${process.execPath}" "${bin}" "$@"\n`);
  chmodSync(join(shims, "settle"), 0o755);
  for (let index = 0; index < 2; index++) {
    const cwd = join(root, `bounded-pod-${index}`, "app");
    mkdirSync(cwd, { recursive: true });
    const pod = spawnSync("sh", ["-c", script], { cwd, encoding: "utf8", env: { ...process.env, PATH: `${shims}:${process.env.PATH ?? ""}`, JOB_COMPLETION_INDEX: String(index) } });
    assert.equal(pod.status, 0, `shard ${index}: ${pod.stdout}\n${pod.stderr}`);
  }
  const merged = settle(root, ["merge", join(findings, "shard-0"), join(findings, "shard-1"), "--out", join(root, "bounded-merged")]);
  const full = join(root, "bounded-full");
  mkdirSync(full, { recursive: true });
  const unsharded = settle(full, ["explore", ...args]);
  const schedules = /complete for K=1, F=1 \(latency 5 ms\): (\d+) schedules over 9 of 9 fault placements \((\d+) pruned\)/;
  const [, wholeCount, wholePruned] = schedules.exec(unsharded.stdout) ?? [];
  assert.ok(wholeCount !== undefined, unsharded.stdout);
  assert.match(merged.stdout, schedules);
  const [, count, pruned] = schedules.exec(merged.stdout)!;
  assert.deepEqual([count, pruned], [wholeCount, wholePruned]);
  assert.match(merged.stdout, /; 2 shard\(s\)/);
});

test("settle job names a missing or bad option", () => {
  assert.match(settle(root, ["job", "--image", "x", "--", "examples"]).stderr, /--shards N is required/);
  assert.match(settle(root, ["job", "--shards", "2", "--image", "x"]).stderr, /expects the explore arguments after --/);
  assert.match(settle(root, ["job", "--shards", "2", "--image", "x", "--", "examples", "--shard", "0/2"]).stderr, /must not set --shard/);
  assert.equal(settle(root, ["job", "--shards", "0", "--image", "x", "--", "examples"]).status, 2);
});
