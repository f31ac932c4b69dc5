// `settle explore` of scenario.yaml files with go: variants: a clean variant explores to exit 0, and bad input exits
// 2 saying what is wrong: no Go toolchain (and the tour skips Go examples with that line), a compile error with the
// compiler's first errors, a package that cannot build for js/wasm named with the import chain that brought it in.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const repo = join(here, "../..");
const yaml = (name: string) => join("test/go/fixtures/yaml", name);

function cli(args: string[], env: NodeJS.ProcessEnv = process.env) {
  return spawnSync(process.execPath, ["--conditions=settle-source", "--import", import.meta.resolve("tsx"), join(repo, "test/module/cli-entry.ts"), ...args], { cwd: repo, encoding: "utf8", env });
}

test("settle explore runs a go: variant of a scenario.yaml in the simulator", () => {
  const run = cli(["explore", "test/go/fixtures/clientgo/scenario.yaml", "--variant", "level", "--runs", "4", "--workers", "1"]);
  assert.equal(run.status, 0, run.stderr);
  assert.match(run.stdout + run.stderr, /go-clientgo/);
});

test("a TypeScript scenario's goActor (settle/sim) explores on worker threads, which take the main thread's compiled program", () => {
  const run = cli(["explore", "test/go/ts-scenario/scenario.ts", "--runs", "4", "--workers", "2"]);
  assert.equal(run.status, 0, run.stderr);
  assert.match(run.stdout, /go-ts --variant level: 4 runs, no finding/);
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
