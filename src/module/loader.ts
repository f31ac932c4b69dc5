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
import { bundleSync } from "./bundle.ts";
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
  /** The module's `process.argv[1]`: the absolute path it was given (a file, or a package directory), as Node sets it. */
  readonly argv1: string;
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
function bundleOf(path: string, absolute: string, mtimeMs: number): ModuleBundle {
  const known = bundles.get(absolute);
  if (known !== undefined && known.mtimeMs === mtimeMs) return known;
  // Loaded on first use (on the bundling thread): a simulation without modules never loads esbuild.
  const outcome = bundleSync(absolute, createRequire(import.meta.url).resolve("esbuild"));
  noteBundled(absolute);
  if (outcome.failure !== undefined) throw new ModuleLoadError(path, outcome.failure);
  const first = outcome.errors[0];
  if (first !== undefined) throw new ModuleLoadError(path, messageText(first));
  const bundle = { absolute, mtimeMs, text: outcome.text!, inputs: outcome.inputs!, exports: outcome.exports! };
  adoptModuleBundles([bundle]);
  return bundle;
}

/** esbuild's message with where it is: `text (file:line)`, the file as esbuild names it (from the working directory) unless that climbs out of it. */
function messageText(message: Message): string {
  if (message.location === null) return message.text;
  const file = message.location.file.startsWith("../") ? resolve(message.location.file) : message.location.file;
  return `${message.text} (${file}:${message.location.line})`;
}

/**
 * The file Node runs for `absolute`: the file itself, or for a directory its package's `main` (or its index), as
 * `node DIR` resolves it. Undefined when there is none.
 */
function entryFile(absolute: string): string | undefined {
  if (!existsSync(absolute)) return undefined;
  if (!statSync(absolute).isDirectory()) return absolute;
  try {
    return createRequire(import.meta.url).resolve(absolute);
  } catch {
    return undefined;
  }
}

/** Bundles and compiles `path` once (cached by path and modification time). Throws `ModuleLoadError`. */
export function compileModule(path: string): CompiledModule {
  const given = resolve(path);
  if (!existsSync(given)) throw new ModuleLoadError(path, "no such file");
  const absolute = entryFile(given);
  if (absolute === undefined) throw new ModuleLoadError(path, "a directory with no package.json main and no index.js");
  const mtimeMs = statSync(absolute).mtimeMs;
  const cached = compiled.get(given);
  if (cached !== undefined && cached.mtimeMs === mtimeMs) return cached.module;
  const module = compile(path, given, absolute, mtimeMs);
  if (compiled.size >= compiledMax) compiled.clear();
  compiled.set(given, { mtimeMs, module });
  return module;
}

function compile(path: string, given: string, absolute: string, mtimeMs: number): CompiledModule {
  const { text, inputs, exports: exportNames } = bundleOf(path, absolute, mtimeMs);
  const body = rewriteModuleSyntax(cheaperKeepNames(withoutHashbang(text)), path);
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
  const requireOutside = outsideRequire(baseRequire);
  return {
    path,
    argv1: given,
    inputs,
    bytes: text.length,
    exports: exportNames,
    async instantiate(bindings) {
      const exports: Record<string, unknown> = {};
      const builtin = withModuleBuiltin(bindings.builtin);
      const requireFn = (name: string): unknown => {
        const bare = name.startsWith("node:") ? name.slice(5) : name;
        if (isBuiltin(bare)) return builtin(bare);
        return requireOutside(name);
      };
      const setExports = (values: Record<string, unknown>) => Object.assign(exports, values);
      await factory(requireFn, setExports, builtin, metaUrl, absolute, dir, bindings.process, bindings.console, bindings.setTimeout, bindings.clearTimeout, bindings.setInterval, bindings.clearInterval, bindings.setImmediate, bindings.clearImmediate, bindings.performance, bindings.AbortSignal, bindings.fetch);
      return exports;
    },
  };
}

/**
 * A require of what the bundle does not hold, from `base`: its failure is remembered, since the module loader's
 * search (file system stats through every node_modules above) cost each incarnation's load again.
 */
function outsideRequire(base: NodeJS.Require): (name: string) => unknown {
  const missing = new Map<string, string>();
  return (name) => {
    const known = missing.get(name);
    if (known !== undefined) throw Object.assign(new Error(known), { code: "MODULE_NOT_FOUND" });
    try {
      return base(name);
    } catch (error) {
      if ((error as { code?: unknown }).code === "MODULE_NOT_FOUND" && missing.size < missingMax) missing.set(name, (error as Error).message);
      throw error;
    }
  };
}

/** Requires made by the module's `createRequire(from)`, by `from`: one per base, shared by incarnations. */
const outsideRequires = new Map<string, (name: string) => unknown>();

/**
 * The builtins with the incarnation's `module`: its `createRequire` makes a require that gives the incarnation's
 * builtins, and the process's copy of anything else (what the bundle did not hold: a require esbuild could not see,
 * as the free `require` gives; what it could see was bundled, rewrite.ts). Its `resolve` is Node's.
 */
function withModuleBuiltin(builtin: (name: string) => unknown): (name: string) => unknown {
  let module: Record<string, unknown> | undefined;
  const createRequireFor = (from: string | URL): NodeJS.Require => {
    const base = createRequire(from);
    const key = String(from);
    let outside = outsideRequires.get(key);
    if (outside === undefined) {
      if (outsideRequires.size >= missingMax) outsideRequires.clear();
      outside = outsideRequire(base);
      outsideRequires.set(key, outside);
    }
    const required = outside;
    const requireFn = (name: string): unknown => {
      const bare = name.startsWith("node:") ? name.slice(5) : name;
      return isBuiltin(bare) ? builtin(bare) : required(name);
    };
    return Object.assign(requireFn, { resolve: base.resolve, cache: base.cache, extensions: base.extensions, main: undefined }) as NodeJS.Require;
  };
  return (name) => {
    if (name !== "module") return builtin(name);
    module ??= { ...(builtin("module") as Record<string, unknown>), createRequire: createRequireFor };
    return module;
  };
}

/**
 * esbuild keeps the entry's `#!` line at the top of the bundle, where the bundle's function cannot have it: it
 * becomes a comment, so every line keeps its number.
 */
function withoutHashbang(text: string): string {
  return text.startsWith("#!") ? `//${text.slice(2)}` : text;
}

/** esbuild's `keepNames` helper, as it emits it: every function and class of the bundle is passed through it. */
const KEEP_NAMES_HELPER = 'var __name = (target, value) => __defProp(target, "name", { value, configurable: true });';

/**
 * The same helper, without the redefinition when the name is already the one it would set (a declaration esbuild
 * did not rename: most of them). Each incarnation runs it for every function and class of its libraries (about
 * 1,600 for client-node), and the redefinition gave each function its own shape, the largest allocation of a
 * fresh load after the libraries' own data (`Object.getOwnPropertyDescriptor` by name: esbuild declares its
 * `__getOwnPropDesc` only in a bundle with CommonJS interop). The outcome is the same: the property kept is a configurable data
 * property with that value, which `defineProperty` leaves as it is; anything else (an accessor, a non-configurable
 * name, another value) still goes through `defineProperty`, throwing where it threw.
 */
const KEEP_NAMES_HELPER_CHEAPER = 'var __name = (target, value) => { const own = Object.getOwnPropertyDescriptor(target, "name"); return own !== undefined && own.configurable === true && own.value === value && "value" in own ? target : __defProp(target, "name", { value, configurable: true }); };';

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
