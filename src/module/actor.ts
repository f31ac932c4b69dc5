// An unmodified Node.js controller as a simulator actor: `moduleActor({ name, module, args, env })`. Each
// incarnation evaluates the module fresh (loader.ts) with its own timers and process (env.ts); its HTTP requests
// reach the simulation's store over in-process connections (wire.ts). A crash or an exit drops the incarnation:
// its module objects, caches, watches, connections and timers; the restart loads it again from nothing.
import * as http from "node:http";
import * as https from "node:https";
import { createRequire } from "node:module";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Duplex } from "node:stream";
import { ProcessExit } from "../api/exit.ts";
import { kernelAccess, prepareBeforeRuns } from "../sim/access.ts";
import { incarnationUnwind } from "../sim/host.ts";
import { warmFetch } from "./fetch.ts";
import type { Kernel, ActorState } from "../sim/kernel.ts";
import type { TimerEntry } from "../sim/clock.ts";
import type { ActorContext, ActorDefinition } from "../sim/types.ts";
import { compileModule, ModuleLoadError, type CompiledModule } from "./loader.ts";
import { makeBindings } from "./env.ts";
import { API_HOST, API_PORT, API_SERVER_URL, API_TOKEN, Connection, loadWire, WireHub, type WireOwner } from "./wire.ts";
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
  let last: ModuleInstance | undefined;
  const def: ActorDefinition = {
    name: options.name,
    start(ctx) {
      last = new ModuleInstance(options, compiled, ctx);
      return last.run();
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

/** The in-process API server of each simulation (by kernel), made when its first module starts. */
const hubs = new WeakMap<Kernel, { hub: WireHub; modules: Map<string, ModuleInstance> }>();
/** The simulation whose module code runs now (one simulation runs at a time per process). */
let active: { hub: WireHub; modules: Map<string, ModuleInstance> } | undefined;

/**
 * Thrown by `process.exit` to unwind the module's code: the incarnation is over. Marked as an unwind: thrown from a
 * callback Node calls outside any step (a request's 'error' handler on the next tick), it reaches the process's
 * uncaught exceptions, where the simulation host lets it go (src/sim/host.ts).
 */
class ExitUnwind extends Error {
  readonly [incarnationUnwind] = true;
}

class ModuleInstance implements WireOwner {
  readonly name: string;
  readonly kernel: Kernel;
  readonly state: ActorState;
  readonly incarnation: number;
  readonly hub: WireHub;
  private readonly registry: { hub: WireHub; modules: Map<string, ModuleInstance> };
  private readonly connections = new Set<Connection>();
  private ended = false;
  private exitWith: ((error: unknown) => void) | undefined;
  private watchesOpened = 0;
  private requests = 0;

  constructor(
    private readonly options: ModuleActorOptions,
    private readonly compiled: CompiledModule,
    private readonly ctx: ActorContext,
  ) {
    const access = kernelAccess(ctx);
    this.name = options.name;
    this.kernel = access.kernel;
    this.state = access.state;
    this.incarnation = access.incarnation;
    let registry = hubs.get(this.kernel);
    if (registry === undefined) {
      registry = { hub: new WireHub(this.kernel), modules: new Map() };
      hubs.set(this.kernel, registry);
    }
    this.registry = registry;
    this.hub = registry.hub;
    registry.modules.set(this.name, this);
  }

  /** The start step: evaluates a fresh instance; the returned promise settles only if the module exits. */
  run(): Promise<void> {
    this.enter();
    return new Promise<void>((_resolve, reject) => {
      this.exitWith = reject;
      const bindings = makeBindings({
        ctx: this.ctx,
        modulePath: this.compiled.argv1,
        args: this.options.args ?? [],
        env: { ...this.options.env, KUBECONFIG: moduleKubeconfig() },
        schedule: (ms, fn, label) => this.schedule(ms, fn, label),
        cancel: (entry) => this.cancel(entry),
        exit: (code) => this.exit(code),
        connect: (host, port) => this.connect(host, port, "fetch"),
      });
      const loaded = this.compiled.instantiate(bindings);
      loaded.then(
        (exports) => {
          if (this.options.export === undefined || !this.current()) return;
          const main = exports[this.options.export];
          if (typeof main !== "function") return reject(new ModuleLoadError(this.compiled.path, `export "${this.options.export}" is not a function`));
          Promise.resolve()
            .then(() => (main as () => unknown)())
            .then(undefined, (error: unknown) => this.threw(error));
        },
        (error: unknown) => {
          if (error instanceof ExitUnwind || !this.current()) return;
          const message = error instanceof Error ? error.message : String(error);
          reject(new ModuleLoadError(this.compiled.path, `threw while loading: ${message}`));
        },
      );
    });
  }

  current(): boolean {
    return !this.ended && this.kernel.isCurrent(this.state, this.incarnation);
  }

  enter(): void {
    active = this.registry;
  }

  threw(error: unknown): void {
    if (error instanceof ExitUnwind || !this.current()) return;
    const message = error instanceof Error ? error.message : String(error);
    // Node would end the process on an uncaught exception: here it is a finding, named.
    this.kernel.fail({ status: "actor-error", actor: this.name, message: `module ${this.name} threw: ${message}` });
  }

  forget(connection: Connection): void {
    this.connections.delete(connection);
  }

  /** A connection from the module's HTTP agent: in process to the API server; anything else is a finding. */
  connect(host: string, port: number, how: string): Duplex {
    if (!this.current()) return deadSocket();
    if (host !== API_HOST || port !== API_PORT) {
      this.kernel.fail({
        status: "actor-error",
        actor: this.name,
        message: `module ${this.name} opened a connection to ${host}:${port} (${how}); in the simulator only the API server ${API_SERVER_URL} (its KUBECONFIG) is reachable`,
      });
      return deadSocket();
    }
    this.requests++;
    const connection = new Connection(this);
    this.connections.add(connection);
    // A client that opened the socket itself (undici) waits for it to connect, as a net.Socket would say.
    if (how.startsWith("net.")) {
      const socket = connection.client;
      process.nextTick(() => {
        if (socket.destroyed) return;
        socket.emit("connect");
        socket.emit("ready");
      });
    }
    return connection.client;
  }

  noteWatch(): void {
    this.watchesOpened++;
  }

  private schedule(ms: number, fn: () => void, label: string): TimerEntry | undefined {
    if (!this.current()) return undefined;
    return this.kernel.scheduleFor(this.state, ms, () => {
      this.enter();
      try {
        fn();
      } catch (error) {
        this.threw(error);
      }
    }, label);
  }

  private cancel(entry: TimerEntry): void {
    if (this.current()) this.kernel.cancelTimer(this.state, entry);
  }

  private exit(code: number): never {
    if (this.current()) {
      this.drop();
      this.exitWith?.(new ProcessExit(`process.exit(${code})`, code));
    }
    throw new ExitUnwind(`process.exit(${code})`);
  }

  /** The incarnation is over: its connections go (the server closes their watches). */
  drop(): void {
    if (this.ended) return;
    this.ended = true;
    for (const connection of this.connections) connection.drop();
    this.connections.clear();
    if (this.registry.modules.get(this.name) === this) this.registry.modules.delete(this.name);
  }

  explain(): string | undefined {
    if (this.requests === 0) return `module ${this.name} made no request to the API server and waits on nothing of the simulation's (a real timer, real I/O, or a client that does not use node's http)`;
    if (this.watchesOpened === 0) return `module ${this.name} never opened a watch and has nothing left to wait on (a controller is expected to watch; did it exit its main code early?)`;
    let open = 0;
    for (const watch of this.kernel.watches()) if (watch.owner === this.state) open++;
    if (open === 0) return `module ${this.name} has no watch open and nothing else to wait on: it stopped watching (an informer not restarted after an error?)`;
    return `module ${this.name} waits on nothing of the simulation's (a real timer or real I/O)`;
  }
}

function deadSocket(): Duplex {
  return new Duplex({ read() {}, write(_chunk, _encoding, callback) { callback(); } });
}

/** The module whose code runs now, if any. */
function runningModule(): ModuleInstance | undefined {
  if (active === undefined) return undefined;
  const name = active.hub.kernel.blame();
  const instance = active.modules.get(name);
  return instance !== undefined && instance.current() ? instance : undefined;
}

/**
 * A connection to the simulated API server opened while no step of a module runs: module code that resumed after
 * real asynchronous work (a file read, DNS, crypto, a real timer), at a real moment the simulation does not order.
 * It would reach out to a host that does not exist and fail in real time; instead the simulation ends with a
 * finding that says so. Undefined for any other host (not the simulation's business).
 */
function strayConnection(host: string, how: string): Duplex | undefined {
  if (host !== API_HOST || active === undefined) return undefined;
  const kernel = active.hub.kernel;
  const names = [...active.modules.keys()];
  const actor = names.length === 1 ? names[0]! : "module";
  kernel.fail({
    status: "outside-await",
    actor,
    message: `module code (${names.join(", ") || "a finished module"}) opened a connection to ${API_HOST} (${how}) outside any step of the simulation: it resumed after real asynchronous work (a file, DNS, crypto, zlib or a real timer) that the simulation does not order`,
  });
  return deadSocket();
}

let patched = false;

/**
 * Routes the connections of module code (and only of module code: the running step's actor) in process. Node's
 * agents take any Duplex from `createConnection`; `net.connect` and `tls.connect` are looked up at call time by
 * clients that open sockets themselves, so a module's attempt through them is reported instead of reaching out.
 */
function installPatches(): void {
  if (patched) return;
  patched = true;
  const httpCreate = http.Agent.prototype.createConnection as (...args: unknown[]) => Duplex;
  (http.Agent.prototype as unknown as { createConnection: unknown }).createConnection = function (this: http.Agent, options: { host?: string; hostname?: string; port?: number | string }, ...rest: unknown[]) {
    const module = runningModule();
    const host = options.hostname ?? options.host ?? "localhost";
    if (module === undefined) return strayConnection(host, "http") ?? httpCreate.call(this, options, ...rest);
    return module.connect(host, Number(options.port ?? 80), "http");
  };
  const httpsCreate = https.Agent.prototype.createConnection as (...args: unknown[]) => Duplex;
  (https.Agent.prototype as unknown as { createConnection: unknown }).createConnection = function (this: https.Agent, options: { host?: string; hostname?: string; port?: number | string }, ...rest: unknown[]) {
    const module = runningModule();
    const host = options.hostname ?? options.host ?? "localhost";
    if (module === undefined) return strayConnection(host, "https") ?? httpsCreate.call(this, options, ...rest);
    return module.connect(`https://${host}`, Number(options.port ?? 443), "https, which the simulated server does not speak");
  };
  // The CommonJS exports objects (an ESM namespace's bindings cannot be replaced): what every caller looks up.
  const nodeRequire = createRequire(import.meta.url);
  const net = nodeRequire("node:net") as Record<string, (...args: unknown[]) => unknown>;
  const tls = nodeRequire("node:tls") as Record<string, (...args: unknown[]) => unknown>;
  for (const [target, key, how] of [
    [net, "connect", "net.connect"],
    [net, "createConnection", "net.createConnection"],
    [tls, "connect", "tls.connect"],
  ] as const) {
    const original = target[key]!;
    Object.defineProperty(target, key, {
      configurable: true,
      writable: true,
      value: function (this: unknown, ...args: unknown[]) {
        const module = runningModule();
        const [first, second] = args as [unknown, unknown];
        const options = typeof first === "object" && first !== null ? (first as { host?: string; port?: number | string; path?: string }) : { port: first as number, host: typeof second === "string" ? second : "localhost" };
        if (module === undefined) return strayConnection(options.host ?? "localhost", how) ?? original.apply(this, args);
        return module.connect(options.path ?? options.host ?? "localhost", Number(options.port ?? 0), `${how}: a socket of its own, not node's http`);
      },
    });
  }
}
