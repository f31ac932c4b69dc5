// A simulation: a store, a virtual clock, one seed, actors, external state and faults, run step by step
// under a strategy. Same seed, choices and faults give a byte-identical trace.
import { assert } from "../api/assert.ts";
import { isNotFound } from "../api/errors.ts";
import type { Clock } from "../api/clock.ts";
import type { KubeObject } from "../api/object.ts";
import type { Store, StoreOptions } from "../store/types.ts";
import { createStore } from "../store/index.ts";
import { VirtualClock, type TimerEntry } from "./clock.ts";
import { kernelAccessKey, pendingPreparations, type KernelAccess } from "./access.ts";
import { SimClient } from "./client.ts";
import { cloneJson } from "../api/json.ts";
import { applyFault, drawClockSkew, drawFault } from "./faults.ts";
import { simulationHost } from "./host.ts";
import { Kernel, type ActorState, type Step } from "./kernel.ts";
import { changeFeedKey, everythingChanged, kindKey, objectKey, type ChangeFeed, type WorldChanges } from "./changes.ts";
import { Rng } from "./rng.ts";
import { randomStrategy, replayStrategy, type ReadyStep, type Strategy } from "./strategy.ts";
import { recordKey, type FaultFact, type TraceRecord } from "./trace.ts";
import type { FaultBudget } from "./types.ts";
import type {
  ActorContext,
  ActorDefinition,
  ExternalCell,
  ExternalHandle,
  FaultKind,
  FaultTarget,
  PlannedFault,
  RunOptions,
  RunResult,
  SimulationOptions,
  WorldView,
} from "./types.ts";

export interface Simulation {
  readonly seed: number;
  readonly store: Store;
  readonly clock: VirtualClock;
  /** The root stream. Fork it for your own purposes (`sim.rng.fork("workload")`); do not draw from it directly. */
  readonly rng: Rng;
  addActor(definition: ActorDefinition): void;
  /** External state that survives crashes; `initial` is copied. */
  defineExternal<T>(name: string, initial: T): void;
  /** Synchronous access for setup, hooks and fault kinds (not for actors). */
  external<T = unknown>(name: string): ExternalCell<T>;
  defineFaultKind(kind: FaultKind): void;
  view(): WorldView;
  run(options?: RunOptions): Promise<RunResult>;
  /** Ends the fault phase: no more planned or drawn faults from now on. */
  stopFaults(): void;
  /** No ready step, and no timer due within `horizonMs` of now. */
  idle(horizonMs?: number): boolean;
  nextTimerAt(): number | undefined;
  /** Ready steps now (a copy), oldest first. */
  readySteps(): ReadyStep[];
  /** Scheduled steps so far. */
  readonly steps: number;
  traceHash(): string;
}

/** Identity with defaults checked: the way to declare an actor. */
export function defineActor(definition: ActorDefinition): ActorDefinition {
  assert(definition.name.length > 0, "actor name is not empty");
  assert(!/[\s/]/.test(definition.name), "actor name has no spaces or slashes");
  assert(definition.restartDelayMs === undefined || definition.restartDelayMs >= 0, "actor restartDelayMs >= 0");
  return definition;
}

export function defineFaultKind(kind: FaultKind): FaultKind {
  assert(kind.name.length > 0, "fault kind name is not empty");
  return kind;
}

export function createSimulation(options: SimulationOptions = {}): Simulation {
  return new SimulationImpl(options);
}

class SimulationImpl implements Simulation {
  readonly seed: number;
  readonly store: Store;
  readonly clock: VirtualClock;
  readonly rng: Rng;
  private readonly kernel: Kernel;
  private readonly faultKinds = new Map<string, FaultKind>();
  private readonly worldView: WorldView;
  private readonly faultTarget: FaultTarget;
  private readonly choices: Array<[number, number]> = [];
  private readonly faultsReached: PlannedFault[] = [];
  private readonly strategyRng: Rng;
  private readonly faultRng: Rng;
  private readonly mathRng: Rng;
  private faultsStopped = false;

  constructor(options: SimulationOptions) {
    this.seed = options.seed ?? 0;
    this.rng = new Rng(this.seed);
    this.strategyRng = this.rng.fork("strategy");
    this.faultRng = this.rng.fork("faults");
    this.mathRng = this.rng.fork("math-random");
    this.clock = new VirtualClock(options.epochMs === undefined ? {} : { epochMs: options.epochMs });
    const storeOptions: StoreOptions = { now: () => this.clock.now() };
    if (options.admission !== undefined) storeOptions.admission = options.admission;
    if (options.historyRevisionsMax !== undefined) storeOptions.historyRevisionsMax = options.historyRevisionsMax;
    this.store = (options.createStore ?? createStore)(storeOptions);
    this.kernel = new Kernel({
      clock: this.clock,
      store: this.store,
      rng: this.rng,
      traceMode: options.traceMode ?? "full",
      watchQueueMax: options.watchQueueMax ?? 10_000,
      readyStepsMax: options.readyStepsMax ?? 1_000_000,
      requestLatencyMs: options.requestLatencyMs ?? [0, 0],
      origins: options.stepOrigins === true,
      waits: simulationHost,
      hooks: {
        context: (state) => this.context(state),
        crashContext: (state) => ({
          actor: state.name,
          incarnation: state.life.incarnation,
          now: this.clock.now(),
          external: (name) => this.external(name),
        }),
      },
    });
    this.worldView = makeView(this.store, this.clock, this.kernel);
    this.faultTarget = {
      store: this.store,
      view: this.worldView,
      now: () => this.clock.now(),
      external: (name) => this.external(name),
    };
  }

  get steps(): number {
    return this.kernel.stepIndex;
  }

  addActor(definition: ActorDefinition): void {
    this.kernel.addActor(defineActor(definition));
  }

  defineExternal<T>(name: string, initial: T): void {
    this.kernel.defineExternal(name, initial);
  }

  external<T = unknown>(name: string): ExternalCell<T> {
    const kernel = this.kernel;
    assert(kernel.hasExternal(name), `external "${name}" is defined`);
    return {
      get: () => kernel.getExternal(name) as T,
      set: (value: T) => kernel.setExternal(name, value),
    };
  }

  defineFaultKind(kind: FaultKind): void {
    defineFaultKind(kind);
    assert(!this.faultKinds.has(kind.name), `fault kind "${kind.name}" is defined once`);
    this.faultKinds.set(kind.name, kind);
  }

  view(): WorldView {
    return this.worldView;
  }

  stopFaults(): void {
    this.faultsStopped = true;
  }

  idle(horizonMs = 0): boolean {
    if (this.kernel.ready.length > 0) return false;
    const next = this.clock.nextDueAt();
    return next === undefined || next > this.clock.now() + horizonMs;
  }

  nextTimerAt(): number | undefined {
    return this.clock.nextDueAt();
  }

  readySteps(): ReadyStep[] {
    return this.kernel.ready.map(({ seq, actor, kind, label }) => ({ seq, actor, kind, label }));
  }

  traceHash(): string {
    return this.kernel.trace.traceHash();
  }

  private context(state: ActorState): ActorContext {
    const kernel = this.kernel;
    const incarnation = state.life.incarnation;
    const clock: Clock = {
      // The wall clock of the actor's machine (clock faults move it); monotonic time is the simulation's.
      now: () => kernel.wallNow(state),
      monotonic: () => this.clock.now(),
      sleep: (ms, options) => {
        if (!kernel.checkCaller(state, incarnation)) return new Promise<void>(() => {});
        return new Promise<void>((resolve, reject) => {
          const signal = options?.signal;
          if (signal?.aborted) return reject(signal.reason);
          const onAbort = () => {
            kernel.cancelTimer(state, entry);
            reject(signal?.reason);
          };
          const done = () => {
            signal?.removeEventListener("abort", onAbort);
            resolve();
          };
          const entry = kernel.scheduleFor(state, ms, done, `sleep ${ms}ms`);
          signal?.addEventListener("abort", onAbort, { once: true });
        });
      },
      setTimer: (ms, fn) => {
        if (!kernel.checkCaller(state, incarnation)) return { cancel: () => {} };
        const entry: TimerEntry = kernel.scheduleFor(state, ms, fn, `timer ${ms}ms`);
        return { cancel: () => kernel.cancelTimer(state, entry) };
      },
    };
    const context: ActorContext = {
      name: state.name,
      incarnation,
      client: new SimClient(kernel, state),
      clock,
      rng: this.rng.fork(`actor/${state.name}/${incarnation}`),
      log: (msg, fields) => {
        if (!kernel.isCurrent(state, incarnation)) return;
        const revision = this.store.revision;
        const base = { actor: state.name, kind: "log" as const, label: msg, revisionBefore: revision, revisionAfter: revision, result: "log" };
        kernel.log(fields === undefined ? base : { ...base, fields: cloneJson(fields) });
      },
      external: <T>(name: string) => this.externalHandle<T>(state, incarnation, name),
    };
    // Keyed by a symbol only src/ holds (enumerable, so a context spread into a workload context keeps it).
    const access: KernelAccess = { kernel, state, incarnation, rng: (label) => this.rng.fork(`${label}/${state.name}/${incarnation}`) };
    Object.defineProperty(context, kernelAccessKey, { value: access, enumerable: true });
    return context;
  }

  private externalHandle<T>(state: ActorState, incarnation: number, name: string): ExternalHandle<T> {
    const kernel = this.kernel;
    assert(kernel.hasExternal(name), `external "${name}" is defined`);
    const op = <R>(verb: "read" | "write", body: () => R): Promise<R> => {
      if (!kernel.checkCaller(state, incarnation)) return new Promise<R>(() => {});
      return new Promise<R>((resolve, reject) => {
        kernel.enqueue({
          actor: state.name,
          kind: "external",
          label: `${verb} ${name}`,
          facts: { verb, access: verb, external: name },
          owner: state,
          run: () => {
            try {
              resolve(body());
              return "ok";
            } catch (error) {
              reject(error);
              return `error: ${error instanceof Error ? error.message : String(error)}`;
            }
          },
        });
      });
    };
    return {
      read: () => op("read", () => cloneJson(kernel.getExternal(name)) as T),
      write: (value) =>
        op("write", () => {
          const current = kernel.getExternal(name) as T;
          const next = typeof value === "function" ? (value as (current: T) => T)(cloneJson(current)) : value;
          kernel.setExternal(name, next);
        }),
    };
  }

  async run(options: RunOptions = {}): Promise<RunResult> {
    const prepared = pendingPreparations();
    if (prepared !== undefined) await prepared;
    const kernel = this.kernel;
    assert(options.expectTrace === undefined || kernel.trace.mode === "full", "expectTrace needs traceMode full");
    const loop = new RunLoop({
      kernel,
      view: this.worldView,
      options,
      choices: this.choices,
      faultsReached: this.faultsReached,
      strategyRng: this.strategyRng,
      faultRng: this.faultRng,
      faultKinds: this.faultKinds,
      faultTarget: this.faultTarget,
      faultsStopped: () => this.faultsStopped,
    });
    const lease = {
      // `Date` under the guards reads the wall clock of the actor whose step runs (the simulation's between steps).
      now: () => kernel.currentWallNow(),
      random: () => this.mathRng.float(),
      onRejection: (reason: unknown) => {
        const message = reason instanceof Error ? reason.message : String(reason);
        const actor = kernel.blame();
        kernel.fail({ status: "actor-error", actor, message: `actor ${actor} left a rejection unhandled: ${message}`, error: reason });
      },
    };
    return simulationHost.exclusive(lease, async () => {
      kernel.beginRun((record) => loop.onRecord(record));
      try {
        return this.result(await loop.run());
      } finally {
        kernel.endRun();
      }
    });
  }

  private result(ended: Ended): RunResult {
    const kernel = this.kernel;
    const result: RunResult = {
      status: ended.status,
      steps: kernel.stepIndex,
      timeMs: this.clock.now(),
      choices: this.choices.map(([step, index]) => [step, index]),
      faults: this.faultsReached.map((fault) => ({ ...fault })),
      traceHash: kernel.trace.traceHash(),
      trace: kernel.trace.records,
    };
    if (ended.message !== undefined) result.message = ended.message;
    if (ended.actor !== undefined) result.actor = ended.actor;
    if (ended.error !== undefined) result.error = ended.error;
    return result;
  }
}

function makeView(store: Store, clock: VirtualClock, kernel: Kernel): WorldView {
  return new SimWorldView(store, clock, kernel);
}

/**
 * The simulation's view of the world, made once per run. It holds no closure: an object that had a getter
 * (`revision`) beside closures of its own, as the object literal here had, was measured surviving young-generation
 * collections whole, and with it the run's store and kernel, so every run's world was copied and promoted until a
 * full collection. Methods live on the prototype; the own copies are bound methods (which did not have that
 * effect), so that a predicate or hook may still detach one (`const { get } = view`).
 */
class SimWorldView implements WorldView {
  readonly now: WorldView["now"];
  readonly get: WorldView["get"];
  readonly list: WorldView["list"];
  readonly external: WorldView["external"];
  readonly [changeFeedKey]: ChangeFeed;

  constructor(
    private readonly store: Store,
    private readonly clock: VirtualClock,
    private readonly kernel: Kernel,
  ) {
    this.now = SimWorldView.prototype.nowMs.bind(this);
    this.get = SimWorldView.prototype.getObject.bind(this);
    this.list = SimWorldView.prototype.listObjects.bind(this);
    this.external = SimWorldView.prototype.externalValue.bind(this) as WorldView["external"];
    this[changeFeedKey] = changeFeed(store, kernel);
  }

  get revision(): number {
    return this.store.revision;
  }

  private nowMs(): number {
    return this.clock.now();
  }

  private getObject(ref: Parameters<WorldView["get"]>[0]): KubeObject | undefined {
    try {
      return this.store.get(ref);
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  }

  private listObjects(options: Parameters<WorldView["list"]>[0]): readonly KubeObject[] {
    return this.store.list(options).items;
  }

  private externalValue(name: string): unknown {
    return this.kernel.getExternal(name);
  }
}

const nothingChanged: WorldChanges = Object.freeze({ everything: false, kinds: Object.freeze([]), objects: Object.freeze([]), externals: Object.freeze([]) });

/** What the store and the kernel's external cells wrote since a cursor: the property monitor's input. */
function changeFeed(store: Store, kernel: Kernel): ChangeFeed {
  return {
    cursor: () => ({ revision: store.revision, externalWrites: kernel.externalWriteCount }),
    since(cursor) {
      // The common answer after a step that wrote nothing, without building arrays.
      if (cursor.revision === store.revision && cursor.externalWrites === kernel.externalWriteCount) return nothingChanged;
      const externals = kernel.externalWritesSince(cursor.externalWrites);
      if (externals === undefined || cursor.revision < store.compactedRevision) return everythingChanged;
      if (cursor.revision === store.revision) return { everything: false, kinds: [], objects: [], externals };
      const kinds: string[] = [];
      const objects: string[] = [];
      for (const { object } of store.history(cursor.revision)) {
        kinds.push(kindKey(object.apiVersion, object.kind));
        objects.push(objectKey(object.apiVersion, object.kind, object.metadata.name));
      }
      return { everything: false, kinds, objects, externals };
    },
  };
}

type Ended = { status: RunResult["status"]; message?: string; actor?: string; error?: unknown };

/** What one call of `run` works with: the kernel, the simulation's records of choices and faults, its streams. */
interface RunLoopOptions {
  kernel: Kernel;
  view: WorldView;
  options: RunOptions;
  /** Every non-zero choice so far (appended to). */
  choices: Array<[number, number]>;
  /** Every fault reached so far (appended to). */
  faultsReached: PlannedFault[];
  strategyRng: Rng;
  faultRng: Rng;
  faultKinds: ReadonlyMap<string, FaultKind>;
  faultTarget: FaultTarget;
  faultsStopped(): boolean;
}

/** One call of `run`: the step loop with its strategy, fault plan and stop conditions. */
class RunLoop {
  private readonly kernel: Kernel;
  private readonly options: RunOptions;
  private readonly strategy: Strategy;
  private readonly maxSteps: number;
  private readonly untilMs: number;
  private readonly planned: PlannedFault[];
  private plannedNext = 0;
  private readonly remaining = new Map<string, number>();
  /** The last step whose faults this run injected. Per run: a new run may plan faults at the current step. */
  private faultsDoneFor = -1;
  private stopRequested = false;

  constructor(private readonly ctx: RunLoopOptions) {
    const { kernel, options } = ctx;
    this.kernel = kernel;
    this.options = options;
    this.strategy = options.choices !== undefined ? replayStrategy(options.choices) : (options.strategy ?? randomStrategy());
    this.maxSteps = options.maxSteps ?? 100_000;
    this.untilMs = options.untilMs ?? Number.POSITIVE_INFINITY;
    // Stable by atStep: faults planned for one step apply in list order.
    this.planned = [...(options.faults ?? [])].sort((a, b) => a.atStep - b.atStep);
    for (const fault of this.planned) assert(Number.isInteger(fault.atStep) && fault.atStep >= 0, "planned fault atStep is a step index");
    for (const [kind, count] of Object.entries(options.faultBudget?.counts ?? {})) this.remaining.set(kind, count);
    while (this.plannedNext < this.planned.length && this.planned[this.plannedNext]!.atStep < kernel.stepIndex) this.plannedNext++;
  }

  async run(): Promise<Ended> {
    const kernel = this.kernel;
    kernel.queueGc();
    for (;;) {
      if (kernel.fatal !== undefined) return kernel.fatal;
      if (this.stopRequested) return { status: "stopped" };
      if (kernel.stepIndex >= this.maxSteps) return { status: "max-steps" };
      if (this.faultsDoneFor < kernel.stepIndex) {
        this.faultsDoneFor = kernel.stepIndex;
        // Most steps get no fault: then nothing is awaited (the microtask queue is empty between steps, so an
        // await here would only cost a promise per step, never change what runs).
        const injecting = this.injectFaults();
        if (injecting !== undefined) await injecting;
        continue;
      }
      kernel.promoteDue();
      const eligible = kernel.eligible();
      if (eligible.length === 0) {
        const wake = kernel.nextWakeAt();
        if (wake === undefined) return { status: "idle" };
        if (wake > this.untilMs) {
          if (this.untilMs > kernel.clock.now()) kernel.clock.advanceTo(this.untilMs);
          return { status: "until" };
        }
        kernel.clock.advanceTo(Math.max(wake, kernel.clock.now()));
        continue;
      }
      await this.step(eligible);
    }
  }

  /** Chooses among `eligible` and executes the choice (not async itself: one promise per step, the kernel's). */
  private step(eligible: readonly Step[]): Promise<void> {
    const kernel = this.kernel;
    const stepIndex = kernel.stepIndex;
    let index = this.strategy.next(eligible, this.ctx.strategyRng, stepIndex);
    assert(Number.isInteger(index) && index >= 0, "strategy returns a non-negative integer");
    if (index >= eligible.length) index = eligible.length - 1;
    if (index !== 0) this.ctx.choices.push([stepIndex, index]);
    return kernel.execute(eligible[index]!, eligible === kernel.ready ? index : -1);
  }

  /**
   * Planned faults for this step (in order), then at most one drawn from the budget. Undefined when there is
   * nothing to inject, the common case, decided without a promise.
   */
  private injectFaults(): Promise<void> | undefined {
    if (this.ctx.faultsStopped()) return undefined;
    const step = this.kernel.stepIndex;
    if (step === 0 && this.options.faultBudget?.clockSkewMs !== undefined) return this.injectAtStart();
    if (this.plannedNext < this.planned.length && this.planned[this.plannedNext]!.atStep === step) return this.injectPlanned(step);
    const drawn = this.drawFault(step);
    return drawn === undefined ? undefined : this.inject(drawn);
  }

  /** A run's first step under a budget that allows a clock skew: the skew, if drawn, comes before everything else. */
  private async injectAtStart(): Promise<void> {
    const skew = drawClockSkew({ kernel: this.kernel, rng: this.ctx.faultRng, budget: this.options.faultBudget!, step: 0 });
    if (skew !== undefined) await this.inject(skew);
    if (this.plannedNext < this.planned.length && this.planned[this.plannedNext]!.atStep === 0) return this.injectPlanned(0);
    const drawn = this.drawFault(0);
    if (drawn !== undefined) await this.inject(drawn);
  }

  private async injectPlanned(step: number): Promise<void> {
    while (this.plannedNext < this.planned.length && this.planned[this.plannedNext]!.atStep === step) {
      await this.inject({ ...this.planned[this.plannedNext++]! });
    }
    // Drawn after the planned ones are applied: the draw sees the world they left.
    const drawn = this.drawFault(step);
    if (drawn !== undefined) await this.inject(drawn);
  }

  private drawFault(step: number): PlannedFault | undefined {
    const ctx = this.ctx;
    const budget: FaultBudget | undefined = this.options.faultBudget;
    if (budget === undefined || this.remaining.size === 0) return undefined;
    return drawFault({ kernel: this.kernel, custom: ctx.faultKinds, view: ctx.view, rng: ctx.faultRng, budget, remaining: this.remaining, step });
  }

  private async inject(fault: PlannedFault): Promise<void> {
    const ctx = this.ctx;
    ctx.faultsReached.push(fault);
    const label = `${fault.kind} ${fault.target}${describeParams(fault)}`;
    await this.kernel.executeFault(label, () => {
      const { actor, result, applied, pauseMs, clockOffsetMs } = applyFault({ kernel: this.kernel, custom: ctx.faultKinds, target: ctx.faultTarget, fault });
      const facts: FaultFact = { kind: fault.kind, target: fault.target, applied };
      if (pauseMs !== undefined) facts.pauseMs = pauseMs;
      if (clockOffsetMs !== undefined) facts.clockOffsetMs = clockOffsetMs;
      return { actor, result, facts: { fault: facts } };
    });
  }

  onRecord(record: TraceRecord): void {
    const expected = this.options.expectTrace;
    // The index in the whole trace: a run may continue an earlier one (fault phase, then healing phase).
    const index = this.kernel.trace.length - 1;
    if (expected !== undefined && index < expected.length) {
      const want = recordKey(expected[index]!);
      const got = recordKey(record);
      if (want !== got) {
        this.kernel.fail({ status: "divergence", message: `replay diverged at step ${record.step}: expected "${want}", got "${got}"` });
      }
    }
    if (record.kind === "log") return;
    if (this.options.onStep?.(record, this.ctx.view) === "stop") this.stopRequested = true;
  }
}

function describeParams(fault: PlannedFault): string {
  const keys = Object.keys(fault).filter((key) => key !== "atStep" && key !== "kind" && key !== "target").sort();
  return keys.map((key) => ` ${key}=${String(fault[key])}`).join("");
}
