// A Go program, unmodified, as simulator actors: `goActor({ name, dir, args, env, replicas })`. The main package in
// `dir` is built once for js/wasm with settle's overlay (build.ts) and compiled once per process; each incarnation
// instantiates it afresh with a host of its own (host.ts): the simulation's clock, timers and seeded randomness,
// and connections to the simulated API server that are the module layer's in-process wire (src/module/wire.ts),
// so every request, response and watch event is a step and every wire fault applies unchanged. A crash or an exit
// drops the instance whole: its goroutines, memory, connections and timers; the restart instantiates it again.
import { mkdtempSync, writeFileSync } from "node:fs";
import { Duplex } from "node:stream";
import { tmpdir } from "node:os";
import { basename, join, resolve } from "node:path";
import { ProcessExit } from "../api/exit.ts";
import { assert } from "../api/assert.ts";
import { kernelAccess, prepareBeforeRuns } from "../sim/access.ts";
import type { ActorState, Kernel } from "../sim/kernel.ts";
import type { TimerEntry } from "../sim/clock.ts";
import type { ActorContext, ActorDefinition } from "../sim/types.ts";
import { writeModuleOutput } from "../module/output.ts";
import { incarnationActor } from "../module/actor.ts";
import { API_HOST, API_PORT, API_SERVER_URL, API_TOKEN, loadWire } from "../module/wire.ts";
import type { Connection } from "../module/connection.ts";
import { hubs, type EnrolledOwner, type WireHub } from "../module/hub.ts";
import { kubeconfigText } from "../server/auth/kubeconfig.ts";
import { buildGoProgram, wasmApi, type GoProgram } from "./build.ts";
import { makeGoRuntime, type GoRuntime } from "./host.ts";
import { giveBackMemory, MEMORY_IMPORT, takeMemory } from "./memory.ts";

export interface GoActorOptions {
  /** The actor's name (no slash); with replicas, instance i is `<name>-<i>`. */
  name: string;
  /** The folder of the main package (inside a Go module), resolved from the current directory. */
  dir: string;
  /** The program's arguments (os.Args after the program's name). */
  args?: readonly string[];
  /** Its environment (os.Environ), besides KUBECONFIG, HOSTNAME, POD_NAME and POD_NAMESPACE, which settle sets. */
  env?: Readonly<Record<string, string>>;
  /** How many instances run, each with its own identity and crashes. Default 1. */
  replicas?: number;
  /** Delay before a crashed or exited incarnation starts again. Default 1000 ms. */
  restartDelayMs?: number;
  crashable?: boolean;
  faultable?: boolean;
}

/** The address the overlay's lookup gives the API server's name (the in-cluster Service address of a cluster). */
export const GO_API_IP = "10.96.0.1";

/** Instances of one program at most: each is a separate wasm instance with its own memory. */
const REPLICAS_MAX = 16;

/** Lines of an exiting program's stderr kept to say why it exited (a panic's first lines). */
const STDERR_TAIL_BYTES_MAX = 4096;

/** One actor per replica of the Go program in `options.dir`; throws `GoBuildError` for bad input. */
export function goActor(options: GoActorOptions): ActorDefinition[] {
  const replicas = options.replicas ?? 1;
  assert(Number.isInteger(replicas), "go replicas is an integer");
  assert(replicas >= 1 && replicas <= REPLICAS_MAX, "go replicas is within 1..REPLICAS_MAX");
  const program = buildGoProgram(resolve(options.dir));
  prepareBeforeRuns(loadWire());
  const names = replicas === 1 ? [options.name] : Array.from({ length: replicas }, (_, i) => `${options.name}-${i}`);
  return names.map((name) => goInstanceActor(options, program, name));
}

function goInstanceActor(options: GoActorOptions, program: GoProgram, name: string): ActorDefinition {
  return incarnationActor(name, options, (ctx) => new GoInstance(options, program, name, ctx), (instance) => instance.run());
}

/** The one kubeconfig every Go program reads (written once per process). */
let kubeconfigPath: string | undefined;

/**
 * The simulated API server for client-go: plain HTTP, the token as the path prefix the server accepts, since
 * clientcmd attaches a kubeconfig's credentials only to a TLS transport (in process there is no TLS).
 */
export function goKubeconfig(): string {
  if (kubeconfigPath !== undefined) return kubeconfigPath;
  const dir = mkdtempSync(join(tmpdir(), "settle-go-"));
  const path = join(dir, "kubeconfig");
  writeFileSync(path, kubeconfigText(`${API_SERVER_URL}/token/${API_TOKEN}`, API_TOKEN), { mode: 0o600 });
  kubeconfigPath = path;
  return path;
}

class GoInstance implements EnrolledOwner {
  readonly kernel: Kernel;
  readonly state: ActorState;
  readonly incarnation: number;
  readonly hub: WireHub;
  private readonly connections = new Map<number, Connection>();
  private readonly runtime: GoRuntime;
  private inbox: ((id: number, payload: Uint8Array | string) => void) | undefined;
  private nextConnection = 1;
  private ended = false;
  private exitWith: ((error: unknown) => void) | undefined;
  private stderrTail = "";
  private requests = 0;
  private watchesOpened = 0;
  private closeFiles: () => void;
  /** The instance's linear memory while it may run; given back to the program's pool when the incarnation is over. */
  private memory: ReturnType<typeof takeMemory> | undefined;

  constructor(
    private readonly options: GoActorOptions,
    private readonly program: GoProgram,
    readonly name: string,
    private readonly ctx: ActorContext,
  ) {
    const access = kernelAccess(ctx);
    this.kernel = access.kernel;
    this.state = access.state;
    this.incarnation = access.incarnation;
    // The simulation's in-process API server, shared with any module actor of the same simulation.
    this.hub = hubs.hubFor(this.kernel);
    this.hub.enroll(this);
    const made = makeGoRuntime(program.toolchain.wasmExec, {
      clock: ctx.clock,
      rng: access.rng("go-random"),
      cwd: program.dir,
      schedule: (ms, fn) => this.schedule(ms, fn),
      cancel: (handle) => this.cancel(handle as TimerEntry | undefined),
      output: (fd, bytes) => this.output(fd, bytes),
      lookup: (host) => this.lookup(host),
      dial: (ip, port) => this.dial(ip, port),
      write: (id, bytes) => this.write(id, bytes),
      close: (id) => this.closeConnection(id),
      register: (inbox) => {
        this.inbox = inbox;
      },
      unknownGlobal: (name) => this.refuseGlobal(name),
    });
    this.runtime = made.runtime;
    this.closeFiles = made.closeFiles;
  }

  /** The start step: instantiates the program and runs it until every goroutine waits; settles only on exit. */
  run(): Promise<void> {
    const go = this.runtime;
    go.argv = [basename(this.program.dir), ...(this.options.args ?? [])];
    go.env = this.environment();
    return new Promise<void>((_resolve, reject) => {
      this.exitWith = reject;
      go.exit = (code) => this.exit(code);
      this.memory = takeMemory(this.program.module, this.program);
      const imports = { ...go.importObject, [MEMORY_IMPORT.module]: { [MEMORY_IMPORT.name]: this.memory } };
      const instance = new wasmApi.Instance(this.program.module, imports);
      // Runs main until every goroutine waits; a trap of the runtime rejects the promise of `run` (it is async).
      this.guard(() => void go.run(instance).then(undefined, (error: unknown) => this.threw(error)));
    });
  }

  /** What the program finds in its environment: settle's few variables and the variant's, nothing of the host's. */
  private environment(): Record<string, string> {
    const namespace = "default";
    return {
      HOME: "/root",
      PATH: "/usr/local/bin:/usr/bin:/bin",
      KUBECONFIG: goKubeconfig(),
      HOSTNAME: this.name,
      POD_NAME: this.name,
      POD_NAMESPACE: namespace,
      ...this.options.env,
    };
  }

  current(): boolean {
    return !this.ended && !this.runtime.exited && this.kernel.isCurrent(this.state, this.incarnation);
  }

  enter(): void {
    hubs.activate(this.hub);
  }

  /** Runs Go code (a resume of the program) and turns a trap of the wasm runtime into a finding. */
  private guard(work: () => void): void {
    try {
      work();
    } catch (error) {
      this.threw(error);
    }
  }

  threw(error: unknown): void {
    if (!this.current()) return;
    const message = error instanceof Error ? error.message : String(error);
    this.kernel.fail({ status: "actor-error", actor: this.name, message: `go program ${this.name} failed in the wasm runtime: ${message}` });
  }

  /** Node code of this actor opening a connection itself (the patched agents): not a Go program's way; refused. */
  connect(host: string, port: number, how: string): Duplex {
    this.refuse(`opened a connection to ${host}:${port} through Node (${how})`);
    return new Duplex({ read() {}, write(_chunk, _encoding, callback) { callback(); } });
  }

  noteWatch(): void {
    this.watchesOpened++;
  }

  private schedule(ms: number, fn: () => void): TimerEntry | undefined {
    assert(Number.isInteger(ms) && ms >= 1, "a go timer's delay is a whole number of ms, at least 1");
    if (!this.current()) return undefined;
    return this.kernel.scheduleFor(this.state, ms, () => {
      if (this.current()) this.guard(fn);
    }, `go timer ${ms}ms`);
  }

  private cancel(entry: TimerEntry | undefined): void {
    if (entry !== undefined && this.current()) this.kernel.cancelTimer(this.state, entry);
  }

  private output(fd: 1 | 2, bytes: Uint8Array): void {
    const chunk = Buffer.from(bytes);
    if (fd === 2) this.stderrTail = (this.stderrTail + chunk.toString("utf8")).slice(-STDERR_TAIL_BYTES_MAX);
    writeModuleOutput(fd, chunk);
  }

  private lookup(host: string): string | undefined {
    if (host === API_HOST) return GO_API_IP;
    this.refuse(`looked up the host name ${host}`);
    return undefined;
  }

  private dial(ip: string, port: number): number | undefined {
    assert(Number.isInteger(port), "a dialed port is an integer");
    if (!this.current()) return undefined;
    if (ip !== GO_API_IP || port !== API_PORT) {
      this.refuse(`dialed ${ip}:${port}`);
      return undefined;
    }
    this.requests++;
    const id = this.nextConnection++;
    const connection = this.hub.open(this);
    this.connections.set(id, connection);
    const socket = connection.client;
    socket.on("data", (chunk: Buffer) => this.deliver(id, chunk));
    socket.on("end", () => this.deliver(id, "eof"));
    socket.on("error", () => this.deliver(id, "reset"));
    socket.on("close", () => this.connections.delete(id));
    return id;
  }

  /** Bytes the program wrote on connection `id` (dropped once the wire closed it: the program then reads a reset). */
  private write(id: number, bytes: Uint8Array): void {
    const socket = this.connections.get(id)?.client;
    if (socket === undefined || socket.destroyed) return;
    socket.write(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length));
  }

  /** A dial or lookup of anything but the API server: a finding naming it (the program sees a refused dial). */
  private refuse(what: string): void {
    if (!this.current()) return;
    this.kernel.fail({
      status: "actor-error",
      actor: this.name,
      message: `go program ${this.name} ${what}; in the simulator only the API server ${API_SERVER_URL} (its KUBECONFIG) is reachable`,
    });
  }

  /** The program asked its JavaScript host for something settle does not provide: a finding naming it. */
  private refuseGlobal(name: string): void {
    if (!this.current()) return;
    this.kernel.fail({
      status: "actor-error",
      actor: this.name,
      message: `go program ${this.name} reached for the JavaScript global ${name} (through syscall/js), which settle's host does not provide: it would act outside the simulation's clock, randomness and wire`,
    });
  }

  /** Bytes, the end or a reset of a connection reach the program (inside the wire's delivery step). */
  private deliver(id: number, payload: Uint8Array | string): void {
    assert(typeof payload !== "string" || payload === "eof" || payload === "reset", "a delivery is bytes, eof or reset");
    const inbox = this.inbox;
    if (inbox === undefined || !this.current()) return;
    this.guard(() => inbox(id, payload));
  }

  private closeConnection(id: number): void {
    const connection = this.connections.get(id);
    if (connection === undefined) return;
    this.connections.delete(id);
    if (!connection.client.destroyed) connection.client.destroy();
  }

  /** `os.Exit`, a return from main, or a panic (exit 2 after its message on stderr): the incarnation is over. */
  private exit(code: number): void {
    if (this.ended) return;
    const panic = /(?:^|\n)(panic: [^\n]*|fatal error: [^\n]*)/.exec(this.stderrTail)?.[1];
    this.drop();
    const message = panic === undefined ? `exit(${code})` : `${panic} (exit ${code})`;
    this.exitWith?.(new ProcessExit(message, code));
  }

  /** The incarnation is over: its connections and files go; its goroutines never run again. */
  drop(): void {
    if (this.ended) return;
    this.ended = true;
    this.hub.withdraw(this);
    this.connections.clear();
    this.closeFiles();
    this.inbox = undefined;
    // Never resumed again (every way into the program checks `current()`), so its memory can serve the next one.
    if (this.memory !== undefined) giveBackMemory(this.program.module, this.memory);
    this.memory = undefined;
  }

  /** The simulation is over (the next one took up the process's wire): the incarnation ends with it. */
  retire(): void {
    this.drop();
  }

  explain(): string | undefined {
    if (this.requests === 0) return `go program ${this.name} made no request to the API server and waits on nothing of the simulation's`;
    if (this.watchesOpened === 0) return `go program ${this.name} never opened a watch and has nothing left to wait on (all its goroutines are blocked)`;
    let open = 0;
    for (const watch of this.kernel.watches()) if (watch.owner === this.state) open++;
    if (open === 0) return `go program ${this.name} has no watch open and nothing else to wait on: it stopped watching (all its goroutines are blocked)`;
    return `go program ${this.name} waits on nothing of the simulation's`;
  }
}
