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

test("settle serve on a port already in use exits 2 naming the address and what to do, not an uncaught error and exit 1", async () => {
  const { createServer } = await import("node:net");
  const taken = createServer();
  await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
  const port = (taken.address() as { port: number }).port;
  try {
    const { spawn } = await import("node:child_process");
    const child = spawn(process.execPath, [bin, "serve", "--port", String(port)], { cwd: root });
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const status = await new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
    assert.equal(status, 2, stderr);
    assert.match(stderr, new RegExp(`cannot listen on 127\\.0\\.0\\.1:${port}: port ${port} is in use \\(EADDRINUSE\\)`));
    assert.doesNotMatch(stderr, /node:net|at Server/);
  } finally {
    taken.close();
  }
});

test("an error settle did not expect exits 2 with its stack, never 1 (which scripts read as a finding)", () => {
  // A file system that fails in a way no command checks for: the command's error reaches main.
  const script = [
    `import fs from "node:fs"; import { syncBuiltinESMExports } from "node:module";`,
    `fs.readdirSync = () => { throw new RangeError("disk on fire"); }; syncBuiltinESMExports();`,
    `const { main } = await import(${JSON.stringify(join(repo, "dist/cli/main.js"))});`,
    `process.exitCode = await main(["explore", ${JSON.stringify(join(repo, "examples"))}, "--runs", "1"]);`,
  ].join("\n");
  const ran = spawnSync(process.execPath, ["--input-type=module", "-e", script], { cwd: root, encoding: "utf8" });
  assert.equal(ran.status, 2, ran.stderr);
  assert.match(ran.stderr, /settle explore: unexpected error .*\nRangeError: disk on fire\n {4}at /);
});
