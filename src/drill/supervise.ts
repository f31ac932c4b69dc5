// The controller's processes during one drill run, as a kubelet sees a container: started, killed, restarted after
// a crash. Every start gets a proxy lane of its own (`/incarnation/<n>`, see proxy.ts); a start ahead of its turn
// (a standby) runs its start-up with its requests held until it is promoted. The supervisor is the only writer of
// this state; the run asks it to start, kill, replace and close.
//
// Invariants:
// - Lanes only grow: each start takes the next lane, and the standbys wait in lane order above the active one
//   (promoting a lane lets every lower lane through, so a standby below the active process would slip through).
// - At most one process is active: the last one activated. A process the drill killed is never active again, and its
//   exit is not a crash.
// - Nothing starts once the run is closing, so closing kills every process the run ever started.
// - The output log is bounded and never shows the run's token.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { assert } from "../api/assert.ts";
import { realClock } from "../api/clock.ts";
import { kubeconfigText } from "../server/index.ts";
import { startProcess, type ControllerProcess } from "./process.ts";
import type { DrillProxy } from "./proxy.ts";

/** Delay before a crashed controller starts again, as a kubelet's first back-off. */
const crashRestartDelayMs = 500;
/** Crash restarts per run; past this the controller stays down (the run then ends in no-quiet or a violation). */
const crashRestartsMax = 5;
/** Lines of output kept per run (every start's, prefixed `[lane]`), for reports. */
const outputLinesMax = 400;

export interface SupervisorOptions {
  command: readonly string[];
  proxy: DrillProxy;
  /** The run's folder: each start's kubeconfig is written here. */
  dir: string;
  /** The run's server token: in each kubeconfig, and redacted from every output line. */
  token: string;
  /** Variables added to this process's environment for the controller (KUBECONFIG is the supervisor's). */
  env?: Readonly<Record<string, string>>;
  /** The controller's working directory. Default: this process's. */
  cwd?: string;
  /** A crashed controller goes down (`down`) and its restart watches again (`up`): the run's quiet follows it. */
  onCrashRestart: { down(): void; up(): void };
}

interface Standby {
  readonly process: ControllerProcess;
  readonly lane: number;
  exited: boolean;
}

export class Supervisor {
  private readonly options: SupervisorOptions;
  /** The controller's starts so far that became active (the last one runs now). */
  private readonly activated: ControllerProcess[] = [];
  private activeLane = -1;
  /** The next starts, in turn, already running with their requests held (see `prestart`). */
  private standbys: Standby[] = [];
  /** The proxy lane the next start gets. */
  private nextLane = 0;
  /** Processes the drill killed itself (their exit is not a crash). */
  private readonly killed = new Set<ControllerProcess>();
  private closing = false;
  private crashRestartsOn = false;
  private crashRestarts = 0;
  private readonly lines: string[] = [];
  /** Variables added for this run's processes after the supervisor was made (see `addEnv`). */
  private extraEnv: Readonly<Record<string, string>> = {};

  constructor(options: SupervisorOptions) {
    assert(options.command.length > 0, "the controller has a command");
    assert(options.token.length > 0, "the run has a token to redact");
    this.options = options;
  }

  /** The controller's output (every start, prefixed `[lane]`) and the drill's notes on it, last lines. */
  get output(): readonly string[] {
    return this.lines;
  }

  /** Standbys waiting for their turn. */
  get standbyCount(): number {
    return this.standbys.length;
  }

  /** Every process activated so far, the active one last. */
  get processes(): readonly ControllerProcess[] {
    return this.activated;
  }

  /** Whether the drill killed `p` itself (so its exit says nothing about the controller). */
  wasKilled(p: ControllerProcess): boolean {
    return this.killed.has(p);
  }

  /**
   * Starts the process that will take the next turn now, with its requests held: its cold start (an interpreter, a
   * client library) overlaps other work instead of lying on the run's path. The server sees none of its requests
   * before its promotion, so to the world it starts then, as a restarted container does.
   */
  prestart(): void {
    if (this.closing) return;
    const { process: p, lane } = this.spawn(true);
    const standby: Standby = { process: p, lane, exited: false };
    this.standbys.push(standby);
    void p.exited.then(() => (standby.exited = true));
  }

  /**
   * Every process started from now on gets these variables too (a clock point's libfaketime); the standbys started
   * ahead without them are dropped, so the run's first process starts fresh with them.
   */
  async addEnv(env: Readonly<Record<string, string>>): Promise<void> {
    assert(this.activated.length === 0, "a run's environment is set before its first process is let through");
    this.extraEnv = { ...this.extraEnv, ...env };
    await this.dropStandbys();
  }

  /** The run's first process: the first standby if one was started ahead, else a fresh start. */
  startFirst(): ControllerProcess {
    assert(this.activated.length === 0, "the first process starts once");
    return this.standbys.length === 0 ? this.startFresh() : this.promoteOrStart(false);
  }

  /** From now on a process that exits by itself is restarted (before its first watch, an exit is a failed run). */
  watching(): void {
    this.crashRestartsOn = true;
  }

  /**
   * Kills the active process group (the point's kill) and ends every connection it had, so nothing of it lingers.
   * Resolves once no process of the group is left.
   */
  async killActive(): Promise<void> {
    const current = this.activated.at(-1);
    assert(current !== undefined, "a kill has an active process to kill");
    assert(!this.killed.has(current), "a process is killed once");
    this.killed.add(current);
    await current.kill();
    this.options.proxy.dropConnections();
  }

  /**
   * The process that replaces the killed one: the standby becomes the active process (its held requests go through);
   * or, if it died meanwhile, a fresh start. Undefined if the run is closing (nothing starts any more).
   */
  replace(): ControllerProcess | undefined {
    if (this.closing) return undefined;
    assert(this.killed.has(this.activated.at(-1)!), "only a killed process is replaced");
    return this.promoteOrStart(true);
  }

  /** Nothing starts any more; every process started is killed (standbys too). */
  async close(): Promise<void> {
    this.closing = true;
    await this.dropStandbys();
    await Promise.all(this.activated.map((p) => p.kill().catch(() => {})));
  }

  /** A line of the drill's own about the controller's processes, in the output among theirs. */
  note(line: string): void {
    this.keep(line);
  }

  /**
   * Starts the controller with a kubeconfig of its own proxy lane. A held lane is a start ahead of its turn: the
   * process runs its start-up, and its first request waits in the proxy until the lane is promoted.
   */
  private spawn(held: boolean): { process: ControllerProcess; lane: number } {
    assert(!this.closing, "nothing starts once the run is closing");
    const { proxy, dir, token } = this.options;
    const lane = this.nextLane++;
    assert(lane > this.activeLane, "a new start's lane is above the active one");
    if (!held) proxy.promote(lane);
    const kubeconfig = join(dir, `controller-${lane}.kubeconfig`);
    writeFileSync(kubeconfig, kubeconfigText(`${proxy.url}${proxy.lanePrefix(lane)}/token/${token}`, token), { mode: 0o600 });
    const env = { ...process.env, ...this.options.env, ...this.extraEnv, KUBECONFIG: kubeconfig };
    const cwd = this.options.cwd === undefined ? {} : { cwd: this.options.cwd };
    const p = startProcess(this.options.command, env, { linePrefix: `[${lane}] `, onLine: (line) => this.keep(redactToken(line)), ...cwd });
    return { process: p, lane };
  }

  /** Starts the controller now (a fresh start), as the active process. */
  private startFresh(): ControllerProcess {
    const { process: p, lane } = this.spawn(false);
    return this.activate(p, lane);
  }

  /** `replacing`: the output then says when the server began to see it, since its start-up lines come before the kill's. */
  private promoteOrStart(replacing: boolean): ControllerProcess {
    const standby = this.standbys.shift();
    if (standby === undefined || standby.exited) {
      if (standby !== undefined) this.keep(`[drill] the pre-started controller [${standby.lane}] had exited; starting a fresh one`);
      // The fresh start's lane is above the other standbys': promoting it would let them through too early.
      void this.dropStandbys();
      return this.startFresh();
    }
    if (replacing) this.keep(`[drill] [${standby.lane}] was started ahead; its requests reach the server from now on`);
    this.options.proxy.promote(standby.lane);
    return this.activate(standby.process, standby.lane);
  }

  /**
   * Makes `p` the active process. One that exits by itself once it has watched is started again after a short delay,
   * as a kubelet restarts a crashed container: an unhandled error from an injected 500 is a crash, not the end of the
   * drill.
   */
  private activate(p: ControllerProcess, lane: number): ControllerProcess {
    assert(lane > this.activeLane, "lanes only grow: a process activated after another has a higher lane");
    assert(this.standbys.every((s) => s.lane > lane), "every standby waits above the active lane");
    this.activeLane = lane;
    this.options.proxy.countTo(lane);
    this.activated.push(p);
    void p.exited.then((code) => this.exited(p, code));
    return p;
  }

  private exited(p: ControllerProcess, code: string): void {
    if (this.closing || this.killed.has(p) || this.activated.at(-1) !== p || !this.crashRestartsOn) return;
    if (++this.crashRestarts > crashRestartsMax) return this.keep(`[drill] the controller exited ${code} by itself; not restarted (${crashRestartsMax} restarts already)`);
    this.keep(`[drill] the controller exited ${code} by itself; restarting it in ${crashRestartDelayMs} ms, as a kubelet would`);
    // Not quiet while the controller is down: quiet counts again once the restarted process watches.
    this.options.onCrashRestart.down();
    const proxy = this.options.proxy;
    const opensBefore = proxy.watchOpens;
    // A standby started for the point's kill is on a lane the fresh start would now pass: it is dropped.
    void this.dropStandbys();
    void realClock.sleep(crashRestartDelayMs).then(() => {
      if (this.closing || this.activated.at(-1) !== p) return;
      this.startFresh();
      void proxy.waitForWatch(opensBefore).then(() => this.options.onCrashRestart.up());
    });
  }

  private async dropStandbys(): Promise<void> {
    const standbys = this.standbys;
    this.standbys = [];
    await Promise.all(standbys.map((s) => s.process.kill().catch(() => {})));
  }

  private keep(line: string): void {
    this.lines.push(line);
    if (this.lines.length > outputLinesMax) this.lines.shift();
  }
}

/** A controller may print the URL it talks to, which carries the token as a path prefix: the drill never shows it. */
export function redactToken(line: string): string {
  return line.replace(/\/token\/[^/\s"'?]+/g, "/token/<redacted>");
}
