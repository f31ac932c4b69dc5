// The simulated API server of a simulation, in process, and the one registry of them for the process. A hub is the
// one owner of its simulation's connections and of the incarnations enrolled in it: a connection is opened by the
// hub, tells the hub when it goes, and is dropped by it with its incarnation or with its simulation. One simulation
// runs at a time per process: the registry's `hubFor` a new simulation drops every connection of the others first,
// so nothing of theirs stays reachable and none of them serves the next (see `Connection.drop`).
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { assert } from "../api/assert.ts";
import type { Clock } from "../api/clock.ts";
import type { Kernel } from "../sim/kernel.ts";
import type { InProcessServer } from "../server/server.ts";
import type { WatchStream } from "../server/watch.ts";
import { Connection, type ConnectionHost, type RequestData, type WireOwner } from "./connection.ts";
import type { WireSocket } from "./socket.ts";
import { API_TOKEN, createInProcessServer, TICKET_HEADER } from "./wire.ts";

/** Requests of one simulation awaiting their answer at once: a bound, not a limit a module meets. */
const TICKETS_MAX = 1 << 20;

/** An incarnation enrolled in a hub: a connection's owner that also opens connections for its code. */
export interface EnrolledOwner extends WireOwner {
  /** A connection its code opened to `host:port` (`how`: through which API): in process to the API server, or a finding. */
  connect(host: string, port: number, how: string): Duplex;
  /** Its simulation is over (another took up the process): it never runs again and may let go of what it holds. */
  retire?(): void;
}

export class WireHub {
  readonly kernel: Kernel;
  private readonly server: InProcessServer;
  /** Every connection not yet closed or dropped. */
  private readonly connections = new Set<Connection>();
  /** The incarnation of each module actor, by actor name, while it lives. */
  private readonly owners = new Map<string, EnrolledOwner>();
  /** What the server's hooks must know of each request in flight, by the ticket it carries. */
  private readonly tickets = new Map<number, RequestData>();
  private nextTicket = 1;
  private nextPort = 40000;
  private readonly host: ConnectionHost;

  constructor(kernel: Kernel) {
    this.kernel = kernel;
    const inert: Clock = {
      now: () => kernel.clock.now(),
      sleep: () => new Promise<void>(() => {}),
      // The simulator's watches have neither server-side timeouts nor bookmarks: no timer of the server runs.
      setTimer: () => ({ cancel() {} }),
    };
    this.server = createInProcessServer({
      store: kernel.store,
      clock: inert,
      token: API_TOKEN,
      onRequest: (req) => {
        const data = this.dataOf(req);
        return data?.lagRevisions === undefined ? {} : { lagRevisions: data.lagRevisions };
      },
      onWatch: (stream, req) => this.attach(stream, req),
    });
    this.host = {
      port: () => this.nextPort++,
      serve: (socket: WireSocket) => this.server.connect(socket),
      ticket: (data: RequestData) => this.issue(data),
      settle: (ticket: number) => void this.tickets.delete(ticket),
      gone: (connection: Connection) => void this.connections.delete(connection),
    };
  }

  /** A new connection of `owner` (an incarnation enrolled here) to the API server. */
  open(owner: WireOwner): Connection {
    assert(this.owners.get(owner.name) === owner, "a connection is opened by an enrolled incarnation");
    const connection = new Connection(owner, this.host);
    this.connections.add(connection);
    return connection;
  }

  /** The incarnation now running as actor `owner.name` (a restart replaces the one before). */
  enroll(owner: EnrolledOwner): void {
    assert(owner.kernel === this.kernel, "an incarnation enrolls in its own simulation's hub");
    this.owners.set(owner.name, owner);
  }

  /** The incarnation is over: its connections are dropped and it leaves the hub. */
  withdraw(owner: WireOwner): void {
    for (const connection of [...this.connections]) if (connection.owner === owner) connection.drop();
    if (this.owners.get(owner.name) === owner) this.owners.delete(owner.name);
    assert(this.connectionsOf(owner) === 0, "a dropped incarnation holds no connection");
  }

  /** The live incarnation of actor `name`, if it is enrolled. */
  owner(name: string): EnrolledOwner | undefined {
    return this.owners.get(name);
  }

  /** The names of the actors enrolled (for a finding's message). */
  ownerNames(): string[] {
    return [...this.owners.keys()];
  }

  /** Connections open now, of every incarnation. */
  get connectionCount(): number {
    return this.connections.size;
  }

  connectionsOf(owner: WireOwner): number {
    let count = 0;
    for (const connection of this.connections) if (connection.owner === owner) count++;
    return count;
  }

  /** The simulation is over: every connection goes, and no ticket is left to serve. */
  dispose(): void {
    for (const owner of [...this.owners.values()]) owner.retire?.();
    for (const connection of [...this.connections]) connection.drop();
    assert(this.connections.size === 0, "a finished simulation holds no connection");
    this.tickets.clear();
  }

  private issue(data: RequestData): number {
    assert(this.tickets.size < TICKETS_MAX, "requests in flight are bounded");
    const ticket = this.nextTicket++;
    this.tickets.set(ticket, data);
    return ticket;
  }

  /** The data of the request the server handles, by the ticket it carries (none for a connection gone since). */
  private dataOf(req: IncomingMessage): RequestData | undefined {
    const header = req.headers[TICKET_HEADER];
    assert(typeof header === "string", "every request on the wire carries its ticket");
    // Ours is the last (Node joins a header the module also sent with a comma).
    return this.tickets.get(Number(header.slice(header.lastIndexOf(",") + 1)));
  }

  private attach(stream: WatchStream, req: IncomingMessage): void {
    const data = this.dataOf(req);
    if (data === undefined) return;
    assert(data.watch !== undefined, "the server opens a watch stream only for a watch request");
    data.watch.attach(stream);
  }
}

/**
 * The process's hubs: one per simulation (by kernel), made when its first module starts, and the one whose module
 * code runs now. The only place hubs are kept.
 */
class HubRegistry {
  private readonly byKernel = new WeakMap<Kernel, WireHub>();
  /** The hubs whose simulation may still run: at most one (the others are disposed when a new one is made). */
  private readonly live = new Set<WireHub>();
  private activeHub: WireHub | undefined;

  /** The simulation's hub, made on first use; taking up another simulation's disposes the hub of the one before. */
  hubFor(kernel: Kernel): WireHub {
    let hub = this.byKernel.get(kernel);
    if (hub === undefined) {
      hub = new WireHub(kernel);
      this.byKernel.set(kernel, hub);
    }
    if (!this.live.has(hub)) {
      for (const other of this.live) other.dispose();
      this.live.clear();
      this.live.add(hub);
    }
    assert(this.live.size === 1, "one simulation's connections never serve the next");
    return hub;
  }

  /** Marks `hub` as the one whose module code runs now. */
  activate(hub: WireHub): void {
    this.activeHub = hub;
  }

  /** The hub whose module code ran last (the patched agents ask it which module runs now). */
  get active(): WireHub | undefined {
    return this.activeHub;
  }
}

export const hubs = new HubRegistry();
