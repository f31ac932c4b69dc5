// The model's invariants, over what an operator could inspect: the workloads' specs and rollout status, the
// annotations on deployment/jobs-manager, the registry, and the logs and colours of the image-refresh Jobs.
// Each property keeps a little memory of earlier steps (a revert it is waiting on, the records it saw last).
import type { KubeObject } from "settle";
import { always, jobFinished, jobLogs, registryCell, type Property, type Registry, type WorldView } from "settle/sim";
import { armedFailuresCell, latchRemedy, type ArmedFailures } from "./tick.ts";
import {
  attemptOf,
  containersOf,
  digestPart,
  keys,
  liveImage,
  managedImages,
  namespace,
  refreshAttemptsMax,
  registryKey,
  rolloutDone,
  workloads,
  type ManagedImage,
  type WorkloadName,
} from "./system.ts";

/** External cell counting a human's clears of the attempt annotation (S5 allows one removal per clear). */
export const humanClearsCell = "human/attempt-clears";

export interface PropertyOptions {
  /** The CronJob's interval. */
  tickMs: number;
  /** The script's rollout status timeout. */
  rolloutTimeoutMs: number;
}

export const propertyNames = {
  repin: "L1 re-pin within one tick of a helm revert",
  loudLatch: "S1 a latch is always loud",
  bookkeeping: "S2 pending annotations land on ticks that do not take the flap exit",
  noThrash: "S3 no thrash: no re-image starts while every recorded image runs its latest digest",
  recordAfterSuccess: "S4 digests are recorded only after a settled rollout",
  attemptReset: "S5 the attempt counter resets only after a settled rollout or a human clear",
} as const;

const workloadNames = Object.keys(workloads) as WorkloadName[];

function objects(view: WorldView): Record<WorkloadName, KubeObject | undefined> {
  const out = {} as Record<WorkloadName, KubeObject | undefined>;
  for (const name of workloadNames) out[name] = view.get({ apiVersion: "apps/v1", kind: workloads[name].kind, namespace, name });
  return out;
}

function latestOf(view: WorldView, image: ManagedImage): string | undefined {
  return view.external<Registry>(registryCell)[registryKey(image)];
}

/** Every container running this image has the registry's latest digest in its spec. */
function onLatest(view: WorldView, live: Record<WorkloadName, KubeObject | undefined>, image: ManagedImage): boolean {
  const latest = latestOf(view, image);
  return image.slots.every((slot) => digestPart(liveImage(live[slot.workload], slot.container)) === latest);
}

function registrySnapshot(view: WorldView): string {
  return managedImages.map((image) => latestOf(view, image) ?? "").join(",");
}

/** Calls `judge` once for each image-refresh Job, at the step it finishes. */
function finishedTicks(judge: (view: WorldView, job: KubeObject, green: boolean, lines: string[]) => boolean): (view: WorldView) => boolean {
  const judged = new Set<string>();
  return (view) => {
    let holds = true;
    for (const job of view.list({ apiVersion: "batch/v1", kind: "Job", namespace, labelSelector: "app=image-refresh" })) {
      const name = job.metadata.name ?? "";
      const finished = jobFinished(job);
      if (finished === undefined || judged.has(name)) continue;
      judged.add(name);
      if (!judge(view, job, finished === "Complete", jobLogs(view, namespace, name))) holds = false;
    }
    return holds;
  };
}

const headLine = /^HEAD (\S+): latest=(\S+) recorded=(\S+)$/;

/** The images a tick resolved, with the record it found (`none` for a first observation). */
function resolved(lines: readonly string[]): Array<{ image: string; recorded: string }> {
  return lines.flatMap((line) => {
    const m = headLine.exec(line);
    return m === null ? [] : [{ image: m[1]!, recorded: m[3]! }];
  });
}

/**
 * L1. After a helm re-render puts a pinned container back on `repo:tag`, within one tick (the interval plus the
 * rollout timeout, and two minutes for the Job to start) every container runs the latest digest again. Its
 * assumptions, as in the model: the latest digest stays put (a publish drops the wait), the counter is below
 * MAX (a latch drops it), and reads succeed and ticks run (each armed read failure consumed and each red or
 * skipped tick gives one more interval).
 */
function repinAfterRevert(options: PropertyOptions): Property {
  const hadDigest = new Map<string, boolean>();
  let wait: { deadlineMs: number; registry: string; consumed: number } | undefined;
  const excuse = finishedTicks((_view, _job, green, lines) => {
    if (wait !== undefined && (!green || lines.some((l) => l.includes("not settled")))) wait.deadlineMs += options.tickMs;
    return true;
  });
  return always(propertyNames.repin, (view) => {
    const live = objects(view);
    let reverted = false;
    for (const image of managedImages) {
      for (const slot of image.slots) {
        const key = `${slot.workload}/${slot.container}`;
        const pinned = digestPart(liveImage(live[slot.workload], slot.container)) !== undefined;
        if (hadDigest.get(key) === true && !pinned) reverted = true;
        hadDigest.set(key, pinned);
      }
    }
    const consumed = view.external<ArmedFailures>(armedFailuresCell).consumed;
    if (reverted && wait === undefined) {
      wait = { deadlineMs: view.now() + options.tickMs + options.rolloutTimeoutMs + 120_000, registry: registrySnapshot(view), consumed };
    }
    excuse(view);
    if (wait === undefined) return true;
    if (wait.registry !== registrySnapshot(view) || attemptOf(live["jobs-manager"]) >= refreshAttemptsMax) {
      wait = undefined;
      return true;
    }
    if (consumed > wait.consumed) {
      wait.deadlineMs += (consumed - wait.consumed) * options.tickMs;
      wait.consumed = consumed;
    }
    if (managedImages.every((image) => onLatest(view, live, image))) {
      wait = undefined;
      return true;
    }
    return view.now() <= wait.deadlineMs;
  });
}

/**
 * S1. A green tick that got past the settled guard and resolved an image it had a record for, while the
 * counter is latched (>= MAX), says so: a WARN naming the annotation to clear, and FLAP equal to the counter.
 */
function loudLatch(): Property {
  return always(
    propertyNames.loudLatch,
    finishedTicks((view, _job, green, lines) => {
      if (!green || !lines.includes("jobs-manager settled")) return true;
      const unreadable = (image: string) => lines.some((l) => l.startsWith(`LIVE ${image}:`));
      if (!resolved(lines).some((r) => r.recorded !== "none" && !unreadable(r.image))) return true;
      const deploy = objects(view)["jobs-manager"];
      const attempt = attemptOf(deploy);
      if (attempt < refreshAttemptsMax) return true;
      return lines.some((l) => l.includes("WARN") && l.includes(latchRemedy)) && deploy?.metadata.annotations?.[keys.flap] === String(attempt);
    }),
  );
}

/**
 * S2. A green tick writes the first-observation records it found pending, unless it legitimately left at the
 * flap exit: only a tick with a recorded image off its latest digest (something to re-image) may do that.
 */
function bookkeepingLands(): Property {
  return always(
    propertyNames.bookkeeping,
    finishedTicks((view, _job, green, lines) => {
      if (!green) return true;
      const live = objects(view);
      const annotations = live["jobs-manager"]?.metadata.annotations ?? {};
      const missing = resolved(lines).filter((r) => r.recorded === "none" && annotations[keys.record(r.image)] === undefined);
      if (missing.length === 0) return true;
      const needsReimage = managedImages.some((image) => {
        const record = annotations[keys.record(image.name)];
        return record !== undefined && (record !== latestOf(view, image) || !onLatest(view, live, image));
      });
      return needsReimage;
    }),
  );
}

/**
 * S3. The attempt counter rises from zero (a re-image starts) only when some recorded image has a new digest
 * or a container off it; a prefix-rewriting webhook that keeps `@digest` is not a reason.
 */
function noThrash(): Property {
  let previous = 0;
  return always(propertyNames.noThrash, (view) => {
    const live = objects(view);
    const attempt = attemptOf(live["jobs-manager"]);
    const started = previous === 0 && attempt > 0;
    previous = attempt;
    if (!started) return true;
    const annotations = live["jobs-manager"]?.metadata.annotations ?? {};
    return managedImages.some((image) => {
      const record = annotations[keys.record(image.name)];
      return record !== undefined && (record !== latestOf(view, image) || !onLatest(view, live, image));
    });
  });
}

/**
 * S4. `last-refreshed-<img>` changes from one digest to another only after every workload running that image
 * was seen settled with that digest in its spec (a first record is a first observation, always allowed).
 */
function recordAfterSuccess(): Property {
  const settled = new Set<string>();
  let previous: Map<string, string | undefined> | undefined;
  return always(propertyNames.recordAfterSuccess, (view) => {
    const live = objects(view);
    for (const name of workloadNames) {
      const object = live[name];
      if (!rolloutDone(object)) continue;
      for (const c of (object?.spec as { template: { spec: { containers: Array<{ name: string; image?: string }> } } }).template.spec.containers) {
        settled.add(`${name}/${c.name}@${digestPart(c.image) ?? "tag"}`);
      }
    }
    const annotations = live["jobs-manager"]?.metadata.annotations ?? {};
    const now = new Map(managedImages.map((image) => [image.name, annotations[keys.record(image.name)]]));
    let holds = true;
    for (const image of managedImages) {
      const before = previous?.get(image.name);
      const after = now.get(image.name);
      if (before === undefined || after === undefined || before === after) continue;
      if (!image.slots.every((slot) => settled.has(`${slot.workload}/${slot.container}@${after}`))) holds = false;
    }
    previous = now;
    return holds;
  });
}

/**
 * S5. The attempt annotation disappears only after each workload was seen settled since the counter last
 * changed and since its own last pin (a container moved onto a digest), or when a human cleared it. Helm moving
 * containers back to a tag is not a pin, so a revert racing the end of a tick does not count against it.
 */
function attemptReset(): Property {
  let previous: string | undefined;
  const settledSince = new Map<WorkloadName, boolean>();
  let clearsSeen = 0;
  const images = new Map<string, string | undefined>();
  return always(propertyNames.attemptReset, (view) => {
    const live = objects(view);
    const attempt = live["jobs-manager"]?.metadata.annotations?.[keys.attempt];
    const removed = previous !== undefined && attempt === undefined;
    if (attempt !== previous && attempt !== undefined) settledSince.clear();
    previous = attempt;
    for (const name of workloadNames) {
      for (const c of containersOf(live[name])) {
        const key = `${name}/${c.name}`;
        if (images.has(key) && images.get(key) !== c.image && digestPart(c.image) !== undefined) settledSince.set(name, false);
        images.set(key, c.image);
      }
      if (rolloutDone(live[name])) settledSince.set(name, true);
    }
    const clears = view.external<number>(humanClearsCell);
    if (!removed) return true;
    if (workloadNames.every((name) => settledSince.get(name) === true)) return true;
    if (clears > clearsSeen) {
      clearsSeen = clears;
      return true;
    }
    return false;
  });
}

export function imageRefreshProperties(options: PropertyOptions): Property[] {
  return [repinAfterRevert(options), loudLatch(), bookkeepingLands(), noThrash(), recordAfterSuccess(), attemptReset()];
}
