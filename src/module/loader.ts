// Loads a Node.js module fresh for every incarnation without leaking: the module and everything it imports from
// node_modules is bundled once per path by esbuild (ESM, CommonJS and TypeScript alike, top-level await kept), the
// bundle is compiled once into one async function, and each incarnation calls that function with bindings of its
// own (timers, `process`, the builtins it sees). A crash drops the incarnation's module objects whole; nothing of
// theirs stays reachable from the process, so thousands of runs reuse one compiled function and free the rest.
//
// Why not `import()` with a query string per incarnation: ESM modules are never freed, and every load recompiles.
import { createRequire } from "node:module";
import { dirname, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { appendFileSync, existsSync, statSync } from "node:fs";
import { Script } from "node:vm";
import type { Message } from "esbuild";

/** What one incarnation's code is called with: the free names of the bundle, bound per incarnation. */
export interface ModuleBindings {
  process: unknown;
  console: unknown;
  setTimeout: unknown;
  clearTimeout: unknown;
  setInterval: unknown;
  clearInterval: unknown;
  setImmediate: unknown;
  clearImmediate: unknown;
  performance: unknown;
  /** `AbortSignal` with `timeout(ms)` on the simulation clock (Node's own sets a real timer). */
  AbortSignal: unknown;
  /** `fetch` over the wire (undici with a dispatcher of the incarnation's own). */
  fetch: unknown;
  /** A builtin module by name (`node:` prefix removed), as this incarnation sees it. */
  builtin(name: string): unknown;
}

/** A module that cannot be loaded: missing, does not bundle, or (later) throws while loading. */
export class ModuleLoadError extends Error {
  constructor(
    readonly modulePath: string,
    detail: string,
  ) {
    super(`module ${modulePath}: ${detail}`);
    this.name = "ModuleLoadError";
  }
}

/** The compiled form of a module: called once per incarnation. */
export interface CompiledModule {
  readonly path: string;
  /** Files bundled (the module and what it imports). */
  readonly inputs: number;
  readonly bytes: number;
  /** The names the module exports (ES exports; `default` for a CommonJS module). */
  readonly exports: readonly string[];
  /** Evaluates a fresh instance; resolves with its exports once its top level (top-level await included) is done. */
  instantiate(bindings: ModuleBindings): Promise<Record<string, unknown>>;
}

const PARAMS = ["require", "__settle_exports", "__settle_builtin", "__settle_meta_url", "__filename", "__dirname", "process", "console", "setTimeout", "clearTimeout", "setInterval", "clearInterval", "setImmediate", "clearImmediate", "performance", "AbortSignal", "fetch"] as const;

/** Compiled modules by path and modification time: one compilation per file version per process. */
const compiled = new Map<string, { mtimeMs: number; module: CompiledModule }>();
/** Bounds the cache: a process explores a handful of modules. */
const compiledMax = 64;

/**
 * A module's bundle as esbuild made it, by absolute path and modification time. The explorer hands the main thread's
 * bundles to its worker threads, which compile them without bundling again (esbuild takes about a second for
 * client-node's 918 files, and every worker did it at once on the same cores).
 */
export interface ModuleBundle {
  readonly absolute: string;
  readonly mtimeMs: number;
  readonly text: string;
  readonly inputs: number;
  readonly exports: readonly string[];
}

const bundles = new Map<string, ModuleBundle>();

/** The bundles this thread holds: made here or handed over. */
export function moduleBundles(): ModuleBundle[] {
  return [...bundles.values()];
}

/** Takes bundles another thread made: a module of the same path and modification time is not bundled again. */
export function adoptModuleBundles(handed: readonly ModuleBundle[]): void {
  for (const bundle of handed) {
    if (bundles.size >= compiledMax) bundles.clear();
    bundles.set(bundle.absolute, bundle);
  }
}

/**
 * With `SETTLE_DEBUG_BUNDLE_LOG` set to a file, each esbuild bundling appends the module's path to it: how a test sees
 * from outside the threads of an exploration that a module is bundled once.
 */
function noteBundled(absolute: string): void {
  const log = process.env.SETTLE_DEBUG_BUNDLE_LOG;
  if (log !== undefined && log !== "") appendFileSync(log, `${absolute}\n`);
}

/**
 * Module variants found to load (the preflight of src/explore/yaml.ts passed), by `preflightKey`: the explorer hands
 * the main thread's to its worker threads with the bundles, so that no worker evaluates them again.
 */
const preflighted = new Set<string>();

/** What a preflight is about: the module's absolute path and modification time, its args and env. */
export function preflightKey(path: string, args: readonly string[], env: Readonly<Record<string, string>>): string {
  const absolute = resolve(path);
  const mtimeMs = existsSync(absolute) ? statSync(absolute).mtimeMs : -1;
  return JSON.stringify([absolute, mtimeMs, args, env]);
}

export function preflightPassed(key: string): boolean {
  return preflighted.has(key);
}

/**
 * Notes a passed preflight. With `SETTLE_DEBUG_PREFLIGHT_LOG` set to a file, each preflight run appends the key to it
 * whether or not it passes: how a test sees across the threads of an exploration that it ran once.
 */
export function notePreflight(key: string, passed: boolean): void {
  const log = process.env.SETTLE_DEBUG_PREFLIGHT_LOG;
  if (log !== undefined && log !== "") appendFileSync(log, `${key}\n`);
  if (!passed) return;
  if (preflighted.size >= compiledMax) preflighted.clear();
  preflighted.add(key);
}

/** The preflights passed in this thread: run here or handed over. */
export function preflightedModules(): string[] {
  return [...preflighted];
}

/** Takes the preflights another thread passed. */
export function adoptPreflightedModules(keys: readonly string[]): void {
  for (const key of keys) {
    if (preflighted.size >= compiledMax) preflighted.clear();
    preflighted.add(key);
  }
}

/** The module's bundle: handed over or made before for this modification time, or made now by esbuild. */
function bundleOf(absolute: string, mtimeMs: number): ModuleBundle {
  const known = bundles.get(absolute);
  if (known !== undefined && known.mtimeMs === mtimeMs) return known;
  // Loaded on first use: a simulation without modules never loads esbuild.
  const { buildSync } = createRequire(import.meta.url)("esbuild") as typeof import("esbuild");
  const result = buildSync({
    entryPoints: [absolute],
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    write: false,
    metafile: true,
    logLevel: "silent",
    keepNames: true,
    // Every library's `import.meta.url` names the module (a bundle has one file); libraries rarely read it.
    define: { "import.meta.url": "__settle_meta_url", "import.meta.filename": "__filename", "import.meta.dirname": "__dirname" },
  });
  noteBundled(absolute);
  const bundle = { absolute, mtimeMs, text: result.outputFiles[0]!.text, inputs: Object.keys(result.metafile.inputs).length, exports: Object.values(result.metafile.outputs)[0]?.exports ?? [] };
  adoptModuleBundles([bundle]);
  return bundle;
}

/** Bundles and compiles `path` once (cached by path and modification time). Throws `ModuleLoadError`. */
export function compileModule(path: string): CompiledModule {
  const absolute = resolve(path);
  if (!existsSync(absolute)) throw new ModuleLoadError(path, "no such file");
  const mtimeMs = statSync(absolute).mtimeMs;
  const cached = compiled.get(absolute);
  if (cached !== undefined && cached.mtimeMs === mtimeMs) return cached.module;
  const module = compile(path, absolute, mtimeMs);
  if (compiled.size >= compiledMax) compiled.clear();
  compiled.set(absolute, { mtimeMs, module });
  return module;
}

function compile(path: string, absolute: string, mtimeMs: number): CompiledModule {
  let text: string;
  let inputs: number;
  let exportNames: readonly string[];
  try {
    ({ text, inputs, exports: exportNames } = bundleOf(absolute, mtimeMs));
  } catch (error) {
    const errors = (error as { errors?: Message[] }).errors;
    const first = errors?.[0];
    const detail = first === undefined ? String(error) : `${first.text}${first.location === null ? "" : ` (${first.location.file}:${first.location.line})`}`;
    throw new ModuleLoadError(path, detail);
  }
  const body = rewriteModuleSyntax(cheaperKeepNames(text), path);
  let factory: (...args: unknown[]) => Promise<void>;
  try {
    const script = new Script(`(async function (${PARAMS.join(", ")}) {${body}\n})`, { filename: absolute });
    factory = script.runInThisContext() as typeof factory;
  } catch (error) {
    throw new ModuleLoadError(path, error instanceof Error ? error.message : String(error));
  }
  const metaUrl = pathToFileURL(absolute).href;
  const dir = dirname(absolute);
  const baseRequire = createRequire(absolute);
  /**
   * A require the bundler left to run time: in practice an optional dependency a library tries in a `try` (debug's
   * supports-color, ws's bufferutil, node-fetch's encoding), usually not installed. Its failure is remembered: the
   * module loader's search (file system stats through every node_modules above) cost each incarnation's load again.
   * What it finds is the process's one copy, shared as Node's own require cache shares it.
   */
  const missing = new Map<string, string>();
  const requireOutside = (name: string): unknown => {
    const known = missing.get(name);
    if (known !== undefined) throw Object.assign(new Error(known), { code: "MODULE_NOT_FOUND" });
    try {
      return baseRequire(name);
    } catch (error) {
      if ((error as { code?: unknown }).code === "MODULE_NOT_FOUND" && missing.size < missingMax) missing.set(name, (error as Error).message);
      throw error;
    }
  };
  return {
    path,
    inputs,
    bytes: text.length,
    exports: exportNames,
    async instantiate(bindings) {
      const exports: Record<string, unknown> = {};
      const requireFn = (name: string): unknown => {
        const bare = name.startsWith("node:") ? name.slice(5) : name;
        if (isBuiltin(bare)) return bindings.builtin(bare);
        return requireOutside(name);
      };
      const setExports = (values: Record<string, unknown>) => Object.assign(exports, values);
      await factory(requireFn, setExports, bindings.builtin, metaUrl, absolute, dir, bindings.process, bindings.console, bindings.setTimeout, bindings.clearTimeout, bindings.setInterval, bindings.clearInterval, bindings.setImmediate, bindings.clearImmediate, bindings.performance, bindings.AbortSignal, bindings.fetch);
      return exports;
    },
  };
}

/** esbuild's `keepNames` helper, as it emits it: every function and class of the bundle is passed through it. */
const KEEP_NAMES_HELPER = 'var __name = (target, value) => __defProp(target, "name", { value, configurable: true });';

/**
 * The same helper, without the redefinition when the name is already the one it would set (a declaration esbuild
 * did not rename: most of them). Each incarnation runs it for every function and class of its libraries (about
 * 1,600 for client-node), and the redefinition gave each function its own shape, the largest allocation of a
 * fresh load after the libraries' own data. The outcome is the same: the property kept is a configurable data
 * property with that value, which `defineProperty` leaves as it is; anything else (an accessor, a non-configurable
 * name, another value) still goes through `defineProperty`, throwing where it threw.
 */
const KEEP_NAMES_HELPER_CHEAPER = 'var __name = (target, value) => { const own = __getOwnPropDesc(target, "name"); return own !== undefined && own.configurable === true && own.value === value && "value" in own ? target : __defProp(target, "name", { value, configurable: true }); };';

/** The bundle with the cheaper `__name` (unchanged if esbuild emitted the helper differently). */
export function cheaperKeepNames(text: string): string {
  const at = text.indexOf(KEEP_NAMES_HELPER);
  if (at < 0) return text;
  return `${text.slice(0, at)}${KEEP_NAMES_HELPER_CHEAPER}${text.slice(at + KEEP_NAMES_HELPER.length)}`;
}

/** Bounds the remembered missing requires of one module. */
const missingMax = 256;

const builtinNames = new Set(createRequire(import.meta.url)("node:module").builtinModules as string[]);

function isBuiltin(name: string): boolean {
  return builtinNames.has(name);
}

/**
 * The bundle is ESM whose only imports are Node builtins (everything else is bundled): each import becomes a
 * binding from the incarnation's `__settle_builtin`, and the module's exports a call of `__settle_exports`, so the
 * whole can be the body of one async function (where top-level await stays valid).
 */
export function rewriteModuleSyntax(text: string, path: string): string {
  let out = text.replace(/^import ([\s\S]*?) from "([^"]+)";$/gm, (_all, clause: string, from: string) => importBinding(clause.trim(), from, path));
  out = out.replace(/^import "([^"]+)";$/gm, (_all, from: string) => `__settle_builtin(${JSON.stringify(bare(from))});`);
  out = out.replace(/^export \{([\s\S]*?)\};$/gm, (_all, list: string) => `__settle_exports({ ${exportList(list)} });`);
  out = out.replace(/^export default ([\s\S]*?);$/gm, (_all, value: string) => `__settle_exports({ default: ${value} });`);
  if (/^(import|export) /m.test(out)) throw new ModuleLoadError(path, "the bundle has module syntax settle cannot rewrite");
  return out;
}

function bare(from: string): string {
  return from.startsWith("node:") ? from.slice(5) : from;
}

function importBinding(clause: string, from: string, path: string): string {
  const source = `__settle_builtin(${JSON.stringify(bare(from))})`;
  if (!isBuiltin(bare(from))) throw new ModuleLoadError(path, `imports ${from}, which is neither bundled nor a Node builtin`);
  const parts: string[] = [];
  // `X`, `* as X`, `{ a, b as c }`, `X, { ... }`, `X, * as Y`.
  const named = /\{([\s\S]*)\}/.exec(clause);
  const rest = clause.replace(/\{[\s\S]*\}/, "").replace(/,\s*$/, "").trim();
  for (const piece of rest.split(",").map((p) => p.trim()).filter((p) => p !== "")) {
    const star = /^\* as (\S+)$/.exec(piece);
    if (star !== null) parts.push(`const ${star[1]} = ${source};`);
    else parts.push(`const ${piece} = ${source};`);
  }
  if (named !== null) {
    const bindings = named[1]!
      .split(",")
      .map((p) => p.trim())
      .filter((p) => p !== "")
      .map((p) => {
        const [name, alias] = p.split(/\s+as\s+/);
        return alias === undefined ? name! : `${name}: ${alias}`;
      });
    parts.push(`const { ${bindings.join(", ")} } = ${source};`);
  }
  return parts.join(" ");
}

function exportList(list: string): string {
  return list
    .split(",")
    .map((p) => p.trim())
    .filter((p) => p !== "")
    .map((p) => {
      const [local, exported] = p.split(/\s+as\s+/);
      return exported === undefined ? `${local}: ${local}` : `${JSON.stringify(exported)}: ${local}`;
    })
    .join(", ");
}
