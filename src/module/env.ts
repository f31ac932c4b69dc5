// What one incarnation of a module sees instead of the process's own: timers on the simulation clock (each firing
// a step of the actor), `performance.now` and `process.hrtime` on virtual time, a `process` whose argv, env, exit
// and signal handlers are its own, and a console that writes trace log lines. Everything here belongs to the
// incarnation: a crash drops it whole with the module's objects.
import { createRequire } from "node:module";
import { format } from "node:util";
import { EventEmitter } from "node:events";
import { Writable } from "node:stream";
import { monotonicNow } from "../api/clock.ts";
import type { TimerEntry } from "../sim/clock.ts";
import type { ActorContext } from "../sim/types.ts";
import type { Duplex } from "node:stream";
import type { ModuleBindings } from "./loader.ts";
import { moduleFetch } from "./fetch.ts";
import { moduleFs, moduleFsPromises } from "./fs.ts";
import { writeModuleOutput } from "./output.ts";
import { assert } from "../api/assert.ts";

const nodeRequire = createRequire(import.meta.url);

/**
 * The process's builtin modules by name, looked up once: `require` resolves every call through the module loader
 * (and any require hooks), a cost each incarnation's load paid again for every builtin each library imports. A
 * builtin is one object per process whoever requires it, so the cache hands out nothing an incarnation owns.
 */
const builtinCache = new Map<string, unknown>();

function processBuiltin(name: string): unknown {
  let module = builtinCache.get(name);
  if (module === undefined) {
    module = nodeRequire(`node:${name}`);
    builtinCache.set(name, module);
  }
  return module;
}

/** What the environment needs of its incarnation. */
export interface EnvHost {
  readonly ctx: ActorContext;
  readonly modulePath: string;
  readonly args: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  /** Schedules `fn` after `ms` virtual ms as a step of the incarnation (undefined once it is gone). */
  schedule(ms: number, fn: () => void, label: string): TimerEntry | undefined;
  cancel(entry: TimerEntry): void;
  /** `process.exit(code)`: the incarnation ends; does not return. */
  exit(code: number): never;
  /** A connection of the module's `fetch` to `host:port` (in process to the API server, or a finding). */
  connect(host: string, port: number): Duplex;
}

/** Node's `Timeout`, as far as libraries use it: ref/unref, refresh, a numeric id for `clearTimeout(id)`. */
class VirtualTimeout {
  entry: TimerEntry | undefined;
  private refed = true;
  constructor(
    readonly id: number,
    private readonly arm: (self: VirtualTimeout) => TimerEntry | undefined,
    private readonly disarm: (self: VirtualTimeout) => void,
  ) {
    this.entry = arm(this);
  }
  ref(): this {
    this.refed = true;
    return this;
  }
  unref(): this {
    this.refed = false;
    return this;
  }
  hasRef(): boolean {
    return this.refed;
  }
  refresh(): this {
    this.disarm(this);
    this.entry = this.arm(this);
    return this;
  }
  close(): this {
    this.disarm(this);
    return this;
  }
  [Symbol.toPrimitive](): number {
    return this.id;
  }
}

/** Node's rule for a delay: below 1 or above 2^31-1 (or not a number) is 1 ms. */
function delayOf(ms: unknown): number {
  const n = Number(ms);
  return Number.isFinite(n) && n >= 1 && n <= 2 ** 31 - 1 ? Math.floor(n) : 1;
}

/** The incarnation's timers: each a `timer` step of the actor (Node's delay rules; ref, unref, refresh). */
function makeTimers(host: EnvHost) {
  const byId = new Map<number, VirtualTimeout>();
  let nextId = 1;
  const disarm = (self: VirtualTimeout) => {
    if (self.entry !== undefined) host.cancel(self.entry);
    self.entry = undefined;
  };
  const make = (fn: unknown, ms: number, args: unknown[], repeat: boolean, what: string): VirtualTimeout => {
    if (typeof fn !== "function") throw new TypeError(`The "callback" argument must be of type function. Received ${typeof fn}`);
    assert(ms >= 0 && Number.isInteger(ms), "a timer's delay is a whole number of ms");
    const id = nextId++;
    const arm = (self: VirtualTimeout): TimerEntry | undefined =>
      host.schedule(ms, () => {
        if (repeat) self.entry = arm(self);
        else byId.delete(id);
        (fn as (...a: unknown[]) => void)(...args);
      }, `${what} ${ms}ms`);
    const timeout = new VirtualTimeout(id, arm, disarm);
    byId.set(id, timeout);
    return timeout;
  };
  const clear = (handle: unknown): void => {
    const timeout = handle instanceof VirtualTimeout ? handle : typeof handle === "number" || typeof handle === "string" ? byId.get(Number(handle)) : undefined;
    if (timeout === undefined) return;
    byId.delete(timeout.id);
    timeout.close();
  };
  // The module's setTimeout: a timer of the simulation clock (named apart from the real one so no reader mistakes it).
  const simSetTimeout = (fn: unknown, ms?: unknown, ...args: unknown[]) => make(fn, delayOf(ms), args, false, "setTimeout");
  const setInterval = (fn: unknown, ms?: unknown, ...args: unknown[]) => make(fn, delayOf(ms), args, true, "setInterval");
  // An immediate runs in a step of its own right after the current one: a 0 ms timer.
  const setImmediate = (fn: unknown, ...args: unknown[]) => {
    if (typeof fn !== "function") throw new TypeError(`The "callback" argument must be of type function. Received ${typeof fn}`);
    const id = nextId++;
    const timeout = new VirtualTimeout(id, (self) => host.schedule(0, () => {
      byId.delete(id);
      (fn as (...a: unknown[]) => void)(...args);
    }, "setImmediate"), disarm);
    byId.set(id, timeout);
    return timeout;
  };
  const promises = {
    setTimeout: (ms?: number, value?: unknown, options?: { signal?: AbortSignal }) => sleepWith(simSetTimeout, clear, delayOf(ms), value, options?.signal),
    setImmediate: (value?: unknown, options?: { signal?: AbortSignal }) => sleepWith((fn: () => void) => setImmediate(fn), clear, 0, value, options?.signal),
    scheduler: { wait: (ms: number, options?: { signal?: AbortSignal }) => sleepWith(simSetTimeout, clear, delayOf(ms), undefined, options?.signal), yield: () => sleepWith((fn: () => void) => setImmediate(fn), clear, 0, undefined, undefined) },
  };
  const timers = { setTimeout: simSetTimeout, clearTimeout: clear, setInterval, clearInterval: clear, setImmediate, clearImmediate: clear, promises };
  return { simSetTimeout, setInterval, setImmediate, clear, promises, timers };
}

/** `performance` on virtual time, from the incarnation's start. */
function makePerformance(startMs: number, elapsedMs: () => number) {
  return {
    now: () => elapsedMs(),
    timeOrigin: startMs,
    mark: () => undefined,
    measure: () => undefined,
    clearMarks: () => undefined,
    clearMeasures: () => undefined,
    getEntries: () => [],
    getEntriesByName: () => [],
    getEntriesByType: () => [],
    toJSON: () => ({ timeOrigin: startMs }),
    // undici's fetch (the npm package, as kubernetes-fluent-client bundles it) reads this at load and calls it after
    // every response; resource timings are real-time records, so the module keeps none.
    markResourceTiming: () => undefined,
    clearResourceTimings: () => undefined,
    setResourceTimingBufferSize: () => undefined,
  };
}

/** The builtins as the incarnation sees them: its own where it has one, the process's otherwise. */
function makeBuiltin(own: { timers: unknown; promises: unknown; performance: unknown; process: unknown; console: unknown }): (name: string) => unknown {
  // Made on first import, then the same object for every importer (as Node's module cache gives).
  let fsPromises: Record<string, unknown> | undefined;
  let fs: Record<string, unknown> | undefined;
  return (name) => {
    switch (name) {
      case "fs":
        return (fs ??= moduleFs((fsPromises ??= moduleFsPromises())));
      case "fs/promises":
        return (fsPromises ??= moduleFsPromises());
      case "timers":
        return own.timers;
      case "timers/promises":
        return own.promises;
      case "perf_hooks":
        return { ...(processBuiltin("perf_hooks") as object), performance: own.performance };
      case "process":
        return own.process;
      case "console":
        return own.console;
      default:
        return processBuiltin(name);
    }
  };
}

/** The incarnation's bindings. */
export function makeBindings(host: EnvHost): ModuleBindings {
  const clock = host.ctx.clock;
  const startMs = clock.now();
  assert(Number.isFinite(startMs), "an incarnation starts at a time of the simulation clock");
  const { simSetTimeout, setInterval, setImmediate, clear, promises, timers } = makeTimers(host);
  // Elapsed time is monotonic, as the kernel's is: a clock fault steps the wall clock (`Date`, the time origin),
  // never `performance.now`, `process.hrtime` or `process.uptime`.
  const startMonotonicMs = monotonicNow(clock);
  const elapsedMs = () => monotonicNow(clock) - startMonotonicMs;
  const performance = makePerformance(startMs, elapsedMs);
  // Node's `AbortSignal.timeout` arms a real timer (and keeps the signal, with whatever listens to it, for that
  // long): the module's fires on the simulation clock instead. Everything else is the real class.
  const timeoutSignal = (ms: number): AbortSignal => {
    const controller = new AbortController();
    simSetTimeout(() => controller.abort(new DOMException("The operation was aborted due to timeout", "TimeoutError")), ms).unref();
    return controller.signal;
  };
  const abortSignal = new Proxy(globalThis.AbortSignal, {
    get: (target, key, receiver) => (key === "timeout" ? timeoutSignal : Reflect.get(target, key, receiver) as unknown),
  });
  const console = makeConsole(host.ctx);
  const process = makeProcess(host, elapsedMs);
  const builtin = makeBuiltin({ timers, promises, performance, process, console });
  return { process, console, setTimeout: simSetTimeout, clearTimeout: clear, setInterval, clearInterval: clear, setImmediate, clearImmediate: clear, performance, AbortSignal: abortSignal, fetch: moduleFetch(host.connect) ?? globalThis.fetch, builtin };
}

function sleepWith(set: (fn: () => void, ms: number) => unknown, clear: (handle: unknown) => void, ms: number, value: unknown, signal: AbortSignal | undefined): Promise<unknown> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clear(handle);
      reject(signal?.reason);
    };
    const handle = set(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve(value);
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** Log lines longer than this are cut: a module logging whole objects must not swell every trace. */
const LOG_LINE_CHARS_MAX = 400;

function makeConsole(ctx: ActorContext): Record<string, (...args: unknown[]) => void> {
  const line = (level: string) => (...args: unknown[]) => {
    const text = format(...args);
    ctx.log(text.length > LOG_LINE_CHARS_MAX ? `${text.slice(0, LOG_LINE_CHARS_MAX)}...` : text, level === "log" ? undefined : { level });
  };
  const ignore = () => {};
  return { log: line("log"), info: line("info"), warn: line("warn"), error: line("error"), debug: line("debug"), trace: line("trace"), dir: line("log"), table: line("log"), group: ignore, groupEnd: ignore, groupCollapsed: ignore, time: ignore, timeEnd: ignore, timeLog: ignore, count: ignore, countReset: ignore, assert: (...args: unknown[]) => { if (!args[0]) line("error")("Assertion failed", ...args.slice(1)); } };
}

/** The incarnation's stdout or stderr: written through `writeModuleOutput` (dropped unless a replay asks for it). */
function outputStream(fd: 1 | 2): Writable {
  const stream = new Writable({
    decodeStrings: true,
    write(chunk: Buffer, _encoding, callback) {
      writeModuleOutput(fd, chunk);
      callback();
    },
  });
  return Object.assign(stream, { fd, isTTY: false, columns: 80, rows: 24 });
}

/**
 * The incarnation's `process`: the real one for what does not concern it (versions, platform, nextTick), its own
 * argv, env, exit, exit code, stdout and stderr, and event listeners (a SIGTERM handler must not outlive the
 * incarnation).
 */
function makeProcess(host: EnvHost, elapsedMs: () => number): unknown {
  const events = new EventEmitter();
  events.setMaxListeners(0);
  const env: Record<string, string> = { ...(globalThis.process.env as Record<string, string>), ...host.env };
  const argv = [globalThis.process.execPath, host.modulePath, ...host.args];
  const hrtime = (previous?: [number, number]): [number, number] => {
    const ns = Math.round(elapsedMs() * 1e6);
    let seconds = Math.floor(ns / 1e9);
    let nanos = ns % 1e9;
    if (previous !== undefined) {
      seconds -= previous[0];
      nanos -= previous[1];
      if (nanos < 0) {
        seconds -= 1;
        nanos += 1e9;
      }
    }
    return [seconds, nanos];
  };
  hrtime.bigint = () => BigInt(Math.round(elapsedMs() * 1e6));
  const own: Record<string | symbol, unknown> = {
    argv,
    env,
    stdout: outputStream(1),
    stderr: outputStream(2),
    exitCode: undefined,
    exit: (code?: number) => host.exit(code ?? (typeof own.exitCode === "number" ? own.exitCode : 0)),
    hrtime,
    uptime: () => elapsedMs() / 1000,
    on: (name: string | symbol, fn: (...args: unknown[]) => void) => (events.on(name, fn), proxy),
    addListener: (name: string | symbol, fn: (...args: unknown[]) => void) => (events.on(name, fn), proxy),
    once: (name: string | symbol, fn: (...args: unknown[]) => void) => (events.once(name, fn), proxy),
    prependListener: (name: string | symbol, fn: (...args: unknown[]) => void) => (events.prependListener(name, fn), proxy),
    off: (name: string | symbol, fn: (...args: unknown[]) => void) => (events.off(name, fn), proxy),
    removeListener: (name: string | symbol, fn: (...args: unknown[]) => void) => (events.off(name, fn), proxy),
    removeAllListeners: (name?: string | symbol) => (events.removeAllListeners(name), proxy),
    listeners: (name: string | symbol) => events.listeners(name),
    listenerCount: (name: string | symbol) => events.listenerCount(name),
    emit: (name: string | symbol, ...args: unknown[]) => events.emit(name, ...args),
    kill: (pid: number, signal?: string) => {
      if (pid === globalThis.process.pid) host.exit(signal === undefined || signal === "SIGTERM" ? 143 : 137);
      throw Object.assign(new Error(`kill ESRCH`), { code: "ESRCH" });
    },
  };
  const real = globalThis.process as unknown as Record<string | symbol, unknown>;
  const proxy: unknown = new Proxy(own, {
    get(target, key) {
      if (key in target) return target[key];
      const value = real[key];
      return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(real) : value;
    },
    set(target, key, value) {
      target[key] = value;
      return true;
    },
    has(target, key) {
      return key in target || key in real;
    },
  });
  return proxy;
}
