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
//
// The drill's parts: this file plans and runs the points (the plan: point-feed.ts); a run's phases are run.ts's and
// phase.ts's, its processes supervise.ts's; what goes in and comes out is types.ts's.
//
// Invariants: at most `concurrency` runs at once (the reference holds a slot while it runs); a point's result is kept
// at its plan index, once; no point's result is reported against an unusable reference.
import { availableParallelism } from "node:os";
import { assert } from "../api/assert.ts";
import { PointFeed } from "./point-feed.ts";
import { fixedQuietWindow, learnQuietWindow, type QuietWindow } from "./quiet.ts";
import { Run, type SharedRun } from "./run.ts";
import { targetFromScenario, type DrillTarget } from "./target.ts";
import { pointLabel, shortPath, type DrillOptions, type DrillResult, type DrillRun } from "./types.ts";

export * from "./types.ts";
export { PointFeed };

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
  const timeoutMs = options.timeoutMs ?? target.defaults?.timeoutMs ?? 60_000;
  const open = (shared: SharedRun) => Run.open({ target, command, window: referenceWindow, shared, timeoutMs });
  const referenceOpened = open({ ...shared, onWrite: (writes) => feed.reached(writes) });
  const referenceRun = referenceOpened.then((run) => run.drill(undefined, options.coldStart === true));
  // The points' processes start once the reference's watches: before, their cold starts would slow the reference's.
  // A reference that never watches has no points.
  const referenceWatching = referenceOpened.then((run) => Promise.race([run.waitForWatch().then(() => true), referenceRun.then(() => run.watchOpens > 0)]));
  const learned = referenceRun.then((reference) => pointsWindow(reference, referenceWindow, options.quietMs !== undefined));
  const runs: DrillRun[] = [];
  const pointShared = { ...shared, window: learned };
  const openPoint = () => open(pointShared);
  const worker = async () => {
    if (!(await referenceWatching)) return;
    let warm = options.coldStart === true ? undefined : await warmUp(openPoint, feed.restartsOnly);
    for (let next = await feed.next(); next !== undefined; next = await feed.next()) {
      const opened = warm ?? (await openPoint());
      warm = undefined;
      const running = opened.drill(next.point, options.coldStart === true);
      // The next point's first process starts once this one's watches: two cold starts at once would slow both.
      await Promise.race([opened.waitForWatch(), running]);
      if (options.coldStart !== true && !feed.exhausted) warm = await warmUp(openPoint, feed.restartsOnly);
      const run = await running;
      if (!(await referenceRun.then(usable))) break;
      assert(runs[next.index] === undefined, "each point's result is kept once, at its plan index");
      runs[next.index] = run;
      options.onRun?.(run);
      progress(`${pointLabel(next.point)}${run.write ? ` (${run.write.method} ${shortPath(run.write.path)})` : ""}: ${run.verdict} in ${run.timings.totalMs} ms${run.world ? `; ${run.world}` : ""}`);
    }
    if (warm !== undefined) await warm.close();
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
  const unreached = [...feed.unreached];
  if (unreached.length > 0) progress(unreachedLine(unreached, reference.writes));
  if (feed.withoutFaketime.length > 0) progress(withoutFaketimeLine(feed.withoutFaketime));
  if (feed.planned > 0) progress(pointsWindow(reference, referenceWindow, options.quietMs !== undefined).why);
  await Promise.all(workers);
  return { target: describe(target), reference, runs, ...(unreached.length === 0 ? {} : { unreached }) };
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

/** What the drill says of clock faults it was asked for and cannot plan here. */
export function withoutFaketimeLine(kinds: readonly string[]): string {
  return `not drilled: ${kinds.join(", ")}, which need libfaketime (install Debian's faketime package: apt-get install faketime)`;
}

/** What the drill says of kill points past the reference's last write. */
export function unreachedLine(unreached: readonly number[], writes: number): string {
  return `not drilled: --kill-points ${unreached.join(",")}, past the reference run's last write (it made ${writes} write(s); a point is right after the controller's k-th write)`;
}

function describe(target: DrillTarget): DrillResult["target"] {
  return { name: target.name, variant: target.variant, workload: target.workload };
}

/**
 * An opened run whose first process is already starting, its requests held until the run's point begins; with
 * `replacement` (every planned point kills), the process that will replace it too.
 */
async function warmUp(open: () => Promise<Run>, replacement: boolean): Promise<Run> {
  const run = await open();
  run.prestart();
  if (replacement) run.prestart();
  return run;
}
