// The wire's fixed facts: the address of the simulated API server as a module's kubeconfig names it, and the
// server's request handling, loaded once before any run. The wire itself is a hub per simulation (hub.ts) holding
// its connections (connection.ts), each with its watches (watch.ts).
import type { InProcessServer, InProcessServerOptions } from "../server/server.ts";

/** The API server's address as the module's kubeconfig names it; nothing else is reachable. */
export const API_HOST = "kubernetes.settle.sim";
export const API_PORT = 6443;
export const API_SERVER_URL = `http://${API_HOST}:${API_PORT}`;
/** The bearer token of the module's kubeconfig. */
export const API_TOKEN = "settle-simulated-module";

/**
 * The header naming a request's ticket with its hub: what the server's hooks must know of the request (its stale-read
 * lag, its watch) travels with the request itself. The server reads no header it does not know.
 */
export const TICKET_HEADER = "x-settle-wire-ticket";

/**
 * The server's request handling, loaded when the first module actor is made (`loadWire`, awaited before any run):
 * `settle/sim` exports `moduleActor`, and a simulation without modules should not load the whole server.
 */
let serverFactory: ((options: InProcessServerOptions) => InProcessServer) | undefined;

export function loadWire(): Promise<void> {
  if (serverFactory !== undefined) return Promise.resolve();
  return import("../server/server.ts").then((server) => {
    serverFactory = server.createInProcessServer;
  });
}

/** A server that listens nowhere and is handed its connections. Throws before `loadWire()` resolved. */
export function createInProcessServer(options: InProcessServerOptions): InProcessServer {
  if (serverFactory === undefined) throw new Error("settle: the module wire is used before loadWire() resolved");
  return serverFactory(options);
}
