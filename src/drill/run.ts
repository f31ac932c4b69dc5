// One drill run: the scenario's world served by its own server, the controller behind its own proxy, one point (or
// none: the reference run). `Run.open` builds the server, proxy and world before the point is known; `drill(point)`
// runs it through its phases (phase.ts) and closes it; `close()` alone tears down a run no point took.
//
// A run is the only writer of its state: its phase, its point, its timings, the timeline of the world's writes, the
// properties found false and what its fault did. The processes are its supervisor's (supervise.ts), the requests its
// proxy's, quiet its tracker's; the run changes them only through their methods.
//
// Invariants:
// - The phase moves only by `stepPhase`: a run begins once, reports once, closes once (phase.ts).
// - The point is fixed when the run begins, and its fault applies once, at the controller's k-th applied write.
// - Every wait is bounded by the run's deadline, `timeoutMs` after the run began.
// - The timeline keeps at most `eventsKeptMax` store events; the output and requests are bounded by their owners.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { assert } from "../api/assert.ts";
import { realClock } from "../api/clock.ts";
import { isNotFound } from "../api/errors.ts";
import { drillFaultParam, drillFaults, isClockDrillFault, type DrillFaultKind } from "../api/faults.ts";
import { describeClockOffset } from "../sim/faults.ts";
import { FaketimeClock, faketimeLibrary } from "./faketime.ts";
import { PropertyMonitor, unknownStep, type EventuallyProperty, type Property } from "../check/properties.ts";
import { describeThrown, thrownLine } from "../check/thrown.ts";
import type { ThrownError } from "../check/verdict.ts";
import { createKubeClient } from "../kube/client.ts";
import { startServer, type SettleServer } from "../server/index.ts";
import type { WorldView } from "../sim/types.ts";
import { createStore } from "../store/index.ts";
import type { Store, StoreEvent } from "../store/types.ts";
import { observeStore } from "./observe.ts";
import { initialPhase, stepPhase, type PhaseInput, type RunPhase } from "./phase.ts";
import { startProxy, type DrillProxy, type RequestSeen, type WriteSeen } from "./proxy.ts";
import { QuietTracker, type QuietWindow } from "./quiet.ts";
import { Supervisor } from "./supervise.ts";
import { ScenarioThrew, type DrillTarget } from "./target.ts";
import type { DrillPoint, DrillRun, DrillTimeline, DrillTimings, DrillVerdict } from "./types.ts";
import { resourceOfPath, WatchShaper } from "./watch-faults.ts";

const eventsKeptMax = 5_000;

/** What the runs of one drill share: an abort (the reference turned out unusable), the learned window, a write hook. */
export interface SharedRun {
  aborted: Promise<void>;
  /** The points' window, once the reference has learned it; until then a point waits the reference's own. */
  window?: Promise<QuietWindow>;
  /** The reference run's controller has made `writes` applied writes. */
  onWrite?(writes: number): void;
}

export interface OpenRunOptions {
  target: DrillTarget;
  command: readonly string[];
  /** The quiet window the run starts with (a point's may be relearned from `shared.window`). */
  window: QuietWindow;
  shared: SharedRun;
  /** Every phase of the run must end within this, from the moment it begins. */
  timeoutMs: number;
}

/** The parts of a run that exist before its server does. */
interface RunWorld {
  target: DrillTarget;
  timeoutMs: number;
  dir: string;
  token: string;
  /** The store as the server writes it; the run observes every write (observe.ts). */
  raw: Store;
  view: WorldView;
  quiet: QuietTracker;
  aborted: Promise<void>;
}

export class Run {
  private readonly target: DrillTarget;
  private readonly timeoutMs: number;
  private readonly dir: string;
  private readonly token: string;
  private readonly store: Store;
  private readonly view: WorldView;
  private readonly quiet: QuietTracker;
  private readonly aborted: Promise<void>;
  private readonly monitor: PropertyMonitor;
  private readonly deadlines: DeadlineTracker;
  private readonly timeline: DrillTimeline;
  // Set once by `connect`, before `open` hands the run out.
  private server!: SettleServer;
  private proxy!: DrillProxy;
  private supervisor!: Supervisor;
  private phase: RunPhase = initialPhase;
  private point: DrillPoint | undefined;
  /** When the run proper began (its first process let through); its deadline is `timeoutMs` later. */
  private startMs: number;
  private deadlineMs: number;
  private readonly timings: DrillTimings = { totalMs: 0 };
  /** Properties of kind `always` found false after some write. */
  private readonly failedAlways = new Set<string>();
  /** What the point's fault did, as it happened. */
  private applied: string | undefined;
  /** A clock point's wall clock for the run's processes. */
  private faketime: FaketimeClock | undefined;
  /** The workload's note, when a `waitFor` timed out and ended it (the report says so beside the verdict). */
  private workloadNote: string | undefined;
  private changeWaiters: Array<() => void> = [];

  /** A run's server, proxy and world, before its point is known; `drill` starts the run proper. */
  static async open(options: OpenRunOptions): Promise<Run> {
    const { target, shared } = options;
    assert(options.timeoutMs > 0, "a run's timeout is positive");
    const dir = mkdtempSync(join(tmpdir(), "settle-drill-"));
    const token = randomBytes(16).toString("hex");
    const raw = createStore({ now: () => realClock.now() });
    target.setup(raw);
    const inFlight = { count: () => 0 };
    const quiet = new QuietTracker(options.window, () => inFlight.count());
    void shared.window?.then((learned) => quiet.relearn(learned));
    const view = viewOf(raw, target.externals ?? {});
    const run = new Run({ target, timeoutMs: options.timeoutMs, dir, token, raw, view, quiet, aborted: shared.aborted });
    await run.connect(options.command, shared);
    inFlight.count = () => run.proxy.requestsInFlight;
    return run;
  }

  private constructor(world: RunWorld) {
    this.startMs = realClock.now();
    this.deadlineMs = this.startMs + world.timeoutMs;
    this.target = world.target;
    this.timeoutMs = world.timeoutMs;
    this.dir = world.dir;
    this.token = world.token;
    this.view = world.view;
    this.quiet = world.quiet;
    this.aborted = world.aborted;
    this.timeline = { startMs: this.startMs, requests: [], events: [], initial: world.raw.history(0).map((e) => e.object) };
    this.monitor = new PropertyMonitor(world.target.properties);
    this.deadlines = new DeadlineTracker(world.target.properties);
    this.deadlines.observe(this.view);
    // From here on every write is the run's to see, the server's own start-up writes included.
    this.store = observeStore(world.raw, (events) => this.observed(events));
  }

  /** Starts the run's server and proxy, and the supervisor of its processes. */
  private async connect(command: readonly string[], shared: SharedRun): Promise<void> {
    const { quiet, dir, token, target } = this;
    this.server = await startServer({ store: this.store, token, log: () => {} });
    const proxy = await startProxy(this.server.url, () => realClock.now());
    this.proxy = proxy;
    proxy.setActivityHook((activity, write) => {
      if (activity === "end") quiet.requestEnded();
      else if (activity === "refused") quiet.awaitRetry();
      else if (write) quiet.writeRequested();
    });
    this.timeline.requests = proxy.requests;
    const onWrite = shared.onWrite;
    if (onWrite !== undefined) proxy.setHooks({ onWrite: (write) => (onWrite(write.index), "deliver") });
    this.server.writeKubeconfig(join(dir, "admin.kubeconfig"));
    this.supervisor = new Supervisor({
      command,
      proxy,
      dir,
      token,
      ...(target.env === undefined ? {} : { env: target.env }),
      ...(target.cwd === undefined ? {} : { cwd: target.cwd }),
      onCrashRestart: {
        down: () => quiet.wait("restart"),
        up: () => {
          quiet.changed();
          quiet.ready("restart");
        },
      },
    });
  }

  /** Watches opened so far through the run's proxy. */
  get watchOpens(): number {
    return this.proxy.watchOpens;
  }

  /** Resolves once the controller has opened its first watch (or more than `after`). */
  waitForWatch(after?: number): Promise<void> {
    return this.proxy.waitForWatch(after);
  }

  /** Starts the process that will take the run's next turn now, its requests held (see `Supervisor.prestart`). */
  prestart(): void {
    assert(this.phase === "opened", "processes are started ahead only before the run begins");
    this.supervisor.prestart();
  }

  /** Runs the opened run at `point` (the reference run: undefined) and closes it. */
  async drill(point: DrillPoint | undefined, coldStart: boolean): Promise<DrillRun> {
    this.step({ type: "begin" });
    this.point = point;
    if (point !== undefined && isClockDrillFault(point.fault)) await this.runUnderFaketime();
    const { proxy, quiet, timeline } = this;
    if (point !== undefined && point.resource !== undefined && !drillFaults[point.fault].restarts) {
      // Quiet waits while the fault holds events back: the controller has not seen the world it would react to.
      proxy.setWatchShaper(
        new WatchShaper({
          fault: point.fault,
          resource: point.resource,
          onHolding: (holding) => {
            quiet.changed();
            if (holding) quiet.wait("held-events");
            else quiet.ready("held-events");
          },
        }),
      );
    }
    this.startMs = realClock.now();
    timeline.startMs = this.startMs;
    this.deadlineMs = this.startMs + this.timeoutMs;
    try {
      return await this.runPhases(coldStart);
    } finally {
      await this.close();
    }
  }

  /** Tears the run down: its processes, proxy, server and folder. */
  async close(): Promise<void> {
    this.step({ type: "close" });
    const { proxy, supervisor, quiet, server, dir } = this;
    proxy.watchShaper?.stop();
    await supervisor.close();
    quiet.stop();
    await proxy.close();
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  }

  private step(input: PhaseInput): void {
    this.phase = stepPhase(this.phase, input);
  }

  /** The store's writes: quiet starts over, waiters wake, the timeline grows, properties are checked. */
  private observed(events: readonly StoreEvent[]): void {
    const { quiet, monitor, view, deadlines, timeline } = this;
    quiet.changed();
    const waiters = this.changeWaiters;
    this.changeWaiters = [];
    for (const wake of waiters) wake();
    const atMs = realClock.now();
    for (const event of events) {
      if (timeline.events.length >= eventsKeptMax) break;
      timeline.events.push({ atMs, type: event.type, revision: event.revision, object: event.object });
    }
    const safety = monitor.checkSafety(view);
    if (safety !== undefined) this.failedAlways.add(safety.name);
    deadlines.observe(view);
  }

  /** Resolves on the store's next write (event-driven waits of the workload). */
  private nextChange(): Promise<void> {
    return new Promise<void>((wake) => this.changeWaiters.push(wake));
  }

  /** Resolves with the value, or with `"timeout"` once the run's deadline has passed (or the drill gave up on it). */
  private async beforeDeadline<T>(promise: Promise<T>): Promise<T | "timeout"> {
    const left = this.deadlineMs - realClock.now();
    if (left <= 0) return "timeout";
    let timer: { cancel(): void } | undefined;
    const timeout = new Promise<"timeout">((resolve) => (timer = realClock.setTimer(left, () => resolve("timeout"))));
    try {
      return await Promise.race([promise, timeout, this.aborted.then(() => "timeout" as const)]);
    } finally {
      timer?.cancel();
    }
  }

  private async runPhases(coldStart: boolean): Promise<DrillRun> {
    const { proxy, quiet, supervisor, target, view, dir } = this;
    // Armed before the first process is let through: a controller may write before it watches (a client-node
    // informer fires its add handlers from the initial list before its watch opens), and such a write is a point.
    const pointDone = this.armPoint();
    const first = supervisor.startFirst();
    // The replacement starts now if it has not yet: on a loaded machine its cold start takes longer than the
    // workload takes to reach the point.
    if (!coldStart && restarts(this.point) && supervisor.standbyCount === 0) supervisor.prestart();
    // A first process the point killed before it watched is not a failure: its replacement's watch is awaited.
    const exitedUnkilled = first.exited.then((code) => (supervisor.wasKilled(first) ? new Promise<never>(() => {}) : `exited ${code}`));
    const started = await this.beforeDeadline(Promise.race([proxy.waitForWatch().then(() => "watching" as const), exitedUnkilled]));
    if (started === "timeout") {
      const made = proxy.requests.length;
      return this.finish("no-watch", [], `the controller opened no watch within ${this.deadlineMs - this.startMs} ms (it made ${made} request(s)${made > 0 ? `, the last ${this.lastRequest()}` : ""})`);
    }
    if (started !== "watching") return this.finish("controller-failed", [], `the controller ${started} before opening a watch${listenClashHint(supervisor.output)}`);
    this.step({ type: "watched" });
    this.timings.firstWatchMs = realClock.now() - this.startMs;
    supervisor.watching();
    // The controller's cold start is not think time: it counts from its first watch.
    quiet.watching();
    const client = createKubeClient({ kubeconfig: join(dir, "admin.kubeconfig") });
    const workload = target.runWorkload(client, view, { nextChange: () => this.nextChange(), note: (line) => (this.workloadNote = line) }).then(
      () => {
        this.timings.workloadMs = realClock.now() - this.startMs;
        quiet.ready("workload");
      },
      (error: unknown) => error,
    );
    if (this.point === undefined) quiet.ready("point");
    else void pointDone.then(() => quiet.ready("point"));
    const settled = await this.beforeDeadline(Promise.race([quiet.reached, workload.then((e) => (e === undefined ? new Promise<never>(() => {}) : e))]));
    if (settled instanceof ScenarioThrew) return this.finish("scenario-error", [], settled.message, settled.thrown);
    if (settled instanceof Error || (settled !== "timeout" && settled !== undefined)) {
      return this.finish("workload-failed", [...this.failedAlways], `the workload failed: ${settled instanceof Error ? settled.message : String(settled)}`);
    }
    if (settled === "timeout") return this.finish("no-quiet", [...this.failedAlways], this.timeoutReason());
    return this.quietVerdict();
  }

  /** The run went quiet: the properties once quiet, and the deadlines of the `eventually` ones. */
  private quietVerdict(): DrillRun {
    const { quiet, monitor, view, deadlines } = this;
    this.timings.quietMs = realClock.now() - this.startMs;
    this.timings.quietWindowMs = quiet.currentMs;
    this.timings.thinkMaxMs = quiet.thinkMaxMs;
    const failed = [...this.failedAlways];
    const liveness = monitor.properties.filter((p) => p.kind === "eventually").filter((p) => monitor.checkLiveness(view, (q) => q === p) !== undefined);
    failed.push(...liveness.map((p) => p.name));
    const late = deadlines.missed(this.startMs + (this.timings.workloadMs ?? 0)).filter((m) => !failed.includes(m.name));
    failed.push(...late.map((m) => `${m.name} (true ${m.lateMs} ms after the workload's end, withinMs ${m.withinMs})`));
    const detail = failed.length === 0 ? "every property held once quiet" : `quiet for ${quiet.currentMs} ms with ${failed.length} property(ies) false`;
    return this.finish(failed.length === 0 ? "ok" : "violated", failed, detail);
  }

  private lastRequest(): string {
    const last = this.proxy.requests.at(-1);
    return last === undefined ? "" : `${last.method} ${last.path} -> ${last.status}`;
  }

  /** What a run that never went quiet says of the writes the server refused: a controller retrying without end. */
  private refusedWrites(): string {
    const refused = this.proxy.requests.filter((r) => !r.watch && r.method !== "GET" && r.status >= 400);
    const last = refused.at(-1);
    if (last === undefined) return "";
    return `; the server refused ${refused.length} of the controller's writes, the last ${last.method} ${last.path} -> ${last.status}`;
  }

  private timeoutReason(): string {
    const within = `within ${this.deadlineMs - this.startMs} ms`;
    const point = this.point;
    if (point !== undefined && this.timings.faultMs === undefined) return `the controller made fewer than ${point.afterWrite} writes ${within}`;
    if (point !== undefined && drillFaults[point.fault].restarts) {
      if (this.timings.rewatchMs === undefined) return `the restarted controller opened no watch ${within}`;
    }
    if (!this.quiet.isReady("workload")) return `the workload did not finish ${within}`;
    return `no quiet window of ${this.quiet.currentMs} ms ${within}${this.refusedWrites()}`;
  }

  private finish(given: DrillVerdict, givenFailed: string[], givenDetail: string, thrown?: ThrownError): DrillRun {
    this.step({ type: "finish" });
    const { target, view, proxy, supervisor, timeline } = this;
    this.timings.totalMs = realClock.now() - this.startMs;
    let world: string | undefined;
    let error = thrown ?? this.propertyThrew();
    if (error === undefined && target.summary !== undefined && (given === "ok" || given === "violated")) {
      try {
        world = target.summary(view);
      } catch (summaryError) {
        error = describeThrown("summary", summaryError);
      }
    }
    // The scenario's own error outranks what the run found: a property that threw is not false, and what followed
    // from it (a timeout, a failed workload) may be its consequence. Only a controller that never ran says more.
    const scenarioError = error !== undefined && given !== "controller-failed" && given !== "no-watch";
    const verdict = scenarioError ? "scenario-error" : given;
    const failed = scenarioError ? [] : givenFailed;
    const note = this.workloadNote === undefined ? "" : `${givenDetail === "" ? "" : "; "}workload: ${this.workloadNote}`;
    const detail = scenarioError ? thrownLine(error!) : `${givenDetail}${note}`;
    const result: DrillRun = { verdict, failed, writes: proxy.writes.length, detail, timings: this.timings, watched: watchedResources(proxy.requests) };
    if (scenarioError) result.error = error!;
    const point = this.point;
    if (point !== undefined) {
      result.point = point;
      if (this.applied !== undefined || proxy.watchShaper !== undefined) result.applied = this.appliedNow();
      if (point.fault === "kill") result.killAfterWrite = point.afterWrite;
      const write = proxy.writes[point.afterWrite - 1];
      if (write !== undefined) result.write = write;
    }
    if (world !== undefined) result.world = world;
    if (verdict !== "ok") {
      result.output = [...supervisor.output];
      result.timeline = { ...timeline, requests: [...proxy.requests] };
    }
    return result;
  }

  /** The first exception a property threw in this run (checked after a write, once quiet, or for its deadline). */
  private propertyThrew(): ThrownError | undefined {
    const thrown = this.monitor.thrown ?? this.deadlines.thrown;
    return thrown === undefined ? undefined : describeThrown(`property "${thrown.property}"`, thrown.error);
  }

  /**
   * Arms the run's point on the proxy: at the controller's k-th applied write, apply the fault. Resolves once the
   * fault's effect is complete (for a kill: the restarted process watches again).
   */
  private armPoint(): Promise<void> {
    const point = this.point;
    if (point === undefined) return Promise.resolve();
    const { proxy, quiet } = this;
    return new Promise<void>((done) => {
      proxy.setHooks({
        onWrite: async (write) => {
          if (write.index !== point.afterWrite) return "deliver";
          assert(this.timings.faultMs === undefined, "a point's fault applies once");
          this.timings.faultMs = realClock.now() - this.startMs;
          quiet.changed();
          const shaper = proxy.watchShaper;
          if (shaper !== undefined) {
            shaper.arm();
            done();
            return "deliver";
          }
          if (!drillFaults[point.fault].restarts) {
            this.applyServerFault(point.fault);
            done();
            return "deliver";
          }
          await this.restart(point, write).then(done);
          return "drop";
        },
      });
    });
  }

  /** A clock point: every process of the run under libfaketime, its wall clock true until the point moves it. */
  private async runUnderFaketime(): Promise<void> {
    const library = faketimeLibrary();
    // The plan holds clock points only where the library is installed (see `PointFeed`).
    assert(library !== undefined, "a clock point runs where libfaketime is installed");
    this.faketime = new FaketimeClock(this.dir, library);
    await this.supervisor.addEnv(this.faketime.env(this.target.env?.["LD_PRELOAD"] ?? process.env["LD_PRELOAD"]));
  }

  private applyServerFault(fault: DrillFaultKind): void {
    const proxy = this.proxy;
    if (isClockDrillFault(fault)) {
      const offsetMs = drillFaultParam(fault, "offsetMs");
      this.faketime!.set(offsetMs);
      this.applied = `set the controller's wall clock ${describeClockOffset(offsetMs)} (libfaketime; its monotonic clock and the API server's keep the true time)`;
      return;
    }
    if (fault === "close-watch") {
      this.applied = `closed ${proxy.closeWatches()} watch(es)`;
      return;
    }
    if (drillFaults[fault].model === "fail-request") proxy.armFault({ kind: "fail-request", code: drillFaultParam(fault, "code") as 409 | 500 });
    else proxy.armFault({ kind: "lost-response" });
    this.applied = `armed ${fault} for the controller's next write`;
    this.quiet.awaitRetry();
  }

  /** The point's fault as it played out: a time-travel list that no request used is said so. */
  private appliedNow(): string {
    const { proxy, server } = this;
    if (proxy.watchShaper !== undefined) return proxy.watchShaper.describe();
    const stale = this.point?.fault === "time-travel" || this.point?.fault === "stale-kind";
    const unused = stale && server.faults.some((f) => f.kind === "stale-read" && f.hits === 0);
    if (unused) return `${this.applied}; but the restarted controller made no resourceVersion=0 list or watch (it reads consistently, as a real API server serves it), so no stale state was served`;
    if (proxy.faultsArmed > 0) return `${this.applied}; but the controller made no further write, so it was not applied`;
    return this.applied!;
  }

  /**
   * Kills the group while the write's response is held, starts the controller again and resolves once it watches.
   * Time travel: the restarted process's first list is served from before that write, a lagging API server cache, as
   * after a restart behind a load balancer. A stale kind: only the point's resource lags, from before its last change
   * (kube-apiserver keeps one watch cache per resource, each at its own revision), the others are fresh.
   */
  private async restart(point: DrillPoint, write: WriteSeen): Promise<void> {
    const { proxy, quiet, server, store, supervisor } = this;
    await supervisor.killActive();
    if (point.fault === "time-travel") {
      const writeRevision = write.revision ?? store.revision;
      const lagRevisions = Math.max(1, store.revision - writeRevision + 1);
      server.injectFaults([{ kind: "stale-read", lagRevisions, count: 1 }]);
      this.applied = `killed the process group; its restart's first list (or watch) served ${lagRevisions} revision(s) behind`;
    } else if (point.fault === "stale-kind" && point.resource !== undefined) {
      const changed = this.lastChangeOf(point.resource);
      if (changed === undefined) {
        this.applied = `killed the process group; no ${point.resource} object had changed, so its first list could not be stale`;
      } else {
        const lagRevisions = Math.max(1, store.revision - changed + 1);
        server.injectFaults([{ kind: "stale-read", resource: point.resource, lagRevisions, count: 1 }]);
        this.applied = `killed the process group; its restart's first list (or watch) of ${point.resource} served ${lagRevisions} revision(s) behind (before its last change), the other resources fresh`;
      }
    } else {
      this.applied = "killed the process group with the write's response held";
    }
    const opensBefore = proxy.watchOpens;
    supervisor.replace();
    // Quiet is measured from the moment the restarted process watches again, not from the killed write.
    void proxy.waitForWatch(opensBefore).then(() => {
      this.timings.rewatchMs = realClock.now() - this.startMs;
      quiet.changed();
    });
    await proxy.waitForWatch(opensBefore);
  }

  /** The revision of the last change to an object of `resource` the run has seen, if any. */
  private lastChangeOf(resource: string): number | undefined {
    const { timeline, store } = this;
    for (let i = timeline.events.length - 1; i >= 0; i--) {
      const event = timeline.events[i]!;
      const object = event.object as { apiVersion?: string; kind?: string };
      if (object.apiVersion === undefined || object.kind === undefined) continue;
      try {
        if (store.resourceFor({ apiVersion: object.apiVersion, kind: object.kind }).plural === resource) return event.revision;
      } catch {
        // A kind no longer served (its CRD deleted): not the resource asked for.
      }
    }
    return undefined;
  }
}

/** Whether the point's fault restarts the controller (so a replacement process is needed). */
/**
 * What to say when a controller that died before watching could not listen on an address: the drill runs several
 * instances of one controller at once (points in parallel, a replacement started ahead of its turn), so a fixed port
 * of its own (a kubebuilder main's health probe on :8081, metrics on :8080) is taken by another instance, and the
 * point fails for that, not for the controller's logic. Empty when no output line says so.
 */
export function listenClashHint(output: readonly string[]): string {
  // Go: "listen tcp :8081: bind: address already in use"; Node: "listen EADDRINUSE: address already in use :::8081".
  const clash = output.map((line) => /listen (?:tcp\d? (\S*):.*address already in use|EADDRINUSE: address already in use (\S+))/.exec(line)).find((match) => match !== null);
  if (clash === undefined || clash === null) return "";
  const address = clash[1] ?? clash[2] ?? "";
  return (
    `: it could not listen on ${address}, which another instance of it held (the drill runs several at once: points in ` +
    "parallel, a replacement started ahead of its turn); give the controller's own listeners port 0 in the variant's args " +
    "(a kubebuilder main: --metrics-bind-address=0 --health-probe-bind-address=0)"
  );
}

function restarts(point: DrillPoint | undefined): boolean {
  return point !== undefined && drillFaults[point.fault].restarts;
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
