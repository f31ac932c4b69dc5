import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { GoBuildError, nativeGoBinary } from "../../src/drill/go-build.ts";
import { yamlDrillTarget } from "../../src/drill/yaml-target.ts";
import { loadYamlScenario } from "../../src/scenario-yaml/index.ts";

// A go: variant under the drill: a native build of the package, cached outside the user's tree, and the two ways it
// fails before anything is drilled (no toolchain, a compile error), each an exit code 2 saying what to do.
const repo = fileURLToPath(new URL("../..", import.meta.url));

const scenarioYaml = `name: go-fixture
variants:
  only:
    go: ./cmd
    args: [--flag]
    expect: ok
world:
  manifests:
    - { apiVersion: v1, kind: Namespace, metadata: { name: lab } }
properties:
  - always: a namespace
    expr: "get('Namespace', '', 'lab') != null"
`;

/** A scenario folder with a Go module whose main package (cmd/) is `main`. */
function goProject(main: string, scenario = scenarioYaml): string {
  const dir = mkdtempSync(join(tmpdir(), "settle-go-build-"));
  writeFileSync(join(dir, "go.mod"), "module example.com/fixture\n\ngo 1.22\n");
  mkdirSync(join(dir, "cmd"));
  writeFileSync(join(dir, "cmd", "main.go"), main);
  writeFileSync(join(dir, "scenario.yaml"), scenario);
  return dir;
}

const printsItsArgs = `package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Println(os.Getenv("POD_NAME"), os.Args[1:])
}
`;

/** `settle ...args` with the given environment; resolves once it exits. */
function settle(args: readonly string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, [join(repo, "bin/settle.js"), ...args], { env, stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) => child.on("exit", (code) => resolve({ code, stderr })));
}

test("a go: variant's command is its native build, with the variant's args; the build is cached by the module's content", { timeout: 300_000 }, () => {
  const dir = goProject(printsItsArgs);
  const cacheDir = join(dir, ".cache-outside");
  const builds: string[] = [];
  const first = nativeGoBinary({ dir: join(dir, "cmd"), label: "fixture", cacheDir, onBuild: (line) => builds.push(line) });
  assert.equal(builds.length, 1);
  assert.ok(first.startsWith(cacheDir), first);
  assert.equal(spawnSync(first, ["a"], { encoding: "utf8" }).stdout, " [a]\n");
  const again = nativeGoBinary({ dir: join(dir, "cmd"), label: "fixture", cacheDir, onBuild: (line) => builds.push(line) });
  assert.equal(again, first);
  assert.equal(builds.length, 1, "the same module's content is a cache hit");
  writeFileSync(join(dir, "cmd", "main.go"), printsItsArgs.replace("fmt.Println(", 'fmt.Println("edited",'));
  const edited = nativeGoBinary({ dir: join(dir, "cmd"), label: "fixture", cacheDir, onBuild: (line) => builds.push(line) });
  assert.notEqual(edited, first);
  assert.equal(builds.length, 2, "an edit builds again");
  assert.equal(spawnSync(edited, [], { encoding: "utf8" }).stdout, "edited  []\n");
});

test("a module a local replace directive brings in is part of the cache key: an edit there builds again", { timeout: 300_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), "settle-go-replace-"));
  mkdirSync(join(dir, "lib"));
  writeFileSync(join(dir, "lib", "go.mod"), "module example.com/lib\n\ngo 1.22\n");
  writeFileSync(join(dir, "lib", "lib.go"), 'package lib\n\nconst Word = "one"\n');
  mkdirSync(join(dir, "app"));
  writeFileSync(join(dir, "app", "go.mod"), "module example.com/app\n\ngo 1.22\n\nrequire example.com/lib v0.0.0\n\nreplace example.com/lib => ../lib\n");
  writeFileSync(join(dir, "app", "main.go"), 'package main\n\nimport (\n\t"fmt"\n\n\t"example.com/lib"\n)\n\nfunc main() { fmt.Println(lib.Word) }\n');
  const cacheDir = join(dir, ".cache-outside");
  const first = nativeGoBinary({ dir: join(dir, "app"), label: "fixture", cacheDir });
  assert.equal(spawnSync(first, [], { encoding: "utf8" }).stdout, "one\n");
  writeFileSync(join(dir, "lib", "lib.go"), 'package lib\n\nconst Word = "two"\n');
  const second = nativeGoBinary({ dir: join(dir, "app"), label: "fixture", cacheDir });
  assert.notEqual(second, first);
  assert.equal(spawnSync(second, [], { encoding: "utf8" }).stdout, "two\n");
});

test("replicas: 2 runs two instances of the Go program in one process group, each with its own POD_NAME", { timeout: 300_000 }, () => {
  // Each instance prints its line and lingers a moment, so both have printed before the first exit ends the group.
  const lingers = printsItsArgs.replace('"os"', '"os"\n\t"time"').replace("fmt.Println(os.Getenv", "defer time.Sleep(time.Second)\n\tfmt.Println(os.Getenv");
  const dir = goProject(lingers, scenarioYaml.replace("    expect: ok", "    replicas: 2\n    expect: ok"));
  process.env.SETTLE_CACHE_DIR = join(dir, ".cache-outside");
  try {
    const target = yamlDrillTarget(loadYamlScenario(join(dir, "scenario.yaml")), "only");
    const [file, ...args] = target.command!;
    assert.equal(file, "bash");
    const result = spawnSync(file!, args, { encoding: "utf8" });
    assert.equal(result.status, 0, result.stderr);
    assert.deepEqual(result.stdout.trim().split("\n").sort(), ["controller-0 [--flag]", "controller-1 [--flag]"]);
  } finally {
    delete process.env.SETTLE_CACHE_DIR;
  }
});

test("a compile error: settle drill exits 2 with the compiler's first errors, naming the variant's go: field", { timeout: 300_000 }, async () => {
  const dir = goProject("package main\n\nfunc main() {\n\tundefinedThing()\n}\n");
  const { code, stderr } = await settle(["drill", join(dir, "scenario.yaml")], { ...process.env, SETTLE_CACHE_DIR: join(dir, ".cache-outside") });
  assert.equal(code, 2, stderr);
  assert.match(stderr, /variants\.only\.go: \.\/cmd: go build \.\/cmd .*failed, exit 1; the compiler's first errors:/);
  assert.match(stderr, /cmd\/main\.go:4:2: undefined: undefinedThing/);
});

test("no Go toolchain: settle drill exits 2 saying what to install", { timeout: 120_000 }, async () => {
  const dir = goProject(printsItsArgs);
  // PATH holds only this Node.js's folder (no go); settle itself is started by its path.
  const { code, stderr } = await settle(["drill", join(dir, "scenario.yaml")], { ...process.env, PATH: dirname(process.execPath), SETTLE_CACHE_DIR: join(dir, ".cache-outside") });
  assert.equal(code, 2, stderr);
  assert.match(stderr, /variants\.only\.go: \.\/cmd: no Go toolchain: `go` is not on PATH\. Install Go 1\.22 or newer/);
});

test("the build's failure is a GoBuildError (a scenario error, never a finding)", { timeout: 300_000 }, () => {
  const dir = goProject("package main\n\nfunc main() { return 1 }\n");
  assert.throws(() => nativeGoBinary({ dir: join(dir, "cmd"), label: "fixture", cacheDir: join(dir, ".cache-outside") }), (error: unknown) => error instanceof GoBuildError && /too many return values/.test(error.message));
});
