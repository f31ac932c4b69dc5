// An unmodified Node.js controller as a simulator actor: `moduleActor({ name, module, args, env })`. Each
// incarnation evaluates the module fresh (loader.ts) with its own timers and process (env.ts); its HTTP requests
// reach the simulation's store over in-process connections (wire.ts). A crash or an exit drops the incarnation:
// its module objects, caches, watches, connections and timers; the restart loads it again from nothing.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { assert } from "../api/assert.ts";
import { prepareBeforeRuns } from "../sim/access.ts";
import { warmFetch } from "./fetch.ts";
import type { ActorContext, ActorDefinition } from "../sim/types.ts";
import { compileModule, ModuleLoadError, type CompiledModule } from "./loader.ts";
import { installPatches } from "./agents.ts";
import { ExitUnwind, Incarnation } from "./incarnation.ts";
import { API_SERVER_URL, API_TOKEN, loadWire } from "./wire.ts";
import { kubeconfigText } from "../server/auth/kubeconfig.ts";

export interface ModuleActorOptions {
  /** The actor's name (no slash). */
  name: string;
  /** Path of the module (ESM, CommonJS or TypeScript), resolved from the current directory. */
  module: string;
  /** Its `process.argv` after the module path. */
  args?: readonly string[];
  /** Added to its `process.env` (which also gets `KUBECONFIG`, naming the simulated API server). */
  env?: Readonly<Record<string, string>>;
  /** An export to call (with no arguments) once the module's top level has run; its promise is awaited like top-level code. */
  export?: string;
  /** Delay before a crashed or exited incarnation starts again. Default 1000 ms. */
  restartDelayMs?: number;
  crashable?: boolean;
  faultable?: boolean;
}

/** The one kubeconfig every module reads: the in-process API server, its token, plain HTTP. */
let kubeconfigPath: string | undefined;

export function moduleKubeconfig(): string {
  if (kubeconfigPath !== undefined) return kubeconfigPath;
  const dir = mkdtempSync(join(tmpdir(), "settle-module-"));
  const path = join(dir, "kubeconfig");
  // client-node refuses http:// unless told to skip TLS verification (there is no TLS to verify in process).
  const text = kubeconfigText(API_SERVER_URL, API_TOKEN);
  writeFileSync(path, text, { mode: 0o600 });
  kubeconfigPath = path;
  return path;
}

/** Loads (bundles and compiles) the module now: a missing file, a bundling error or a missing export throws `ModuleLoadError`. */
export function checkModule(options: Pick<ModuleActorOptions, "module" | "export">): CompiledModule {
  const compiled = compileModule(options.module);
  if (options.export !== undefined && !compiled.exports.includes(options.export)) {
    const has = compiled.exports.length === 0 ? "no exports" : `exports ${compiled.exports.join(", ")}`;
    throw new ModuleLoadError(options.module, `does not export "${options.export}" (it has ${has})`);
  }
  return compiled;
}

/** An actor running `options.module` unmodified, its HTTP requests served by the simulation's store. */
export function moduleActor(options: ModuleActorOptions): ActorDefinition {
  const compiled = checkModule(options);
  installPatches();
  prepareBeforeRuns(loadWire());
  prepareBeforeRuns(warmFetch());
  return incarnationActor(options.name, options, (ctx) => new Incarnation(ctx), (incarnation) => runModule(incarnation, options, compiled));
}

/** What an actor of this layer's kind keeps of each incarnation: a program's run that a crash drops whole. */
export interface DroppableIncarnation {
  /** The incarnation is over (a crash): it never runs again and lets go of its connections, timers and files. */
  drop(): void;
  /** Why it waits on nothing of the simulation's, when the simulation finds every actor waiting. */
  explain(): string | undefined;
}

/** How an actor of an unmodified program restarts and which faults reach it (the options a variant may set). */
export interface RestartOptions {
  restartDelayMs?: number;
  crashable?: boolean;
  faultable?: boolean;
}

/**
 * The actor of an unmodified program, a module (here) or a Go program (src/go): each start step makes a new
 * incarnation and runs it (`run` settles only when the program exits); a crash drops the last one; an actor found
 * waiting on nothing is explained by it.
 */
export function incarnationActor<I extends DroppableIncarnation>(name: string, options: RestartOptions, make: (ctx: ActorContext) => I, run: (incarnation: I) => Promise<void>): ActorDefinition {
  let last: I | undefined;
  const def: ActorDefinition = {
    name,
    start(ctx) {
      last = make(ctx);
      return run(last);
    },
    onCrash() {
      last?.drop();
    },
    explainOutsideAwait() {
      return last?.explain();
    },
  };
  if (options.restartDelayMs !== undefined) def.restartDelayMs = options.restartDelayMs;
  if (options.crashable !== undefined) def.crashable = options.crashable;
  if (options.faultable !== undefined) def.faultable = options.faultable;
  return def;
}

/**
 * The start step of an incarnation: evaluates a fresh instance of the module with its bindings; the returned promise
 * settles only if the module exits (or fails to load).
 */
function runModule(incarnation: Incarnation, options: ModuleActorOptions, compiled: CompiledModule): Promise<void> {
  assert(incarnation.name === options.name, "the incarnation is the module actor's");
  incarnation.enter();
  return new Promise<void>((_resolve, reject) => {
    const bindings = incarnation.bindings({ modulePath: compiled.argv1, args: options.args ?? [], env: { ...options.env, KUBECONFIG: moduleKubeconfig() } }, reject);
    compiled.instantiate(bindings).then(
      (exports) => {
        if (options.export === undefined || !incarnation.current()) return;
        const main = exports[options.export];
        if (typeof main !== "function") return reject(new ModuleLoadError(compiled.path, `export "${options.export}" is not a function`));
        Promise.resolve()
          .then(() => (main as () => unknown)())
          .then(undefined, (error: unknown) => incarnation.threw(error));
      },
      (error: unknown) => {
        if (error instanceof ExitUnwind || !incarnation.current()) return;
        const message = error instanceof Error ? error.message : String(error);
        reject(new ModuleLoadError(compiled.path, `threw while loading: ${message}`));
      },
    );
  });
}
