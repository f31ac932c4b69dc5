// `settle explore` of scenario.yaml files with go: variants: a clean variant explores to exit 0, and bad input exits
// 2 saying what is wrong: no Go toolchain (and the tour skips Go examples with that line), a compile error with the
// compiler's first errors, a package that cannot build for js/wasm named with the import chain that brought it in.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const repo = join(here, "../..");
const yaml = (name: string) => join("test/go/fixtures/yaml", name);

function cli(args: string[], env: NodeJS.ProcessEnv = process.env, cwd = repo) {
  return spawnSync(process.execPath, ["--conditions=settle-source", "--import", import.meta.resolve("tsx"), join(repo, "test/module/cli-entry.ts"), ...args], { cwd, encoding: "utf8", env });
}

test("settle explore runs a go: variant of a scenario.yaml in the simulator", () => {
  const run = cli(["explore", "test/go/fixtures/clientgo/scenario.yaml", "--variant", "level", "--runs", "4", "--workers", "1"]);
  assert.equal(run.status, 0, run.stderr);
  assert.match(run.stdout + run.stderr, /go-clientgo/);
});

test("a Go program's bug is found under a fault, shrunk, and replayed byte for byte, its output shown on request", () => {
  // Findings are written under the working directory: a temporary one.
  const cwd = mkdtempSync(join(tmpdir(), "settle-go-test-"));
  try {
    const found = cli(["explore", join(repo, "test/go/fixtures/clientgo/scenario.yaml"), "--variant", "no-retry", "--first", "--runs", "200", "--workers", "1"], process.env, cwd);
    assert.equal(found.status, 1, found.stdout + found.stderr);
    assert.match(found.stdout, /FINDING silent-divergence: every parent has a child/);
    // The minimal run keeps the fault that shows the bug: a failed request.
    assert.match(found.stdout, /fault\s+fail-request controller/);
    const dir = join(cwd, ".settle/findings/go-clientgo");
    const file = readdirSync(dir).find((name) => name.startsWith("no-retry-") && name.endsWith(".json"));
    assert.ok(file !== undefined, readdirSync(dir).join(", "));
    const replayed = cli(["replay", join(dir, file), "--module-output"], process.env, cwd);
    assert.equal(replayed.status, 1, replayed.stdout + replayed.stderr);
    assert.match(replayed.stdout, /reproduced: same verdict, byte-identical trace/);
    // The program's own stdout, on request: its sync failed and the key was dropped.
    assert.match(replayed.stderr, /sync \w+ failed: /);
  } finally {
    rmSync(cwd, { recursive: true, force: true });
  }
});

test("a TypeScript scenario's goActor (settle/sim) explores on worker threads, which take the main thread's compiled program", () => {
  const run = cli(["explore", "test/go/ts-scenario/scenario.ts", "--runs", "4", "--workers", "2"]);
  assert.equal(run.status, 0, run.stderr);
  assert.match(run.stdout, /go-ts --variant level: 4 runs, no finding/);
});

test("a build the cache does not hold is announced before it starts (minutes for controller-runtime), a cached one is not", () => {
  const cwd = mkdtempSync(join(tmpdir(), "settle-go-build-"));
  try {
    // A cache of its own, empty at first; the program reaches nothing but the API server (mode block waits forever).
    const env = { ...process.env, SETTLE_GO_CACHE: join(cwd, "cache") };
    writeFileSync(
      join(cwd, "scenario.yaml"),
      `name: go-announce\nvariants:\n  main:\n    go: ${join(repo, "test/go/fixtures/basics")}\n    args: [--mode=block]\nworkload:\n  - sleep: 100\nproperties:\n  - eventually: nothing\n    expr: "true"\n`,
    );
    const first = cli(["explore", "scenario.yaml", "--runs", "1", "--workers", "1"], env, cwd);
    assert.match(first.stderr, /settle explore: building scenario\.yaml: variants\.main\.go: \S*test\/go\/fixtures\/basics for js\/wasm with go\S+ \(cached after this; /, first.stderr);
    const second = cli(["explore", "scenario.yaml", "--runs", "1", "--workers", "1"], env, cwd);
    assert.equal(second.status, first.status, second.stderr);
    assert.doesNotMatch(second.stderr, /building/, second.stderr);
  } finally {
    rmSync(cwd, { recursive: true, force: true });
  }
});

test("a compile error exits 2 with the compiler's first errors", () => {
  const run = cli(["explore", yaml("compile-error.yaml")]);
  assert.equal(run.status, 2, run.stderr);
  assert.match(run.stderr, /variant main: go build for js\/wasm of .*badcompile failed:\n# settle\.test\/badcompile\n\.\/main\.go:7:20: cannot use 42 \(untyped int constant\) as string value/);
  assert.doesNotMatch(run.stderr, /\n\s+at /, "no stack trace");
});

test("a package that cannot build for js/wasm exits 2 naming it and the chain of imports that brought it in", () => {
  const syscall = cli(["explore", yaml("syscall.yaml")]);
  assert.equal(syscall.status, 2, syscall.stderr);
  assert.match(syscall.stderr, /package settle\.test\/badwasm\/native cannot build for js\/wasm \(it uses syscall\.Mmap, which js does not have; .*\); imported by settle\.test\/badwasm\/syscallmain -> settle\.test\/badwasm\/probe -> settle\.test\/badwasm\/native/);
  const constraint = cli(["explore", yaml("constraint.yaml")]);
  assert.equal(constraint.status, 2, constraint.stderr);
  assert.match(constraint.stderr, /package settle\.test\/badwasm\/linuxonly cannot build for js\/wasm \(no file for GOOS=js GOARCH=wasm in .*\); imported by settle\.test\/badwasm\/constraintmain -> settle\.test\/badwasm\/linuxonly/);
});

test("without a Go toolchain: exit 2 saying what to install; the tour skips Go examples with that line", () => {
  // PATH holds node's folder only: no `go`.
  const env = { ...process.env, PATH: dirname(process.execPath) };
  const single = cli(["explore", "test/go/fixtures/clientgo/scenario.yaml"], env);
  assert.equal(single.status, 2, single.stderr);
  assert.match(single.stderr, /variant level: no Go toolchain: `go` is not on PATH \(install Go from https:\/\/go\.dev\/dl\/ or your system's packages, 1\.26 being the release settle's js\/wasm overlay is tested with, then check `go version`\)/);
  const tour = cli(["explore", "test/go/fixtures"], env);
  assert.equal(tour.status, 0, tour.stderr);
  assert.match(tour.stderr, /settle explore: test\/go\/fixtures\/clientgo\/scenario\.yaml: skipped, it runs Go programs and there is no Go toolchain: `go` is not on PATH/);
  // A TypeScript scenario's goActor says the same, as bad input.
  const typescript = cli(["explore", "test/go/ts-scenario/scenario.ts"], env);
  assert.equal(typescript.status, 2, typescript.stderr);
  assert.match(typescript.stderr, /^settle explore: no Go toolchain: `go` is not on PATH/m);
  assert.doesNotMatch(typescript.stderr, /unexpected error/);
});
