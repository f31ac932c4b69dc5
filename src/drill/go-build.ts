// A `go:` variant under the drill: a native build of the Go main package, cached outside the user's tree, run as the
// variant's command. The cache key is the toolchain's version and environment, the package's place in its module
// and the module's content (every file the build could read), so an edit or another Go version builds again and
// anything else reuses the binary: a controller-runtime program takes a minute of CPU to build cold.
//
// Invariants:
// - The user's tree is only read: the binary and the build's temporary output live under the cache directory.
// - A cache entry is complete or absent: the build writes to a temporary name and renames it into place.
// - Every failure is a `GoBuildError` whose message says what to do (install Go, fix the compile error).
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from "node:fs";
import { basename, join, relative, resolve, sep } from "node:path";
import { assert } from "../api/assert.ts";
import { moduleRoot as goModuleRoot, settleCacheRoot } from "../go/build.ts";

/** Files of a module hashed for the cache key at most; a larger tree is not a controller's module. */
const moduleFilesMax = 20_000;
/** Lines of the compiler's output shown for a failed build. */
const compilerLinesShown = 12;
/** Bound on one `go build` (a cold build downloads modules and compiles client-go: minutes, not hours). */
const buildTimeoutMs = 20 * 60_000;
/** Bound on `go env`: it reads files only. */
const goEnvTimeoutMs = 30_000;

/** A Go variant that cannot be built: no toolchain, a compile error, an unreadable module. */
export class GoBuildError extends Error {
  override name = "GoBuildError";
}

export interface GoBuildOptions {
  /** The main package's folder, absolute (checked at load: a folder inside a Go module). */
  dir: string;
  /** Names the package in messages, e.g. `scenario.yaml: variants.level.go: ./cmd`. */
  label: string;
  /** The cache's root. Default: `$SETTLE_CACHE_DIR`, else `$XDG_CACHE_HOME/settle`, else `~/.cache/settle`. */
  cacheDir?: string;
  /** Receives one line before a build that is not cached (it may take minutes). */
  onBuild?(line: string): void;
}

/** The path of the native binary of the package at `options.dir`, built now unless a cached one matches. */
export function nativeGoBinary(options: GoBuildOptions): string {
  // The closest folder at or above the package's holding a go.mod (load checked that there is one), found as the
  // simulator's builds find it.
  const moduleRoot = goModuleRoot(options.dir);
  const env = nativeEnv();
  const goVersion = goEnvLine(env, moduleRoot, options.label, "GOVERSION");
  const packagePath = relative(moduleRoot, options.dir).split(sep).join("/");
  const key = cacheKey(moduleRoot, packagePath, goVersion, env);
  const entry = join(options.cacheDir ?? defaultCacheDir(), "go-native", key);
  const binary = join(entry, binaryName(moduleRoot, options.dir));
  if (existsSync(binary)) return binary;
  options.onBuild?.(`building ${options.label} natively with ${goVersion} (cached after this in ${entry})`);
  const partial = `${entry}.partial-${process.pid}`;
  rmSync(partial, { recursive: true, force: true });
  mkdirSync(partial, { recursive: true });
  try {
    build(moduleRoot, packagePath, join(partial, basename(binary)), env, options.label);
    publish(partial, entry);
  } finally {
    rmSync(partial, { recursive: true, force: true });
  }
  assert(existsSync(binary), "a finished build leaves its binary in the cache entry");
  return binary;
}

/**
 * Moves a finished build into place. Another drill may have built the same key meanwhile and be running its binary:
 * that entry is kept (the two are the same build) and this one dropped, never the other way round.
 */
function publish(partial: string, entry: string): void {
  try {
    renameSync(partial, entry);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== "ENOTEMPTY" && code !== "EEXIST") throw error;
  }
}

function defaultCacheDir(): string {
  const given = process.env.SETTLE_CACHE_DIR;
  if (given !== undefined && given.length > 0) return given;
  return settleCacheRoot();
}

/** This machine's build: a GOOS or GOARCH in the environment (a cross build's) would make a binary it cannot run. */
function nativeEnv(): NodeJS.ProcessEnv {
  const { GOOS: _os, GOARCH: _arch, ...rest } = process.env;
  return rest;
}

/** `go env NAME` in the module's folder (its go line may select another toolchain there). */
function goEnvLine(env: NodeJS.ProcessEnv, cwd: string, label: string, name: string): string {
  const result = spawnSync("go", ["env", name], { cwd, env, encoding: "utf8", timeout: goEnvTimeoutMs });
  if (result.error !== undefined) {
    const code = (result.error as NodeJS.ErrnoException).code;
    if (code === "ENOENT") {
      throw new GoBuildError(`${label}: no Go toolchain: \`go\` is not on PATH. Install Go 1.22 or newer (https://go.dev/doc/install, or your distribution's golang package) and put its bin folder on PATH; settle drill builds the package natively with it`);
    }
    throw new GoBuildError(`${label}: \`go env ${name}\` failed: ${result.error.message}`);
  }
  const line = result.stdout.trim();
  if (result.status !== 0 || line.length === 0) throw new GoBuildError(`${label}: \`go env ${name}\` failed: ${firstLines(result.stderr)}`);
  return line;
}

/** Build inputs that decide the binary besides the module's files. */
const keyedEnv = ["GOFLAGS", "CGO_ENABLED", "GOEXPERIMENT", "GOAMD64", "GOARM64", "GOTOOLCHAIN", "GOWORK", "GOPRIVATE"];

function cacheKey(moduleRoot: string, packagePath: string, goVersion: string, env: NodeJS.ProcessEnv): string {
  const hash = createHash("sha256");
  hash.update(`settle go-native 1\0${goVersion}\0${process.platform}/${process.arch}\0${packagePath}\0`);
  for (const name of keyedEnv) hash.update(`${name}=${env[name] ?? ""}\0`);
  // A local replace directive makes another folder's module part of the build: its files are keyed too.
  for (const root of [moduleRoot, ...localReplacements(moduleRoot)]) {
    hash.update(`module ${root}\0`);
    for (const file of moduleFiles(root)) {
      hash.update(`${relative(root, file).split(sep).join("/")}\0`);
      hash.update(readFileSync(file));
      hash.update("\0");
    }
  }
  return hash.digest("hex").slice(0, 32);
}

/** The folders go.mod's replace directives name (a path starting with ./, ../ or /), absolute, those that exist. */
function localReplacements(moduleRoot: string): string[] {
  const text = readFileSync(join(moduleRoot, "go.mod"), "utf8");
  const targets: string[] = [];
  // Both forms: `replace a => ../b` and the lines of a `replace ( ... )` block.
  for (const match of text.matchAll(/=>\s*(\.{1,2}\/\S*|\/\S*)\s*$/gm)) {
    const dir = resolve(moduleRoot, match[1]!);
    if (existsSync(join(dir, "go.mod"))) targets.push(dir);
  }
  return [...new Set(targets)].sort();
}

/**
 * The module's files, sorted: every file but those the go command ignores (folders named `testdata` or starting
 * with `.` or `_`) and nested modules (a folder with its own go.mod is another module).
 */
function moduleFiles(root: string): string[] {
  const files: string[] = [];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) {
        if (entry.name.startsWith(".") || entry.name.startsWith("_") || entry.name === "testdata" || entry.name === "node_modules") continue;
        if (existsSync(join(path, "go.mod"))) continue;
        walk(path);
      } else if (entry.isFile() || (entry.isSymbolicLink() && statSync(path, { throwIfNoEntry: false })?.isFile() === true)) {
        files.push(path);
        if (files.length > moduleFilesMax) throw new GoBuildError(`${root}: more than ${moduleFilesMax} files in the Go module: too many to key a build cache by (give go: a smaller module)`);
      }
    }
  };
  walk(root);
  return files;
}

function build(moduleRoot: string, packagePath: string, output: string, env: NodeJS.ProcessEnv, label: string): void {
  const target = packagePath === "" ? "." : `./${packagePath}`;
  const result = spawnSync("go", ["build", "-o", output, target], { cwd: moduleRoot, env, encoding: "utf8", timeout: buildTimeoutMs });
  if (result.error !== undefined) throw new GoBuildError(`${label}: go build ${target} (in ${moduleRoot}) failed: ${result.error.message}`);
  if (result.status !== 0) {
    throw new GoBuildError(`${label}: go build ${target} (in ${moduleRoot}) failed, exit ${result.status ?? result.signal}; the compiler's first errors:\n${firstLines(result.stderr)}`);
  }
  if (!existsSync(output)) throw new GoBuildError(`${label}: go build ${target} wrote no binary: is it a main package (package main with func main)?`);
}

function firstLines(text: string): string {
  const lines = text.split("\n").filter((line) => line.trim().length > 0);
  const shown = lines.slice(0, compilerLinesShown).map((line) => `  ${line}`);
  if (lines.length > compilerLinesShown) shown.push(`  ... (${lines.length - compilerLinesShown} more lines)`);
  return shown.join("\n");
}

/** The binary's name: the package folder's, or the module folder's for a package at the module's root. */
function binaryName(moduleRoot: string, dir: string): string {
  const name = basename(dir === moduleRoot ? moduleRoot : dir).replace(/[^A-Za-z0-9._-]/g, "_");
  return name.length === 0 || name === "." ? "main" : name;
}
