// The module's `fs` and `fs/promises`: a file operation finishes at the call, not when the disk answers. Real
// asynchronous I/O completes in real time, after whatever steps the simulation ran meanwhile, so a library that
// reads a file on the way to a request (kubernetes-fluent-client reads the service-account token before every
// watch) would send it inside one step or another from run to run. Here each path-based operation runs its
// synchronous twin and hands over the outcome on the next tick (callbacks) or as a settled promise, in the step
// that called it. Everything else (streams, file handles, fd-based reads, watchers) is the real module.
import { createRequire } from "node:module";

const nodeRequire = createRequire(import.meta.url);
const realFs = nodeRequire("node:fs") as Record<string, unknown>;

/** Path-based operations with a `...Sync` twin whose result is what the callback or the promise would give. */
const PATH_OPERATIONS = [
  "access", "appendFile", "chmod", "chown", "copyFile", "cp", "lchown", "link", "lstat", "lutimes", "mkdir", "mkdtemp",
  "readdir", "readFile", "readlink", "realpath", "rename", "rm", "rmdir", "stat", "statfs", "symlink", "truncate",
  "unlink", "utimes", "writeFile",
] as const;

type Fn = (...args: unknown[]) => unknown;

/** A path or data the synchronous twin takes the same way: anything else (a FileHandle, a stream) goes to the real call. */
function plainArgument(value: unknown): boolean {
  return typeof value === "string" || typeof value === "number" || value instanceof URL || ArrayBuffer.isView(value);
}

function twinFor(name: string): Fn | undefined {
  const twin = realFs[`${name}Sync`];
  return typeof twin === "function" ? (twin as Fn) : undefined;
}

/** `fs.name(...args, callback)` through `fs.nameSync`, the callback on the next tick. */
function callbackOperation(name: string, real: Fn, twin: Fn): Fn {
  const operation = function (this: unknown, ...args: unknown[]): unknown {
    const callback = args[args.length - 1];
    const data = name === "writeFile" || name === "appendFile" ? args[1] : undefined;
    if (typeof callback !== "function" || !plainArgument(args[0]) || (data !== undefined && !plainArgument(data))) return real.apply(this, args);
    let result: unknown;
    try {
      result = twin(...args.slice(0, -1));
    } catch (error) {
      process.nextTick(callback as Fn, error);
      return undefined;
    }
    process.nextTick(callback as Fn, null, result);
    return undefined;
  };
  return Object.assign(operation, real);
}

/** `fs.promises.name(...args)` through `fs.nameSync`, as an already settled promise. */
function promiseOperation(name: string, real: Fn, twin: Fn): Fn {
  return function (this: unknown, ...args: unknown[]): unknown {
    const data = name === "writeFile" || name === "appendFile" ? args[1] : undefined;
    if (!plainArgument(args[0]) || (data !== undefined && !plainArgument(data))) return real.apply(this, args);
    try {
      return Promise.resolve(twin(...args));
    } catch (error) {
      return Promise.reject(error);
    }
  };
}

/** The module's `fs/promises`: the real one, its path-based operations settled at the call. */
export function moduleFsPromises(): Record<string, unknown> {
  const real = realFs.promises as Record<string, unknown>;
  const own: Record<string, unknown> = { ...real };
  for (const name of PATH_OPERATIONS) {
    const twin = twinFor(name);
    const original = real[name];
    if (twin !== undefined && typeof original === "function") own[name] = promiseOperation(name, original as Fn, twin);
  }
  return own;
}

/** The module's `fs`: the real one, its path-based callback operations done at the call; `promises` as above. */
export function moduleFs(promises: Record<string, unknown>): Record<string, unknown> {
  const own: Record<string, unknown> = { ...realFs, promises };
  for (const name of PATH_OPERATIONS) {
    const twin = twinFor(name);
    const original = realFs[name];
    if (twin !== undefined && typeof original === "function") own[name] = callbackOperation(name, original as Fn, twin);
  }
  const exists = realFs.exists as Fn;
  const existsSync = realFs.existsSync as (path: unknown) => boolean;
  own.exists = (path: unknown, callback: unknown) => {
    if (typeof callback !== "function" || !plainArgument(path)) return exists(path, callback);
    process.nextTick(callback as Fn, existsSync(path));
  };
  return own;
}
