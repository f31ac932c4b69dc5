// `fetch` for a module: Node's bundled undici with a dispatcher of the incarnation's own, whose connections are the
// wire's. Its timeouts are off and it keeps no connection alive between requests: undici arms real timers (and an
// immediate) for those, which the simulation could neither order nor drop with the incarnation.
import type { Duplex } from "node:stream";
import { WireSocket } from "./socket.ts";

type Connector = (options: { hostname: string; port: string; protocol: string }, callback: (error: Error | null, socket: Duplex | null) => void) => void;
type AgentClass = new (options: { connect: Connector; bodyTimeout: number; headersTimeout: number; pipelining: number }) => object;

let agentClass: AgentClass | undefined;
let warming: Promise<void> | undefined;

/**
 * Loads undici and compiles its HTTP parser (asynchronous, on first use) once per process, over an in-process
 * socket that answers 200: no step of a run may wait on it.
 */
export function warmFetch(): Promise<void> {
  warming ??= (async () => {
    // A data: URL needs no network, and makes undici set its global dispatcher, whose class is the Agent.
    await (await fetch("data:,")).arrayBuffer();
    const dispatcher = (globalThis as Record<symbol, unknown>)[Symbol.for("undici.globalDispatcher.1")] as object | undefined;
    agentClass = dispatcher?.constructor as AgentClass | undefined;
    if (agentClass === undefined) return;
    const agent = new agentClass({ bodyTimeout: 0, headersTimeout: 0, pipelining: 0, connect: (_options, callback) => callback(null, answeringSocket()) });
    await (await fetch("http://settle-warmup.invalid/", { dispatcher: agent } as RequestInit)).arrayBuffer();
  })().catch(() => {
    agentClass = undefined;
  });
  return warming;
}

/** A socket that answers any request with an empty 200 and closes. */
function answeringSocket(): WireSocket {
  let received = "";
  const socket: WireSocket = new WireSocket(
    {
      data(chunk) {
        received += chunk.toString("latin1");
        if (!received.includes("\r\n\r\n")) return;
        socket.push(Buffer.from("HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n", "latin1"));
        socket.push(null);
      },
      end() {},
      destroyed() {},
    },
    { local: 1, remote: 80 },
  );
  return socket;
}

/** The incarnation's `fetch`, or undefined when undici's Agent is not reachable (then the global one is left). */
export function moduleFetch(connect: (host: string, port: number) => Duplex): typeof fetch | undefined {
  if (agentClass === undefined) return undefined;
  const agent = new agentClass({
    bodyTimeout: 0,
    headersTimeout: 0,
    pipelining: 0,
    connect: (options, callback) => {
      const port = Number(options.port) || (options.protocol === "https:" ? 443 : 80);
      callback(null, connect(options.protocol === "https:" ? `https://${options.hostname}` : options.hostname, port));
    },
  });
  const real = globalThis.fetch;
  return ((input: Parameters<typeof fetch>[0], init?: RequestInit) => real(input, { ...init, dispatcher: (init as { dispatcher?: unknown } | undefined)?.dispatcher ?? agent } as RequestInit)) as typeof fetch;
}
