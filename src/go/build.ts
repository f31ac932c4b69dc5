// A Go main package built for js/wasm with settle's overlay (`go build -overlay`, the toolchain's way to replace
// or add standard-library files for one build): the user's files are left as they are. The build is cached outside
// the user's tree, keyed by the toolchain's version, the overlay's content and the Go module's content (go.mod,
// go.sum, every .go file), and compiled once per process into a `WebAssembly.Module`. Bad input is a `GoBuildError`
// (exit 2 for the CLI): no toolchain, a compile error, a package that cannot build for js/wasm (named with the
// import chain that brought it in).
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { assert } from "../api/assert.ts";

export class GoBuildError extends Error {
  constructor(
    readonly dir: string,
    detail: string,
  ) {
    super(detail);
    this.name = "GoBuildError";
  }
}

/** What to install when `go` is missing, as the CLI and the tour say it. */
export const GO_MISSING = "no Go toolchain: `go` is not on PATH (install Go from https://go.dev/dl/ or your system's packages, 1.26 being the release settle's js/wasm overlay is tested with, then check `go version`)";

/** The toolchain as `go env` reports it. */
export interface GoToolchain {
  readonly version: string;
  readonly goroot: string;
  /** The source of `wasm_exec.js` of this toolchain (it must match the compiler that built the program). */
  readonly wasmExec: string;
}

/** The part of the WebAssembly API settle uses (the TypeScript libraries in use declare none of it). */
export interface WasmModule {
  readonly wasmModule?: never;
}
export interface WasmInstance {
  readonly exports: Record<string, unknown>;
}
interface WasmApi {
  Module: new (bytes: Uint8Array) => WasmModule;
  Instance: new (module: WasmModule, imports: object) => WasmInstance;
}
export const wasmApi = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;

/** A built program: its wasm bytes compiled once per process, and the toolchain's `wasm_exec.js`. */
export interface GoProgram {
  readonly dir: string;
  readonly wasmPath: string;
  readonly module: WasmModule;
  readonly toolchain: GoToolchain;
}

/** Overlay files by the standard-library path they take, relative to GOROOT/src. */
const OVERLAY: ReadonlyArray<{ file: string; goroot: string }> = [
  // Added to package net: in-process dials to the simulated API server, every other address refused and reported.
  { file: "net_settle_js.go", goroot: "net/net_settle_js.go" },
  // Replaces os's hostname for js: an instance's own HOSTNAME instead of the fixed "js".
  { file: "os_hostname_js.go", goroot: "os/sys_bsd.go" },
];

/** Flags of every build (part of the cache key): paths trimmed and no version-control stamp, so a binary depends on its sources only. */
const BUILD_FLAGS = ["-trimpath", "-buildvcs=false"];

/** Lines of the compiler's output a build error shows at most. */
const BUILD_ERROR_LINES_MAX = 20;

/** Go source files hashed into the cache key at most: a bound on a walk that found the wrong folder. */
const MODULE_FILES_MAX = 20_000;

let toolchainCache: GoToolchain | undefined;

/** The `go` on PATH, or `GoBuildError` saying what to install. */
export function goToolchain(dir: string = process.cwd()): GoToolchain {
  if (toolchainCache !== undefined) return toolchainCache;
  const result = spawnSync("go", ["env", "GOVERSION", "GOROOT"], { encoding: "utf8" });
  if (result.error !== undefined || result.status !== 0) throw new GoBuildError(dir, GO_MISSING);
  const [version = "", goroot = ""] = result.stdout.trim().split("\n");
  assert(version.startsWith("go"), "go env reports a version");
  const candidates = [join(goroot, "lib", "wasm", "wasm_exec.js"), join(goroot, "misc", "wasm", "wasm_exec.js")];
  const path = candidates.find((candidate) => existsSync(candidate));
  if (path === undefined) throw new GoBuildError(dir, `the Go toolchain at ${goroot} has no wasm_exec.js (looked in lib/wasm and misc/wasm): reinstall Go`);
  toolchainCache = { version, goroot, wasmExec: readFileSync(path, "utf8") };
  return toolchainCache;
}

/** True when a Go toolchain is on PATH (the tour skips Go examples otherwise). */
export function hasGoToolchain(): boolean {
  try {
    goToolchain();
    return true;
  } catch (error) {
    if (error instanceof GoBuildError) return false;
    throw error;
  }
}

/** The folder settle's overlay sources ship in (beside this file, in src/ and in dist/). */
function overlayDir(): string {
  return fileURLToPath(new URL("./overlay/", import.meta.url));
}

/** Where built programs are kept: `SETTLE_GO_CACHE`, else `$XDG_CACHE_HOME/settle/go`, else `~/.cache/settle/go`. */
export function goCacheDir(): string {
  const explicit = process.env.SETTLE_GO_CACHE;
  if (explicit !== undefined && explicit !== "") return explicit;
  const xdg = process.env.XDG_CACHE_HOME;
  return join(xdg !== undefined && xdg !== "" ? xdg : join(homedir(), ".cache"), "settle", "go");
}

/** The folder holding go.mod, from the package's folder up. */
export function moduleRoot(dir: string): string {
  for (let up = dir; ; up = dirname(up)) {
    if (existsSync(join(up, "go.mod"))) return up;
    if (dirname(up) === up) throw new GoBuildError(dir, `no go.mod in ${dir} or any folder above it (a go: program is a main package inside a Go module)`);
  }
}

/** The module's files that decide the build: go.mod, go.sum, go.work and every .go file (nested modules left out). */
function moduleFiles(root: string): string[] {
  const files: string[] = [];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      if (entry.name.startsWith(".") || entry.name.startsWith("_") || entry.name === "testdata" || entry.name === "node_modules") continue;
      const path = join(dir, entry.name);
      if (entry.isDirectory()) {
        if (!existsSync(join(path, "go.mod"))) walk(path);
      } else if (entry.name.endsWith(".go") || entry.name === "go.mod" || entry.name === "go.sum" || entry.name === "go.work") files.push(path);
      if (files.length > MODULE_FILES_MAX) throw new GoBuildError(root, `the Go module at ${root} has over ${MODULE_FILES_MAX} files (is go.mod in the right folder?)`);
    }
  };
  walk(root);
  return files;
}

/** The cache key of a build: toolchain, overlay, the package's place in its module, the module's content. */
function buildKey(dir: string, toolchain: GoToolchain): string {
  const hash = createHash("sha256");
  hash.update(`${toolchain.version}\n${toolchain.goroot}\n${BUILD_FLAGS.join(" ")}\n`);
  for (const { file, goroot } of OVERLAY) hash.update(`${goroot}\n`).update(readFileSync(join(overlayDir(), file)));
  const root = moduleRoot(dir);
  hash.update(`package ${relative(root, dir)}\n`);
  for (const path of moduleFiles(root)) hash.update(`${relative(root, path)}\n`).update(readFileSync(path));
  return hash.digest("hex").slice(0, 32);
}

/** Programs compiled in this process, by wasm path. */
const compiled = new Map<string, GoProgram>();

/**
 * Builds (or finds in the cache) the main package in `dir` and compiles it; throws `GoBuildError` for bad input.
 * `onBuild` is told before a build the cache does not hold starts (a first build of controller-runtime for js/wasm
 * takes minutes, which a user should not spend looking at a silent terminal).
 */
export function buildGoProgram(dir: string, onBuild?: (toolchain: GoToolchain) => void): GoProgram {
  assert(dir.startsWith("/"), "go program folder is absolute");
  const handed = adopted.get(dir);
  if (handed !== undefined) return handed;
  if (!existsSync(dir) || !statSync(dir).isDirectory()) throw new GoBuildError(dir, `${dir}: no such folder`);
  const toolchain = goToolchain(dir);
  const wasmPath = join(goCacheDir(), `${buildKey(dir, toolchain)}.wasm`);
  const known = compiled.get(wasmPath);
  if (known !== undefined) return known;
  if (!existsSync(wasmPath)) {
    onBuild?.(toolchain);
    runBuild(dir, wasmPath, toolchain);
  }
  const program: GoProgram = { dir, wasmPath, module: new wasmApi.Module(readFileSync(wasmPath)), toolchain };
  compiled.set(wasmPath, program);
  return program;
}

/** Programs another thread built and compiled, by package folder (explore's workers get the main thread's). */
const adopted = new Map<string, GoProgram>();

/** The programs this thread built, to hand to worker threads (a compiled `WebAssembly.Module` crosses threads). */
export function goPrograms(): GoProgram[] {
  return [...compiled.values()];
}

/**
 * Takes the main thread's programs: a worker neither hashes the module nor compiles it again, nor needs the overlay's
 * files (a worker started from a bundle has no folder beside it to find them in).
 */
export function adoptGoPrograms(programs: readonly GoProgram[]): void {
  for (const program of programs) {
    assert(typeof program.dir === "string" && program.module !== undefined, "an adopted go program has a folder and a module");
    adopted.set(program.dir, program);
    compiled.set(program.wasmPath, program);
  }
}

/** `go build` for js/wasm with the overlay, into a temporary file renamed into the cache when complete. */
function runBuild(dir: string, wasmPath: string, toolchain: GoToolchain): void {
  const cache = dirname(wasmPath);
  mkdirSync(cache, { recursive: true });
  const replace: Record<string, string> = {};
  for (const { file, goroot } of OVERLAY) replace[join(toolchain.goroot, "src", goroot)] = join(overlayDir(), file);
  const overlayPath = join(cache, `overlay-${process.pid}.json`);
  writeFileSync(overlayPath, JSON.stringify({ Replace: replace }));
  const partial = `${wasmPath}.${process.pid}.partial`;
  try {
    const result = spawnSync("go", ["build", ...BUILD_FLAGS, `-overlay=${overlayPath}`, "-o", partial, "."], {
      cwd: dir,
      encoding: "utf8",
      env: { ...process.env, GOOS: "js", GOARCH: "wasm", CGO_ENABLED: "0" },
      maxBuffer: 64 * 1024 * 1024,
    });
    if (result.error !== undefined) throw new GoBuildError(dir, GO_MISSING);
    if (result.status !== 0) throw new GoBuildError(dir, describeBuildFailure(dir, result.stderr));
    renameSync(partial, wasmPath);
  } finally {
    rmSync(partial, { force: true });
    rmSync(overlayPath, { force: true });
  }
}

/**
 * The compiler's first errors, said for what they are: a package that cannot build for js/wasm (no file for js, or
 * a system call js does not have), named with the chain of imports that brought it in, or an error in the program.
 */
export function describeBuildFailure(dir: string, stderr: string): string {
  const lines = stderr.split("\n").filter((line) => line.trim() !== "");
  const shown = lines.slice(0, BUILD_ERROR_LINES_MAX).join("\n");
  const more = lines.length > BUILD_ERROR_LINES_MAX ? `\n(${lines.length - BUILD_ERROR_LINES_MAX} more lines)` : "";
  if (/net_settle_js\.go|os_hostname_js\.go/.test(stderr)) {
    return `go build for js/wasm of ${dir} failed in settle's overlay of the standard library, which reaches into package net's js internals: this Go release (${goToolchain(dir).version}) differs from the one it is written for (go1.26); the compiler said:\n${shown}${more}`;
  }
  const excluded = /imports (\S+): build constraints exclude all Go files in (\S+)/.exec(stderr);
  if (excluded !== null) {
    const chain = lines.filter((line) => /^\s*(package|imports) /.test(line)).map((line) => line.trim().replace(/^package /, "").replace(/^imports /, "").replace(/: build constraints.*$/, ""));
    return `go build for js/wasm of ${dir} failed: package ${excluded[1]} cannot build for js/wasm (no file for GOOS=js GOARCH=wasm in ${excluded[2]}; cgo is off); imported by ${chain.join(" -> ")}`;
  }
  const missing = /undefined: ((?:syscall|unix)\.\w+)/.exec(stderr);
  const pkg = /^# (\S+)/m.exec(stderr)?.[1];
  if (missing !== null && pkg !== undefined) {
    const chain = importChain(dir, pkg);
    return `go build for js/wasm of ${dir} failed: package ${pkg} cannot build for js/wasm (it uses ${missing[1]}, which js does not have; settle's overlay supplies no js variant of it); imported by ${chain.join(" -> ")}. The compiler said:\n${shown}${more}`;
  }
  return `go build for js/wasm of ${dir} failed:\n${shown}${more}`;
}

/** Packages of an import graph searched at most for a chain (a bound on a graph of any size). */
const IMPORT_GRAPH_PACKAGES_MAX = 50_000;

/** The shortest chain of imports from the main package in `dir` to `target`, for js/wasm (just the two if unknown). */
function importChain(dir: string, target: string): string[] {
  const result = spawnSync("go", ["list", "-e", "-deps", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "."], {
    cwd: dir,
    encoding: "utf8",
    env: { ...process.env, GOOS: "js", GOARCH: "wasm", CGO_ENABLED: "0" },
    maxBuffer: 64 * 1024 * 1024,
  });
  const imports = new Map<string, string[]>();
  for (const line of (result.stdout ?? "").split("\n").slice(0, IMPORT_GRAPH_PACKAGES_MAX)) {
    const [path, ...deps] = line.trim().split(" ");
    if (path !== undefined && path !== "") imports.set(path, deps.filter((dep) => dep !== ""));
  }
  // `go list -deps` prints the package named last, after everything it imports.
  const main = [...imports.keys()].at(-1);
  if (main === undefined) return [target];
  const previous = new Map<string, string>([[main, ""]]);
  const queue = [main];
  while (queue.length > 0 && !previous.has(target)) {
    const at = queue.shift()!;
    for (const dep of imports.get(at) ?? []) {
      if (previous.has(dep)) continue;
      previous.set(dep, at);
      queue.push(dep);
    }
  }
  if (!previous.has(target)) return [main, target];
  const chain = [target];
  for (let at = previous.get(target)!; at !== ""; at = previous.get(at)!) chain.unshift(at);
  return chain;
}
