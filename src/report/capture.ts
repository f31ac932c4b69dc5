// Re-runs a finding and keeps what the trace alone does not say: every object before and after each step.
//
// runScenario has no per-step hook, so the capture rides on two things a scenario may declare: an extra
// `always` property (the monitor evaluates every safety property after every non-log record, in order, with
// the world's view) and a validating admission that never denies (it only learns which kinds are written).
// Neither adds a step or draws from the Rng, so the trace stays byte-identical to a plain replay.
import type { KubeObject } from "../api/object.ts";
import { assert } from "../api/assert.ts";
import { always, type PropertyCounter } from "../check/properties.ts";
import type { Admission } from "../store/types.ts";
import type { WorldView } from "../sim/types.ts";
import type { TraceRecord } from "../sim/trace.ts";
import { runScenario, type RunOutcome, type RunSpec } from "../explore/run.ts";
import type { Scenario, SetupWorld } from "../explore/scenario.ts";

/** The name of the capture's own property; it is removed from the counters the report shows. */
export const captureProperty = "settle report: object snapshots";

/** One state of one object: `object` null means deleted (or absent). */
export interface ObjectVersion {
  /** `Kind ns/name`, as trace refs name objects; `external <name>` for external state. */
  key: string;
  /** The store revision of the write (metadata.resourceVersion), or null for external state. */
  revision: number | null;
  object: unknown;
}

/** A change a step made: indexes into `versions`, -1 when the object did not exist on that side. */
export type Change = [key: string, before: number, after: number];

export interface Capture {
  outcome: RunOutcome;
  /** The scenario's counters, without the capture's own property. */
  counters: PropertyCounter[];
  versions: ObjectVersion[];
  /** Parallel to `outcome.trace`: the changes each record made (empty for most). */
  changes: Change[][];
  /** Versions present before the first step (setup), by index. */
  initial: number[];
}

interface Tracker {
  kinds: Map<string, string>;
  externals: string[];
  latest: Map<string, number>;
  versions: ObjectVersion[];
  revision: number;
  calls: Change[][];
  /** The world before the first step: setup objects, default objects, external cells' first values. */
  baseline: Map<string, number>;
}

function refKey(object: KubeObject): string {
  const ns = object.metadata.namespace;
  return `${object.kind} ${ns === undefined || ns === "" ? "" : `${ns}/`}${object.metadata.name ?? "?"}`;
}

function addVersion(tracker: Tracker, version: ObjectVersion): number {
  tracker.versions.push(version);
  return tracker.versions.length - 1;
}

/** Setup writes go straight to the store; record them as the world at t=0. */
function trackSetup(tracker: Tracker, world: SetupWorld): SetupWorld {
  const note = <T extends KubeObject>(stored: T): T => {
    tracker.kinds.set(stored.kind, stored.apiVersion);
    const revision = Number(stored.metadata.resourceVersion ?? 0);
    const index = addVersion(tracker, { key: refKey(stored), revision, object: stored });
    tracker.latest.set(refKey(stored), index);
    tracker.baseline.set(refKey(stored), index);
    tracker.revision = Math.max(tracker.revision, revision);
    return stored;
  };
  return { create: (o) => note(world.create(o)), updateStatus: (o) => note(world.updateStatus(o)) };
}

/** Compares the world with the last snapshot: objects written since `tracker.revision`, deletions, external cells. */
function diffWorld(tracker: Tracker, view: WorldView): Change[] {
  const changes: Change[] = [];
  if (view.revision !== tracker.revision) {
    const seen = new Set<string>();
    for (const [kind, apiVersion] of tracker.kinds) {
      for (const object of view.list({ apiVersion, kind })) {
        const key = refKey(object);
        seen.add(key);
        const revision = Number(object.metadata.resourceVersion ?? 0);
        const before = tracker.latest.get(key);
        if (before !== undefined && tracker.versions[before]!.revision === revision) continue;
        const after = addVersion(tracker, { key, revision, object });
        tracker.latest.set(key, after);
        // Objects older than the last snapshot that we never saw were there from the start (default namespaces).
        if (before !== undefined || revision > tracker.revision) changes.push([key, before ?? -1, after]);
        else tracker.baseline.set(key, after);
      }
    }
    for (const [key, index] of tracker.latest) {
      const version = tracker.versions[index]!;
      if (seen.has(key) || version.object === null || version.revision === null) continue;
      const gone = addVersion(tracker, { key, revision: view.revision, object: null });
      tracker.latest.set(key, gone);
      changes.push([key, index, gone]);
    }
    tracker.revision = view.revision;
  }
  for (const name of tracker.externals) {
    const value = view.external(name);
    const key = `external ${name}`;
    const before = tracker.latest.get(key);
    // External cells hold frozen values replaced on every write, so identity says whether it changed.
    if (before !== undefined && tracker.versions[before]!.object === value) continue;
    const after = addVersion(tracker, { key, revision: null, object: value });
    tracker.latest.set(key, after);
    if (before !== undefined) changes.push([key, before, after]);
    else tracker.baseline.set(key, after);
  }
  return changes;
}

function instrument(scenario: Scenario, tracker: Tracker): Scenario {
  const recorder: Admission = {
    name: "settle-report-kinds",
    validate(request) {
      tracker.kinds.set(request.object.kind, request.object.apiVersion);
    },
  };
  return {
    ...scenario,
    // Objects a setup returns are created here, in the order runScenario would create them, so they are seen too.
    setup: (ctx, world) => {
      const tracked = trackSetup(tracker, world);
      for (const object of scenario.setup?.(ctx, tracked) ?? []) tracked.create(object);
      return [];
    },
    externals: (ctx) => {
      const values = scenario.externals?.(ctx) ?? {};
      tracker.externals = Object.keys(values).sort();
      return values;
    },
    admission: [...(scenario.admission ?? []), recorder],
    properties: (ctx) => [
      always(captureProperty, (view) => {
        tracker.calls.push(diffWorld(tracker, view));
        return true;
      }),
      ...scenario.properties(ctx),
    ],
  };
}

/** Runs `spec` (full trace) and captures every object version the run produced. */
export async function captureRun(scenario: Scenario, spec: Omit<RunSpec, "traceMode">): Promise<Capture> {
  const tracker: Tracker = { kinds: new Map(), externals: [], latest: new Map(), versions: [], revision: 0, calls: [], baseline: new Map() };
  const outcome = await runScenario(instrument(scenario, tracker), { ...spec, traceMode: "full" });
  const changes = attachChanges(outcome.trace, tracker.calls);
  const counters = outcome.counters.filter((c) => c.name !== captureProperty);
  assert(counters.length === outcome.counters.length - 1, "the capture property is counted once");
  const initial = [...tracker.baseline.entries()].sort((a, b) => a[0].localeCompare(b[0])).map(([, index]) => index);
  return { outcome: { ...outcome, counters }, counters, versions: tracker.versions, changes, initial };
}

/** The monitor ran once per non-log record, in order: give each record the changes of its call. */
function attachChanges(trace: readonly TraceRecord[], calls: readonly Change[][]): Change[][] {
  const changes: Change[][] = trace.map(() => []);
  const stepRecords = trace.reduce((count, r) => count + (r.kind === "log" ? 0 : 1), 0);
  assert(calls.length === stepRecords, "the capture property ran once per non-log record");
  let call = 0;
  for (let i = 0; i < trace.length && call < calls.length; i++) {
    if (trace[i]!.kind === "log") continue;
    changes[i] = calls[call++]!;
  }
  return changes;
}
