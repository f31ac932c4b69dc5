// Which run is which: every run of an exploration is a pure function of (scenario, options, run index),
// so any number of workers or shards gives the same results.
import { assert } from "../api/assert.ts";
import { Rng } from "../sim/rng.ts";
import { fifoStrategy, pctStrategy, randomStrategy, type Strategy } from "../sim/strategy.ts";
import type { PlannedFault } from "../sim/types.ts";
import type { TraceRecord } from "../sim/trace.ts";
import type { Params, Scenario } from "./scenario.ts";
import { WORKLOAD_ACTOR, type RunSpec } from "./run.ts";

export const strategyNames = ["mix", "random", "pct", "systematic", "bounded"] as const;
export type StrategyName = (typeof strategyNames)[number];

/** A fault point of the systematic strategy: one fault planned at a step of a fault-free reference run. */
export interface FaultPoint {
  workload: string;
  fault: PlannedFault;
  /** What the point is, for reports: `crash operator after create ConfigMap ns/a (applied, response pending)`. */
  label: string;
  /** Its class, which orders the points (see `pointClasses`). */
  pointClass: PointClass;
}

export interface PlanContext {
  scenario: Scenario;
  variant: string;
  /** Fixed workload, or undefined to draw one per run. */
  workload: string | undefined;
  params: Params;
  seed: number;
  strategy: StrategyName;
  points: readonly FaultPoint[];
}

export interface PlannedRun {
  index: number;
  strategy: string;
  spec: RunSpec;
  /** The systematic fault point this run covers. */
  point?: number;
}

/** A 32-bit seed for run `index`, well spread even for consecutive indexes. */
export function runSeed(seed: number, index: number): number {
  let x = (Math.imul(seed ^ 0x9e3779b9, 0x85ebca6b) + Math.imul(index + 1, 0xc2b2ae35)) >>> 0;
  x = Math.imul(x ^ (x >>> 16), 0x7feb352d) >>> 0;
  x = Math.imul(x ^ (x >>> 15), 0x846ca68b) >>> 0;
  return (x ^ (x >>> 16)) >>> 0;
}

/** Runs an exploration asks for: the systematic strategy runs each fault point once and no more. */
export function plannedRunCount(ctx: PlanContext, runs: number): number {
  return ctx.strategy === "systematic" ? Math.min(runs, ctx.points.length) : runs;
}

/**
 * The systematic fault point run `index` covers, if any. `systematic` runs the points in order; `mix`
 * gives every other run to them (even indexes) until they are all covered, so random and PCT schedules with
 * random faults run from the start even when a scenario has more points than runs.
 */
export function pointOfRun(ctx: Pick<PlanContext, "strategy" | "points">, index: number): number | undefined {
  if (ctx.strategy === "systematic") return index < ctx.points.length ? index : undefined;
  if (ctx.strategy !== "mix" || index % 2 === 1) return undefined;
  const point = index / 2;
  return point < ctx.points.length ? point : undefined;
}

export function planRun(ctx: PlanContext, index: number): PlannedRun {
  const seed = runSeed(ctx.seed, index);
  const base = { variant: ctx.variant, params: ctx.params, seed };
  const pointIndex = pointOfRun(ctx, index);
  if (pointIndex !== undefined) {
    const point = ctx.points[pointIndex]!;
    return { index, strategy: "systematic", point: pointIndex, spec: { ...base, workload: point.workload, strategy: fifoStrategy(), faults: [point.fault] } };
  }
  const workloads = Object.keys(ctx.scenario.workloads);
  const workload = ctx.workload ?? workloads[new Rng(seed).fork("workload").int(workloads.length)]!;
  const usePct = ctx.strategy === "pct" || (ctx.strategy === "mix" && (index >> 1) % 2 === 1);
  const strategy: Strategy = usePct ? pctStrategy({ depth: 3, stepsHint: 2_000 }) : randomStrategy();
  return { index, strategy: strategy.name, spec: { ...base, workload, strategy, drawFaults: true } };
}

/**
 * The systematic point classes, likeliest to find lost work first; within a class, trace order. The faults a
 * scenario declares for its own outside systems come first (their author declared them because the system meets
 * them; they are few: see `DeclaredPlace`). A kill mid-work is what loses work most often, so crashes come
 * next, then the restart that relists from a lagging cache (time travel), then writes whose outcome the
 * controller cannot know (lost responses, failures), then stale and late reads, stalls, closed watches, and failed
 * reads (which most clients retry at once). Last, the restart whose relist of one kind is served from before an
 * earlier write while the other kinds list fresh (per-kind time travel): one point for each pair of a write and a
 * kind the crashed actor lists, kept last so that it adds to the plan without moving any point planned before it;
 * and after it the same stale relist of one kind after a watch of that kind fails and its client relists, without a
 * restart (one point for each pair of a write and a kind an actor watches and lists), for the same reason. After
 * all of them, added later on the same terms, each watch failed after its first event with the 410 Expired that
 * kube-apiserver sends when a watch's resource version falls behind compaction: a client that resumes instead of
 * relisting, or that takes the ERROR event's Status for an object, loses work there. After those, on the same terms,
 * the wall clocks: each actor's clock skewed ahead and behind from the start, then stepped forward and back at its
 * first write (a resync), for code that judges a timestamp another machine wrote against its own clock.
 */
export const pointClasses = [
  "declared",
  "crash",
  "crash-time-travel",
  "lost-response",
  "fail-write",
  "conflict",
  "stale-read",
  "pause",
  "close-watch",
  "delay-watch",
  "fail-read",
  "crash-kind-time-travel",
  "watch-kind-time-travel",
  "expire-watch",
  "clock-skew",
  "clock-step",
] as const;
export type PointClass = (typeof pointClasses)[number];

/** Fault kinds the systematic strategy places (a time-travel point needs both crash and stale-read). */
export const systematicKinds = ["crash", "stale-read", "delay-watch", "close-watch", "fail-request", "lost-response", "pause", "clock-skew", "clock-step"] as const;

/** The lag of a systematic stale read, and the delay of a systematic late watch event. */
const staleLagRevisions = 3;
const delayWatchMs = 5000;
/**
 * A systematic pause: longer than a leader lease (controller-runtime's and client-go's default lease is 15 s), so a
 * paused leader loses its lease while it still believes it leads, and everyone else's timers run meanwhile.
 */
export const systematicPauseMs = 20_000;
/**
 * A systematic clock skew or step: the most the default budget draws, and more than a leader lease (15 s), so a
 * lease judged by another machine's renewTime against the local clock reads as expired (ahead) or as held long
 * after it lapsed (behind).
 */
export const systematicClockOffsetMs = 30_000;

export interface FaultPointsOptions {
  workload: string;
  /** The fault-free FIFO reference run's trace (full mode). */
  trace: readonly TraceRecord[];
  /** Actors a planned crash may kill. */
  crashable: ReadonlySet<string>;
  /** Actors other planned faults may hit (requests failed, responses lost, pauses, watches). */
  faultable: ReadonlySet<string>;
  /** The kinds the scenario's budget allows. */
  kinds: ReadonlySet<string>;
  /** Where the reference run reached the scenario's own fault kinds (see `DeclaredPlace`). Default none. */
  declared?: readonly DeclaredPlace[];
  /** When the reference run's fault phase ended (virtual ms since the epoch): no fault is injected after it. Default: never. */
  faultPhaseEndMs?: number;
}

/**
 * A place of a scenario-declared fault kind: right after an actor (not the workload) first touches an external
 * cell, with a target the kind offered there. A declared kind acts on the outside state a scenario models (a
 * registry, a host): where an actor meets that state is where such a fault can matter, as a request is where a
 * failed request can. Only the first touch of each cell by each actor is a place, which keeps the class small
 * (image-refresh: about a dozen places per workload) while every outside system an actor uses gets its fault.
 */
export interface DeclaredPlace {
  /** The step the fault is injected before: the one after the touch. */
  atStep: number;
  kind: string;
  target: string;
  /** The touch, for the point's label: `kubelet-n1 read registry`. */
  label: string;
}

/**
 * The systematic strategy's fault points, from a fault-free FIFO reference run, for the kinds the scenario's
 * budget allows: each crashable actor killed right after each of its writes is applied (response still pending),
 * right after the response reaches it, and right after the write with its restarted incarnation's first list
 * served from before the write (time travel); each write's response lost; each request failed (500, and 409 for
 * updates and patches); each informer list (`resourceVersion: "0"`) served stale; each actor paused after each of
 * its writes; each watch closed (and, last of all, expired with a 410) after its first event; each watch event
 * delivered late. Identical points are
 * merged. Run up to step `atStep`, every point's run is the reference run, so its revisions are known exactly.
 */
export function faultPointsOf(options: FaultPointsOptions): FaultPoint[] {
  const { workload, trace, crashable, faultable, kinds } = options;
  const found: Array<{ cls: PointClass; point: FaultPoint }> = [];
  const add = (cls: PointClass, fault: PlannedFault, label: string) => found.push({ cls, point: { workload, fault, label, pointClass: cls } });
  for (const place of options.declared ?? []) add("declared", { atStep: place.atStep, kind: place.kind, target: place.target }, `${place.kind} ${place.target} after ${place.label}`);
  const responses = new Map<number, TraceRecord>();
  for (const record of trace) if (record.kind === "response" && record.requestSeq !== undefined) responses.set(record.requestSeq, record);
  const watchesClosed = new Set<string>();
  for (const record of trace) {
    const actor = record.actor;
    if (record.kind === "request" && record.access === "write") {
      const at = record.step;
      if (crashable.has(actor) && kinds.has("crash")) {
        add("crash", { atStep: at + 1, kind: "crash", target: actor }, `crash ${actor} after ${record.label} (applied, response pending)`);
        const response = record.requestSeq === undefined ? undefined : responses.get(record.requestSeq);
        if (response !== undefined) add("crash", { atStep: response.step + 1, kind: "crash", target: actor }, `crash ${actor} after ${record.label} (response received)`);
        if (kinds.has("stale-read")) {
          const revision = record.revisionBefore;
          add("crash-time-travel", { atStep: at + 1, kind: "crash", target: actor, relistAtRevision: revision }, `crash ${actor} after ${record.label}, its restart's first list served at revision ${revision} (time travel)`);
        }
      }
      if (faultable.has(actor) && kinds.has("lost-response")) add("lost-response", { atStep: at, kind: "lost-response", target: actor }, `lose the response of ${actor}'s ${record.label} (applied)`);
      if (faultable.has(actor) && kinds.has("fail-request")) {
        add("fail-write", { atStep: at, kind: "fail-request", target: actor, code: 500 }, `fail ${actor}'s ${record.label} with 500`);
        if (record.verb === "update" || record.verb === "updateStatus" || record.verb === "patch" || record.verb === "patchStatus") {
          add("conflict", { atStep: at, kind: "fail-request", target: actor, code: 409 }, `fail ${actor}'s ${record.label} with 409 Conflict`);
        }
      }
      if (faultable.has(actor) && kinds.has("pause")) add("pause", { atStep: at + 1, kind: "pause", target: actor, durationMs: systematicPauseMs }, `pause ${actor} for ${systematicPauseMs} ms after ${record.label}`);
    } else if (record.kind === "external" && record.access === "write") {
      // A write to an outside system (a cloud API, a host) is as much half-done work as an API write.
      if (crashable.has(actor) && kinds.has("crash")) add("crash", { atStep: record.step + 1, kind: "crash", target: actor }, `crash ${actor} after ${record.label}`);
      if (faultable.has(actor) && kinds.has("pause")) add("pause", { atStep: record.step + 1, kind: "pause", target: actor, durationMs: systematicPauseMs }, `pause ${actor} for ${systematicPauseMs} ms after ${record.label}`);
    } else if (record.kind === "request" && faultable.has(actor)) {
      if (kinds.has("stale-read") && record.verb === "list" && record.cached === true) {
        add("stale-read", { atStep: record.step, kind: "stale-read", target: actor, lagRevisions: staleLagRevisions }, `stale ${record.label} (${staleLagRevisions} revisions behind)`);
      }
      if (kinds.has("fail-request")) add("fail-read", { atStep: record.step, kind: "fail-request", target: actor, code: 500 }, `fail ${actor}'s ${record.label} with 500`);
    } else if (record.kind === "watch" && record.watchId !== undefined && faultable.has(actor)) {
      const watchId = record.watchId;
      if (kinds.has("delay-watch")) add("delay-watch", { atStep: record.step, kind: "delay-watch", target: watchId, delayMs: delayWatchMs }, `delay ${record.result} on ${watchId} by ${delayWatchMs} ms`);
      if (kinds.has("close-watch") && !watchesClosed.has(watchId)) {
        watchesClosed.add(watchId);
        add("close-watch", { atStep: record.step + 1, kind: "close-watch", target: watchId }, `close ${watchId} after its first event`);
        add("expire-watch", { atStep: record.step + 1, kind: "close-watch", target: watchId, expired: 1 }, `expire ${watchId} after its first event (410 Expired mid-stream: its client must relist)`);
      }
    }
  }
  if (kinds.has("crash") && kinds.has("stale-read")) {
    for (const { fault, label } of kindTimeTravelPoints(trace, crashable, options.faultPhaseEndMs ?? Number.POSITIVE_INFINITY)) add("crash-kind-time-travel", fault, label);
  }
  if (kinds.has("close-watch") && kinds.has("stale-read")) {
    for (const { fault, label } of watchKindTimeTravelPoints(trace, faultable, options.faultPhaseEndMs ?? Number.POSITIVE_INFINITY)) add("watch-kind-time-travel", fault, label);
  }
  for (const { cls, fault, label } of clockPoints(trace, faultable, kinds)) add(cls, fault, label);
  const rank = (cls: PointClass) => pointClasses.indexOf(cls);
  const ordered = found.map((f, i) => ({ ...f, i })).sort((a, b) => rank(a.cls) - rank(b.cls) || a.i - b.i);
  const seen = new Set<string>();
  const points: FaultPoint[] = [];
  for (const { point } of ordered) {
    const key = JSON.stringify(point.fault);
    if (seen.has(key)) continue;
    seen.add(key);
    points.push(point);
  }
  return points;
}

/**
 * Per-kind time travel: for each applied write W of kind K (by any actor, the workload included) and each crashable
 * actor A that reads K from the watch cache, A is killed right after its last write of the fault phase (applied,
 * response pending), if that comes at or after W, and its restart's first cached read of K is served at the revision
 * before W while every other kind reads fresh: the cut a restarted controller sees when the API server that answers
 * its K list has a watch cache behind the one that answers the others (one cache per resource; one per server
 * behind a load balancer). The watch that follows from the stale list's revision is served by the same lagging
 * cache, so it delivers nothing for `delayWatchMs` (the lag of a systematic late event). The kill comes after the
 * actor's last write so that everything W led to is in the fresh kinds (the widest disagreement W can cause), and
 * so that a run whose latencies shift its steps a little still kills it after that work. Cheapest first: the
 * fewest revisions hidden, then trace order.
 */
function kindTimeTravelPoints(trace: readonly TraceRecord[], crashable: ReadonlySet<string>, faultPhaseEndMs: number): Array<{ fault: PlannedFault; label: string; lag: number }> {
  const cachedKinds = new Map<string, Set<string>>();
  const lastWrite = new Map<string, TraceRecord>();
  const writes: TraceRecord[] = [];
  for (const record of trace) {
    if (record.kind !== "request" || record.object === undefined) continue;
    if (record.cached === true && crashable.has(record.actor)) {
      const set = cachedKinds.get(record.actor) ?? new Set<string>();
      set.add(record.object.kind);
      cachedKinds.set(record.actor, set);
    }
    if (record.access !== "write" || record.revisionAfter <= record.revisionBefore) continue;
    writes.push(record);
    if (crashable.has(record.actor) && record.timeMs < faultPhaseEndMs) lastWrite.set(record.actor, record);
  }
  const points: Array<{ fault: PlannedFault; label: string; lag: number }> = [];
  for (const write of writes) {
    const kind = write.object!.kind;
    for (const [actor, listed] of [...cachedKinds.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      if (!listed.has(kind)) continue;
      const crashAfter = lastWrite.get(actor);
      if (crashAfter === undefined || crashAfter.step < write.step) continue;
      const revision = write.revisionBefore;
      const by = write.actor === actor ? "its own" : `${write.actor}'s`;
      const label = `crash ${actor} after ${crashAfter.label}, its restart's first ${kind} list served at revision ${revision}, before ${by} ${write.label} (per-kind time travel)`;
      const fault: PlannedFault = { atStep: crashAfter.step + 1, kind: "crash", target: actor, relistAtRevision: revision, relistKind: kind, relistCatchUpMs: delayWatchMs };
      points.push({ fault, label, lag: crashAfter.revisionAfter - revision });
    }
  }
  assert(points.every((p) => p.lag > 0), "a per-kind time travel hides at least one write");
  return points.map((p, i) => ({ ...p, i })).sort((a, b) => a.lag - b.lag || a.i - b.i);
}

/**
 * Per-kind time travel after a failed watch: for each applied write W of kind K (by any actor, the workload
 * included) and each faultable actor A that both watches K and lists K from the watch cache, A's watch of K fails
 * right after the last event it delivers in the fault phase, if that comes at or after W, and A's next cached read
 * of K is served at the revision before W while every other kind reads fresh. A watch that fails (rather than ends)
 * is not resumed: the client relists, and the API server that answers that list may have a watch cache for K behind
 * the others (one cache per resource; one per server behind a load balancer). The watch that follows is served by
 * the same lagging cache, so it delivers nothing for `delayWatchMs`. Cheapest first: the fewest revisions hidden,
 * then trace order.
 */
function watchKindTimeTravelPoints(trace: readonly TraceRecord[], faultable: ReadonlySet<string>, faultPhaseEndMs: number): Array<{ fault: PlannedFault; label: string; lag: number }> {
  const watchKinds = new Map<string, string>();
  const cachedKinds = new Map<string, Set<string>>();
  /** By actor and kind: the last event an actor's watch of that kind delivered in the fault phase. */
  const lastDelivery = new Map<string, TraceRecord>();
  const writes: TraceRecord[] = [];
  for (const record of trace) {
    if (record.kind === "request" && record.object !== undefined) {
      if (record.verb === "watch" && record.watchId !== undefined) watchKinds.set(record.watchId, record.object.kind);
      if (record.verb === "list" && record.cached === true && faultable.has(record.actor)) {
        const set = cachedKinds.get(record.actor) ?? new Set<string>();
        set.add(record.object.kind);
        cachedKinds.set(record.actor, set);
      }
      if (record.access === "write" && record.revisionAfter > record.revisionBefore) writes.push(record);
    } else if (record.kind === "watch" && record.watchId !== undefined && faultable.has(record.actor) && record.timeMs < faultPhaseEndMs) {
      const kind = watchKinds.get(record.watchId);
      if (kind !== undefined) lastDelivery.set(`${record.actor}\u0000${kind}`, record);
    }
  }
  const points: Array<{ fault: PlannedFault; label: string; lag: number }> = [];
  for (const write of writes) {
    const kind = write.object!.kind;
    for (const [actor, listed] of [...cachedKinds.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      if (!listed.has(kind)) continue;
      const failAfter = lastDelivery.get(`${actor}\u0000${kind}`);
      if (failAfter === undefined || failAfter.step < write.step) continue;
      const revision = write.revisionBefore;
      const watchId = failAfter.watchId!;
      const by = write.actor === actor ? "its own" : `${write.actor}'s`;
      const label = `fail ${watchId} after its ${failAfter.result}, ${actor}'s relist of ${kind} served at revision ${revision}, before ${by} ${write.label} (per-kind time travel after a failed watch)`;
      const fault: PlannedFault = { atStep: failAfter.step + 1, kind: "close-watch", target: watchId, relistAtRevision: revision, relistCatchUpMs: delayWatchMs };
      points.push({ fault, label, lag: failAfter.revisionAfter - revision });
    }
  }
  assert(points.every((p) => p.lag > 0), "a per-kind time travel after a failed watch hides at least one write");
  return points.map((p, i) => ({ ...p, i })).sort((a, b) => a.lag - b.lag || a.i - b.i);
}

/**
 * The wall-clock points: each faultable actor's clock `systematicClockOffsetMs` ahead, then behind, from the start
 * (`clock-skew` at step 0, in actor-name order), and stepped forward, then back, right after its first write
 * (`clock-step`, in trace order), as an NTP resync steps a clock while the process runs.
 */
function clockPoints(trace: readonly TraceRecord[], faultable: ReadonlySet<string>, kinds: ReadonlySet<string>): Array<{ cls: PointClass; fault: PlannedFault; label: string }> {
  const points: Array<{ cls: PointClass; fault: PlannedFault; label: string }> = [];
  const offset = systematicClockOffsetMs;
  const seconds = offset / 1000;
  if (kinds.has("clock-skew")) {
    for (const actor of [...faultable].sort()) {
      points.push({ cls: "clock-skew", fault: { atStep: 0, kind: "clock-skew", target: actor, offsetMs: offset }, label: `${actor}'s clock ${seconds} s ahead from the start` });
      points.push({ cls: "clock-skew", fault: { atStep: 0, kind: "clock-skew", target: actor, offsetMs: -offset }, label: `${actor}'s clock ${seconds} s behind from the start` });
    }
  }
  if (kinds.has("clock-step")) {
    const stepped = new Set<string>();
    for (const record of trace) {
      const actor = record.actor;
      if (!(record.kind === "request" && record.access === "write") || !faultable.has(actor) || stepped.has(actor)) continue;
      stepped.add(actor);
      const at = record.step + 1;
      points.push({ cls: "clock-step", fault: { atStep: at, kind: "clock-step", target: actor, deltaMs: offset }, label: `${actor}'s clock stepped ${seconds} s forward after ${record.label}` });
      points.push({ cls: "clock-step", fault: { atStep: at, kind: "clock-step", target: actor, deltaMs: -offset }, label: `${actor}'s clock stepped ${seconds} s back after ${record.label}` });
    }
  }
  return points;
}

export function crashableActors(scenario: Scenario, ctx: { variant: string; workload: string; params: Params }): Set<string> {
  const names = scenario.actors(ctx).filter((a) => a.crashable !== false).map((a) => a.name);
  return new Set(names.filter((name) => name !== WORKLOAD_ACTOR));
}

/** The actors planned faults other than crashes may hit: every actor but the workload and those that opt out. */
export function faultableActors(scenario: Scenario, ctx: { variant: string; workload: string; params: Params }): Set<string> {
  const names = scenario.actors(ctx).filter((a) => a.faultable !== false).map((a) => a.name);
  return new Set(names.filter((name) => name !== WORKLOAD_ACTOR));
}
