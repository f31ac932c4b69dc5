// `settle init` scaffolds a scenario and a test that work as written: from a CRD, the scenario creates the CRD
// and a sample object valid under its schema, changes its spec, and explores clean with the placeholder
// reconciler; the written test passes under node's test runner. Spawns the compiled CLI (npm test builds it).
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const repo = fileURLToPath(new URL("../../", import.meta.url));
const crd = fileURLToPath(new URL("../fixtures/crd/widgets.yaml", import.meta.url));
const bin = join(repo, "bin", "settle.js");

/** A user project whose node_modules/settle is this repository, as an install of the package would be. */
function project(): string {
  const dir = mkdtempSync(join(tmpdir(), "settle-init-"));
  after(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "user", private: true, type: "module" }));
  mkdirSync(join(dir, "node_modules"));
  symlinkSync(repo, join(dir, "node_modules", "settle"), "dir");
  return dir;
}

const settle = (cwd: string, args: string[]) => spawnSync(process.execPath, [bin, ...args], { cwd, encoding: "utf8" });

test("init --crd writes a scenario with the CRD, a valid sample and a spec change, which explores clean", () => {
  const dir = project();
  const init = settle(dir, ["init", "--crd", crd]);
  assert.equal(init.status, 0, init.stderr);
  assert.match(init.stdout, /Wrote settle\/scenario\.ts and settle\/scenario\.test\.ts: a scenario with a Widget/);
  assert.match(init.stdout, /npx settle explore settle --runs 200/);
  const scenario = readFileSync(join(dir, "settle", "scenario.ts"), "utf8");
  assert.match(scenario, /"kind":"Widget","metadata":\{"name":"sample","namespace":"default"\},"spec":\{"replicas":1,"size":"small"\}/);
  assert.match(scenario, /patch: \{"spec":\{"replicas":2\}\}/);
  const explored = settle(dir, ["explore", "settle", "--runs", "8", "--workers", "2"]);
  assert.equal(explored.status, 0, `${explored.stdout}\n${explored.stderr}`);
  assert.match(explored.stdout, /widget --variant main: 8 runs, no finding;.* ran in \d+\.\d s$/m);
  assert.match(explored.stdout, /eventually status\.observedGeneration == metadata\.generation: failed 0 of 8 checks/);
});

test("the scaffolded test passes under node's test runner with settle/register", () => {
  const dir = project();
  assert.equal(settle(dir, ["init"]).status, 0);
  const { NODE_TEST_CONTEXT: _, ...env } = process.env;
  const run = spawnSync(process.execPath, ["--import", "settle/register", "--test", "settle/scenario.test.ts"], { cwd: dir, encoding: "utf8", env: { ...env, NODE_OPTIONS: "" } });
  assert.equal(run.status, 0, `${run.stdout}\n${run.stderr}`);
  assert.match(run.stdout, /# pass 1/);
});

test("init refuses a file without a CRD, and existing files without --force, writing nothing", () => {
  const dir = project();
  const notCrd = join(dir, "cm.yaml");
  writeFileSync(notCrd, "apiVersion: v1\nkind: ConfigMap\nmetadata: { name: x }\n");
  const bad = settle(dir, ["init", "--crd", notCrd]);
  assert.equal(bad.status, 2);
  assert.match(bad.stderr, /--crd: .*cm\.yaml: no document of kind CustomResourceDefinition/);
  assert.equal(existsSync(join(dir, "settle")), false);
  assert.equal(settle(dir, ["init"]).status, 0);
  const again = settle(dir, ["init"]);
  assert.equal(again.status, 2);
  assert.match(again.stderr, /settle\/scenario\.ts, settle\/scenario\.test\.ts already exist \(--force overwrites\)/);
});

test("a CRD whose schema drops status writes gets no observedGeneration stub: the API server would prune it", async () => {
  const { readCrd } = await import("../../src/cli/init.ts");
  const dir = project();
  const text = readFileSync(crd, "utf8");
  const withStatus = readCrd(crd);
  assert.equal(withStatus.statusSubresource, true, "the fixture declares status.observedGeneration");
  // The same CRD with a schema that declares only spec: status.observedGeneration would be pruned on every write.
  const pruning = join(dir, "pruning.yaml");
  writeFileSync(pruning, text.replace(/\n( +)status:\n(\1 .*\n)*/, "\n"));
  assert.doesNotMatch(readFileSync(pruning, "utf8"), /observedGeneration/);
  assert.equal(readCrd(pruning).statusSubresource, false);
});
