// Determinism of the framework examples across processes: the same seeds give the same trace hashes in two
// processes running side by side (each loading the other). Pinned seeds; the bench's `module-determinism` section
// checks 1,000 seeds of each example with one process beside a CPU burner.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const here = fileURLToPath(new URL(".", import.meta.url));
const repo = join(here, "../..");

function hashes(examples: string, first: number, count: number): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--conditions=settle-source", "--import", "tsx", join(here, "hashes-entry.ts"), examples, String(first), String(count)], { cwd: repo });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString("utf8")));
    child.stderr.on("data", (chunk: Buffer) => (stderr = (stderr + chunk.toString("utf8")).slice(-4000)));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

test("framework examples: three pinned seeds each give the same trace hashes in two processes run side by side", async () => {
  const runs = await Promise.all([0, 1].map(() => hashes("client-node,dot-i-operator", 11, 3)));
  for (const run of runs) assert.equal(run.code, 0, run.stderr);
  const [first, second] = runs.map((run) => run.stdout.trim().split("\n"));
  // Both examples, both variants, every seed: the hashes cover real runs of each.
  assert.equal(first!.length, 6, first!.join("\n"));
  for (const line of first!) assert.match(line, /^(client-node|dot-i-operator) (delta|level) \d+ [0-9a-f]{64}$/);
  assert.deepEqual(new Set(first!.map((line) => line.split(" ").slice(0, 2).join(" "))).size, 4);
  assert.deepEqual(second, first);
});
