// A scenario: the world at t=0, the actors (parameterised by variant), what users and outside systems do
// (workloads), the fault budget and the properties that tell a correct system from a broken one.
import type { KubeObject } from "../api/object.ts";
import type { Admission } from "../store/types.ts";
import type { ActorContext, ActorDefinition, FaultBudget, FaultKind, WorldView } from "../sim/types.ts";
import type { Property } from "../check/properties.ts";

export type ParamValue = string | number | boolean;
export type Params = Record<string, ParamValue>;

/** What every scenario hook is given: the variant and the parameters of this run. */
export interface ScenarioContext<P extends Params = Params> {
  variant: string;
  workload: string;
  params: P;
}

/** Direct writes for `setup`: no steps, no faults; returns the stored object. */
export interface SetupWorld {
  create<T extends KubeObject>(object: T): T;
  updateStatus<T extends KubeObject>(object: T): T;
}

export interface VariantInfo {
  description?: string;
  /** What exploring this variant should find: "finding" for a buggy variant, "ok" for a fixed one. */
  expect: "finding" | "ok";
}

/** The actor context of a workload, with the run's timing and marks for deadlines. */
export interface WorkloadContext extends ActorContext {
  /** The scenario's timing (defaults filled in): when faults stop, the horizon, the settle window. */
  readonly timing: Timing;
  /** Virtual time (ms since the epoch) at which the run started: `clock.now() - startMs` is the time into it. */
  readonly startMs: number;
  /**
   * Marks this moment as `name`, so that `eventually(p, pred, { withinMs, from: name })` must hold within
   * `withinMs` of it ("the child exists within 5 minutes of the label"). Each name is marked once; marking it
   * again fails the workload. The mark appears in the trace as a log line.
   */
  mark(name: string): void;
}

/** A workload is the code of a user or outside system, run as an actor that is never crashed. */
// Declared as a method so a scenario typed with its own params is still a `Scenario` (method parameters are
// checked bivariantly).
export type Workload<P extends Params = Params> = {
  run(ctx: WorkloadContext, scenario: ScenarioContext<P>): Promise<void>;
}["run"];

export interface Timing {
  /** Faults are drawn only before this virtual time (ms after the start). Default 60_000. */
  faultPhaseMs: number;
  /** The run ends here; a world still busy is `no-convergence`. Default 600_000. */
  horizonMs: number;
  /** No state change for this long (while only timers fire) counts as settled. Default 60_000. */
  settleWindowMs: number;
  /** A bound on scheduled steps per run. Default 200_000. */
  stepsMax: number;
  /**
   * The range of a request's latency, `[min, max]` virtual ms, drawn per request from the seed. Default [1, 20]:
   * what a request to a nearby API server takes, and enough that no loop of requests can stop the clock.
   */
  requestLatencyMs: readonly [number, number];
  /**
   * Writes that do not count against "settled": objects written on a schedule by design (a heartbeat). Default:
   * Leases (leader election and node heartbeats renew them forever).
   */
  heartbeats: readonly HeartbeatRef[];
}

/** A kind (optionally one namespace or one name) whose writes are heartbeats. */
export interface HeartbeatRef {
  kind: string;
  namespace?: string;
  name?: string;
}

export interface ScenarioDefinition<P extends Params = Params> {
  name: string;
  description?: string;
  /** Variant name -> what it is and what exploring it should find. The first is the default. */
  variants: Record<string, VariantInfo>;
  /** Parameters with their defaults; `--param key=value` overrides them (same type as the default). */
  params?: P;
  /**
   * The world at t=0, written before any actor starts (CRDs and namespaces first). Either return the objects,
   * or write them through `world` when later ones need what earlier writes returned (an owner's uid, a status).
   * It runs once per worker for each variant, workload and params; later runs commit the same writes again, so it
   * must be a function of `ctx` whose only effect is what it writes.
   */
  setup?(ctx: ScenarioContext<P>, world: SetupWorld): KubeObject[] | void;
  /** External state at t=0: name -> initial value. */
  externals?(ctx: ScenarioContext<P>): Record<string, unknown>;
  actors(ctx: ScenarioContext<P>): ActorDefinition[];
  /** Named workloads; each run draws one from its seed unless the workload is fixed. */
  workloads: Record<string, Workload<P>>;
  /**
   * The random fault budget, or a function of the run's context giving it. Default: `defaultFaultBudget`, every
   * built-in kind a real cluster produces; `"none"` opts out of faults (no drawn faults, no systematic points).
   */
  faults?: FaultBudget | "none" | { budget(ctx: ScenarioContext<P>): FaultBudget | "none" }["budget"];
  faultKinds?: FaultKind[];
  admission?: Admission[];
  properties(ctx: ScenarioContext<P>): Property[];
  /** One line on the state that matters, for reports (e.g. `children 5 of spec.voices 8`). Fixed facts, no dumps. */
  summary?(view: WorldView): string;
  timing?: Partial<Timing>;
}

export interface Scenario<P extends Params = Params> extends ScenarioDefinition<P> {
  readonly timing: Timing;
  readonly params: P;
  /** Marks a validated scenario. */
  readonly settleScenario: 1;
}

/** Builds a workload's context over its actor context; `mark` records the moment (the run's monitor keeps it). */
export function workloadContext(actor: ActorContext, timing: Timing, startMs: number, mark: (name: string, atMs: number) => void): WorkloadContext {
  return {
    ...actor,
    timing,
    startMs,
    mark(name: string) {
      const atMs = actor.clock.now();
      mark(name, atMs);
      // For people reading the trace; nothing parses it.
      actor.log(`mark ${name}`, { elapsedMs: atMs - startMs });
    },
  };
}

/**
 * The budget of a scenario that declares none: a few of every fault a real cluster produces, so a controller
 * written from scratch meets them without its author having to know which matter. Why each kind is here:
 * - crash (2): a controller process is killed (OOM, node drain, rollout) between any two of its steps;
 * - pause (1, 1-30 s): a process stalls (GC pause, CPU throttling, a stopped VM) while time and others go on;
 * - stale-read (2, up to 5 revisions): an informer's list or watch is served by a lagging API server cache;
 * - delay-watch (2, 0.1-5 s): watch events arrive late, after other requests have seen newer state;
 * - close-watch (1): the server ends a watch (timeout, restart), the client resumes; one in four is expired instead
 *   (a 410 ERROR event: the watch fell behind compaction), and the client must relist;
 * - fail-request (2: 409, 429, 500 or 504): conflicts, throttling and server errors every client meets;
 * - lost-response (1): a write is applied but its response never arrives (a timeout after the commit);
 * - clock-skew (one run in two, up to 30 s either way): one machine's wall clock is off the others' from the start,
 *   as NTP keeps clocks close, not equal (drawn from a stream of its own: no other draw of a run moves).
 * One chance in 30 per step keeps runs long enough between faults for the system to make progress.
 */
export const defaultFaultBudget: FaultBudget = Object.freeze({
  chance: [1, 30] as const,
  counts: Object.freeze({ crash: 2, pause: 1, "stale-read": 2, "delay-watch": 2, "close-watch": 1, "fail-request": 2, "lost-response": 1 }),
  clockSkewMs: 30_000,
});

/** The fault budget of a run: the scenario's, the default when it declares none, or undefined for `"none"`. */
export function faultBudgetOf(scenario: Pick<ScenarioDefinition, "faults">, ctx: ScenarioContext): FaultBudget | undefined {
  const declared = typeof scenario.faults === "function" ? scenario.faults(ctx) : scenario.faults;
  if (declared === "none") return undefined;
  return declared ?? defaultFaultBudget;
}

export const defaultTiming: Timing = {
  faultPhaseMs: 60_000,
  horizonMs: 600_000,
  settleWindowMs: 60_000,
  stepsMax: 200_000,
  requestLatencyMs: [1, 20],
  heartbeats: [{ kind: "Lease" }],
};

const scenarioName = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** Validates a scenario definition and fills in its defaults. Throws a TypeError naming the bad field. */
export function scenario<P extends Params = Params>(definition: ScenarioDefinition<P>): Scenario<P> {
  const where = `scenario ${JSON.stringify(definition?.name)}`;
  if (typeof definition !== "object" || definition === null) throw new TypeError("scenario(): expected an object");
  if (typeof definition.name !== "string" || !scenarioName.test(definition.name)) {
    throw new TypeError(`${where}: name must be lowercase letters, digits and '-'`);
  }
  const variants = Object.keys(definition.variants ?? {});
  if (variants.length === 0) throw new TypeError(`${where}: variants must name at least one variant`);
  for (const v of variants) {
    const expect = definition.variants[v]?.expect;
    if (expect !== "finding" && expect !== "ok") throw new TypeError(`${where}: variants.${v}.expect must be "finding" or "ok"`);
  }
  if (Object.keys(definition.workloads ?? {}).length === 0) throw new TypeError(`${where}: workloads must name at least one workload`);
  if (typeof definition.actors !== "function") throw new TypeError(`${where}: actors must be a function of the variant`);
  if (typeof definition.properties !== "function") throw new TypeError(`${where}: properties must be a function`);
  const timing: Timing = { ...defaultTiming, ...definition.timing };
  for (const key of ["faultPhaseMs", "horizonMs", "settleWindowMs", "stepsMax"] as const) {
    const value = timing[key];
    if (!Number.isInteger(value) || value <= 0) throw new TypeError(`${where}: timing.${key} must be a positive integer`);
  }
  const [latencyMin, latencyMax] = Array.isArray(timing.requestLatencyMs) ? timing.requestLatencyMs : [];
  if (!Number.isInteger(latencyMin) || !Number.isInteger(latencyMax) || latencyMin! < 0 || latencyMax! < latencyMin!) {
    throw new TypeError(`${where}: timing.requestLatencyMs must be [min, max] whole ms with 0 <= min <= max`);
  }
  if (!Array.isArray(timing.heartbeats) || !timing.heartbeats.every((h) => typeof h?.kind === "string")) {
    throw new TypeError(`${where}: timing.heartbeats must be a list of { kind, namespace?, name? }`);
  }
  if (timing.faultPhaseMs >= timing.horizonMs) throw new TypeError(`${where}: timing.faultPhaseMs must be below timing.horizonMs`);
  const faults = definition.faults;
  if (faults !== undefined && faults !== "none" && typeof faults !== "function" && (typeof faults !== "object" || faults === null || !Array.isArray(faults.chance) || typeof faults.counts !== "object")) {
    throw new TypeError(`${where}: faults must be a budget ({ chance: [n, d], counts: { kind: n } }), a function returning one, or "none"`);
  }
  return { ...definition, timing, params: (definition.params ?? {}) as P, settleScenario: 1 };
}

export function isScenario(value: unknown): value is Scenario {
  return typeof value === "object" && value !== null && (value as { settleScenario?: unknown }).settleScenario === 1;
}

/**
 * Applies `key=value` overrides to the defaults, typed like the default. Throws a TypeError naming the
 * parameter when it is unknown or its value has the wrong type.
 */
export function resolveParams<P extends Params>(scenario: Scenario<P>, overrides: Readonly<Record<string, string>>): P {
  const params: Params = { ...scenario.params };
  for (const [key, text] of Object.entries(overrides)) {
    if (!(key in params)) {
      const known = Object.keys(params).join(", ") || "none";
      throw new TypeError(`unknown param "${key}" for scenario ${scenario.name} (known: ${known})`);
    }
    const current = params[key];
    if (typeof current === "number") {
      const n = Number(text);
      if (text.trim() === "" || !Number.isFinite(n)) throw new TypeError(`param ${key} expects a number, got "${text}"`);
      params[key] = n;
    } else if (typeof current === "boolean") {
      if (text !== "true" && text !== "false") throw new TypeError(`param ${key} expects true or false, got "${text}"`);
      params[key] = text === "true";
    } else {
      params[key] = text;
    }
  }
  return params as P;
}
