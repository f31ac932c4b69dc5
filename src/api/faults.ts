// The fault model the simulator and the server share: the built-in fault kinds, each kind's parameters (type,
// default, bounds), the check of one fault's parameters, the ranges a fault budget draws from, and the Status
// error an injected request failure produces. The simulator places faults by step and actor (`sim/faults.ts`);
// the server matches them to requests (`server/faults.ts`); both take every name, default and bound from here.
import { assert } from "./assert.ts";
import { ApiError } from "./errors.ts";
import type { FieldError, StatusDetails, StatusReason } from "./errors.ts";

export const builtinFaultKinds = ["crash", "pause", "stale-read", "delay-watch", "close-watch", "fail-request", "lost-response", "clock-skew", "clock-step"] as const;
export type BuiltinFaultKind = (typeof builtinFaultKinds)[number];

/**
 * The kinds a running server applies. `crash` and `pause` act on an actor's process, and the clock kinds on the
 * machine it runs on; the server hosts no actors: its clients are processes of their own, which a drill crashes,
 * stops or runs under a skewed clock by itself.
 */
export const serverFaultKinds = ["stale-read", "delay-watch", "close-watch", "fail-request", "lost-response"] as const satisfies readonly BuiltinFaultKind[];
export type ServerFaultKind = (typeof serverFaultKinds)[number];

/**
 * The wall-clock kinds: they move only the wall time an actor's machine reads (`Date`, `clock.now()`), from the
 * fault on and across its process's crashes (the clock is the machine's). Monotonic time (timers, sleeps,
 * `clock.monotonic()`, `performance.now`) keeps the true rate, as real kernels guarantee, and so does the API
 * server's own clock (the store's timestamps).
 */
export const clockFaultKinds = ["clock-skew", "clock-step"] as const satisfies readonly BuiltinFaultKind[];
export type ClockFaultKind = (typeof clockFaultKinds)[number];

export function isClockFaultKind(kind: unknown): kind is ClockFaultKind {
  return clockFaultKinds.includes(kind as ClockFaultKind);
}

/** The largest wall-clock offset or step a fault may carry: a day either way (an NTP-less machine after a reboot). */
export const CLOCK_OFFSET_MS_MAX = 86_400_000;

/** The codes a `fail-request` fault may carry: the failures a client of a real API server meets and must retry. */
export const failCodes = [409, 429, 500, 504] as const;
export type FailCode = (typeof failCodes)[number];

/** One parameter of a fault kind: an integer (`oneOf`, when given, narrows it to a list) or a short string. */
export type FaultParam = IntegerFaultParam | StringFaultParam;

interface FaultParamBase {
  /** The field that carries it, in a planned fault and in a server fault spec. */
  readonly name: string;
  readonly doc: string;
  /** Only the simulator models it (it needs the kernel's per-kind watch caches): `settle serve` rejects the field. */
  readonly simulatorOnly?: true;
}

export interface IntegerFaultParam extends FaultParamBase {
  readonly type: "integer";
  /** The value a fault that leaves the field out gets. */
  readonly default: number;
  readonly min: number;
  readonly max: number;
  readonly oneOf?: readonly number[];
}

export interface StringFaultParam extends FaultParamBase {
  readonly type: "string";
  /** The value a fault that leaves the field out gets. */
  readonly default: string;
  readonly maxLength: number;
}

/** How many matching requests a server fault hits before it is spent (a simulator fault is armed for one request). */
export const faultCountParam: IntegerFaultParam = {
  name: "count",
  doc: "requests a server fault hits before it is spent; close-watch and delay-watch, which act at once, hit every matching open watch when it is left out",
  type: "integer",
  default: 1,
  min: 1,
  max: 1_000_000,
};

/** Each built-in kind's parameters. */
export const faultParams: { readonly [K in BuiltinFaultKind]: readonly FaultParam[] } = {
  crash: [
    {
      name: "relistAtRevision",
      doc: "time travel: the restarted incarnation's first watch-cache read is served at this older revision (0: not stale)",
      type: "integer",
      default: 0,
      min: 0,
      max: Number.MAX_SAFE_INTEGER,
    },
    {
      name: "relistKind",
      doc: "per-kind time travel: only the first watch-cache read of this kind (a kind name, as `Shard`) is served at relistAtRevision, the other kinds read fresh (empty: the first read of any kind)",
      type: "string",
      default: "",
      maxLength: 253,
    },
    {
      name: "relistCatchUpMs",
      doc: "per-kind time travel: the watch that follows the stale list of relistKind, served by the same lagging cache, delivers nothing for this long (0: it catches up at once)",
      type: "integer",
      default: 0,
      min: 0,
      max: 600_000,
    },
  ],
  pause: [{ name: "durationMs", doc: "how long the actor takes no step", type: "integer", default: 1000, min: 0, max: 86_400_000 }],
  "stale-read": [
    { name: "lagRevisions", doc: "how many revisions behind the next watch-cache read is served", type: "integer", default: 1, min: 1, max: 1_000_000 },
  ],
  "delay-watch": [{ name: "delayMs", doc: "how long events on the watch are held", type: "integer", default: 1000, min: 0, max: 600_000 }],
  "close-watch": [
    {
      name: "expired",
      doc: "1: the watch fails mid-stream with an ERROR event carrying a 410 Expired Status, as kube-apiserver ends a watch whose resource version fell behind compaction, so its client must relist rather than resume (0: it ends normally, or fails with 500 under relistAtRevision)",
      type: "integer",
      default: 0,
      min: 0,
      max: 1,
      oneOf: [0, 1],
    },
    {
      name: "relistAtRevision",
      doc: "per-kind stale relist: the watch fails (500) instead of ending, so its client relists, and the owner's next watch-cache read of the watch's kind is served at this older revision while other kinds read fresh (0: the watch ends normally)",
      type: "integer",
      default: 0,
      min: 0,
      max: Number.MAX_SAFE_INTEGER,
      simulatorOnly: true,
    },
    {
      name: "relistCatchUpMs",
      doc: "per-kind stale relist: the watch that follows the stale list, served by the same lagging cache, delivers nothing for this long (0: it catches up at once)",
      type: "integer",
      default: 0,
      min: 0,
      max: 600_000,
      simulatorOnly: true,
    },
  ],
  "fail-request": [{ name: "code", doc: "the HTTP status of the failure", type: "integer", default: 500, min: 409, max: 504, oneOf: failCodes }],
  "lost-response": [],
  "clock-skew": [
    {
      name: "offsetMs",
      doc: "the actor's wall clock from now on: this far from the true time, ahead when positive, behind when negative (replaces an earlier skew or step)",
      type: "integer",
      default: 0,
      min: -CLOCK_OFFSET_MS_MAX,
      max: CLOCK_OFFSET_MS_MAX,
    },
  ],
  "clock-step": [
    {
      name: "deltaMs",
      doc: "a sudden jump of the actor's wall clock, as a resync makes: forward when positive, back when negative (added to its offset)",
      type: "integer",
      default: 0,
      min: -CLOCK_OFFSET_MS_MAX,
      max: CLOCK_OFFSET_MS_MAX,
    },
  ],
};

/**
 * The ranges a fault budget draws parameters from where it sets none (see `FaultBudget` in `sim/types.ts`):
 * pauses of 1 to 30 s, watch delays of 0.1 to 5 s, stale reads up to 5 revisions behind, every fail code, and one
 * closed watch in four failed with a 410 Expired (a watch behind compaction) rather than ended, and a clock skew
 * (where the budget allows one) in one run of two.
 */
export const faultDrawDefaults = {
  pauseMs: [1000, 30_000],
  delayWatchMs: [100, 5000],
  staleLagRevisionsMax: 5,
  failCodes,
  closeWatchExpired: [1, 4],
  clockSkewChance: [1, 2],
  clockSkewMs: 30_000,
} as const satisfies {
  pauseMs: readonly [number, number];
  delayWatchMs: readonly [number, number];
  staleLagRevisionsMax: number;
  failCodes: readonly number[];
  closeWatchExpired: readonly [number, number];
  clockSkewChance: readonly [number, number];
  clockSkewMs: number;
};

export function isBuiltinFaultKind(kind: unknown): kind is BuiltinFaultKind {
  return builtinFaultKinds.includes(kind as BuiltinFaultKind);
}

export function isServerFaultKind(kind: unknown): kind is ServerFaultKind {
  return serverFaultKinds.includes(kind as ServerFaultKind);
}

/** The parameter `name` of `kind`; asking for one the kind does not have is a programmer error. */
export function faultParam(kind: BuiltinFaultKind, name: string): FaultParam {
  const param = faultParams[kind].find((p) => p.name === name);
  assert(param !== undefined, `fault kind ${kind} has a parameter ${name}`);
  return param;
}

/** The integer parameter `name` of `kind`; asking for one it does not have, or a string one, is a programmer error. */
export function faultIntegerParam(kind: BuiltinFaultKind, name: string): IntegerFaultParam {
  const param = faultParam(kind, name);
  assert(param.type === "integer", `fault parameter ${kind}.${name} is an integer`);
  return param;
}

/** The field error for `value` as the parameter `param` at `field`, or undefined when the value fits. */
export function faultParamError(param: FaultParam, value: unknown, field: string): FieldError | undefined {
  if (param.type === "string") {
    if (typeof value === "string" && value.length <= param.maxLength) return undefined;
    return { field, type: "FieldValueInvalid", message: `Invalid value: must be a string of at most ${param.maxLength} characters` };
  }
  if (param.oneOf !== undefined) {
    if (param.oneOf.includes(value as number)) return undefined;
    return { field, type: "FieldValueNotSupported", message: `Unsupported value: ${JSON.stringify(value)}: supported values: ${param.oneOf.join(", ")}` };
  }
  if (typeof value === "number" && Number.isSafeInteger(value) && value >= param.min && value <= param.max) return undefined;
  return { field, type: "FieldValueInvalid", message: `Invalid value: must be an integer from ${param.min} to ${param.max}` };
}

/**
 * The field errors of one fault's parameters: each parameter of its kind that is present and does not fit,
 * named `<path>.<parameter>` (or just the parameter when `path` is empty). Absent parameters take their
 * defaults and are no error; fields that are not parameters of the kind are the caller's to judge (the server
 * refuses them, a planned fault of the simulator also carries `atStep` and `target`).
 */
export function faultParamErrors(kind: BuiltinFaultKind, fault: Readonly<Record<string, unknown>>, path = ""): FieldError[] {
  const errors: FieldError[] = [];
  for (const param of faultParams[kind]) {
    const value = fault[param.name];
    if (value === undefined) continue;
    const error = faultParamError(param, value, path === "" ? param.name : `${path}.${param.name}`);
    if (error !== undefined) errors.push(error);
  }
  return errors;
}

/** Whose words an injected failure's message is in. */
export type FailureWording = "simulator" | "server";

/** What an injected request failure concerns. */
export interface InjectedFailure {
  /**
   * The simulator keeps its own short messages, which name the request: actors may log them, and the examples
   * pin the hashes of their traces. The server says what kube-apiserver says, marked as injected.
   */
  wording: FailureWording;
  /** The resource as the API server words it (`configmaps`); the simulator says `objects`. */
  resource: string;
  /** The object the request named (the simulator: the request's description); absent for a collection. */
  name?: string | undefined;
}

interface FailCodeMeaning {
  reason: StatusReason;
  /** Sent as `details.retryAfterSeconds`, as kube-apiserver does for throttling and timeouts. */
  retryAfterSeconds?: number;
  message: Readonly<Record<FailureWording, (failure: InjectedFailure, subject: string) => string>>;
}

const modified = "the object has been modified; please apply your changes to the latest version and try again";
const injectedMark = "(injected fault)";

/** The one mapping from a fail code to its Status. */
const failCodeMeanings: Readonly<Record<FailCode, FailCodeMeaning>> = {
  409: {
    reason: "Conflict",
    message: {
      simulator: (_, subject) => `Operation cannot be fulfilled on ${subject}: ${modified}`,
      server: (_, subject) => `Operation cannot be fulfilled on ${subject}: ${modified} ${injectedMark}`,
    },
  },
  429: {
    reason: "TooManyRequests",
    retryAfterSeconds: 1,
    message: {
      simulator: (f) => `too many requests: ${f.name ?? f.resource}`,
      server: () => `the server has received too many requests and has asked us to try again later ${injectedMark}`,
    },
  },
  500: {
    reason: "InternalError",
    message: {
      simulator: (f) => `internal error: ${f.name ?? f.resource}`,
      server: () => `an error on the server has prevented the request from succeeding ${injectedMark}`,
    },
  },
  504: {
    reason: "Timeout",
    retryAfterSeconds: 1,
    message: {
      simulator: (f) => `the request timed out: ${f.name ?? f.resource}`,
      server: () => `the server was unable to return a response in the time allotted, but may still be processing the request ${injectedMark}`,
    },
  },
};

export function isFailCode(code: unknown): code is FailCode {
  return failCodes.includes(code as FailCode);
}

/**
 * The error a `fail-request` fault answers a request with. A Conflict names the object in its details (kind is the
 * resource, as kube-apiserver's `NewConflict` fills it); TooManyRequests and Timeout ask the client to retry after
 * a second. The code must be one of `failCodes`: both callers check parameters before a fault is armed.
 */
export function injectedRequestError(code: number, failure: InjectedFailure): ApiError {
  assert(isFailCode(code), "an injected failure's code is one of failCodes");
  const meaning = failCodeMeanings[code];
  const subject = failure.name === undefined ? failure.resource : `${failure.resource} "${failure.name}"`;
  const message = meaning.message[failure.wording](failure, subject);
  let details: StatusDetails | undefined;
  if (code === 409) details = { kind: failure.resource, ...(failure.name === undefined ? {} : { name: failure.name }) };
  else if (meaning.retryAfterSeconds !== undefined) details = { retryAfterSeconds: meaning.retryAfterSeconds };
  return new ApiError(meaning.reason, code, message, details);
}

/**
 * The error a `close-watch` fault with `expired` fails a watch with: the 410 Expired Status kube-apiserver sends as an
 * ERROR event when a watch's resource version has fallen behind compaction (the simulator's message names the watch).
 */
export function expiredWatchError(failure: InjectedFailure): ApiError {
  if (failure.wording === "server") return new ApiError("Expired", 410, `The resourceVersion for the provided watch is too old. ${injectedMark}`);
  return new ApiError("Expired", 410, `too old resource version: ${failure.name ?? failure.resource} fell behind the compacted history`);
}

/**
 * Watch-stream faults: what a watcher that falls behind sees instead of every event one by one (Sieve's unobserved
 * states). Only a drill applies them, in its proxy between the controller and the server (`drill/watch-faults.ts`):
 * they reshape the event stream of one resource, which the simulator's watches do not carry as a stream.
 * - `coalesce-watch`: the events of `windowMs` are held and only each object's last state is delivered, as a
 *   relist after a dropped watch shows it (an object created and deleted within the window is never seen; one
 *   deleted and created again is seen as modified).
 * - `delay-past-write`: the events are held until an event of another resource has been delivered (the next write
 *   of another kind), or `maxDelayMs` at most: one informer's cache behind another's.
 * - `hide-recreate`: a delete followed within `windowMs` by a create under the same name is delivered as the
 *   create alone (a delete the watcher never saw; a delete left alone is delivered late, after `windowMs`).
 */
export const watchStreamFaultKinds = ["coalesce-watch", "delay-past-write", "hide-recreate"] as const;
export type WatchStreamFaultKind = (typeof watchStreamFaultKinds)[number];

export const watchStreamFaultParams: { readonly [K in WatchStreamFaultKind]: readonly FaultParam[] } = {
  "coalesce-watch": [{ name: "windowMs", doc: "how long events are held before each object's last state is delivered", type: "integer", default: 1500, min: 1, max: 600_000 }],
  "delay-past-write": [{ name: "maxDelayMs", doc: "the longest events are held when no other resource changes", type: "integer", default: 5000, min: 1, max: 600_000 }],
  "hide-recreate": [{ name: "windowMs", doc: "how long a delete is held, waiting for a create under the same name", type: "integer", default: 2000, min: 1, max: 600_000 }],
};

export function isWatchStreamFaultKind(kind: unknown): kind is WatchStreamFaultKind {
  return watchStreamFaultKinds.includes(kind as WatchStreamFaultKind);
}

/** The model kind a drill fault is an instance of: a built-in kind, or a watch-stream kind. */
export type DrillFaultModel = BuiltinFaultKind | WatchStreamFaultKind;

/** One fault `settle drill` applies at a point: which model kind it is, with which fixed parameters, and where. */
export interface DrillFaultDef {
  readonly model: DrillFaultModel;
  /** Parameters of the model kind fixed by this drill fault (checked against the model's definitions). */
  readonly params: Readonly<Record<string, number>>;
  /** Aimed at one resource the controller watches (each such resource is a point of its own). */
  readonly perResource: boolean;
  /** The controller's process group is killed at the point and started again. */
  readonly restarts: boolean;
  readonly doc: string;
}

/**
 * The drill's faults by the name a point's line, `faults.kinds` of a scenario.yaml and `--faults` use. Each is one
 * kind of the model above: the names and parameters live here, not in the drill or the YAML schema.
 */
export const drillFaults = {
  kill: { model: "crash", params: {}, perResource: false, restarts: true, doc: "SIGKILL of the process group right after the write, its response held" },
  "time-travel": {
    model: "crash",
    params: {},
    perResource: false,
    restarts: true,
    doc: "kill, then the restart's first resourceVersion=0 list (or watch) of every resource served from before the write (relistAtRevision)",
  },
  "stale-kind": {
    model: "crash",
    params: {},
    perResource: true,
    restarts: true,
    doc: "kill, then the restart's first resourceVersion=0 list (or watch) of one resource served from before its last change (relistAtRevision), the others fresh",
  },
  "close-watch": { model: "close-watch", params: {}, perResource: false, restarts: false, doc: "every open watch of the controller ended" },
  "fail-500": { model: "fail-request", params: { code: 500 }, perResource: false, restarts: false, doc: "the controller's next write fails with 500" },
  "fail-409": { model: "fail-request", params: { code: 409 }, perResource: false, restarts: false, doc: "the controller's next write fails with 409" },
  "lost-response": { model: "lost-response", params: {}, perResource: false, restarts: false, doc: "the controller's next write is applied and its response lost" },
  coalesce: { model: "coalesce-watch", params: {}, perResource: true, restarts: false, doc: "one resource's events of a window coalesced to each object's last state" },
  "delay-kind": { model: "delay-past-write", params: {}, perResource: true, restarts: false, doc: "one resource's events held past the next event of another resource" },
  "hide-recreate": { model: "hide-recreate", params: {}, perResource: true, restarts: false, doc: "a delete and create under the same name of one resource delivered as the create alone" },
  "clock-ahead": {
    model: "clock-skew",
    params: { offsetMs: 30_000 },
    perResource: false,
    restarts: false,
    doc: "clock-skew +30s: from right after the write, the controller's wall clock 30 s ahead (libfaketime, only where Debian's faketime package is installed; monotonic time and the API server's clock keep the true time)",
  },
  "clock-behind": {
    model: "clock-skew",
    params: { offsetMs: -30_000 },
    perResource: false,
    restarts: false,
    doc: "clock-skew -30s: from right after the write, the controller's wall clock 30 s behind (libfaketime, as clock-ahead)",
  },
} as const satisfies Readonly<Record<string, DrillFaultDef>>;

export type DrillFaultKind = keyof typeof drillFaults;
export const drillFaultKinds = Object.keys(drillFaults) as DrillFaultKind[];

/** A drill fault that sets the controller's wall clock off (run under libfaketime). */
export function isClockDrillFault(kind: DrillFaultKind): boolean {
  return isClockFaultKind(drillFaults[kind].model);
}

export function isDrillFaultKind(kind: unknown): kind is DrillFaultKind {
  return typeof kind === "string" && Object.hasOwn(drillFaults, kind);
}

/** The parameters of a drill fault's model kind. */
export function drillFaultModelParams(kind: DrillFaultKind): readonly FaultParam[] {
  const model = drillFaults[kind].model;
  return isWatchStreamFaultKind(model) ? watchStreamFaultParams[model] : faultParams[model];
}

/** A parameter of a drill fault: its fixed value, else its model's default. */
export function drillFaultParam(kind: DrillFaultKind, name: string): number {
  const fixed = (drillFaults[kind].params as Readonly<Record<string, number>>)[name];
  if (fixed !== undefined) return fixed;
  const param = drillFaultModelParams(kind).find((p) => p.name === name);
  assert(param !== undefined, `drill fault ${kind} has a parameter ${name}`);
  // The drill's parameters are integers (a model kind may also have others, which the drill does not set).
  assert(typeof param.default === "number", `drill fault parameter ${kind}.${name} is an integer`);
  return param.default;
}
