// Node's agents and sockets, patched once per process so that the connections of module code (and only of module
// code: the running step's actor is an incarnation enrolled in the active hub) stay in process. Node's agents take
// any Duplex from `createConnection`; `net.connect` and `tls.connect` are looked up at call time by clients that open
// sockets themselves, so a module's attempt through them is reported instead of reaching out.
import * as http from "node:http";
import * as https from "node:https";
import { createRequire } from "node:module";
import type { Duplex } from "node:stream";
import { hubs, type EnrolledOwner } from "./hub.ts";
import { deadSocket } from "./incarnation.ts";
import { API_HOST } from "./wire.ts";

/** The incarnation whose code runs now, if any. */
function runningModule(): EnrolledOwner | undefined {
  const hub = hubs.active;
  if (hub === undefined) return undefined;
  const owner = hub.owner(hub.kernel.blame());
  return owner !== undefined && owner.current() ? owner : undefined;
}

/**
 * A connection to the simulated API server opened while no step of a module runs: module code that resumed after
 * real asynchronous work (a file read, DNS, crypto, a real timer), at a real moment the simulation does not order.
 * It would reach out to a host that does not exist and fail in real time; instead the simulation ends with a
 * finding that says so. Undefined for any other host (not the simulation's business).
 */
function strayConnection(host: string, how: string): Duplex | undefined {
  const hub = hubs.active;
  if (host !== API_HOST || hub === undefined) return undefined;
  const kernel = hub.kernel;
  const names = hub.ownerNames();
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
export function installPatches(): void {
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
