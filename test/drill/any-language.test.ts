import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { realClock } from "../../src/api/clock.ts";
import { reportDataFromDrillArtifact, writeDrillArtifact } from "../../src/drill/artifact.ts";
import { drill } from "../../src/drill/drill.ts";
import { liveProcessGroups } from "../../src/drill/process.ts";
import { faketimeLibrary } from "../../src/drill/faketime.ts";
import { eventually } from "../../src/check/properties.ts";
import { writeHtmlReport } from "../../src/report/html.ts";
import { loadYamlScenario } from "../../src/scenario-yaml/index.ts";
import { yamlDrillTarget } from "../../src/drill/yaml-target.ts";
import { runCli } from "./run-cli.ts";

// Operators in two other languages, drilled through their YAML scenarios: a few points each keeps these short.
const repo = fileURLToPath(new URL("../..", import.meta.url));
const shell = loadYamlScenario(join(repo, "examples/shell-operator/scenario.yaml"));
const python = loadYamlScenario(join(repo, "examples/python-operator/scenario.yaml"));

function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

test("the bash + kubectl delta operator loses the scale-up when killed after its second write; the output of both starts is kept", async () => {
  const result = await drill({ target: yamlDrillTarget(shell, "delta"), killPoints: [2] });
  assert.equal(result.reference.verdict, "ok", result.reference.detail);
  const [run] = result.runs;
  assert.equal(run?.verdict, "violated", run?.detail);
  assert.deepEqual(run?.failed, ["children == spec.voices"]);
  assert.ok(run?.output?.some((l) => l.startsWith("[1] ") && l.includes('"type":"ADDED"')), run?.output?.join("\n"));
  assert.ok(run !== undefined && run.timings.faultMs! > run.timings.firstWatchMs! && run.timings.quietMs! >= run.timings.rewatchMs!);
  assert.ok(!JSON.stringify(result).includes("/token/"), "no token in the result");
});

test("the bash + kubectl level operator passes the same kill points", async () => {
  const result = await drill({ target: yamlDrillTarget(shell, "level"), killPoints: [2, 3], concurrency: 2 });
  assert.equal(result.reference.verdict, "ok", result.reference.detail);
  assert.deepEqual(result.runs.map((r) => r.verdict), ["ok", "ok"], result.runs.map((r) => r.detail).join("; "));
});

test("the python3-kubernetes delta operator is found and its artifact renders as an HTML report", async () => {
  const target = yamlDrillTarget(python, "delta");
  const result = await drill({ target, killPoints: [2] });
  const run = result.runs[0]!;
  assert.equal(run.verdict, "violated", run.detail);
  const dir = mkdtempSync(join(tmpdir(), "settle-drill-artifact-"));
  const path = writeDrillArtifact(dir, result, run, `${target.rerun} --kill-points 2`);
  const data = reportDataFromDrillArtifact(path);
  assert.deepEqual([...new Set(data.records.map((r) => r.actor))].sort(), ["controller[0]", "controller[1]", "drill", "store"]);
  assert.ok(data.records.some((r) => r.kind === "fault" && r.label === "kill after write 2"));
  assert.ok(data.records.some((r) => r.actor === "store" && r.label === "MODIFIED Ensemble academy-lab/alpha"));
  assert.ok(!readFileSync(path, "utf8").includes("/token/"), "no token in the artifact");
  const html = join(dir, "report.html");
  writeHtmlReport(html, data);
  assert.match(readFileSync(html, "utf8"), /kill after write 2/);
});

test("the python3-kubernetes level operator passes a kill and every other fault at one point, per-resource ones for the one resource it watches", async () => {
  const result = await drill({ target: yamlDrillTarget(python, "level"), killPoints: [3], faults: true, concurrency: 3 });
  assert.equal(result.reference.verdict, "ok", result.reference.detail);
  assert.deepEqual(result.reference.watched, ["ensembles"]);
  // The clock points are planned where Debian's faketime package is installed (libfaketime), and only there.
  const clocks = faketimeLibrary() === undefined ? [] : ["clock-ahead", "clock-behind"];
  const expected = ["kill", "time-travel", "close-watch", "fail-500", "fail-409", "lost-response", ...clocks, "stale-kind ensembles", "coalesce ensembles", "hide-recreate ensembles"];
  assert.deepEqual(result.runs.map((r) => `${r.point?.fault}${r.point?.resource ? ` ${r.point.resource}` : ""} ${r.verdict}`), expected.map((p) => `${p} ok`), result.runs.map((r) => r.output?.join("\n")).join("\n"));
  // Every fault but the stale lists was applied, not merely armed. The Python client lists and watches without
  // resourceVersion=0, which a real API server answers consistently (never from a lagging cache), so the drill
  // says it served no stale state rather than claiming a time travel that cannot happen to this client.
  const stale = (r: (typeof result.runs)[number]) => r.point?.fault === "time-travel" || r.point?.fault === "stale-kind";
  for (const run of result.runs.filter((r) => !stale(r))) assert.doesNotMatch(run.applied ?? "", /but/, `${run.point?.fault}: ${run.applied}`);
  for (const run of result.runs.filter(stale)) assert.match(run.applied ?? "", /made no resourceVersion=0 list or watch/);
  for (const run of result.runs.filter((r) => r.point?.fault.startsWith("clock-"))) {
    assert.match(run.applied ?? "", /^set the controller's wall clock 30 s (ahead|behind) \(libfaketime/, `${run.point?.fault}: ${run.applied}`);
  }
});

test("a point where the server refuses a write waits the reference's window: a retry loop slower than the learned window is not quiet", async () => {
  // After the kill the rerun create meets its own object (409 AlreadyExists) and retries every 1.5 s, recording each
  // attempt on the object. The window learned from the reference's quick reactions is the 500 ms floor: taken as is,
  // the gap between two retries would pass for quiet, and the property (the object exists) holds all along.
  const scenario = loadYamlScenario(join(repo, "test/drill/fixtures/retry-loop/scenario.yaml"));
  // One at a time: the point starts after the reference run, with the learned window from its first request.
  const result = await drill({ target: yamlDrillTarget(scenario, "retry"), killPoints: [1], concurrency: 1 });
  assert.equal(result.reference.verdict, "ok", result.reference.detail);
  assert.ok(result.reference.timings.thinkMaxMs! * 3 < 1500, `the reference learned a window shorter than the retry: ${result.reference.timings.thinkMaxMs} ms`);
  const run = result.runs[0]!;
  assert.equal(run.verdict, "no-quiet", `${run.detail}\n${run.output?.join("\n")}`);
  assert.match(run.detail, /^no quiet window of 4000 ms within 12000 ms; the server refused \d+ of the controller's writes, the last POST \/api\/v1\/namespaces\/lab\/configmaps -> 409$/);
  assert.ok(run.timeline!.requests.some((r) => r.method === "POST" && r.status === 409), "the rerun create met its own object");
});

test("a controller that never opens a watch is reported as such within --timeout-ms, and its group is killed", async () => {
  const started = realClock.now();
  const result = await drill({ target: yamlDrillTarget(shell, "level"), command: ["bash", "-c", "echo waiting; sleep 1000"], timeoutMs: 1500 });
  assert.equal(result.reference.verdict, "no-watch");
  assert.match(result.reference.detail, /opened no watch within 1500 ms \(it made 0 request\(s\)\)/);
  assert.deepEqual(result.reference.output, ["[0] waiting"]);
  assert.ok(realClock.now() - started < 5000);
  assert.deepEqual(liveProcessGroups(), []);
});

test("SIGTERM to a drill kills the controller's whole process group", async () => {
  const dir = mkdtempSync(join(tmpdir(), "settle-drill-sigterm-"));
  const pidFile = join(dir, "pid");
  const child = spawn(process.execPath, ["--conditions=settle-source", "--import", "tsx", join(repo, "test/fixtures/drill/sigterm-drill.ts"), join(repo, "examples/shell-operator/scenario.yaml"), pidFile], { stdio: "ignore" });
  const deadline = realClock.now() + 20_000;
  while (!existsSync(pidFile) || readFileSync(pidFile, "utf8").trim() === "") {
    assert.ok(realClock.now() < deadline, "the controller never started");
    await realClock.sleep(50);
  }
  const pgid = Number(readFileSync(pidFile, "utf8"));
  assert.ok(groupAlive(pgid));
  child.kill("SIGTERM");
  const code = await new Promise<number | null>((resolve) => child.on("exit", (c) => resolve(c)));
  assert.equal(code, 143);
  // SIGKILL is delivered asynchronously: the group must be gone within a moment, not necessarily at once.
  const gone = realClock.now() + 2000;
  while (groupAlive(pgid) && realClock.now() < gone) await realClock.sleep(20);
  assert.equal(groupAlive(pgid), false);
});

test("an eventually property with withinMs that becomes true too long after the workload's end is reported late", async () => {
  // The workload ends with the scale-up patch (no waitFor), so the children come after it: 1 ms is a deadline no
  // controller can keep.
  const target = yamlDrillTarget({ ...python, workload: python.workload.filter((s) => s.kind !== "waitFor") }, "level");
  const converged = target.properties.find((p) => p.name === "children == spec.voices")!;
  const strict = { ...target, properties: [...target.properties, eventually("converged within 1 ms", converged.predicate, { withinMs: 1 })] };
  const result = await drill({ target: strict, killPoints: [] });
  assert.equal(result.reference.verdict, "violated", result.reference.detail);
  assert.equal(result.reference.failed.length, 1);
  assert.match(result.reference.failed[0]!, /^converged within 1 ms \(true \d+ ms after the workload's end, withinMs 1\)$/);
});

test("processes started ahead of their turn reach the server only once it comes: the first at the point's start, the replacement after the kill", async () => {
  const result = await drill({ target: yamlDrillTarget(python, "delta"), killPoints: [2], concurrency: 2 });
  const run = result.runs[0]!;
  assert.equal(run.verdict, "violated", run.detail);
  const { startMs, requests } = run.timeline!;
  const faultAt = startMs + run.timings.faultMs!;
  assert.ok(requests.some((r) => r.incarnation === 1), "the replacement made no request");
  for (const r of requests) {
    if (r.incarnation === 0) assert.ok(r.atMs >= startMs, `[0] ${r.method} ${r.path} answered before the point began`);
    else assert.ok(r.atMs >= faultAt, `[1] ${r.method} ${r.path} answered ${faultAt - r.atMs} ms before the kill`);
  }
  // Its start-up lines come before the kill's in the output, so the output says when the server began to see it.
  assert.ok(run.output!.some((l) => l === "[drill] [1] was started ahead; its requests reach the server from now on"), run.output!.join("\n"));
});

const mirrorScenario = join(repo, "examples/mirror-operator/scenario.yaml");

/** An artifact as a drill of the mirror operator's edge variant writes it for its hide-recreate point. */
function mirrorArtifact(dir: string, options: { reference?: boolean } = {}): string {
  const path = join(dir, "edge-hide-recreate-configmaps-1.json");
  const point = options.reference === true ? {} : { point: { afterWrite: 1, fault: "hide-recreate", resource: "configmaps" } };
  const run = { ...point, verdict: "violated", failed: ["the mirror is of the current source"], writes: 1, detail: "", timings: { totalMs: 1 } };
  const artifact = { kind: "settle-drill-finding", format: 1, scenario: "mirror-operator", variant: "edge", workload: "steps", rerun: "", run, replay: { path: mirrorScenario, variant: "edge", workload: "steps" } };
  writeFileSync(path, JSON.stringify(artifact));
  return path;
}

test("settle drill --replay --repeat drills the artifact's point again and counts the runs that fail again; the fixed command fails in none", async () => {
  // The mirror operator's edge form keeps a deleted source's mirror when the delete never reaches it: under
  // hide-recreate its watch shows the source's delete and create again as the create alone. Every kill point passes.
  const dir = mkdtempSync(join(tmpdir(), "settle-drill-replay-"));
  const artifact = mirrorArtifact(dir);
  const found = await runCli(["drill", "--replay", artifact, "--repeat", "2", "--parallel", "2"], dir);
  assert.equal(found.code, 1, found.stderr);
  assert.match(found.stdout, /^mirror-operator \/ edge \/ steps: hide-recreate configmaps after write 1, recorded VIOLATED/m);
  assert.equal(found.stdout.match(/^ {2}run \d of 2: VIOLATED .*hid 1 configmaps delete\(s\) followed by a create under the same name$/gm)?.length, 2, found.stdout);
  assert.match(found.stdout, /^failed again as recorded in 2 of 2 run\(s\) of hide-recreate configmaps after write 1$/m);
  assert.match(found.stdout, /^note: a real process is not deterministic .* it does not reproduce the recorded run byte for byte$/m);
  // The same point with the level form's command (after --) passes: the replay counts, it does not presume.
  const fixed = await runCli(["drill", "--replay", artifact, "--", "/usr/bin/python3", "operator.py"], dir);
  assert.equal(fixed.code, 0, fixed.stderr);
  assert.match(fixed.stdout, /^ {2}run 1 of 1: OK/m);
  assert.match(fixed.stdout, /^failed again as recorded in 0 of 1 run\(s\) of hide-recreate configmaps after write 1$/m);
});

test("settle drill --replay refuses, with exit 2, an artifact of the reference run and options the artifact decides", async () => {
  const dir = mkdtempSync(join(tmpdir(), "settle-drill-replay-"));
  const reference = await runCli(["drill", "--replay", mirrorArtifact(dir, { reference: true })], dir);
  assert.equal(reference.code, 2);
  assert.match(reference.stderr, /--replay: .*edge-hide-recreate-configmaps-1\.json: run\.point: absent: the artifact is of the reference run/);
  const variant = await runCli(["drill", "--replay", mirrorArtifact(dir), "--variant", "level"], dir);
  assert.equal(variant.code, 2);
  assert.match(variant.stderr, /--variant does not go with --replay/);
});
