#!/usr/bin/env node
// Node 20's test runner does not expand globs, so this collects the test files itself and hands them to
// `node --test` with tsx loaded. Usage: run-tests.mjs <dir> [extra node --test flags...]
import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { spawnSync } from "node:child_process";

const [dir = "test", ...flags] = process.argv.slice(2);

function collect(path) {
  if (statSync(path).isDirectory()) {
    // Fixtures are other projects' files (a user project's own test among them), not this repository's tests.
    if (path.endsWith("fixtures")) return [];
    return readdirSync(path).sort().flatMap((entry) => collect(join(path, entry)));
  }
  return path.endsWith(".test.ts") ? [path] : [];
}

const files = collect(dir);
if (files.length === 0) {
  console.error(`run-tests: no *.test.ts files under ${dir}`);
  process.exit(2);
}
// `--conditions=settle-source` makes the package's self-reference (`settle`, `settle/sim`, as the examples
// import it) resolve to the same TypeScript sources the tests import, so a process holds one copy of each
// module. Tests that spawn the CLI run the compiled dist/, which `npm test` builds first.
const args = ["--conditions=settle-source", "--import", "tsx", "--test", ...flags, ...files];
const result = spawnSync(process.execPath, args, { stdio: "inherit" });
process.exit(result.status ?? 1);
