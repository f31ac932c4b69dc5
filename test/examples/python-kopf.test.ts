// examples/python-kopf: the kopf operator's pytest suite (kopf.testing.KopfRunner against a `settle serve` its
// fixture starts) passes, with kopf and pytest as requirements.txt pins them, in the virtual environment
// scripts/python-kopf-venv.sh makes (`npm test` makes it before the tests; made here when missing). This needs Python 3
// with venv and pip, and PyPI or pip's cache the first time.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const repo = fileURLToPath(new URL("../../", import.meta.url));
const venvPython = join(repo, "node_modules", ".cache", "settle-kopf-venv", "bin", "python");

test("examples/python-kopf: the pytest suite passes against settle serve", { timeout: 600_000 }, () => {
  const venv = spawnSync("bash", [join(repo, "scripts", "python-kopf-venv.sh")], { encoding: "utf8" });
  assert.equal(venv.status, 0, `scripts/python-kopf-venv.sh (needs Python 3 with venv and pip): ${venv.stderr}`);
  const result = spawnSync(venvPython, ["-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"], {
    cwd: join(repo, "examples", "python-kopf"),
    env: { ...process.env, SETTLE: `${process.execPath} ${join(repo, "bin", "settle.js")}` },
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024,
  });
  const output = `${result.stdout}\n${result.stderr}`;
  assert.equal(result.status, 0, output.slice(-8000));
  assert.match(output, /\b3 passed\b/);
});
