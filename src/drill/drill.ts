// `settle drill`: the black-box version of exploration, for a controller process in any language. The
// scenario's world is served by `settle serve` semantics in this process; the controller runs as a real
// process group whose every request goes through a proxy; the drill applies the scenario's workload and, at
// each point of a reference run (right after the controller's k-th applied write, one made before its first watch
// included), applies one fault of `drillFaults` (api/faults.ts): a kill of the whole group (the write's response
// held until the group is dead), optionally followed by a stale first list (of every resource, or of one), a closed
// watch, a failed request (500 or 409), a lost response, or an unobserved state on the watch of one resource the
// controller watches (watch-faults.ts: coalesced, delayed, a delete hidden before a create). It then waits for a quiet
// window (no store write, no request in flight; its length learned from the reference run, see quiet.ts) and checks
// the scenario's properties against the server's store. Every phase is bounded by `timeoutMs`.
//
// What a point costs is mostly waiting, so the drill overlaps what it can. Points run in parallel, and start while
// the reference run still goes (point k once the reference has made k writes). Controller processes start ahead of
// their turn with their API requests held by the proxy until it comes: the process that replaces a killed one
// (the server sees nothing of it before the kill) and the next point's first process (nothing before its point
// begins). Their cold starts overlap other work instead of lying on the point's path.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { realClock } from "../api/clock.ts";
import { drillFaultKinds, drillFaultParam, drillFaults, isDrillFaultKind, type DrillFaultKind } from "../api/faults.ts";
import { isNotFound } from "../api/errors.ts";
import { PropertyMonitor, unknownStep, type EventuallyProperty, type Property } from "../check/properties.ts";
import { describeThrown, thrownLine } from "../check/thrown.ts";
import type { ThrownError } from "../check/verdict.ts";
import type { Scenario, ScenarioContext } from "../explore/scenario.ts";
import { createKubeClient } from "../kube/client.ts";
import { kubeconfigText, startServer, type SettleServer } from "../server/index.ts";
import type { WorldView } from "../sim/types.ts";
import { createStore } from "../store/index.ts";
import type { Store, StoreEvent } from "../store/types.ts";
import { observeStore } from "./observe.ts";
import { startProxy, type DrillProxy, type RequestSeen, type WriteSeen } from "./proxy.ts";
import { startProcess, type ControllerProcess } from "./process.ts";
import { fixedQuietWindow, learnQuietWindow, QuietTracker, type QuietWindow } from "./quiet.ts";
import { ScenarioThrew, targetFromScenario, type DrillTarget } from "./target.ts";
import { resourceOfPath, WatchShaper } from "./watch-faults.ts";

// What the drill does at a point: `kill` the group, or one of the other faults (`--faults`); names and parameters
// are the shared fault model's (`api/faults.ts`).
export { drillFaultKinds, type DrillFaultKind };

export interface DrillPoint {
  /** Right after the controller's k-th applied write (1-based) of this run. */
  afterWrite: number;
  fault: DrillFaultKind;
  /** The resource (plural) a per-resource fault aims at (`drillFaults[fault].perResource`). */
  resource?: string;
}

export interface DrillOptions {
  /** The scenario as a drill target; or give `scenario` and `ctx` for a TypeScript scenario. */
  target?: DrillTarget;
  scenario?: Scenario;
  ctx?: ScenarioContext;
  /** The controller's command line. Default: the target's own (YAML variants declare one). */
  command?: readonly string[];
  /**
   * No store write for this long counts as quiet, in every run. Default: the reference run waits the target's
   * `quietMs` (2000 if it has none) and the points wait what it learned (see quiet.ts).
   */
  quietMs?: number;
  /** Every run (start, first watch, workload, restart, quiet) must finish within this. Default 60_000. */
  timeoutMs?: number;
  /** Kill after these writes (1-based). Default: every write of the reference run. */
  killPoints?: readonly number[];
  /**
   * Exactly these points, in this order (a point may repeat), instead of a plan: `--replay`. Each runs once the
   * reference has made its write.
   */
  points?: readonly DrillPoint[];
  /**
   * Apply every fault of `drillFaults` at every point, not only the target's (default: kill): the per-resource
   * ones for each resource the controller watched in the reference run.
   */
  faults?: boolean;
  /** Points drilled at once, each with its own server and process group. Default: the machine's cores. */
  concurrency?: number;
  /**
   * Start every controller process at its turn, not ahead of it with its API requests held (the next point's first
   * process, and the one that replaces a killed process). For a controller whose start-up, before its first API
   * request, has effects outside the API server or reads local state its killed predecessor wrote. Default false.
   */
  coldStart?: boolean;
  /** A folder for one JSON artifact per failing point (`settle report --html` renders it). Default none. */
  artifactsDir?: string;
  onProgress?(line: string): void;
  /** Called with each finished run (the CLI writes artifacts and prints output from here). */
  onRun?(run: DrillRun): void;
}

/**
 * `violated`: a property was false; `no-quiet`: not quiet within the timeout; `no-watch`: the controller never
 * watched; `controller-failed`: it exited before watching; `workload-failed`: a workload step failed (a `waitFor`
 * whose condition the controller never made true, or a write the server refused); `scenario-error`: the scenario's
 * own code threw (a property, a TypeScript workload, the summary), so the run says nothing about the controller.
 */
export type DrillVerdict = "ok" | "violated" | "no-quiet" | "no-watch" | "controller-failed" | "workload-failed" | "scenario-error";

export interface DrillTimings {
  /** From the start of the run (ms): the first watch, the fault, the restarted process's first watch, quiet. */
  firstWatchMs?: number;
  /** The workload's last step done. */
  workloadMs?: number;
  faultMs?: number;
  rewatchMs?: number;
  quietMs?: number;
  totalMs: number;
  /** The quiet window this run ended with (a point's may have widened while it ran). */
  quietWindowMs?: number;
  /** The longest time from a change of the world to the controller's next write request (what points learn from). */
  thinkMaxMs?: number;
}

export interface DrillRun {
  point?: DrillPoint;
  /** The write the process was killed after (kill points), or undefined for the reference run. */
  killAfterWrite?: number;
  write?: WriteSeen;
  verdict: DrillVerdict;
  /** Properties that were false (always: after any write; eventually: once quiet). */
  failed: string[];
  writes: number;
  detail: string;
  /** The scenario's one-line summary of the world once quiet, if it has one. */
  world?: string;
  /** scenario-error: what the scenario's code threw, and the user's file:line (as explore reports it). */
  error?: ThrownError;
  /** What the drill did at the point, as it happened (e.g. whether a stale list was actually served). */
  applied?: string;
  timings: DrillTimings;
  /** The controller's output (every start, prefixed `[n]`), last lines; kept for runs that are not ok. */
  output?: string[];
  /** The controller's requests and the world's writes, for the report; kept for runs that are not ok. */
  timeline?: DrillTimeline;
  /** The resources the controller watched, in the order of their first watch (per-resource faults aim at these). */
  watched?: string[];
}

export interface DrillTimeline {
  startMs: number;
  requests: RequestSeen[];
  events: Array<{ atMs: number; type: string; revision: number; object: unknown }>;
  initial: unknown[];
}

export interface DrillResult {
  target: { name: string; variant: string; workload: string };
  reference: DrillRun;
  runs: DrillRun[];
}

const eventsKeptMax = 5_000;

/** Resolves the options' target (a `DrillTarget`, or a TypeScript scenario and its context). */
export function drillTarget(options: DrillOptions): DrillTarget {
  if (options.target !== undefined) return options.target;
  if (options.scenario === undefined || options.ctx === undefined) throw new Error("drill: give a target, or a scenario and its ctx");
  return targetFromScenario(options.scenario, options.ctx);
}

export async function drill(given: DrillOptions): Promise<DrillResult> {
  const target = drillTarget(given);
  const options = given.coldStart === undefined && target.defaults?.coldStart === true ? { ...given, coldStart: true } : given;
  const command = options.command ?? target.command;
  if (command === undefined || command.length === 0) throw new Error(`drill: variant "${target.variant}" declares no command; give one after --`);
  const progress = options.onProgress ?? (() => {});
  const referenceWindow = fixedQuietWindow(options.quietMs ?? target.defaults?.quietMs ?? 2000);
  const feed = new PointFeed(options, target);
  let abort: () => void = () => {};
  const shared: SharedRun = { aborted: new Promise<void>((resolve) => (abort = resolve)) };
  // Points start while the reference still runs: point k as soon as the reference has made k writes. They learn
  // the quiet window once the reference is done (until then they would wait the reference's own).
  const referenceCtx = openRun(options, target, command, referenceWindow, { ...shared, onWrite: (writes) => feed.reached(writes) });
  const referenceRun = referenceCtx.then((ctx) => drillOnce(ctx, undefined, options.coldStart === true));
  // The points' processes start once the reference's watches: before, their cold starts would slow the reference's.
  // A reference that never watches has no points.
  const referenceWatching = referenceCtx.then((ctx) => Promise.race([ctx.proxy.waitForWatch().then(() => true), referenceRun.then(() => ctx.proxy.watchOpens > 0)]));
  const learned = referenceRun.then((reference) => pointsWindow(reference, referenceWindow, options.quietMs !== undefined));
  const runs: DrillRun[] = [];
  const pointShared = { ...shared, window: learned };
  const worker = async () => {
    if (!(await referenceWatching)) return;
    let warm = options.coldStart === true ? undefined : await warmUp(options, target, command, referenceWindow, pointShared, feed.restartsOnly);
    for (let next = await feed.next(); next !== undefined; next = await feed.next()) {
      const ctx = warm ?? (await openRun(options, target, command, referenceWindow, pointShared));
      warm = undefined;
      const running = drillOnce(ctx, next.point, options.coldStart === true);
      // The next point's first process starts once this one's watches: two cold starts at once would slow both.
      await Promise.race([ctx.proxy.waitForWatch(), running]);
      if (options.coldStart !== true && !feed.exhausted) warm = await warmUp(options, target, command, referenceWindow, pointShared, feed.restartsOnly);
      const run = await running;
      if (!(await referenceRun.then(usable))) break;
      runs[next.index] = run;
      options.onRun?.(run);
      progress(`${pointLabel(next.point)}${run.write ? ` (${run.write.method} ${shortPath(run.write.path)})` : ""}: ${run.verdict} in ${run.timings.totalMs} ms${run.world ? `; ${run.world}` : ""}`);
    }
    if (warm !== undefined) await closeRun(warm);
  };
  // The reference holds one of the `concurrency` slots while it runs.
  const concurrency = Math.max(1, options.concurrency ?? availableParallelism());
  const workers = Array.from({ length: concurrency - 1 }, worker);
  const reference = await referenceRun;
  workers.push(worker());
  progress(`reference run: ${reference.writes} writes by the controller, ${reference.verdict} in ${reference.timings.totalMs} ms${reference.world ? `; ${reference.world}` : ""}`);
  if (!usable(reference)) {
    feed.finish("none");
    abort();
    await Promise.all(workers);
    return { target: describe(target), reference, runs: [] };
  }
  feed.finish(reference.writes, reference.watched ?? []);
  if (feed.planned > 0) progress(pointsWindow(reference, referenceWindow, options.quietMs !== undefined).why);
  await Promise.all(workers);
  return { target: describe(target), reference, runs };
}

/** What the runs of one drill share: an abort (the reference turned out unusable), the learned window, a write hook. */
interface SharedRun {
  aborted: Promise<void>;
  /** The points' window, once the reference has learned it; until then a point waits the reference's own. */
  window?: Promise<QuietWindow>;
  /** The reference run's controller has made `writes` applied writes. */
  onWrite?(writes: number): void;
}

/** The points' quiet window: the given one, or what a reference run that went quiet learned. */
function pointsWindow(reference: DrillRun, referenceWindow: QuietWindow, given: boolean): QuietWindow {
  if (given) return referenceWindow;
  const thinkMaxMs = reference.timings.thinkMaxMs;
  if (thinkMaxMs === undefined) return { ...referenceWindow, why: `quiet window ${referenceWindow.ms} ms (the reference run never went quiet, so nothing was learned)` };
  return learnQuietWindow(thinkMaxMs, referenceWindow.ms);
}

/** Whether points drilled against this reference mean anything (the controller watched and the workload ran). */
function usable(reference: DrillRun): boolean {
  return reference.verdict !== "controller-failed" && reference.verdict !== "no-watch" && reference.verdict !== "workload-failed" && reference.verdict !== "scenario-error";
}

/**
 * The points of the drill, in plan order, each handed out as soon as it is known to exist: first every write of
 * the reference (or the given ones) times the faults that aim at no resource, point k once the reference has made
 * k writes; then, once the reference is done and it is known which resources the controller watched, the same
 * writes times the per-resource faults times those resources. Given `points`, exactly those.
 */
export class PointFeed {
  private readonly kinds: readonly DrillFaultKind[];
  private readonly perResource: readonly DrillFaultKind[];
  private readonly given: readonly number[] | undefined;
  private readonly explicit: readonly DrillPoint[] | undefined;
  private seen = 0;
  private final: number | undefined;
  /** Each slot's per-resource points, once the reference is done. */
  private aimed: ReadonlyArray<{ fault: DrillFaultKind; resource: string }> = [];
  private taken = 0;
  private cancelled = false;
  private waiters: Array<() => void> = [];

  constructor(options: DrillOptions, target: DrillTarget) {
    const declared = (target.defaults?.faultKinds ?? ["kill"]).filter(isDrillFaultKind);
    const kinds = options.faults === true ? drillFaultKinds : declared;
    this.kinds = kinds.filter((k) => !drillFaults[k].perResource);
    this.perResource = kinds.filter((k) => drillFaults[k].perResource);
    this.given = options.killPoints ?? target.defaults?.afterWrites;
    this.explicit = options.points;
  }

  /** Points planned in all, once the reference is done. */
  get planned(): number {
    if (this.final === undefined) throw new Error("drill: the plan is known only once the reference run is done");
    if (this.explicit !== undefined) return this.explicit.length;
    return (this.kinds.length + this.aimed.length) * this.slots(this.final);
  }

  /** Every point's fault restarts the controller (so a run may start its replacement before it knows its point). */
  get restartsOnly(): boolean {
    if (this.explicit !== undefined) return this.explicit.every((p) => drillFaults[p.fault].restarts);
    return [...this.kinds, ...this.perResource].every((k) => drillFaults[k].restarts);
  }

  /** No point is left to hand out (false while the reference may still make writes). */
  get exhausted(): boolean {
    return this.at(this.taken) === "done";
  }

  reached(writes: number): void {
    this.seen = Math.max(this.seen, writes);
    this.wakeAll();
  }

  /** The reference is done with `writes` writes, having watched `resources`; `"none"`: no point may run. */
  finish(writes: number | "none", resources: readonly string[] = []): void {
    this.cancelled = writes === "none";
    this.final = writes === "none" ? 0 : writes;
    // A delay past another resource's events needs another resource.
    this.aimed = this.perResource.flatMap((fault) => (fault === "delay-kind" && resources.length < 2 ? [] : resources.map((resource) => ({ fault, resource }))));
    this.wakeAll();
  }

  async next(): Promise<{ index: number; point: DrillPoint } | undefined> {
    for (;;) {
      const state = this.at(this.taken);
      if (state === "done") return undefined;
      if (state !== "wait") return { index: this.taken++, point: state };
      await new Promise<void>((wake) => this.waiters.push(wake));
    }
  }

  private slots(final: number): number {
    return this.given?.length ?? final;
  }

  /** Write number of slot `slot`, or undefined past the last (known) one. */
  private writeAt(slot: number): number | "wait" | undefined {
    if (this.given !== undefined) {
      if (slot >= this.given.length) return undefined;
      const afterWrite = this.given[slot]!;
      return this.final !== undefined || afterWrite <= this.seen ? afterWrite : "wait";
    }
    const afterWrite = slot + 1;
    if (afterWrite <= this.seen || afterWrite <= (this.final ?? 0)) return afterWrite;
    return this.final === undefined ? "wait" : undefined;
  }

  private at(index: number): DrillPoint | "wait" | "done" {
    if (this.cancelled) return "done";
    if (this.explicit !== undefined) {
      const point = this.explicit[index];
      if (point === undefined) return "done";
      return this.final !== undefined || point.afterWrite <= this.seen ? point : "wait";
    }
    if (this.kinds.length > 0) {
      const slot = Math.floor(index / this.kinds.length);
      const afterWrite = this.writeAt(slot);
      if (afterWrite === "wait") return "wait";
      if (afterWrite !== undefined) return { afterWrite, fault: this.kinds[index % this.kinds.length]! };
    }
    // The plain points are all handed out: the per-resource ones follow, once the reference is done.
    if (this.perResource.length === 0) return "done";
    if (this.final === undefined) return "wait";
    const j = index - this.kinds.length * this.slots(this.final);
    const perSlot = this.aimed.length;
    if (perSlot === 0 || j >= perSlot * this.slots(this.final)) return "done";
    const afterWrite = this.writeAt(Math.floor(j / perSlot)) as number;
    return { afterWrite, ...this.aimed[j % perSlot]! };
  }

  private wakeAll(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
  }
}

function describe(target: DrillTarget): DrillResult["target"] {
  return { name: target.name, variant: target.variant, workload: target.workload };
}

export function pointLabel(point: DrillPoint): string {
  return `${point.fault}${point.resource === undefined ? "" : ` ${point.resource}`} after write ${point.afterWrite}`;
}

export function shortPath(path: string): string {
  return path.replace(/^\/token\/[^/]+/, "").split("?")[0]!;
}

function viewOf(store: Store, externals: Record<string, unknown>): WorldView {
  return {
    get revision() {
      return store.revision;
    },
    now: () => realClock.now(),
    get: (ref) => {
      try {
        return store.get(ref);
      } catch (error) {
        if (isNotFound(error)) return undefined;
        throw error;
      }
    },
    list: (o) => store.list(o).items,
    external: <T>(name: string) => {
      if (!(name in externals)) throw new Error(`drill: no external state "${name}" (a drill sees only the API server)`);
      return externals[name] as T;
    },
  };
}

/** One run's moving parts, built by `openRun` and torn down in `drillOnce`'s `finally`. */
interface RunContext {
  target: DrillTarget;
  point: DrillPoint | undefined;
  /** When the run proper began (its first process let through); its deadline is `timeoutMs` later. */
  startMs: number;
  deadlineMs: number;
  timeoutMs: number;
  dir: string;
  token: string;
  store: Store;
  server: SettleServer;
  proxy: DrillProxy;
  view: WorldView;
  monitor: PropertyMonitor;
  failedAlways: Set<string>;
  quiet: QuietTracker;
  timeline: DrillTimeline;
  output: string[];
  /** The controller's starts so far that became active (the last one runs now). */
  processes: ControllerProcess[];
  /** The next starts, in turn, already running with their requests held (see `prestart`). */
  standbys: Array<{ process: ControllerProcess; lane: number; exited: boolean }>;
  /** The proxy lane the next start gets (lanes only ever grow: promoting one lets every lower one through). */
  nextLane: number;
  /** Resolves on the store's next write (event-driven waits of the workload). */
  nextChange(): Promise<void>;
  deadlines: DeadlineTracker;
  /** Processes the drill killed itself (their exit is not a crash). */
  killed: Set<ControllerProcess>;
  /** Set once the run is over: nothing is started any more. */
  closing: boolean;
  crashRestarts: number;
  applied?: string;
  timings: DrillTimings;
  /** Resolves when the drill gives up on this run (its reference turned out unusable). */
  aborted: Promise<void>;
  /** Starts the controller on a new proxy lane; `held`: its requests wait for `proxy.promote(lane)`. */
  spawn(held: boolean): { process: ControllerProcess; lane: number };
}

/** A run's server, proxy and world, before its point is known; `drillOnce` starts the run proper. */
async function openRun(options: DrillOptions, target: DrillTarget, command: readonly string[], window: QuietWindow, shared: SharedRun): Promise<RunContext> {
  const startMs = realClock.now();
  const timeoutMs = options.timeoutMs ?? target.defaults?.timeoutMs ?? 60_000;
  const dir = mkdtempSync(join(tmpdir(), "settle-drill-"));
  const token = randomBytes(16).toString("hex");
  const raw = createStore({ now: () => realClock.now() });
  target.setup(raw);
  const timeline: DrillTimeline = { startMs, requests: [], events: [], initial: raw.history(0).map((e) => e.object) };
  const failedAlways = new Set<string>();
  const monitor = new PropertyMonitor(target.properties);
  const inFlight = { count: () => 0 };
  const quiet = new QuietTracker(window, () => inFlight.count());
  void shared.window?.then((learned) => quiet.relearn(learned));
  const view = viewOf(raw, target.externals ?? {});
  const deadlines = new DeadlineTracker(target.properties);
  deadlines.observe(view);
  let changeWaiters: Array<() => void> = [];
  const store = observeStore(raw, (events) => {
    quiet.changed();
    const waiters = changeWaiters;
    changeWaiters = [];
    for (const wake of waiters) wake();
    recordEvents(timeline, events);
    const safety = monitor.checkSafety(view);
    if (safety !== undefined) failedAlways.add(safety.name);
    deadlines.observe(view);
  });
  const server = await startServer({ store, token, log: () => {} });
  const proxy = await startProxy(server.url, () => realClock.now());
  inFlight.count = () => proxy.requestsInFlight;
  proxy.onActivity = (activity, write) => {
    if (activity === "end") quiet.requestEnded();
    else if (write) quiet.writeRequested();
  };
  timeline.requests = proxy.requests;
  const onWrite = shared.onWrite;
  if (onWrite !== undefined) proxy.setHooks({ onWrite: (write) => (onWrite(write.index), "deliver") });
  server.writeKubeconfig(join(dir, "admin.kubeconfig"));
  const ctx: RunContext = {
    target, point: undefined, startMs, deadlineMs: startMs + timeoutMs, timeoutMs, dir, token, store, server, proxy, view, monitor, failedAlways, quiet, timeline,
    deadlines, output: [], processes: [], standbys: [], nextLane: 0, killed: new Set(), closing: false, crashRestarts: 0, timings: { totalMs: 0 },
    nextChange: () => new Promise<void>((wake) => changeWaiters.push(wake)),
    aborted: shared.aborted,
    spawn: (held) => spawnController(ctx, command, held),
  };
  return ctx;
}

/**
 * Starts the controller with a kubeconfig of its own proxy lane. A held lane is a start ahead of its turn: the
 * process runs its start-up, and its first request waits in the proxy until the drill promotes the lane.
 */
function spawnController(ctx: RunContext, command: readonly string[], held: boolean): { process: ControllerProcess; lane: number } {
  const lane = ctx.nextLane++;
  if (!held) ctx.proxy.promote(lane);
  const kubeconfig = join(ctx.dir, `controller-${lane}.kubeconfig`);
  writeFileSync(kubeconfig, kubeconfigText(`${ctx.proxy.url}${ctx.proxy.lanePrefix(lane)}/token/${ctx.token}`, ctx.token), { mode: 0o600 });
  const env = { ...process.env, ...ctx.target.env, KUBECONFIG: kubeconfig };
  const cwd = ctx.target.cwd === undefined ? {} : { cwd: ctx.target.cwd };
  const p = startProcess(command, env, { linePrefix: `[${lane}] `, onLine: (line) => keepLine(ctx.output, redactToken(line)), ...cwd });
  return { process: p, lane };
}

const crashRestartDelayMs = 500;
const crashRestartsMax = 5;

/** Starts the controller now (a fresh start), as the active process. */
function startController(ctx: RunContext): ControllerProcess {
  const { process: p, lane } = ctx.spawn(false);
  return activate(ctx, p, lane);
}

/**
 * Makes `p` the active process. One that exits by itself once it has watched is started again after a short delay,
 * as a kubelet restarts a crashed container: an unhandled error from an injected 500 is a crash, not the end of the
 * drill.
 */
function activate(ctx: RunContext, p: ControllerProcess, lane: number): ControllerProcess {
  ctx.proxy.incarnation = lane;
  ctx.processes.push(p);
  void p.exited.then((code) => {
    if (ctx.closing || ctx.killed.has(p) || ctx.processes.at(-1) !== p || ctx.timings.firstWatchMs === undefined) return;
    if (++ctx.crashRestarts > crashRestartsMax) return keepLine(ctx.output, `[drill] the controller exited ${code} by itself; not restarted (${crashRestartsMax} restarts already)`);
    keepLine(ctx.output, `[drill] the controller exited ${code} by itself; restarting it in ${crashRestartDelayMs} ms, as a kubelet would`);
    // Not quiet while the controller is down: quiet counts again once the restarted process watches.
    ctx.quiet.wait("restart");
    const opensBefore = ctx.proxy.watchOpens;
    // A standby started for the point's kill is on a lane the fresh start would now pass: it is dropped.
    void dropStandby(ctx);
    void realClock.sleep(crashRestartDelayMs).then(() => {
      if (ctx.closing || ctx.processes.at(-1) !== p) return;
      startController(ctx);
      void ctx.proxy.waitForWatch(opensBefore).then(() => {
        ctx.quiet.changed();
        ctx.quiet.ready("restart");
      });
    });
  });
  return p;
}

/** A controller may print the URL it talks to, which carries the token as a path prefix: the drill never shows it. */
function redactToken(line: string): string {
  return line.replace(/\/token\/[^/\s"'?]+/g, "/token/<redacted>");
}

function keepLine(output: string[], line: string): void {
  output.push(line);
  if (output.length > 400) output.shift();
}

function recordEvents(timeline: DrillTimeline, events: readonly StoreEvent[]): void {
  const atMs = realClock.now();
  for (const event of events) {
    if (timeline.events.length >= eventsKeptMax) return;
    timeline.events.push({ atMs, type: event.type, revision: event.revision, object: event.object });
  }
}

/**
 * An opened run whose first process is already starting, its requests held until the run's point begins; with
 * `replacement` (every planned point kills), the process that will replace it too.
 */
async function warmUp(options: DrillOptions, target: DrillTarget, command: readonly string[], window: QuietWindow, shared: SharedRun, replacement: boolean): Promise<RunContext> {
  const ctx = await openRun(options, target, command, window, shared);
  prestart(ctx);
  if (replacement) prestart(ctx);
  return ctx;
}

/** Runs the opened run at `point` (the reference run: undefined) and closes it. */
async function drillOnce(ctx: RunContext, point: DrillPoint | undefined, coldStart: boolean): Promise<DrillRun> {
  ctx.point = point;
  if (point !== undefined && point.resource !== undefined && !drillFaults[point.fault].restarts) {
    // Quiet waits while the fault holds events back: the controller has not seen the world it would react to.
    ctx.proxy.watchShaper = new WatchShaper({
      fault: point.fault,
      resource: point.resource,
      onHolding: (holding) => {
        ctx.quiet.changed();
        if (holding) ctx.quiet.wait("held-events");
        else ctx.quiet.ready("held-events");
      },
    });
  }
  ctx.startMs = realClock.now();
  ctx.timeline.startMs = ctx.startMs;
  ctx.deadlineMs = ctx.startMs + ctx.timeoutMs;
  try {
    return await runPhases(ctx, coldStart);
  } finally {
    await closeRun(ctx);
  }
}

async function closeRun(ctx: RunContext): Promise<void> {
  ctx.closing = true;
  ctx.proxy.watchShaper?.stop();
  await dropStandby(ctx);
  await Promise.all(ctx.processes.map((p) => p.kill().catch(() => {})));
  ctx.quiet.stop();
  await ctx.proxy.close();
  await ctx.server.close();
  rmSync(ctx.dir, { recursive: true, force: true });
}

/** Resolves with the value, or with `"timeout"` once the run's deadline has passed (or the drill gave up on it). */
async function beforeDeadline<T>(ctx: RunContext, promise: Promise<T>): Promise<T | "timeout"> {
  const left = ctx.deadlineMs - realClock.now();
  if (left <= 0) return "timeout";
  let timer: { cancel(): void } | undefined;
  const timeout = new Promise<"timeout">((resolve) => (timer = realClock.setTimer(left, () => resolve("timeout"))));
  try {
    return await Promise.race([promise, timeout, ctx.aborted.then(() => "timeout" as const)]);
  } finally {
    timer?.cancel();
  }
}

async function runPhases(ctx: RunContext, coldStart: boolean): Promise<DrillRun> {
  // Armed before the first process is let through: a controller may write before it watches (a client-node
  // informer fires its add handlers from the initial list before its watch opens), and such a write is a point.
  const pointDone = armPoint(ctx);
  const first = ctx.standbys.length === 0 ? startController(ctx) : promoteOrStart(ctx, false);
  // The replacement starts now if it has not yet: on a loaded machine its cold start takes longer than the
  // workload takes to reach the point.
  if (!coldStart && restarts(ctx.point) && ctx.standbys.length === 0) prestart(ctx);
  // A first process the point killed before it watched is not a failure: its replacement's watch is awaited.
  const exitedUnkilled = first.exited.then((code) => (ctx.killed.has(first) ? new Promise<never>(() => {}) : `exited ${code}`));
  const started = await beforeDeadline(ctx, Promise.race([ctx.proxy.waitForWatch().then(() => "watching" as const), exitedUnkilled]));
  if (started === "timeout") {
    const made = ctx.proxy.requests.length;
    return finish(ctx, "no-watch", [], `the controller opened no watch within ${ctx.deadlineMs - ctx.startMs} ms (it made ${made} request(s)${made > 0 ? `, the last ${lastRequest(ctx)}` : ""})`);
  }
  if (started !== "watching") return finish(ctx, "controller-failed", [], `the controller ${started} before opening a watch`);
  ctx.timings.firstWatchMs = realClock.now() - ctx.startMs;
  // The controller's cold start is not think time: it counts from its first watch.
  ctx.quiet.watching();
  const client = createKubeClient({ kubeconfig: join(ctx.dir, "admin.kubeconfig") });
  const workload = ctx.target.runWorkload(client, ctx.view, { nextChange: ctx.nextChange }).then(
    () => {
      ctx.timings.workloadMs = realClock.now() - ctx.startMs;
      ctx.quiet.ready("workload");
    },
    (error: unknown) => error,
  );
  if (ctx.point === undefined) ctx.quiet.ready("point");
  else void pointDone.then(() => ctx.quiet.ready("point"));
  const settled = await beforeDeadline(ctx, Promise.race([ctx.quiet.reached, workload.then((e) => (e === undefined ? new Promise<never>(() => {}) : e))]));
  if (settled instanceof ScenarioThrew) return finish(ctx, "scenario-error", [], settled.message, settled.thrown);
  if (settled instanceof Error || (settled !== "timeout" && settled !== undefined)) {
    return finish(ctx, "workload-failed", [...ctx.failedAlways], `the workload failed: ${settled instanceof Error ? settled.message : String(settled)}`);
  }
  if (settled === "timeout") return finish(ctx, "no-quiet", [...ctx.failedAlways], timeoutReason(ctx));
  ctx.timings.quietMs = realClock.now() - ctx.startMs;
  ctx.timings.quietWindowMs = ctx.quiet.currentMs;
  ctx.timings.thinkMaxMs = ctx.quiet.thinkMaxMs;
  const failed = [...ctx.failedAlways];
  const liveness = ctx.monitor.properties.filter((p) => p.kind === "eventually").filter((p) => ctx.monitor.checkLiveness(ctx.view, (q) => q === p) !== undefined);
  failed.push(...liveness.map((p) => p.name));
  const late = ctx.deadlines.missed(ctx.startMs + (ctx.timings.workloadMs ?? 0)).filter((m) => !failed.includes(m.name));
  failed.push(...late.map((m) => `${m.name} (true ${m.lateMs} ms after the workload's end, withinMs ${m.withinMs})`));
  const detail = failed.length === 0 ? "every property held once quiet" : `quiet for ${ctx.quiet.currentMs} ms with ${failed.length} property(ies) false`;
  return finish(ctx, failed.length === 0 ? "ok" : "violated", failed, detail);
}

function lastRequest(ctx: RunContext): string {
  const last = ctx.proxy.requests.at(-1);
  return last === undefined ? "" : `${last.method} ${last.path} -> ${last.status}`;
}

function timeoutReason(ctx: RunContext): string {
  const within = `within ${ctx.deadlineMs - ctx.startMs} ms`;
  if (ctx.point !== undefined && ctx.timings.faultMs === undefined) return `the controller made fewer than ${ctx.point.afterWrite} writes ${within}`;
  if (ctx.point !== undefined && drillFaults[ctx.point.fault].restarts) {
    if (ctx.timings.rewatchMs === undefined) return `the restarted controller opened no watch ${within}`;
  }
  if (!ctx.quiet.isReady("workload")) return `the workload did not finish ${within}`;
  return `no quiet window of ${ctx.quiet.currentMs} ms ${within}`;
}

function finish(ctx: RunContext, given: DrillVerdict, givenFailed: string[], givenDetail: string, thrown?: ThrownError): DrillRun {
  ctx.timings.totalMs = realClock.now() - ctx.startMs;
  let world: string | undefined;
  let error = thrown ?? propertyThrew(ctx);
  if (error === undefined && ctx.target.summary !== undefined && (given === "ok" || given === "violated")) {
    try {
      world = ctx.target.summary(ctx.view);
    } catch (summaryError) {
      error = describeThrown("summary", summaryError);
    }
  }
  // The scenario's own error outranks what the run found: a property that threw is not false, and what followed
  // from it (a timeout, a failed workload) may be its consequence. Only a controller that never ran says more.
  const scenarioError = error !== undefined && given !== "controller-failed" && given !== "no-watch";
  const verdict = scenarioError ? "scenario-error" : given;
  const failed = scenarioError ? [] : givenFailed;
  const detail = scenarioError ? thrownLine(error!) : givenDetail;
  const run: DrillRun = { verdict, failed, writes: ctx.proxy.writes.length, detail, timings: ctx.timings, watched: watchedResources(ctx.proxy.requests) };
  if (scenarioError) run.error = error!;
  if (ctx.point !== undefined) {
    run.point = ctx.point;
    if (ctx.applied !== undefined || ctx.proxy.watchShaper !== undefined) run.applied = appliedNow(ctx);
    if (ctx.point.fault === "kill") run.killAfterWrite = ctx.point.afterWrite;
    const write = ctx.proxy.writes[ctx.point.afterWrite - 1];
    if (write !== undefined) run.write = write;
  }
  if (world !== undefined) run.world = world;
  if (verdict !== "ok") {
    run.output = [...ctx.output];
    run.timeline = { ...ctx.timeline, requests: [...ctx.proxy.requests] };
  }
  return run;
}

/** The first exception a property threw in this run (checked after a write, once quiet, or for its deadline). */
function propertyThrew(ctx: RunContext): ThrownError | undefined {
  const thrown = ctx.monitor.thrown ?? ctx.deadlines.thrown;
  return thrown === undefined ? undefined : describeThrown(`property "${thrown.property}"`, thrown.error);
}

/**
 * Arms the run's point on the proxy: at the controller's k-th applied write, apply the fault. Resolves once the
 * fault's effect is complete (for a kill: the restarted process watches again).
 */
function armPoint(ctx: RunContext): Promise<void> {
  const point = ctx.point;
  if (point === undefined) return Promise.resolve();
  return new Promise<void>((done) => {
    ctx.proxy.setHooks({
      onWrite: async (write) => {
        if (write.index !== point.afterWrite) return "deliver";
        ctx.timings.faultMs = realClock.now() - ctx.startMs;
        ctx.quiet.changed();
        const shaper = ctx.proxy.watchShaper;
        if (shaper !== undefined) {
          shaper.arm();
          done();
          return "deliver";
        }
        if (!drillFaults[point.fault].restarts) {
          applyServerFault(ctx, point.fault);
          done();
          return "deliver";
        }
        await restart(ctx, point, write).then(done);
        return "drop";
      },
    });
  });
}

function applyServerFault(ctx: RunContext, fault: DrillFaultKind): void {
  if (fault === "close-watch") ctx.applied = `closed ${ctx.proxy.closeWatches()} watch(es)`;
  else if (drillFaults[fault].model === "fail-request") ctx.proxy.armFault({ kind: "fail-request", code: drillFaultParam(fault, "code") as 409 | 500 });
  else ctx.proxy.armFault({ kind: "lost-response" });
  if (fault !== "close-watch") ctx.applied = `armed ${fault} for the controller's next write`;
}

/** The point's fault as it played out: a time-travel list that no request used is said so. */
function appliedNow(ctx: RunContext): string {
  if (ctx.proxy.watchShaper !== undefined) return ctx.proxy.watchShaper.describe();
  const stale = ctx.point?.fault === "time-travel" || ctx.point?.fault === "stale-kind";
  const unused = stale && ctx.server.faults.some((f) => f.kind === "stale-read" && f.hits === 0);
  if (unused) return `${ctx.applied}; but the restarted controller made no resourceVersion=0 list or watch (it reads consistently, as a real API server serves it), so no stale state was served`;
  if (ctx.proxy.faultsArmed > 0) return `${ctx.applied}; but the controller made no further write, so it was not applied`;
  return ctx.applied!;
}

/**
 * Kills the group while the write's response is held, starts the controller again and resolves once it watches.
 * Time travel: the restarted process's first list is served from before that write, a lagging API server cache, as
 * after a restart behind a load balancer. A stale kind: only the point's resource lags, from before its last change
 * (kube-apiserver keeps one watch cache per resource, each at its own revision), the others are fresh.
 */
async function restart(ctx: RunContext, point: DrillPoint, write: WriteSeen): Promise<void> {
  const current = ctx.processes.at(-1)!;
  ctx.killed.add(current);
  await current.kill();
  ctx.proxy.dropConnections();
  if (point.fault === "time-travel") {
    const writeRevision = write.revision ?? ctx.store.revision;
    const lagRevisions = Math.max(1, ctx.store.revision - writeRevision + 1);
    ctx.server.injectFaults([{ kind: "stale-read", lagRevisions, count: 1 }]);
    ctx.applied = `killed the process group; its restart's first list (or watch) served ${lagRevisions} revision(s) behind`;
  } else if (point.fault === "stale-kind" && point.resource !== undefined) {
    const changed = lastChangeOf(ctx, point.resource);
    if (changed === undefined) {
      ctx.applied = `killed the process group; no ${point.resource} object had changed, so its first list could not be stale`;
    } else {
      const lagRevisions = Math.max(1, ctx.store.revision - changed + 1);
      ctx.server.injectFaults([{ kind: "stale-read", resource: point.resource, lagRevisions, count: 1 }]);
      ctx.applied = `killed the process group; its restart's first list (or watch) of ${point.resource} served ${lagRevisions} revision(s) behind (before its last change), the other resources fresh`;
    }
  } else {
    ctx.applied = "killed the process group with the write's response held";
  }
  const opensBefore = ctx.proxy.watchOpens;
  promoteOrStart(ctx);
  // Quiet is measured from the moment the restarted process watches again, not from the killed write.
  void ctx.proxy.waitForWatch(opensBefore).then(() => {
    ctx.timings.rewatchMs = realClock.now() - ctx.startMs;
    ctx.quiet.changed();
  });
  await ctx.proxy.waitForWatch(opensBefore);
}

/**
 * Starts the process that will replace the one the point kills, now, with its requests held: its cold start (an
 * interpreter, a client library) overlaps the workload instead of following the kill. The server sees none of its
 * requests before the kill, so to the world it starts after the kill, as a restarted container does.
 */
function prestart(ctx: RunContext): void {
  const { process: p, lane } = ctx.spawn(true);
  const standby = { process: p, lane, exited: false };
  ctx.standbys.push(standby);
  void p.exited.then(() => (standby.exited = true));
}

/** Whether the point's fault restarts the controller (so a replacement process is needed). */
function restarts(point: DrillPoint | undefined): boolean {
  return point !== undefined && drillFaults[point.fault].restarts;
}

/** The revision of the last change to an object of `resource` the run has seen, if any. */
function lastChangeOf(ctx: RunContext, resource: string): number | undefined {
  for (let i = ctx.timeline.events.length - 1; i >= 0; i--) {
    const event = ctx.timeline.events[i]!;
    const object = event.object as { apiVersion?: string; kind?: string };
    if (object.apiVersion === undefined || object.kind === undefined) continue;
    try {
      if (ctx.store.resourceFor({ apiVersion: object.apiVersion, kind: object.kind }).plural === resource) return event.revision;
    } catch {
      // A kind no longer served (its CRD deleted): not the resource asked for.
    }
  }
  return undefined;
}

/** The resources the controller watched (a watch the server accepted), in the order of their first watch. */
function watchedResources(requests: readonly RequestSeen[]): string[] {
  const out: string[] = [];
  for (const request of requests) {
    if (!request.watch || request.status !== 200) continue;
    const resource = resourceOfPath(request.path);
    if (resource !== undefined && !out.includes(resource)) out.push(resource);
  }
  return out;
}

/**
 * The standby becomes the active process (its held requests go through); or, if it died meanwhile, a fresh start.
 * `replacing`: it replaces a killed process (the output then says when the server began to see it, since its
 * start-up lines come before the kill's).
 */
function promoteOrStart(ctx: RunContext, replacing = true): ControllerProcess {
  const standby = ctx.standbys.shift();
  if (standby === undefined || standby.exited) {
    if (standby !== undefined) keepLine(ctx.output, `[drill] the pre-started controller [${standby.lane}] had exited; starting a fresh one`);
    // The fresh start's lane is above the other standbys': promoting it would let them through too early.
    void dropStandby(ctx);
    return startController(ctx);
  }
  if (replacing) keepLine(ctx.output, `[drill] [${standby.lane}] was started ahead; its requests reach the server from now on`);
  ctx.proxy.promote(standby.lane);
  return activate(ctx, standby.process, standby.lane);
}

async function dropStandby(ctx: RunContext): Promise<void> {
  const standbys = ctx.standbys.splice(0);
  await Promise.all(standbys.map((s) => s.process.kill().catch(() => {})));
}

/**
 * `eventually` properties with `withinMs`: when each last became true (after every write), so that one that holds
 * once quiet but became true later than `withinMs` after the workload's end is reported as late.
 */
class DeadlineTracker {
  private readonly trueSince = new Map<string, number | undefined>();
  private readonly timed: EventuallyProperty[];
  /** The first exception a predicate threw here (it then counts as false, as in PropertyMonitor). */
  thrown: { property: string; error: unknown } | undefined;

  constructor(properties: readonly Property[]) {
    this.timed = properties.filter((p): p is EventuallyProperty => p.kind === "eventually" && p.withinMs !== undefined);
  }

  observe(view: WorldView): void {
    for (const p of this.timed) {
      let holds: boolean;
      try {
        holds = p.predicate(view, unknownStep) === true;
      } catch (error) {
        holds = false;
        this.thrown ??= { property: p.name, error };
      }
      if (!holds) this.trueSince.set(p.name, undefined);
      else if (this.trueSince.get(p.name) === undefined) this.trueSince.set(p.name, realClock.now());
    }
  }

  missed(fromMs: number): Array<{ name: string; lateMs: number; withinMs: number }> {
    const out: Array<{ name: string; lateMs: number; withinMs: number }> = [];
    for (const p of this.timed) {
      const since = this.trueSince.get(p.name);
      if (since !== undefined && since - fromMs > p.withinMs!) out.push({ name: p.name, lateMs: since - fromMs, withinMs: p.withinMs! });
    }
    return out;
  }
}
