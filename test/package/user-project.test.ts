// settle as a new user gets it: `npm pack`, then an ES-module project and a CommonJS project (what `npm init -y`
// writes) that install only the tarball, with a small controller whose buggy variant loses a change and whose
// fixed variant keeps it (test/fixtures/user-project). In each, `npx settle explore` must find the bug and pass
// the fix, and `node --import settle/register --test` with settle/test must fail on the bug with the report in
// its output and pass on the fix; a scenario whose property throws and a YAML scenario with a misspelled CEL
// function must each exit 2 with the message and the location. This is the whole install path: compiled dist/, exports, bin, the scoped
// TypeScript loader and one copy of settle's modules per process.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync, type SpawnSyncReturns } from "node:child_process";
import { cpSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const repo = fileURLToPath(new URL("../../", import.meta.url));
const fixture = fileURLToPath(new URL("../fixtures/user-project/", import.meta.url));
const root = mkdtempSync(join(tmpdir(), "settle-user-project-"));
after(() => rmSync(root, { recursive: true, force: true }));

function run(command: string, args: string[], cwd: string, env: Record<string, string> = {}): SpawnSyncReturns<string> {
  // NODE_TEST_CONTEXT would tell the user's `node --test` that it runs inside this test and make it skip its files.
  const { NODE_TEST_CONTEXT: _, ...inherited } = process.env;
  return spawnSync(command, args, { cwd, encoding: "utf8", env: { ...inherited, ...env, NODE_OPTIONS: "" }, timeout: 240_000 });
}

function ok(result: SpawnSyncReturns<string>, what: string): string {
  assert.equal(result.status, 0, `${what} failed:\n${result.stdout}\n${result.stderr}`);
  return result.stdout;
}

let tarball = "";
before(() => {
  // prepack builds dist/ first, so the tarball holds what this tree compiles to.
  ok(run("npm", ["pack", "--silent", "--pack-destination", root], repo), "npm pack");
  tarball = join(root, readdirSync(root).find((name) => name.endsWith(".tgz"))!);
});

function project(type: "module" | "commonjs"): string {
  const dir = join(root, type);
  cpSync(fixture, dir, { recursive: true });
  writeFileSync(join(dir, "package.json"), JSON.stringify({ name: `user-${type}`, version: "1.0.0", private: true, type }, null, 2));
  ok(run("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline", tarball], dir), `npm install in the ${type} project`);
  return dir;
}

for (const type of ["module", "commonjs"] as const) {
  test(`in a ${type} project, npx settle explore finds the bug and passes the fix, and settle/test fails with the report`, { timeout: 600_000 }, () => {
    const dir = project(type);
    const buggy = run("npx", ["settle", "explore", "scenario.ts", "--variant", "buggy", "--runs", "10", "--workers", "2"], dir);
    assert.equal(buggy.status, 1, buggy.stderr);
    assert.match(buggy.stdout, /FINDING silent-divergence: the copy has the source's data/);
    const fixed = run("npx", ["settle", "explore", "scenario.ts", "--variant", "fixed", "--runs", "10", "--workers", "2"], dir);
    assert.equal(fixed.status, 0, `${fixed.stdout}\n${fixed.stderr}`);
    assert.match(fixed.stdout, /mirror --variant fixed: 10 runs, no finding/);

    // The scenario's own mistakes are reported as such (exit 2), with the message and the user's file:line.
    const throwing = run("npx", ["settle", "explore", "throwing.scenario.ts", "--runs", "3", "--workers", "1"], dir);
    assert.equal(throwing.status, 2, `${throwing.stdout}\n${throwing.stderr}`);
    assert.match(throwing.stdout, /SCENARIO ERROR/);
    assert.match(throwing.stdout, /property "the property reads a field of nothing" threw: boom: a bug in the property \(at throwing\.scenario\.ts:13:13\)/);
    const typo = run("npx", ["settle", "drill", "typo.scenario.yaml", "--", "true"], dir);
    assert.equal(typo.status, 2, `${typo.stdout}\n${typo.stderr}`);
    assert.match(typo.stderr, /typo\.scenario\.yaml:10:11: properties\[0\]\.expr: .*unknown function lenght\(\)/);

    const testBuggy = run(process.execPath, ["--import", "settle/register", "--test", "mirror.test.ts"], dir, { MIRROR_VARIANT: "buggy" });
    assert.equal(testBuggy.status, 1, testBuggy.stderr);
    assert.match(testBuggy.stdout, /not ok 1 - the buggy mirror keeps the copy equal to its source/);
    assert.match(testBuggy.stdout, /FINDING silent-divergence: the copy has the source's data/);
    assert.match(testBuggy.stdout, /replay: npx settle replay \S+buggy-\w+\.json/);
    const testFixed = run(process.execPath, ["--import", "settle/register", "--test", "mirror.test.ts"], dir, { MIRROR_VARIANT: "fixed" });
    assert.equal(testFixed.status, 0, `${testFixed.stdout}\n${testFixed.stderr}`);
  });
}
