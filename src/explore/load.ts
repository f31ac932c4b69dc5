// Finding and loading scenario files. settle itself runs as compiled JavaScript from dist/; only a user's
// scenario file (and what it imports) goes through a TypeScript loader, tsx, registered for that file alone.
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, statSync, unlinkSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, isAbsolute, join, resolve, sep } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { createRequire, register } from "node:module";
import type { Plugin } from "esbuild";
import { realClock } from "../api/clock.ts";
import { isScenario, type Scenario } from "./scenario.ts";
import { ScenarioError } from "./run.ts";

const scenarioFiles = ["scenario.ts", "scenario.mts", "scenario.cts", "scenario.js", "scenario.mjs", "scenario.cjs"];
/** A folder's YAML scenario (a `settle drill` scenario, explorable where its variants give modules): after the code ones. */
const yamlScenarioFiles = ["scenario.yaml", "scenario.yml"];
const folderScenarioFiles = [...scenarioFiles, ...yamlScenarioFiles];

function isYamlPath(path: string): boolean {
  return /\.ya?ml$/i.test(path);
}

/** A scenario file, or an example folder holding one, to the absolute path of the file. */
export function resolveScenarioPath(target: string): string {
  const path = resolve(target);
  if (!existsSync(path)) throw new ScenarioError(`${target}: no such file or directory`);
  if (!statSync(path).isDirectory()) return path;
  for (const name of folderScenarioFiles) {
    if (existsSync(join(path, name))) return join(path, name);
  }
  throw new ScenarioError(`${target}: a directory without a scenario file (expected one of ${folderScenarioFiles.join(", ")})`);
}

/** True for a scenario file, or a folder that holds one directly. */
export function hasScenario(target: string): boolean {
  const path = resolve(target);
  if (!existsSync(path)) return false;
  if (!statSync(path).isDirectory()) return true;
  return folderScenarioFiles.some((name) => existsSync(join(path, name)));
}

/**
 * The example folders (holding a scenario file) directly under `dir`, sorted by name; with `yaml`, the folders that
 * hold only a scenario.yaml too.
 */
export function findExampleDirs(dir: string, options: { yaml?: boolean } = {}): string[] {
  const path = resolve(dir);
  if (!existsSync(path) || !statSync(path).isDirectory()) return [];
  const names = options.yaml === true ? folderScenarioFiles : scenarioFiles;
  return readdirSync(path)
    .sort()
    .map((name) => join(path, name))
    .filter((sub) => statSync(sub).isDirectory() && names.some((f) => existsSync(join(sub, f))));
}

/**
 * True when this module runs from the TypeScript sources (the repository's own tests and benchmarks, under
 * `node --import tsx --conditions=settle-source`), false when it runs from the compiled `dist/`.
 */
export const runningFromSource = import.meta.url.endsWith(".ts");

/**
 * The user-file loader: tsx registered under a namespace of its own, so only what a scenario file imports
 * goes through it and settle's compiled modules never do. tsx marks every module loaded in its namespace
 * with a `?tsx-namespace=` query, and a module URL with a query is a second copy of that module: a
 * scenario's `import "settle/sim"` would get classes and the one-run guard apart from the ones the CLI runs.
 * The hook below removes the query from URLs inside settle's own `dist/`, so the scenario shares the
 * modules already loaded. Made once per thread, on first use, so `settle --version` never loads tsx.
 */
let userLoader: Promise<{ import(specifier: string, parentURL: string): Promise<unknown> }> | undefined;

const dedupeHook = `
let roots = [];
export function initialize(data) { roots = data.roots; }
export async function resolve(specifier, context, nextResolve) {
  const result = await nextResolve(specifier, context);
  const url = new URL(result.url);
  if (!url.searchParams.has("tsx-namespace") || !roots.some((root) => result.url.startsWith(root))) return result;
  url.searchParams.delete("tsx-namespace");
  return { ...result, url: url.href };
}`;

function makeUserLoader(): Promise<{ import(specifier: string, parentURL: string): Promise<unknown> }> {
  userLoader ??= (async () => {
    const tsx = await import("tsx/esm/api");
    const loader = tsx.register({ namespace: "settle-user-files" });
    // Registered after tsx, so this hook runs first and sees tsx's resolved URL on its way out.
    const distRoot = new URL("../", import.meta.url).href;
    register(`data:text/javascript,${encodeURIComponent(dedupeHook)}`, { data: { roots: [distRoot] } });
    return loader;
  })();
  return userLoader;
}

/**
 * True when node treats the file as CommonJS: `.cts`/`.cjs`, or `.ts`/`.js` in a package whose nearest
 * package.json does not say `"type": "module"` (what `npm init -y` writes).
 */
function isCommonJs(path: string): boolean {
  if (/\.[cC][tj]s$/.test(path)) return true;
  if (/\.[mM][tj]s$/.test(path)) return false;
  for (let dir = dirname(path); ; dir = dirname(dir)) {
    const manifest = join(dir, "package.json");
    if (existsSync(manifest)) return (JSON.parse(readFileSync(manifest, "utf8")) as { type?: unknown }).type !== "module";
    if (dirname(dir) === dir) return true;
  }
}

let userRequire: Promise<{ require(id: string, parentURL: string): unknown }> | undefined;

/**
 * A CommonJS scenario file is loaded with tsx's scoped `require`, so the files it requires are compiled too
 * (an ES-module import of a CommonJS file would hand its `require` calls to node's plain loader). Its
 * `require("settle/sim")` loads settle's compiled ES modules through node's require(esm), which shares the
 * instances already loaded.
 */
async function requireUserFile(path: string): Promise<Record<string, unknown>> {
  userRequire ??= import("tsx/cjs/api").then((tsx) => {
    const scoped = tsx.register({ namespace: "settle-user-files-cjs" });
    keepSettleNative(new URL("../", import.meta.url).pathname);
    return scoped;
  });
  const exported = (await userRequire).require(path, import.meta.url);
  // As node's ES-module import of a CommonJS file does: `module.exports` is the default export.
  return typeof exported === "object" && exported !== null ? { ...(exported as Record<string, unknown>), default: exported } : { default: exported };
}

/**
 * tsx's scoped `require` resolves every file it reaches to `<file>?namespace=...` and compiles it to CommonJS,
 * settle's own ES modules included: a second copy of them. This wraps node's CommonJS resolver (which tsx has
 * just replaced) so that a file inside settle's `dist/` resolves to its plain path, which node then loads
 * with require(esm): the instance the CLI already runs.
 */
function keepSettleNative(distDir: string): void {
  const cjs = createRequire(import.meta.url)("node:module") as { _resolveFilename: (...args: unknown[]) => unknown };
  const resolveWithTsx = cjs._resolveFilename;
  cjs._resolveFilename = function (this: unknown, ...args: unknown[]): unknown {
    const resolved = resolveWithTsx.apply(this, args);
    if (typeof resolved !== "string" || !resolved.startsWith(distDir)) return resolved;
    const query = resolved.indexOf("?");
    return query === -1 ? resolved : resolved.slice(0, query);
  };
}

/** Imports a user's scenario file, TypeScript or JavaScript, ES module or CommonJS. */
async function importUserFile(path: string): Promise<unknown> {
  const url = pathToFileURL(path).href;
  // From source, this process already runs under tsx, and a second loader would copy settle's modules.
  if (runningFromSource) return import(url);
  // In a worker started from a bundle (workerBundle), the scenario is already loaded.
  const bundled = preloaded.get(path);
  if (bundled !== undefined) return bundled;
  if (isCommonJs(path)) return requireUserFile(path);
  const loader = await makeUserLoader();
  return loader.import(url, import.meta.url);
}

/** What a module's default export looks like, for an error message. */
function describeExport(module: Record<string, unknown>): string {
  const names = Object.keys(module).filter((name) => name !== "default" && name !== "module.exports");
  const found = names.length === 0 ? "no named exports" : `exports ${names.slice(0, 8).join(", ")}${names.length > 8 ? ", ..." : ""}`;
  const value = module.default;
  if (value === undefined) return `there is no default export (${found})`;
  const kind = value === null ? "null" : Array.isArray(value) ? "an array" : typeof value === "object" ? "an object that scenario() did not make" : `a ${typeof value}`;
  return `the default export is ${kind} (${found})`;
}

/**
 * Loads a scenario file. It must default-export what `scenario({ ... })` returns; a CommonJS file may also
 * assign it to `module.exports` or `exports.default`.
 */
export async function loadScenario(path: string): Promise<Scenario> {
  if (isYamlPath(path)) {
    // Loaded only for a YAML scenario: the YAML loader brings ajv, CEL and yaml, the module actor the server.
    const { loadYamlScenario, ScenarioYamlError } = await import("../scenario-yaml/load.ts");
    const { loadYamlExplore } = await import("./yaml.ts");
    try {
      return await loadYamlExplore(loadYamlScenario(path));
    } catch (error) {
      if (error instanceof ScenarioYamlError) throw new ScenarioError(error.message);
      throw error;
    }
  }
  let module: Record<string, unknown>;
  try {
    module = (await importUserFile(path)) as Record<string, unknown>;
  } catch (error) {
    throw new ScenarioError(`${path}: could not load: ${error instanceof Error ? error.message : String(error)}`);
  }
  // A CommonJS module imported from ESM has its `module.exports` as the default; TypeScript's CommonJS output
  // puts `export default` on `exports.default`.
  const candidates = [module.default, (module.default as { default?: unknown } | undefined)?.default];
  const found = candidates.find((candidate) => isScenario(candidate));
  if (found !== undefined) return found as Scenario;
  throw new ScenarioError(
    `${path}: expected a scenario file that default-exports scenario({ ... }) from "settle/sim" (export default scenario({ name, setup, actors, workloads, properties, ... })), but ${describeExport(module)}`,
  );
}

/**
 * Worker threads load the scenario again. Through tsx each one would start its own loader thread and compile
 * every file once more: a worker start of several hundred milliseconds. Instead the main thread bundles, once,
 * the scenario and its own files, with an entry that hands the scenario to settle's compiled worker. settle's
 * compiled modules stay outside, imported by file URL (see settleOutside): the scenario's `settle/sim` is the
 * worker's, so a worker thread holds one copy, as the main thread does, and runs the same code. Other packages
 * stay imports, pinned to the files they resolve to from where they are imported. Each bundled file keeps its own
 * `import.meta.url`, and a CommonJS file its `require`. The bundle is named by its content in the temporary directory, so concurrent
 * explorations share it safely. Returns undefined from source (the tests' workers load TypeScript through
 * tsx) or when the bundle cannot be built (the worker then loads the scenario through tsx).
 */
export function workerBundle(path: string): Promise<string | undefined> {
  return workerBundleInUse(path, 1);
}

function workerBundleInUse(path: string, rebuildsLeft: number): Promise<string | undefined> {
  // A YAML scenario is no module to bundle: each worker loads it (and bundles its controller module) itself.
  if (runningFromSource || isYamlPath(path)) return Promise.resolve(undefined);
  // Once per file and process: exploring every variant of a scenario bundles it once.
  let bundle = workerBundles.get(path);
  if (bundle === undefined) {
    bundle = buildWorkerBundle(path).catch(() => undefined);
    workerBundles.set(path, bundle);
  }
  return bundle.then((file) => {
    if (file === undefined || markInUse(file)) return file;
    // Another exploration pruned it while this one left it idle for long: build it again (once; then tsx).
    workerBundles.delete(path);
    return rebuildsLeft > 0 ? workerBundleInUse(path, rebuildsLeft - 1) : undefined;
  });
}

/**
 * Bundles are 1.5-2 MB each and a new one is written whenever settle or the scenario changes, so each new bundle
 * removes the ones (and temporaries left by a crash) that no exploration has used for this long. Every use of a
 * bundle touches it just before its workers start, so only a bundle idle for that long can go; an exploration
 * that comes back to one after that builds it again.
 */
const workerBundleIdleMsMax = 15 * 60 * 1000;

/** Touches the bundle (see workerBundleIdleMsMax); false when it is gone. */
function markInUse(file: string): boolean {
  const seconds = realClock.now() / 1000;
  try {
    utimesSync(file, seconds, seconds);
    return true;
  } catch (error) {
    // Another user's bundle cannot be touched, nor removed by anyone but that user: it is there to use.
    return (error as NodeJS.ErrnoException).code !== "ENOENT";
  }
}

function pruneWorkerBundles(dir: string, keep: string): void {
  const now = realClock.now();
  for (const name of readdirSync(dir)) {
    const file = join(dir, name);
    if (file === keep) continue;
    try {
      if (now - statSync(file).mtimeMs > workerBundleIdleMsMax) unlinkSync(file);
    } catch {
      // Removed by another exploration meanwhile, or another user's file in a shared temporary directory.
    }
  }
}

const workerBundles = new Map<string, Promise<string | undefined>>();

/** Scenario modules a worker bundle imported before the worker asks loadScenario for them. */
const preloaded = new Map<string, Record<string, unknown>>();

/** Called by a worker bundle (see workerBundle) with the scenario module it holds. */
export function preloadScenario(path: string, module: Record<string, unknown>): void {
  preloaded.set(path, module);
}

async function buildWorkerBundle(path: string): Promise<string> {
  const esbuild = await import("esbuild");
  const entry = [
    `import * as scenarioModule from ${JSON.stringify(path)};`,
    `import { preloadScenario } from ${JSON.stringify(import.meta.url)};`,
    `preloadScenario(${JSON.stringify(path)}, scenarioModule);`,
    `await import(${JSON.stringify(new URL("./worker.js", import.meta.url).href)});`,
  ].join("\n");
  const result = await esbuild.build({
    stdin: { contents: entry, resolveDir: dirname(path), sourcefile: "settle-worker-entry.mjs", loader: "js" },
    bundle: true,
    format: "esm",
    platform: "node",
    target: "node20",
    // Renamed duplicates (two modules' `ApiError`) keep their `name`, which messages and traces may show.
    keepNames: true,
    write: false,
    logLevel: "silent",
    banner: { js: 'import { createRequire as __settleCreateRequire } from "node:module"; const require = __settleCreateRequire(import.meta.url);' },
    plugins: [settleOutside, pinPackages, ownImportMeta],
  });
  const text = result.outputFiles[0]!.text;
  const dir = join(tmpdir(), "settle-worker-bundles");
  const file = join(dir, `${basename(path).replace(/\.[^.]+$/, "")}-${createHash("sha256").update(text).digest("hex").slice(0, 16)}.mjs`);
  if (!existsSync(file)) {
    mkdirSync(dir, { recursive: true });
    const temporary = `${file}.${process.pid}.tmp`;
    writeFileSync(temporary, text);
    renameSync(temporary, file);
    pruneWorkerBundles(dir, file);
  }
  return file;
}

/** Marks the plugins' own calls to esbuild's resolver, which the plugins pass on. */
const innerResolve = "settle-inner-resolve";

/**
 * settle's own compiled modules (this `dist/`) stay outside the bundle, imported by file URL: the worker runs the
 * code the main thread runs. Bundled, settle's functions would be wrapped for `keepNames` (esbuild renames clashing
 * names, and a class's name can show in a trace), and the wrapper runs each time a closure is made: 4% of a
 * simulation step. Importing dist/'s modules one by one costs a worker about 0.15 CPU seconds once.
 */
const settleOutside: Plugin = {
  name: "settle-outside",
  setup(build) {
    const distDir = fileURLToPath(new URL("../", import.meta.url));
    build.onResolve({ filter: /^file:/ }, (args) => ({ path: args.path, external: true }));
    build.onResolve({ filter: /.*/ }, async (args) => {
      if (args.pluginData === innerResolve || args.kind === "entry-point") return undefined;
      const found = await build.resolve(args.path, { kind: args.kind, resolveDir: args.resolveDir, importer: args.importer, pluginData: innerResolve });
      if (found.errors.length > 0 || found.external || !found.path.startsWith(distDir)) return undefined;
      const required = args.kind === "require-call" || args.kind === "require-resolve";
      return { path: required ? found.path : pathToFileURL(found.path).href, external: true };
    });
  },
};

/**
 * The scenario's packages other than settle, and any package imported lazily, stay outside the bundle, imported from the file
 * they resolve to from their importer (a file URL for an import, a path for a CommonJS require), so the
 * bundle can live anywhere.
 */
const pinPackages: Plugin = {
  name: "settle-pin-packages",
  setup(build) {
    const distDir = fileURLToPath(new URL("../", import.meta.url));
    build.onResolve({ filter: /^[^./]/ }, async (args) => {
      if (args.pluginData === innerResolve || args.kind === "entry-point" || args.path.startsWith("node:") || args.path.startsWith("file:")) return undefined;
      // Another copy of settle than this one (settleOutside keeps this one outside) is bundled, except where
      // imported lazily: a bundle hoists the imports of lazily bundled code to its top, and
      // `await import("settle/kube")` in a branch the worker never takes would load @kubernetes/client-node in
      // every worker.
      if (/^settle(\/|$)/.test(args.path) && args.kind !== "dynamic-import") return undefined;
      // That copy's own dependencies (and theirs) are bundled too: one file to read instead of hundreds.
      const usersFile = !args.importer.startsWith(distDir) && !args.importer.includes(`${sep}node_modules${sep}`);
      if (!usersFile && args.kind !== "dynamic-import") return undefined;
      const found = await build.resolve(args.path, { kind: args.kind, resolveDir: args.resolveDir, importer: args.importer, pluginData: innerResolve });
      if (found.errors.length > 0 || !isAbsolute(found.path)) return undefined;
      const required = args.kind === "require-call" || args.kind === "require-resolve";
      return { path: required ? found.path : pathToFileURL(found.path).href, external: true };
    });
  },
};

/**
 * Bundling puts every file in one module, so `import.meta.url` would name the bundle; this gives each of the
 * scenario's files its own URL, path and directory back (as literals in that file's code). A file where that
 * text replacement breaks the syntax fails the bundle, and the workers fall back to tsx.
 */
const ownImportMeta: Plugin = {
  name: "settle-own-import-meta",
  setup(build) {
    const distDir = fileURLToPath(new URL("../", import.meta.url));
    build.onLoad({ filter: /\.[cm]?[jt]s$/ }, (args) => {
      // settle's own modules use import.meta.url only in the main thread (to find dist/ and the worker script).
      if (args.path.startsWith(distDir)) return undefined;
      const source = readFileSync(args.path, "utf8");
      if (!source.includes("import.meta")) return undefined;
      const contents = source
        .replaceAll("import.meta.url", JSON.stringify(pathToFileURL(args.path).href))
        .replaceAll("import.meta.filename", JSON.stringify(args.path))
        .replaceAll("import.meta.dirname", JSON.stringify(dirname(args.path)));
      return { contents, loader: /\.[cm]?ts$/.test(args.path) ? "ts" : "js" };
    });
  },
};
