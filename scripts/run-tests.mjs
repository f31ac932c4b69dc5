#!/usr/bin/env node
// Node 20's test runner does not expand globs, so this collects the test files itself and hands them to
// `node --test` with tsx loaded. Usage: run-tests.mjs <dir> [extra node --test flags...]
//
// The runner runs one file at a time (its default concurrency on a 2-core machine), and most files spend much of
// their time waiting on real processes and real time, so the second core sits mostly idle. Sweep files
// (`*.sweep.test.ts`: long, CPU-only, deterministic runs in virtual time, with no real clock, port or process
// whose timing they depend on) therefore run in a second `node --test` beside the others, at the lowest
// priority, so that they take only the time the others leave. Their output follows the others'; the exit status
// is the first failure's.
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { spawn } from "node:child_process";

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
const isSweep = (file) => file.endsWith(".sweep.test.ts");
const sweeps = files.filter(isSweep);
const others = files.filter((file) => !isSweep(file));

// `--conditions=settle-source` makes the package's self-reference (`settle`, `settle/sim`, as the examples
// import it) resolve to the same TypeScript sources the tests import, so a process holds one copy of each
// module. Tests that spawn the CLI run the compiled dist/, which `npm test` builds first.
// The Go toolchain of these machines lives in /usr/local/go/bin, which a fresh login's PATH may not name: the tests
// that build Go programs find it there as a newcomer's `go version` would after following Go's install guide.
const goBin = "/usr/local/go/bin";
const onPath = (process.env.PATH ?? "").split(":").some((dir) => existsSync(join(dir, "go")));
if (!onPath && existsSync(join(goBin, "go"))) process.env.PATH = `${process.env.PATH ?? ""}:${goBin}`;

const nodeTest = (list) => [process.execPath, "--conditions=settle-source", "--import", "tsx", "--test", ...flags, ...list];

/** Runs `argv`; with `captured`, its output is kept and handed back instead of shown. Resolves to its exit status. */
function run(argv, captured) {
  return new Promise((resolve) => {
    const child = spawn(argv[0], argv.slice(1), { stdio: captured === undefined ? "inherit" : ["ignore", "pipe", "pipe"] });
    if (captured !== undefined) {
      child.stdout.on("data", (chunk) => captured.push(chunk));
      child.stderr.on("data", (chunk) => captured.push(chunk));
    }
    child.on("error", (error) => {
      captured?.push(Buffer.from(`run-tests: ${argv[0]}: ${error.message}\n`));
      resolve(1);
    });
    child.on("close", (code, signal) => resolve(code ?? (signal === null ? 1 : 128)));
  });
}

if (sweeps.length === 0 || others.length === 0) {
  process.exit(await run(nodeTest(files)));
}
const sweepOutput = [];
// `nice` (coreutils) sets the priority before node starts, so every thread of the sweep, worker threads included, inherits it.
const sweepDone = run(["nice", "-n", "19", ...nodeTest(sweeps)], sweepOutput);
const othersStatus = await run(nodeTest(others));
const sweepStatus = await sweepDone;
process.stdout.write(`# run-tests: the ${sweeps.length} sweep file(s) run beside the others: ${sweeps.join(", ")}\n`);
process.stdout.write(Buffer.concat(sweepOutput));
process.exit(othersStatus !== 0 ? othersStatus : sweepStatus);
