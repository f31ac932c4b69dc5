// What one incarnation of a Go program sees as its JavaScript host. Go's js/wasm port takes its clock, its timers,
// its random source, its file descriptors and everything `syscall/js` reaches from the host through the toolchain's
// `wasm_exec.js`. That file is evaluated once per process as a function of a shadow `globalThis` and of the
// names it uses bare (`fs`, `crypto`, `performance`, `Date`, `setTimeout`, ...), and called once per incarnation
// with a shadow made here: the simulation's clock and timers, a random source drawn from the run's seed, a file
// system whose descriptors 1 and 2 are the incarnation's output, and `settle`, the bridge that the overlay's
// network (src/go/overlay/net_settle_js.go) dials through. Nothing of the process's own global is visible.
import * as nodeFs from "node:fs";
import { assert } from "../api/assert.ts";
import type { Rng } from "../sim/rng.ts";
import { monotonicNow, type Clock } from "../api/clock.ts";
import type { WasmInstance } from "./build.ts";

/** What the shadow needs of its incarnation. */
export interface GoHostSide {
  readonly clock: Pick<Clock, "now" | "monotonic">;
  readonly rng: Rng;
  readonly cwd: string;
  /** Arms a virtual timer: `fn` runs as a step of the incarnation after `ms` (undefined once it is gone). */
  schedule(ms: number, fn: () => void): unknown;
  cancel(handle: unknown): void;
  /** Bytes the program wrote to fd 1 or 2. */
  output(fd: 1 | 2, bytes: Uint8Array): void;
  /** A lookup of `host`: the API server's address, or undefined (the host has reported it). */
  lookup(host: string): string | undefined;
  /** A dial of `ip:port`: a connection id, or undefined (the host has reported it). */
  dial(ip: string, port: number): number | undefined;
  write(id: number, bytes: Uint8Array): void;
  close(id: number): void;
  /** The program reached for a global the shadow does not have (a JavaScript API outside the simulation). */
  unknownGlobal(name: string): void;
  /** The overlay's inbox, called by the host with (id, bytes | "eof" | "reset"). */
  register(inbox: (id: number, payload: Uint8Array | string) => void): void;
}

/** The `Go` class of wasm_exec.js, as far as settle uses it. */
export interface GoRuntime {
  argv: string[];
  env: Record<string, string>;
  exit: (code: number) => void;
  exited: boolean;
  readonly importObject: object;
  run(instance: WasmInstance): Promise<void>;
}

type GoClass = new () => GoRuntime;

/** The bare names wasm_exec.js uses, passed as the evaluated function's parameters. */
const BARE_NAMES = ["globalThis", "fs", "process", "crypto", "performance", "Date", "setTimeout", "clearTimeout", "console", "TextEncoder", "TextDecoder"] as const;

type ShadowFactory = (...bindings: unknown[]) => GoClass;

/** wasm_exec.js compiled once per source text (one per toolchain). */
const factories = new Map<string, ShadowFactory>();

function factoryFor(source: string): ShadowFactory {
  let factory = factories.get(source);
  if (factory === undefined) {
    // The file assigns `globalThis.Go`; the shadow is the `globalThis` it sees, so the class is read back from it.
    factory = new Function(...BARE_NAMES, `${source}\n;return globalThis.Go;`) as ShadowFactory;
    factories.set(source, factory);
  }
  return factory;
}

/** A `Go` runtime object of the toolchain's wasm_exec.js, bound to a fresh shadow of this incarnation. */
export function makeGoRuntime(wasmExecSource: string, side: GoHostSide): { runtime: GoRuntime; closeFiles: () => void } {
  const shadow = makeShadow(side);
  const bindings = BARE_NAMES.map((name) => shadow[name]);
  const Go = factoryFor(wasmExecSource)(...bindings);
  assert(typeof Go === "function", "wasm_exec.js defines the Go class");
  const fs = shadow.fs as { settleCloseAll(): void };
  return { runtime: new Go(), closeFiles: () => fs.settleCloseAll() };
}

function makeShadow(side: GoHostSide): Record<string, unknown> {
  const timeOrigin = side.clock.now();
  const clock = side.clock;
  // Go's monotonic readings (runtime.nanotime) come from performance.now: they keep the true rate under a clock
  // fault, which steps only the wall clock (Date, runtime.walltime).
  const monotonicOrigin = monotonicNow(clock);
  class GoDate extends Date {
    constructor(...args: unknown[]) {
      if (args.length === 0) super(clock.now());
      else super(...(args as [number]));
    }
    static override now(): number {
      return clock.now();
    }
    // A program's local time zone is UTC, as in most containers (Go's time package on js asks Date for it).
    override getTimezoneOffset(): number {
      return 0;
    }
  }
  const shadow: Record<string, unknown> = {
    Object,
    Array,
    Uint8Array,
    Uint8ClampedArray,
    ArrayBuffer,
    DataView,
    Error,
    TypeError,
    RangeError,
    Promise,
    JSON,
    Symbol,
    Function,
    Reflect,
    Math: Object.freeze({ ...mathWithout(), random: () => side.rng.int(0x1_0000_0000) / 0x1_0000_0000 }),
    Date: GoDate,
    performance: { now: () => monotonicNow(clock) - monotonicOrigin, timeOrigin },
    crypto: { getRandomValues: (array: Uint8Array) => fillRandom(side.rng, array) },
    setTimeout: (fn: () => void, ms: number) => side.schedule(Math.max(1, Math.ceil(Number(ms) || 0)), fn),
    clearTimeout: (handle: unknown) => side.cancel(handle),
    console: silentConsole,
    TextEncoder,
    TextDecoder,
    process: makeProcess(side),
    fs: makeFs(side),
    settle: makeBridge(side),
  };
  shadow.globalThis = guarded(shadow, side);
  return shadow;
}

/**
 * Globals the standard library probes for and copes without: net/http looks for `fetch` (and with it `Headers`,
 * `AbortController`), syscall for `path` (wasm_exec.js then defines its own). Any other missing name is a program
 * reaching for a JavaScript API outside the simulation (a real timer, a real network), reported by name.
 */
const PROBED_GLOBALS: ReadonlySet<string> = new Set(["fetch", "Headers", "AbortController", "path", "document"]);

function guarded(shadow: Record<string, unknown>, side: GoHostSide): Record<string, unknown> {
  return new Proxy(shadow, {
    get(target, key) {
      if (typeof key === "string" && !(key in target) && !PROBED_GLOBALS.has(key)) side.unknownGlobal(key);
      return target[key as string];
    },
  });
}

function mathWithout(): Record<string, unknown> {
  const copy: Record<string, unknown> = {};
  for (const key of Object.getOwnPropertyNames(Math)) copy[key] = (Math as unknown as Record<string, unknown>)[key];
  return copy;
}

/** crypto.getRandomValues from the incarnation's own stream of the run's seed. */
function fillRandom(rng: Rng, array: Uint8Array): Uint8Array {
  assert(array instanceof Uint8Array, "getRandomValues fills a Uint8Array");
  for (let i = 0; i < array.length; i += 4) {
    let word = rng.int(0x1_0000_0000);
    for (let j = i; j < Math.min(i + 4, array.length); j++) {
      array[j] = word & 0xff;
      word >>>= 8;
    }
  }
  return array;
}

const silentConsole = { log() {}, warn() {}, error() {}, info() {}, debug() {} };

function makeBridge(side: GoHostSide): Record<string, unknown> {
  return {
    register: (inbox: (id: number, payload: Uint8Array | string) => void) => side.register(inbox),
    lookup: (host: string) => side.lookup(String(host)) ?? null,
    dial: (ip: string, port: number) => side.dial(String(ip), Number(port)) ?? null,
    write: (id: number, bytes: Uint8Array) => side.write(Number(id), bytes),
    close: (id: number) => side.close(Number(id)),
  };
}

/** What `syscall` reads of `process` on js: ids, the working directory, the umask. */
function makeProcess(side: GoHostSide): Record<string, unknown> {
  let cwd = side.cwd;
  return {
    pid: 1,
    ppid: 0,
    getuid: () => 0,
    getgid: () => 0,
    geteuid: () => 0,
    getegid: () => 0,
    getgroups: () => [0],
    umask: () => 0o022,
    cwd: () => cwd,
    chdir: (path: string) => {
      cwd = String(path);
    },
  };
}

/** What descriptors 0-2 are, the same everywhere: a pipe (the process's own would differ between machines). */
const STDIO_STAT = Object.freeze({ dev: 0, ino: 0, mode: 0o010600, nlink: 1, uid: 0, gid: 0, rdev: 0, size: 0, blksize: 4096, blocks: 0, atimeMs: 0, mtimeMs: 0, ctimeMs: 0 });

type Callback = (error: unknown, value?: unknown) => void;

/** Descriptors an incarnation may hold open at once (its files; sockets are not descriptors here). */
const OPEN_FILES_MAX = 1024;

/**
 * The file system as `syscall` uses it on js (Node's callback API): path-based calls finish at the call through
 * Node's synchronous twins, so a read never resumes the program at a real moment. Descriptors 0-2 are the
 * incarnation's (stdin empty, stdout and stderr its output); files get descriptors of the incarnation's own
 * numbering, closed when it ends.
 */
function makeFs(side: GoHostSide): Record<string, unknown> {
  const files = new Map<number, number>();
  let nextFd = 3;
  const real = (fd: number): number => {
    const found = files.get(fd);
    if (found === undefined) throw Object.assign(new Error(`EBADF: bad file descriptor ${fd}`), { code: "EBADF" });
    return found;
  };
  const sync = (cb: Callback, work: () => unknown): void => {
    let value: unknown;
    try {
      value = work();
    } catch (error) {
      cb(error);
      return;
    }
    cb(null, value);
  };
  const writeOut = (fd: number, bytes: Uint8Array): number => {
    if (fd === 1 || fd === 2) side.output(fd, bytes);
    else nodeFs.writeSync(real(fd), bytes);
    return bytes.length;
  };
  return {
    constants: nodeFs.constants,
    writeSync: (fd: number, bytes: Uint8Array) => writeOut(fd, bytes),
    write: (fd: number, buffer: Uint8Array, offset: number, length: number, position: number | null, cb: Callback) =>
      sync(cb, () => (fd === 1 || fd === 2 ? writeOut(fd, buffer.subarray(offset, offset + length)) : nodeFs.writeSync(real(fd), buffer, offset, length, position))),
    read: (fd: number, buffer: Uint8Array, offset: number, length: number, position: number | null, cb: Callback) =>
      sync(cb, () => (fd === 0 ? 0 : nodeFs.readSync(real(fd), buffer, offset, length, position))),
    open: (path: string, flags: number, mode: number, cb: Callback) =>
      sync(cb, () => {
        if (files.size >= OPEN_FILES_MAX) throw Object.assign(new Error("EMFILE: too many open files"), { code: "EMFILE" });
        const fd = nextFd++;
        files.set(fd, nodeFs.openSync(path, flags, mode));
        return fd;
      }),
    close: (fd: number, cb: Callback) =>
      sync(cb, () => {
        if (fd <= 2) return;
        nodeFs.closeSync(real(fd));
        files.delete(fd);
      }),
    fstat: (fd: number, cb: Callback) => sync(cb, () => (fd <= 2 ? STDIO_STAT : nodeFs.fstatSync(real(fd)))),
    fsync: (fd: number, cb: Callback) => sync(cb, () => (fd <= 2 ? undefined : nodeFs.fsyncSync(real(fd)))),
    ftruncate: (fd: number, length: number, cb: Callback) => sync(cb, () => nodeFs.ftruncateSync(real(fd), length)),
    fchmod: (fd: number, mode: number, cb: Callback) => sync(cb, () => nodeFs.fchmodSync(real(fd), mode)),
    fchown: (fd: number, uid: number, gid: number, cb: Callback) => sync(cb, () => nodeFs.fchownSync(real(fd), uid, gid)),
    stat: (path: string, cb: Callback) => sync(cb, () => nodeFs.statSync(path)),
    lstat: (path: string, cb: Callback) => sync(cb, () => nodeFs.lstatSync(path)),
    readdir: (path: string, cb: Callback) => sync(cb, () => nodeFs.readdirSync(path)),
    readlink: (path: string, cb: Callback) => sync(cb, () => nodeFs.readlinkSync(path)),
    mkdir: (path: string, mode: number, cb: Callback) => sync(cb, () => nodeFs.mkdirSync(path, { mode })),
    rmdir: (path: string, cb: Callback) => sync(cb, () => nodeFs.rmdirSync(path)),
    unlink: (path: string, cb: Callback) => sync(cb, () => nodeFs.unlinkSync(path)),
    rename: (from: string, to: string, cb: Callback) => sync(cb, () => nodeFs.renameSync(from, to)),
    link: (from: string, to: string, cb: Callback) => sync(cb, () => nodeFs.linkSync(from, to)),
    symlink: (from: string, to: string, cb: Callback) => sync(cb, () => nodeFs.symlinkSync(from, to)),
    chmod: (path: string, mode: number, cb: Callback) => sync(cb, () => nodeFs.chmodSync(path, mode)),
    chown: (path: string, uid: number, gid: number, cb: Callback) => sync(cb, () => nodeFs.chownSync(path, uid, gid)),
    lchown: (path: string, uid: number, gid: number, cb: Callback) => sync(cb, () => nodeFs.lchownSync(path, uid, gid)),
    truncate: (path: string, length: number, cb: Callback) => sync(cb, () => nodeFs.truncateSync(path, length)),
    utimes: (path: string, atime: number, mtime: number, cb: Callback) => sync(cb, () => nodeFs.utimesSync(path, atime, mtime)),
    /** Closes what the incarnation left open (it ended). */
    settleCloseAll: () => {
      for (const fd of files.values()) nodeFs.closeSync(fd);
      files.clear();
    },
  };
}
