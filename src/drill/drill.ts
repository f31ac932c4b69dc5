// `settle drill`: the black-box version of exploration, for a controller process in any language. The
// scenario's world is served by `settle serve` semantics in this process; the controller runs as a real
// process group whose every request goes through a proxy; the drill applies the scenario's workload and, at
// each point of a reference run (right after the controller's k-th applied write), applies one fault: a kill of
// the whole group (the write's response held until the group is dead), optionally followed by a stale first list
// (time travel), a closed watch, a failed request (500 or 409) or a lost response. It then waits for a quiet
// window (no store write) and checks the scenario's properties against the server's store. Every phase is bounded
// by `timeoutMs`.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { realClock } from "../api/clock.ts";
import { isNotFound } from "../api/errors.ts";
import { PropertyMonitor, unknownStep, type EventuallyProperty, type Property } from "../check/properties.ts";
import type { Scenario, ScenarioContext } from "../explore/scenario.ts";
import { createKubeClient } from "../kube/client.ts";
import { kubeconfigText, startServer, type SettleServer } from "../server/index.ts";
import type { WorldView } from "../sim/types.ts";
import { createStore } from "../store/index.ts";
import type { Store, StoreEvent } from "../store/types.ts";
import { observeStore } from "./observe.ts";
import { startProxy, type DrillProxy, type RequestSeen, type WriteSeen } from "./proxy.ts";
import { startProcess, type ControllerProcess } from "./process.ts";
import { targetFromScenario, type DrillTarget } from "./target.ts";

/** What the drill does at a point: `kill` the group, or one of the server-side faults (`--faults`). */
export const drillFaultKinds = ["kill", "time-travel", "close-watch", "fail-500", "fail-409", "lost-response"] as const;
export type DrillFaultKind = (typeof drillFaultKinds)[number];

export interface DrillPoint {
  /** Right after the controller's k-th applied write (1-based) of this run. */
  afterWrite: number;
  fault: DrillFaultKind;
}

export interface DrillOptions {
  /** The scenario as a drill target; or give `scenario` and `ctx` for a TypeScript scenario. */
  target?: DrillTarget;
  scenario?: Scenario;
  ctx?: ScenarioContext;
  /** The controller's command line. Default: the target's own (YAML variants declare one). */
  command?: readonly string[];
  /** No store write for this long counts as quiet. Default 2000. */
  quietMs?: number;
  /** Every run (start, first watch, workload, restart, quiet) must finish within this. Default 60_000. */
  timeoutMs?: number;
  /** Kill after these writes (1-based). Default: every write of the reference run. */
  killPoints?: readonly number[];
  /** Also apply the server-side faults at every point (time travel, closed watch, 500, 409, lost response). */
  faults?: boolean;
  /** Points drilled at once, each with its own server and process group. Default 1. */
  concurrency?: number;
  /** A folder for one JSON artifact per failing point (`settle report --html` renders it). Default none. */
  artifactsDir?: string;
  onProgress?(line: string): void;
  /** Called with each finished run (the CLI writes artifacts and prints output from here). */
  onRun?(run: DrillRun): void;
}

/**
 * `violated`: a property was false; `no-quiet`: not quiet within the timeout; `no-watch`: the controller never
 * watched; `controller-failed`: it exited before watching; `workload-failed`: a workload step failed (a `waitFor`
 * whose condition the controller never made true, or a write the server refused).
 */
export type DrillVerdict = "ok" | "violated" | "no-quiet" | "no-watch" | "controller-failed" | "workload-failed";

export interface DrillTimings {
  /** From the start of the run (ms): the first watch, the fault, the restarted process's first watch, quiet. */
  firstWatchMs?: number;
  /** The workload's last step done. */
  workloadMs?: number;
  faultMs?: number;
  rewatchMs?: number;
  quietMs?: number;
  totalMs: number;
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
  /** What the drill did at the point, as it happened (e.g. whether a stale list was actually served). */
  applied?: string;
  timings: DrillTimings;
  /** The controller's output (every start, prefixed `[n]`), last lines; kept for runs that are not ok. */
  output?: string[];
  /** The controller's requests and the world's writes, for the report; kept for runs that are not ok. */
  timeline?: DrillTimeline;
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

export async function drill(options: DrillOptions): Promise<DrillResult> {
  const target = drillTarget(options);
  const command = options.command ?? target.command;
  if (command === undefined || command.length === 0) throw new Error(`drill: variant "${target.variant}" declares no command; give one after --`);
  const progress = options.onProgress ?? (() => {});
  const reference = await drillOnce(options, target, command, undefined);
  progress(`reference run: ${reference.writes} writes by the controller, ${reference.verdict} in ${reference.timings.totalMs} ms${reference.world ? `; ${reference.world}` : ""}`);
  if (reference.verdict === "controller-failed" || reference.verdict === "no-watch" || reference.verdict === "workload-failed") return { target: describe(target), reference, runs: [] };
  const points = planPoints(options, target, reference.writes);
  const runs: DrillRun[] = new Array(points.length);
  let next = 0;
  const worker = async () => {
    while (next < points.length) {
      const index = next++;
      const point = points[index]!;
      const run = await drillOnce(options, target, command, point);
      runs[index] = run;
      options.onRun?.(run);
      progress(`${pointLabel(point)}${run.write ? ` (${run.write.method} ${shortPath(run.write.path)})` : ""}: ${run.verdict} in ${run.timings.totalMs} ms${run.world ? `; ${run.world}` : ""}`);
    }
  };
  const concurrency = Math.max(1, Math.min(options.concurrency ?? 1, points.length));
  await Promise.all(Array.from({ length: concurrency }, worker));
  return { target: describe(target), reference, runs };
}

function describe(target: DrillTarget): DrillResult["target"] {
  return { name: target.name, variant: target.variant, workload: target.workload };
}

function planPoints(options: DrillOptions, target: DrillTarget, writes: number): DrillPoint[] {
  const at = options.killPoints ?? target.defaults?.afterWrites ?? Array.from({ length: writes }, (_, i) => i + 1);
  const declared = (target.defaults?.faultKinds ?? ["kill"]).filter((k): k is DrillFaultKind => (drillFaultKinds as readonly string[]).includes(k));
  const kinds: readonly DrillFaultKind[] = options.faults === true ? drillFaultKinds : declared;
  return at.flatMap((afterWrite) => kinds.map((fault) => ({ afterWrite, fault })));
}

export function pointLabel(point: DrillPoint): string {
  return point.fault === "kill" ? `kill after write ${point.afterWrite}` : `${point.fault} after write ${point.afterWrite}`;
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
  startMs: number;
  deadlineMs: number;
  quietMs: number;
  dir: string;
  store: Store;
  server: SettleServer;
  proxy: DrillProxy;
  view: WorldView;
  monitor: PropertyMonitor;
  failedAlways: Set<string>;
  quiet: QuietTracker;
  timeline: DrillTimeline;
  output: string[];
  processes: ControllerProcess[];
  deadlines: DeadlineTracker;
  /** Processes the drill killed itself (their exit is not a crash). */
  killed: Set<ControllerProcess>;
  /** Set once the run is over: nothing is started any more. */
  closing: boolean;
  crashRestarts: number;
  applied?: string;
  timings: DrillTimings;
  start(): ControllerProcess;
}

async function openRun(options: DrillOptions, target: DrillTarget, command: readonly string[], point: DrillPoint | undefined): Promise<RunContext> {
  const startMs = realClock.now();
  const quietMs = options.quietMs ?? target.defaults?.quietMs ?? 2000;
  const dir = mkdtempSync(join(tmpdir(), "settle-drill-"));
  const token = randomBytes(16).toString("hex");
  const raw = createStore({ now: () => realClock.now() });
  target.setup(raw);
  const timeline: DrillTimeline = { startMs, requests: [], events: [], initial: raw.history(0).map((e) => e.object) };
  const failedAlways = new Set<string>();
  const monitor = new PropertyMonitor(target.properties);
  const quiet = new QuietTracker(quietMs);
  const view = viewOf(raw, target.externals ?? {});
  const deadlines = new DeadlineTracker(target.properties);
  deadlines.observe(view);
  const store = observeStore(raw, (events) => {
    quiet.changed();
    recordEvents(timeline, events);
    const safety = monitor.checkSafety(view);
    if (safety !== undefined) failedAlways.add(safety.name);
    deadlines.observe(view);
  });
  const server = await startServer({ store, token, log: () => {} });
  const proxy = await startProxy(server.url, () => realClock.now());
  timeline.requests = proxy.requests;
  const controllerConfig = join(dir, "controller.kubeconfig");
  writeFileSync(controllerConfig, kubeconfigText(`${proxy.url}/token/${token}`, token), { mode: 0o600 });
  server.writeKubeconfig(join(dir, "admin.kubeconfig"));
  const env = { ...process.env, ...target.env, KUBECONFIG: controllerConfig };
  const ctx: RunContext = {
    target, point, startMs, deadlineMs: startMs + (options.timeoutMs ?? target.defaults?.timeoutMs ?? 60_000), quietMs, dir, store, server, proxy, view, monitor, failedAlways, quiet, timeline,
    deadlines, output: [], processes: [], killed: new Set(), closing: false, crashRestarts: 0, timings: { totalMs: 0 },
    start: () => startController(ctx, command, env),
  };
  return ctx;
}

const crashRestartDelayMs = 500;
const crashRestartsMax = 5;

/**
 * Starts the controller (again). A controller that exits by itself once it has watched is started again after a
 * short delay, as a kubelet restarts a crashed container: an unhandled error from an injected 500 is a crash, not
 * the end of the drill.
 */
function startController(ctx: RunContext, command: readonly string[], env: NodeJS.ProcessEnv): ControllerProcess {
  const incarnation = ctx.processes.length;
  ctx.proxy.incarnation = incarnation;
  const cwd = ctx.target.cwd === undefined ? {} : { cwd: ctx.target.cwd };
  const p = startProcess(command, env, { linePrefix: `[${incarnation}] `, onLine: (line) => keepLine(ctx.output, redactToken(line)), ...cwd });
  ctx.processes.push(p);
  void p.exited.then((code) => {
    if (ctx.closing || ctx.killed.has(p) || ctx.processes.at(-1) !== p || ctx.timings.firstWatchMs === undefined) return;
    if (++ctx.crashRestarts > crashRestartsMax) return keepLine(ctx.output, `[drill] the controller exited ${code} by itself; not restarted (${crashRestartsMax} restarts already)`);
    keepLine(ctx.output, `[drill] the controller exited ${code} by itself; restarting it in ${crashRestartDelayMs} ms, as a kubelet would`);
    // Not quiet while the controller is down: quiet counts again once the restarted process watches.
    ctx.quiet.wait("restart");
    const opensBefore = ctx.proxy.watchOpens;
    void realClock.sleep(crashRestartDelayMs).then(() => {
      if (ctx.closing || ctx.processes.at(-1) !== p) return;
      ctx.start();
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

async function drillOnce(options: DrillOptions, target: DrillTarget, command: readonly string[], point: DrillPoint | undefined): Promise<DrillRun> {
  const ctx = await openRun(options, target, command, point);
  try {
    return await runPhases(ctx);
  } finally {
    ctx.closing = true;
    for (const p of ctx.processes) await p.kill().catch(() => {});
    ctx.quiet.stop();
    await ctx.proxy.close();
    await ctx.server.close();
    rmSync(ctx.dir, { recursive: true, force: true });
  }
}

/** Resolves with the value, or with `"timeout"` once the run's deadline has passed. */
async function beforeDeadline<T>(ctx: RunContext, promise: Promise<T>): Promise<T | "timeout"> {
  const left = ctx.deadlineMs - realClock.now();
  if (left <= 0) return "timeout";
  let timer: { cancel(): void } | undefined;
  const timeout = new Promise<"timeout">((resolve) => (timer = realClock.setTimer(left, () => resolve("timeout"))));
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    timer?.cancel();
  }
}

async function runPhases(ctx: RunContext): Promise<DrillRun> {
  const first = ctx.start();
  const started = await beforeDeadline(ctx, Promise.race([ctx.proxy.waitForWatch().then(() => "watching" as const), first.exited.then((code) => `exited ${code}`)]));
  if (started === "timeout") {
    const made = ctx.proxy.requests.length;
    return finish(ctx, "no-watch", [], `the controller opened no watch within ${ctx.deadlineMs - ctx.startMs} ms (it made ${made} request(s)${made > 0 ? `, the last ${lastRequest(ctx)}` : ""})`);
  }
  if (started !== "watching") return finish(ctx, "controller-failed", [], `the controller ${started} before opening a watch`);
  ctx.timings.firstWatchMs = realClock.now() - ctx.startMs;
  const pointDone = armPoint(ctx);
  const client = createKubeClient({ kubeconfig: join(ctx.dir, "admin.kubeconfig") });
  const workload = ctx.target.runWorkload(client, ctx.view).then(
    () => {
      ctx.timings.workloadMs = realClock.now() - ctx.startMs;
      ctx.quiet.ready("workload");
    },
    (error: unknown) => error,
  );
  if (ctx.point === undefined) ctx.quiet.ready("point");
  else void pointDone.then(() => ctx.quiet.ready("point"));
  const settled = await beforeDeadline(ctx, Promise.race([ctx.quiet.reached, workload.then((e) => (e === undefined ? new Promise<never>(() => {}) : e))]));
  if (settled instanceof Error || (settled !== "timeout" && settled !== undefined)) {
    return finish(ctx, "workload-failed", [...ctx.failedAlways], `the workload failed: ${settled instanceof Error ? settled.message : String(settled)}`);
  }
  if (settled === "timeout") return finish(ctx, "no-quiet", [...ctx.failedAlways], timeoutReason(ctx));
  ctx.timings.quietMs = realClock.now() - ctx.startMs;
  const failed = [...ctx.failedAlways];
  const liveness = ctx.monitor.properties.filter((p) => p.kind === "eventually").filter((p) => ctx.monitor.checkLiveness(ctx.view, (q) => q === p) !== undefined);
  failed.push(...liveness.map((p) => p.name));
  const late = ctx.deadlines.missed(ctx.startMs + (ctx.timings.workloadMs ?? 0)).filter((m) => !failed.includes(m.name));
  failed.push(...late.map((m) => `${m.name} (true ${m.lateMs} ms after the workload's end, withinMs ${m.withinMs})`));
  const detail = failed.length === 0 ? "every property held once quiet" : `quiet for ${ctx.quietMs} ms with ${failed.length} property(ies) false`;
  return finish(ctx, failed.length === 0 ? "ok" : "violated", failed, detail);
}

function lastRequest(ctx: RunContext): string {
  const last = ctx.proxy.requests.at(-1);
  return last === undefined ? "" : `${last.method} ${last.path} -> ${last.status}`;
}

function timeoutReason(ctx: RunContext): string {
  const within = `within ${ctx.deadlineMs - ctx.startMs} ms`;
  if (ctx.point !== undefined && ctx.timings.faultMs === undefined) return `the controller made fewer than ${ctx.point.afterWrite} writes ${within}`;
  if (ctx.point?.fault === "kill" || ctx.point?.fault === "time-travel") {
    if (ctx.timings.rewatchMs === undefined) return `the restarted controller opened no watch ${within}`;
  }
  if (!ctx.quiet.isReady("workload")) return `the workload did not finish ${within}`;
  return `no quiet window of ${ctx.quietMs} ms ${within}`;
}

function finish(ctx: RunContext, verdict: DrillVerdict, failed: string[], detail: string): DrillRun {
  ctx.timings.totalMs = realClock.now() - ctx.startMs;
  const run: DrillRun = { verdict, failed, writes: ctx.proxy.writes.length, detail, timings: ctx.timings };
  if (ctx.point !== undefined) {
    run.point = ctx.point;
    if (ctx.applied !== undefined) run.applied = appliedNow(ctx);
    if (ctx.point.fault === "kill") run.killAfterWrite = ctx.point.afterWrite;
    const write = ctx.proxy.writes[ctx.point.afterWrite - 1];
    if (write !== undefined) run.write = write;
  }
  if (ctx.target.summary !== undefined && (verdict === "ok" || verdict === "violated")) run.world = ctx.target.summary(ctx.view);
  if (verdict !== "ok") {
    run.output = [...ctx.output];
    run.timeline = { ...ctx.timeline, requests: [...ctx.proxy.requests] };
  }
  return run;
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
        if (point.fault !== "kill" && point.fault !== "time-travel") {
          applyServerFault(ctx, point.fault);
          done();
          return "deliver";
        }
        await restart(ctx, point.fault === "time-travel" ? write : undefined).then(done);
        return "drop";
      },
    });
  });
}

function applyServerFault(ctx: RunContext, fault: Exclude<DrillFaultKind, "kill" | "time-travel">): void {
  if (fault === "close-watch") ctx.applied = `closed ${ctx.proxy.closeWatches()} watch(es)`;
  else if (fault === "fail-500") ctx.proxy.armFault({ kind: "fail-request", code: 500 });
  else if (fault === "fail-409") ctx.proxy.armFault({ kind: "fail-request", code: 409 });
  else ctx.proxy.armFault({ kind: "lost-response" });
  if (fault !== "close-watch") ctx.applied = `armed ${fault} for the controller's next write`;
}

/** The point's fault as it played out: a time-travel list that no request used is said so. */
function appliedNow(ctx: RunContext): string {
  const unused = ctx.point?.fault === "time-travel" && ctx.server.faults.some((f) => f.kind === "stale-read" && f.hits === 0);
  if (unused) return `${ctx.applied}; but the restarted controller made no resourceVersion=0 list or watch (it reads consistently, as a real API server serves it), so no stale state was served`;
  if (ctx.proxy.faultsArmed > 0) return `${ctx.applied}; but the controller made no further write, so it was not applied`;
  return ctx.applied!;
}

/**
 * Kills the group while the write's response is held, starts the controller again and resolves once it watches.
 * With `staleFrom` (time travel), the restarted process's first list is served from before that write: a lagging
 * API server cache, as after a restart behind a load balancer.
 */
async function restart(ctx: RunContext, staleFrom: WriteSeen | undefined): Promise<void> {
  const current = ctx.processes.at(-1)!;
  ctx.killed.add(current);
  await current.kill();
  ctx.proxy.dropConnections();
  if (staleFrom !== undefined) {
    const writeRevision = staleFrom.revision ?? ctx.store.revision;
    const lagRevisions = Math.max(1, ctx.store.revision - writeRevision + 1);
    ctx.server.injectFaults([{ kind: "stale-read", lagRevisions, count: 1 }]);
    ctx.applied = `killed the process group; its restart's first list (or watch) served ${lagRevisions} revision(s) behind`;
  } else {
    ctx.applied = "killed the process group with the write's response held";
  }
  const opensBefore = ctx.proxy.watchOpens;
  ctx.start();
  // Quiet is measured from the moment the restarted process watches again, not from the killed write.
  void ctx.proxy.waitForWatch(opensBefore).then(() => {
    ctx.timings.rewatchMs = realClock.now() - ctx.startMs;
    ctx.quiet.changed();
  });
  await ctx.proxy.waitForWatch(opensBefore);
}

/**
 * `eventually` properties with `withinMs`: when each last became true (after every write), so that one that holds
 * once quiet but became true later than `withinMs` after the workload's end is reported as late.
 */
class DeadlineTracker {
  private readonly trueSince = new Map<string, number | undefined>();
  private readonly timed: EventuallyProperty[];

  constructor(properties: readonly Property[]) {
    this.timed = properties.filter((p): p is EventuallyProperty => p.kind === "eventually" && p.withinMs !== undefined);
  }

  observe(view: WorldView): void {
    for (const p of this.timed) {
      const holds = p.predicate(view, unknownStep);
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

type QuietCondition = "workload" | "point" | "restart";

/**
 * Quiet: every condition is ready (the workload is done, the point's fault has played out) and the store saw no
 * write for `quietMs`. One timer, re-armed on each write; no polling.
 */
class QuietTracker {
  readonly reached: Promise<void>;
  private readonly waiting = new Set<QuietCondition>(["workload", "point"]);
  private lastChangeMs = realClock.now();
  private timer: { cancel(): void } | undefined;
  private wake: () => void = () => {};
  private stopped = false;

  constructor(private readonly quietMs: number) {
    this.reached = new Promise((resolve) => (this.wake = resolve));
  }

  changed(): void {
    this.lastChangeMs = realClock.now();
    this.arm();
  }

  ready(condition: QuietCondition): void {
    this.waiting.delete(condition);
    this.arm();
  }

  wait(condition: QuietCondition): void {
    this.waiting.add(condition);
    this.arm();
  }

  isReady(condition: QuietCondition): boolean {
    return !this.waiting.has(condition);
  }

  stop(): void {
    this.stopped = true;
    this.timer?.cancel();
  }

  private arm(): void {
    this.timer?.cancel();
    if (this.stopped || this.waiting.size > 0) return;
    const left = this.lastChangeMs + this.quietMs - realClock.now();
    this.timer = realClock.setTimer(Math.max(0, left), () => {
      if (realClock.now() - this.lastChangeMs >= this.quietMs) this.wake();
      else this.arm();
    });
  }
}
