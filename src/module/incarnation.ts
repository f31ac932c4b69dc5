// One incarnation of an actor whose code runs in the module sandbox: enrolled in its simulation's hub (hub.ts) from
// its start until a crash or an exit drops it, with the bindings of its own (env.ts: timers on the simulation clock,
// `process`, `console`, `Date`'s guards) and its connections to the simulated API server. Nothing here is about
// JavaScript modules: moduleActor (actor.ts) evaluates a bundle with `bindings()`, and a sibling layer (a Go
// program in WebAssembly) can run its code with the same bindings and connections.
import type { Duplex } from "node:stream";
import { Duplex as DuplexStream } from "node:stream";
import { ProcessExit } from "../api/exit.ts";
import { assert } from "../api/assert.ts";
import { kernelAccess } from "../sim/access.ts";
import { incarnationUnwind } from "../sim/host.ts";
import type { Kernel, ActorState } from "../sim/kernel.ts";
import type { TimerEntry } from "../sim/clock.ts";
import type { ActorContext } from "../sim/types.ts";
import type { ModuleBindings } from "./loader.ts";
import { makeBindings } from "./env.ts";
import { hubs, type EnrolledOwner, type WireHub } from "./hub.ts";
import { API_HOST, API_PORT, API_SERVER_URL } from "./wire.ts";

/**
 * Thrown by `process.exit` to unwind the incarnation's code: it is over. Marked as an unwind: thrown from a callback
 * Node calls outside any step (a request's 'error' handler on the next tick), it reaches the process's uncaught
 * exceptions, where the simulation host lets it go (src/sim/host.ts).
 */
export class ExitUnwind extends Error {
  readonly [incarnationUnwind] = true;
}

/** What an incarnation's code sees of its process. */
export interface IncarnationOptions {
  /** Its `process.argv[1]`. */
  readonly modulePath: string;
  /** Its `process.argv` after that. */
  readonly args: readonly string[];
  /** Its `process.env` (beside the process's own). */
  readonly env: Readonly<Record<string, string>>;
}

export class Incarnation implements EnrolledOwner {
  readonly name: string;
  readonly kernel: Kernel;
  readonly state: ActorState;
  readonly incarnation: number;
  readonly hub: WireHub;
  private ended = false;
  private exitWith: ((error: unknown) => void) | undefined;
  private watchesOpened = 0;
  private requests = 0;

  constructor(private readonly ctx: ActorContext) {
    const access = kernelAccess(ctx);
    this.name = ctx.name;
    this.kernel = access.kernel;
    this.state = access.state;
    this.incarnation = access.incarnation;
    this.hub = hubs.hubFor(this.kernel);
    this.hub.enroll(this);
  }

  /**
   * The bindings its code runs with. `exitWith` is called (once) with a `ProcessExit` when the code calls
   * `process.exit`: the start step's promise should reject with it.
   */
  bindings(options: IncarnationOptions, exitWith: (error: unknown) => void): ModuleBindings {
    assert(this.exitWith === undefined, "an incarnation's bindings are made once");
    this.exitWith = exitWith;
    return makeBindings({
      ctx: this.ctx,
      modulePath: options.modulePath,
      args: options.args,
      env: options.env,
      schedule: (ms, fn, label) => this.schedule(ms, fn, label),
      cancel: (entry) => this.cancel(entry),
      exit: (code) => this.exit(code),
      connect: (host, port) => this.connect(host, port, "fetch"),
    });
  }

  current(): boolean {
    return !this.ended && this.kernel.isCurrent(this.state, this.incarnation);
  }

  enter(): void {
    hubs.activate(this.hub);
  }

  threw(error: unknown): void {
    if (error instanceof ExitUnwind || !this.current()) return;
    const message = error instanceof Error ? error.message : String(error);
    // Node would end the process on an uncaught exception: here it is a finding, named.
    this.kernel.fail({ status: "actor-error", actor: this.name, message: `module ${this.name} threw: ${message}` });
  }

  /** A connection its code opened: in process to the API server; anything else is a finding. */
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
    const connection = this.hub.open(this);
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

  /** The incarnation is over: its connections go (the server closes their watches) and it leaves the hub. */
  drop(): void {
    if (this.ended) return;
    this.ended = true;
    this.hub.withdraw(this);
    assert(this.hub.connectionsOf(this) === 0, "a dropped incarnation holds no connection");
  }

  /** Why it waits on nothing of the simulation's, for an `outside-await` finding. */
  explain(): string {
    if (this.requests === 0) return `module ${this.name} made no request to the API server and waits on nothing of the simulation's (a real timer, real I/O, or a client that does not use node's http)`;
    if (this.watchesOpened === 0) return `module ${this.name} never opened a watch and has nothing left to wait on (a controller is expected to watch; did it exit its main code early?)`;
    let open = 0;
    for (const watch of this.kernel.watches()) if (watch.owner === this.state) open++;
    if (open === 0) return `module ${this.name} has no watch open and nothing else to wait on: it stopped watching (an informer not restarted after an error?)`;
    return `module ${this.name} waits on nothing of the simulation's (a real timer or real I/O)`;
  }
}

/** A socket that takes writes and never answers: what a dead incarnation or a refused connection gets. */
export function deadSocket(): Duplex {
  return new DuplexStream({ read() {}, write(_chunk, _encoding, callback) { callback(); } });
}
