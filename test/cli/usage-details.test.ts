// Small things a first hour meets: a negative number after an option gets the option's own message, the help's
// tour figure is the one the tour runs, and a failing reference run counts among the runs asked for.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parse, intOption, UsageError } from "../../src/cli/args.ts";
import { exploreUsage } from "../../src/cli/explore.ts";
import { expectationLine } from "../../src/cli/expectation.ts";

const repo = fileURLToPath(new URL("../../", import.meta.url));

test("--runs -5 gets the same clean message as --runs=-5, and -- ends the joining", () => {
  for (const argv of [["--runs", "-5"], ["--runs=-5"]]) {
    const { values } = parse(argv, { runs: { type: "string" } });
    assert.throws(() => intOption(values, "runs", 1, 1), (error: Error) => error instanceof UsageError && error.message === '--runs expects an integer >= 1, got "-5"');
  }
  const { values, positionals } = parse(["a", "--runs", "3", "--", "--runs", "-5"], { runs: { type: "string" } });
  assert.equal(values.runs, "3");
  assert.deepEqual(positionals, ["a", "--runs", "-5"]);
});

test("explore --help gives fixed variants the tour's 100 runs, as the README and the run say", () => {
  assert.match(exploreUsage, /each fixed variant \(expect: ok\) gets a sweep of 100 runs/);
  assert.doesNotMatch(exploreUsage, /200 runs/);
});

test("with zero fault points and a failing reference run, --runs 20 reports 20 runs", () => {
  const cwd = mkdtempSync(join(tmpdir(), "settle-runs-"));
  try {
    const canary = join(repo, "test", "fixtures", "canary");
    const ran = spawnSync(process.execPath, [join(repo, "bin", "settle.js"), "explore", canary, "--variant", "always-false", "--runs", "20", "--workers", "1", "--json"], { cwd, encoding: "utf8" });
    assert.equal(ran.status, 1, ran.stderr);
    const summary = JSON.parse(ran.stdout) as { runs: number; stats: { faultPoints: number } };
    assert.equal(summary.stats.faultPoints, 0);
    assert.equal(summary.runs, 20);
  } finally {
    rmSync(cwd, { recursive: true, force: true });
  }
});

test("list-examples in a project without ./examples says where the examples are, every message a whole line", () => {
  const cwd = mkdtempSync(join(tmpdir(), "settle-list-"));
  try {
    const bin = join(repo, "bin", "settle.js");
    const missing = spawnSync(process.execPath, [bin, "list-examples"], { cwd, encoding: "utf8" });
    assert.equal(missing.status, 2);
    assert.match(missing.stderr, /^settle list-examples: examples: no such directory \(the bundled examples are in settle's source repository, not in the npm package/);
    assert.ok(missing.stderr.endsWith("\n"));
    const empty = spawnSync(process.execPath, [bin, "list-examples", "."], { cwd, encoding: "utf8" });
    assert.equal(empty.status, 0);
    assert.equal(empty.stderr, "no example scenarios under .\n");
    mkdirSync(join(cwd, "mine"));
    symlinkSync(join(repo, "test", "fixtures", "canary"), join(cwd, "mine", "canary"), "dir");
    const listed = spawnSync(process.execPath, [bin, "list-examples", "mine"], { cwd, encoding: "utf8" });
    assert.equal(listed.status, 0, listed.stderr);
    assert.ok(listed.stdout.length > 0 && listed.stdout.endsWith("\n"));
  } finally {
    rmSync(cwd, { recursive: true, force: true });
  }
});

test("explore --variant ends with whether the outcome is the one the variant expects, as the drill does", () => {
  const cwd = mkdtempSync(join(tmpdir(), "settle-expect-"));
  try {
    const canary = join(repo, "test", "fixtures", "canary");
    const run = (variant: string) => spawnSync(process.execPath, [join(repo, "bin", "settle.js"), "explore", canary, "--variant", variant, "--runs", "3", "--workers", "1"], { cwd, encoding: "utf8" });
    const found = run("always-false");
    assert.equal(found.status, 1, found.stderr);
    assert.equal(found.stdout.trimEnd().split("\n").at(-1), "a finding; the variant expects a finding");
    const clean = run("healthy");
    assert.equal(clean.status, 0, clean.stderr);
    assert.equal(clean.stdout.trimEnd().split("\n").at(-1), "no finding; the variant expects none");
  } finally {
    rmSync(cwd, { recursive: true, force: true });
  }
  assert.equal(expectationLine(false, "finding"), "no finding; the variant expects a finding (unexpected)");
  assert.equal(expectationLine(true, "ok"), "a finding; the variant expects none (unexpected)");
});
