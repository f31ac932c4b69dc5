import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync, cpSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const repo = fileURLToPath(new URL("../..", import.meta.url));
const bin = join(repo, "bin/settle.js");
const ensembleDir = join(repo, "examples/ensemble");
const root = mkdtempSync(join(tmpdir(), "settle-bugs-"));
const settle = (args: string[]) => spawnSync(process.execPath, [bin, ...args], { cwd: root, encoding: "utf8" });

test("an unknown --param exits 2 with a message, not an uncaught TypeError and exit 1", () => {
  const ran = settle(["explore", ensembleDir, "--param", "nodes=3", "--runs", "1"]);
  assert.equal(ran.status, 2, ran.stderr);
  assert.match(ran.stderr, /unknown param "nodes"/);
});

test("a --param of the wrong type exits 2", () => {
  const ran = settle(["explore", ensembleDir, "--param", "resyncMs=soon", "--runs", "1"]);
  assert.equal(ran.status, 2, ran.stderr);
});

function replayCopy(edit: (d: Record<string, unknown>) => void): string {
  settle(["explore", ensembleDir, "--variant", "delta", "--runs", "5", "--workers", "1"]);
  const dir = join(root, ".settle/findings/ensemble");
  const name = readdirSync(dir).find((n) => n.endsWith(".json"))!;
  const data = JSON.parse(readFileSync(join(dir, name), "utf8")) as Record<string, unknown>;
  edit(data);
  const target = join(root, "edited.json");
  writeFileSync(target, JSON.stringify(data));
  cpSync(join(dir, name.replace(/\.json$/, ".trace.jsonl")), join(root, "edited.trace.jsonl"));
  return target;
}

test("a replay file with a negative choice index exits 2 naming the field, not an assertion crash with exit 1", () => {
  const ran = settle(["replay", replayCopy((d) => (d.choices = [[3, -1]]))]);
  assert.equal(ran.status, 2, ran.stderr);
  assert.match(ran.stderr, /choices/);
});

test("a replay whose run still finds silent divergence never exits 0 (no finding)", () => {
  const ran = settle(["replay", replayCopy((d) => (d.verdict = "ok")), "--json"]);
  const answer = JSON.parse(ran.stdout) as { verdict: string };
  assert.equal(answer.verdict, "silent-divergence");
  assert.notEqual(ran.status, 0);
});
