import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { fileURLToPath } from "node:url";
import { join } from "node:path";
import { createServer, type AddressInfo } from "node:net";
import { drill } from "../../src/drill/drill.ts";
import { listenClashHint } from "../../src/drill/run.ts";
import { loadYamlScenario } from "../../src/scenario-yaml/index.ts";
import { yamlDrillTarget } from "../../src/drill/yaml-target.ts";
import ensemble from "../../examples/ensemble/scenario.ts";
import { runCli } from "./run-cli.ts";

const repo = fileURLToPath(new URL("../..", import.meta.url));
const operator = join(repo, "examples/ensemble/operator.ts");
const plainOperator = join(repo, "examples/ensemble/plain-operator.mjs");
const ctx = { variant: "level", workload: "scale-up", params: { ...ensemble.params, userDelayMs: 200 } };
const tsOperator = (...flags: string[]) => [process.execPath, "--import", "tsx", operator, "--slow-reconcile=50ms", ...flags];

test("the delta-mode operator process killed after its second write loses work the drill reports", async () => {
  const result = await drill({ scenario: ensemble, ctx, command: tsOperator("--delta-mode"), killPoints: [2], quietMs: 2500 });
  assert.equal(result.reference.verdict, "ok", result.reference.detail);
  assert.ok(result.reference.writes >= 6, `the reference run made ${result.reference.writes} writes`);
  const [run] = result.runs;
  assert.equal(run?.verdict, "violated", run?.detail);
  assert.equal(run?.write?.method, "POST");
  assert.ok(run?.failed.includes("children == spec.voices"));
  assert.equal(run?.world, "children 5 of spec.voices 8, status.readyVoices 3");
});

test("the level-triggered operator process converges after the same kill", async () => {
  const result = await drill({ scenario: ensemble, ctx, command: tsOperator(), killPoints: [2], quietMs: 2500 });
  assert.equal(result.reference.verdict, "ok", result.reference.detail);
  assert.equal(result.runs[0]?.verdict, "ok", result.runs[0]?.detail);
  assert.equal(result.runs[0]?.world, "children 8 of spec.voices 8, status.readyVoices 8");
});

test("a plain client-node controller, written without settle, is drilled the same way", async () => {
  const result = await drill({ scenario: ensemble, ctx, command: [process.execPath, plainOperator, "--slow-reconcile-ms=50"], killPoints: [2], quietMs: 2500 });
  assert.equal(result.reference.verdict, "ok", result.reference.detail);
  assert.equal(result.runs[0]?.verdict, "violated", result.runs[0]?.detail);
  assert.equal(result.runs[0]?.world, "children 5 of spec.voices 8, status.readyVoices 3");
});

test("a controller that exits before it watches anything is reported, not waited on", async () => {
  const result = await drill({ scenario: ensemble, ctx, command: [process.execPath, "-e", "process.exit(3)"], killPoints: [], quietMs: 200 });
  assert.equal(result.reference.verdict, "controller-failed");
  assert.match(result.reference.detail, /exited 3 before opening a watch/);
});

test("a controller that dies because its own port is taken is told to listen on port 0, as the drill runs several instances at once", async () => {
  // The port is held here, as another instance of the controller would hold it (a kubebuilder main's :8081).
  const holder = createServer();
  await new Promise<void>((resolve) => holder.listen(0, "127.0.0.1", resolve));
  const port = (holder.address() as AddressInfo).port;
  try {
    const listen = `require("node:net").createServer().listen(${port}, "127.0.0.1")`;
    const result = await drill({ scenario: ensemble, ctx, command: [process.execPath, "-e", listen], killPoints: [], quietMs: 200 });
    assert.equal(result.reference.verdict, "controller-failed");
    assert.match(result.reference.detail, new RegExp(`exited 1 before opening a watch: it could not listen on 127\\.0\\.0\\.1:${port}, which another instance of it held`));
    assert.match(result.reference.detail, /--health-probe-bind-address=0/);
  } finally {
    holder.close();
  }
});

test("the hint names the address from Go's and Node's words for a taken port, and is empty otherwise", () => {
  const go = listenClashHint(['[1] ERROR setup unable to start manager {"error": "error listening on :8081: listen tcp :8081: bind: address already in use"}']);
  assert.match(go, /^: it could not listen on :8081, /);
  assert.match(listenClashHint(["[0] Error: listen EADDRINUSE: address already in use :::8080"]), /^: it could not listen on :::8080, /);
  assert.equal(listenClashHint(["[0] panic: no kubeconfig"]), "");
});

test("settle drill without a command after -- exits 2 with a usage message", async () => {
  const { code, stderr } = await runCli(["drill", join(repo, "examples/ensemble")], process.cwd());
  assert.equal(code, 2);
  assert.match(stderr, /expects the controller's command after --/);
});

test("settle drill runs a scenario.yaml variant's own command; --json has no token and a failing point leaves an artifact", async () => {
  const dir = mkdtempSync(join(tmpdir(), "settle-drill-cli-"));
  const { code, stdout, stderr } = await runCli(["drill", join(repo, "examples/shell-operator/scenario.yaml"), "--variant", "delta", "--kill-points", "2", "--json", "--artifacts", "out"], dir);
  // A failing point is a finding: exit 1, as settle explore (the delta variant expects one).
  assert.equal(code, 1, stderr);
  const result = JSON.parse(stdout) as { target: { name: string }; runs: Array<{ verdict: string; write: { path: string }; timeline?: unknown; output: string[] }> };
  assert.equal(result.target.name, "shell-operator");
  assert.equal(result.runs[0]?.verdict, "violated");
  assert.equal(result.runs[0]?.write.path.split("?")[0], "/api/v1/namespaces/academy-lab/configmaps");
  assert.equal(result.runs[0]?.timeline, undefined);
  assert.ok(!stdout.includes("/token/") && !stderr.includes("/token/"));
  assert.ok(existsSync(join(dir, "out", "delta-kill-2.json")));
});

test("settle drill on a TypeScript scenario: a finding exits 1 whatever the variant expects, and the last line says it was unexpected", async () => {
  // The first variant (level) expects none; the plain client-node operator given after -- loses work at the kill
  // after write 2 (as in the test above).
  const dir = mkdtempSync(join(tmpdir(), "settle-drill-cli-"));
  const { code, stdout, stderr } = await runCli(
    ["drill", join(repo, "examples/ensemble"), "--param", "userDelayMs=200", "--kill-points", "2", "--quiet-ms", "2500", "--", process.execPath, plainOperator, "--slow-reconcile-ms=50"],
    dir,
  );
  assert.equal(code, 1, stderr);
  assert.match(stdout, /kill after write 2 .*: VIOLATED/);
  assert.equal(stdout.trimEnd().split("\n").at(-1), "a finding; the variant expects none (unexpected)");
});

test("settle drill reports a scenario.yaml error with its file and line, exit 2", async () => {
  const dir = mkdtempSync(join(tmpdir(), "settle-drill-cli-"));
  writeFileSync(join(dir, "scenario.yaml"), "name: broken\nvariants:\n  only: { command: [bash] }\nproperties:\n  - always: bad\n    expr: \"list('ConfigMap') ==\"\n");
  const { code, stderr } = await runCli(["drill", "scenario.yaml"], dir);
  assert.equal(code, 2);
  assert.match(stderr, /settle drill: scenario\.yaml:6:\d+: properties\[0\]\.expr: "list\('ConfigMap'\) ==": /);
});

test("settle drill names a variant's module that does not exist, exit 2 and no stack", async () => {
  const dir = mkdtempSync(join(tmpdir(), "settle-drill-cli-"));
  writeFileSync(join(dir, "scenario.yaml"), "name: nomodule\nvariants:\n  only: { module: op/gone.js }\nproperties:\n  - always: fine\n    expr: \"true\"\n");
  const { code, stderr } = await runCli(["drill", "scenario.yaml", "--variant", "only"], dir);
  assert.equal(code, 2);
  assert.match(stderr, /^settle drill: scenario\.yaml:3:\d+: variants\.only\.module: op\/gone\.js: no such file/);
  assert.doesNotMatch(stderr, /\n\s+at /);
});

test("settle serve --setup scenario.yaml serves the scenario's world", async () => {
  const dir = mkdtempSync(join(tmpdir(), "settle-serve-yaml-"));
  const kubeconfig = join(dir, "kubeconfig");
  const child = spawn(process.execPath, [join(repo, "bin/settle.js"), "serve", "--setup", join(repo, "examples/python-operator/scenario.yaml"), "--kubeconfig-out", kubeconfig], { stdio: "ignore" });
  try {
    const deadline = Date.now() + 15_000;
    while (!existsSync(kubeconfig)) {
      assert.ok(Date.now() < deadline, "the server never wrote its kubeconfig");
      await new Promise((r) => setTimeout(r, 50));
    }
    // The kubeconfig names the server's https:// address (a self-signed certificate); the same port speaks plain
    // HTTP, which fetch can use with the kubeconfig's token as a header.
    const text = readFileSync(kubeconfig, "utf8");
    const server = /server: (\S+)/.exec(text)![1]!.replace(/^https:/, "http:");
    const headers = { authorization: `Bearer ${/token: (\S+)/.exec(text)![1]!}` };
    const response = await fetch(`${server}/apis/academy.settle.dev/v1/namespaces/academy-lab/ensembles/alpha`, { headers });
    assert.equal(response.status, 200);
    const ensemble = (await response.json()) as { spec: { voices: number }; status: { readyVoices: number } };
    assert.deepEqual([ensemble.spec.voices, ensemble.status.readyVoices], [3, 3]);
    // The CRD's transition rule (voices only grow) is enforced with the API server's Status and wording.
    const shrink = await fetch(`${server}/apis/academy.settle.dev/v1/namespaces/academy-lab/ensembles/alpha`, {
      method: "PATCH",
      headers: { ...headers, "content-type": "application/merge-patch+json" },
      body: JSON.stringify({ spec: { voices: 2 } }),
    });
    assert.equal(shrink.status, 422);
    const status = (await shrink.json()) as { reason: string; message: string; details: { causes: Array<{ field: string; reason: string }> } };
    assert.equal(status.reason, "Invalid");
    assert.equal(status.message, 'Ensemble.academy.settle.dev "alpha" is invalid: spec: Invalid value: "object": an ensemble only grows: voices 3 -> 2');
    assert.deepEqual(status.details.causes.map((c) => `${c.field} ${c.reason}`), ["spec FieldValueInvalid"]);
  } finally {
    child.kill("SIGTERM");
  }
});

test("a write the controller makes before its first watch is a point the drill reaches: kill after write 1 of a client-node informer", async () => {
  // Its informer fires the add handler for the initial list's ConfigMap before it opens its watch, and the handler
  // writes. The point used to be armed only once the controller watched: it never came, and the run timed out.
  const dir = mkdtempSync(join(tmpdir(), "settle-drill-list-writer-"));
  const fixture = join(repo, "test/drill/fixtures/list-writer.mjs");
  writeFileSync(
    join(dir, "scenario.yaml"),
    `name: list-writer
variants:
  plain: { command: [${JSON.stringify(process.execPath)}, ${JSON.stringify(fixture)}] }
world:
  manifests:
    - { apiVersion: v1, kind: Namespace, metadata: { name: lab } }
    - { apiVersion: v1, kind: ConfigMap, metadata: { name: a, namespace: lab, labels: { role: source } }, data: { k: v } }
workload:
  - sleep: 200
  - apply: { apiVersion: v1, kind: ConfigMap, metadata: { name: b, namespace: lab, labels: { role: source } }, data: { k: w } }
properties:
  - eventually: every source has its copy
    expr: "list('ConfigMap', 'lab', 'role=source').all(s, get('ConfigMap', 'lab', s.metadata.name + '-copy') != null)"
`,
  );
  const target = yamlDrillTarget(loadYamlScenario(join(dir, "scenario.yaml")), "plain");
  const result = await drill({ target, killPoints: [1], quietMs: 800, timeoutMs: 10_000 });
  assert.equal(result.reference.verdict, "ok", result.reference.detail);
  const run = result.runs[0]!;
  assert.equal(run.verdict, "ok", `${run.detail}\n${(run.output ?? []).join("\n")}`);
  assert.equal(run.write?.path.split("?")[0], "/api/v1/namespaces/lab/configmaps");
  // The handler is not awaited, so the write and the watch leave in one tick: the watch's answer may come within the
  // same whole millisecond as the point, never before it.
  assert.ok(run.timings.faultMs! <= run.timings.firstWatchMs!, `the point (at ${run.timings.faultMs} ms) came no later than the first watch (at ${run.timings.firstWatchMs} ms)`);
  assert.equal(run.applied, "killed the process group with the write's response held");
});
