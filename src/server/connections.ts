// How long `settle serve` keeps a connection that is not being answered, as kube-apiserver bounds it (its Go server
// closes a connection whose request headers are not in 32 s, and a keep-alive connection idle for 90 s):
//   - `headerTimeoutMs` (default 32_000): a connection must finish the headers of its first request within this long
//     of being handed to the HTTP server (plain: its first byte; TLS: its handshake done). The listener gives a
//     connection that sends nothing at all, and a TLS handshake, the same time (tls.ts, server.ts).
//   - `idleTimeoutMs` (default 90_000): after its last answer, a keep-alive connection must finish the headers of its
//     next request within this long.
// Either way the connection is closed without an answer, as Go's server does. While a request is being answered
// there is no deadline here: a watch streams for as long as it lasts (its own timeout ends it), and a body that stops
// coming is answered 504 after `bodyTimeoutMs` (default 60 s, kube-apiserver's request timeout; http.ts). Connections come
// to the HTTP servers through the polyglot listener rather than a listen() of their own, so Node's header timeout
// and connection tracking never start for them; this table does both, on the server's clock.
//
// A connection is `waiting` (for a request's headers, under a deadline) or `answering` (one or more requests in
// progress, no deadline); `close()` destroys the waiting ones and ends the others once their answers are written.
import type { Duplex } from "node:stream";
import { assert } from "../api/assert.ts";
import type { Clock, Timer } from "../api/clock.ts";

export interface ConnectionLimits {
  clock: Clock;
  headerTimeoutMs: number;
  idleTimeoutMs: number;
}

export const headerTimeoutMsDefault = 32_000;
export const idleTimeoutMsDefault = 90_000;
/** How long a request body may take to arrive (http.ts `readBody`): kube-apiserver's default request timeout. */
export const bodyTimeoutMsDefault = 60_000;
/** The longest timer Node keeps (2^31 - 1 ms, about 24.8 days); a longer one would fire at once. */
export const timeoutMsMax = 2 ** 31 - 1;

interface Connection {
  readonly socket: Duplex;
  /** Requests whose headers were read and whose answers are not finished. */
  answering: number;
  /** The deadline while waiting; undefined while answering. */
  deadline: Timer | undefined;
}

export class Connections {
  readonly #limits: ConnectionLimits;
  readonly #open = new Map<Duplex, Connection>();
  #closing = false;

  constructor(limits: ConnectionLimits) {
    assert(limits.headerTimeoutMs > 0 && limits.headerTimeoutMs <= timeoutMsMax, "headerTimeoutMs in 1..timeoutMsMax");
    assert(limits.idleTimeoutMs > 0 && limits.idleTimeoutMs <= timeoutMsMax, "idleTimeoutMs in 1..timeoutMsMax");
    this.#limits = limits;
  }

  /** Connections open now. */
  get size(): number {
    return this.#open.size;
  }

  /** A connection an HTTP server now reads requests from: it waits for its first request's headers. */
  add(socket: Duplex): void {
    assert(!this.#open.has(socket), "connections: added once");
    const connection: Connection = { socket, answering: 0, deadline: undefined };
    this.#open.set(socket, connection);
    socket.once("close", () => {
      connection.deadline?.cancel();
      this.#open.delete(socket);
    });
    if (this.#closing) socket.destroy();
    else this.#wait(connection, this.#limits.headerTimeoutMs);
  }

  /** A request's headers were read on `socket`: no deadline while it is answered. */
  started(socket: Duplex): void {
    const connection = this.#open.get(socket);
    if (connection === undefined) return;
    connection.answering++;
    connection.deadline?.cancel();
    connection.deadline = undefined;
  }

  /** A request's answer on `socket` ended (written, or the client gone). */
  finished(socket: Duplex): void {
    const connection = this.#open.get(socket);
    if (connection === undefined) return;
    assert(connection.answering > 0, "connections: a request finishes after it started");
    connection.answering--;
    if (connection.answering > 0) return;
    if (this.#closing) socket.end();
    else this.#wait(connection, this.#limits.idleTimeoutMs);
  }

  /** Destroys every waiting connection; the others end once their answers are written. */
  close(): void {
    this.#closing = true;
    for (const connection of [...this.#open.values()]) if (connection.answering === 0) connection.socket.destroy();
  }

  #wait(connection: Connection, ms: number): void {
    assert(connection.answering === 0, "connections: only a connection with nothing to answer waits");
    connection.deadline?.cancel();
    connection.deadline = this.#limits.clock.setTimer(ms, () => {
      connection.deadline = undefined;
      if (connection.answering === 0) connection.socket.destroy();
    });
  }
}
