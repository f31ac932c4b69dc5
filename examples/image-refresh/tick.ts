// The image-refresh script: one run per CronJob tick, in the pod of the tick's Job (the kubelet runs it as the
// program of the image-refresh image). Exit 0 is a green Job, anything else a red one; every line it logs is
// the Job's log. One function, five variants:
//   b0     the script before the PR: `recorded == latest` is a no-op, the live spec is never read.
//   b1     the PR at 74f1a14: re-pins from the live spec, forced retry of an unfinished re-image without `< MAX`.
//   b2     the PR at ea89c76: the retry is bounded, but the latched arm says "no-op" and writes nothing.
//   b3     the fix, but comparing the whole reference instead of the digest (a mirror prefix reads as a revert).
//   fixed  digest comparison, skip on an unreadable live image, bounded retry, loud latch (WARN + FLAP).
import { ApiError, isApiError, type Client, type KubeObject } from "settle";
import type { ExternalHandle, ProgramContext, Registry } from "settle/sim";
import {
  attemptOf,
  digestPart,
  imageRegistry,
  keys,
  liveImage,
  managedImages,
  namespace,
  pinnedRef,
  refreshAttemptsMax,
  registryKey,
  rolloutDone,
  skipTicksMax,
  workloads,
  type ManagedImage,
  type WorkloadName,
} from "./system.ts";

export const variants = ["b0", "b1", "b2", "b3", "fixed"] as const;
export type Variant = (typeof variants)[number];

/** Read failures a scenario fault kind arms; the script's next registry HEAD or live read consumes one. */
export interface ArmedFailures {
  registryReads: number;
  liveReads: number;
  /** The script's next write fails with 500 and is not applied. */
  writeFailures: number;
  /** The script's next write is applied, but the answer is lost (504 Timeout). */
  lostResponses: number;
  /** How many armed failures a tick has hit so far (properties excuse a delayed re-pin by them). */
  consumed: number;
}

export const armedFailuresCell = "image-refresh/armed-failures";

export interface TickEnv {
  variant: Variant;
  registry: ExternalHandle<Registry>;
  armed: ExternalHandle<ArmedFailures>;
  /** `kubectl rollout status --timeout`. */
  rolloutTimeoutMs: number;
  /** How often rollout status looks again. */
  rolloutPollMs: number;
}

/** The WARN both latch paths print; S1 looks for this text in the Job's log. */
export const latchRemedy = `clear the ${keys.attempt} annotation`;

const jobsManager = { ...workloads["jobs-manager"], namespace };

function refOf(name: WorkloadName) {
  const w = workloads[name];
  return { apiVersion: w.apiVersion, kind: w.kind, namespace, name: w.name };
}

/** One planned `kubectl set image`: a container of a workload onto a reference. */
interface SetImage {
  workload: WorkloadName;
  container: string;
  image: string;
}

/** What a tick accumulates before its writes (the script's shell variables). */
interface TickState {
  /** `annotate_args`: written at the end, only by a tick that gets there. */
  annotate: Record<string, string | null>;
  restart: boolean;
  sets: SetImage[];
  flapWritten: boolean;
}

export async function runTick(p: ProgramContext, env: TickEnv): Promise<number> {
  if (imageRegistry !== "docker.io") {
    await p.log(`NOTE: IMAGE_REGISTRY=${imageRegistry} is a mirror; image refresh does nothing here`);
    return 0;
  }
  const deploy = await p.client.get(jobsManager);
  if (!rolloutDone(deploy)) return skipUnsettled(p, env, deploy);
  await p.log("jobs-manager settled");
  const state: TickState = { annotate: {}, restart: false, sets: [], flapWritten: false };
  if (deploy.metadata.annotations?.[keys.skipStreak] !== undefined) state.annotate[keys.skipStreak] = null;
  const pending = attemptOf(deploy);
  let armed = await env.armed.read();
  for (const image of managedImages) {
    let latest: string | undefined;
    if (armed.registryReads > 0) {
      armed = await consume(env, "registryReads");
    } else {
      latest = (await env.registry.read())[registryKey(image)];
    }
    if (latest === undefined) {
      await p.log(`HEAD ${image.name}: could not resolve the latest digest; skipping it this tick`);
      continue;
    }
    const recorded = deploy.metadata.annotations?.[keys.record(image.name)];
    await p.log(`HEAD ${image.name}: latest=${latest} recorded=${recorded ?? "none"}`);
    if (recorded === undefined) {
      await p.log(`  ${image.name}: first observation, recording ${latest}`);
      state.annotate[keys.record(image.name)] = latest;
      continue;
    }
    if (recorded !== latest) {
      await p.log(`  ${image.name}: digest changed ${recorded} -> ${latest}; re-imaging`);
      state.annotate[keys.record(image.name)] = latest;
      planReimage(state, image, latest);
      continue;
    }
    const live = env.variant === "b0" ? undefined : await readLive(p, env, image, () => armed, (a) => (armed = a));
    if (live === "unreadable") continue;
    await unchangedDigest(p, env, state, image, latest, live, pending);
  }
  if (state.restart) {
    const code = await restartBlock(p, env, state);
    if (code !== undefined) return code;
    if (env.variant === "fixed") await keepOnlySettledRecords(p, state);
  }
  if (Object.keys(state.annotate).length > 0) await annotate(p.client, env, state.annotate);
  return 0;
}

/**
 * "Settled" is not "settled on what this tick set": another writer (the hourly helm upgrade) may have rolled the
 * same workloads back to `repo:tag` meanwhile, and rollout status reports that rollout done too. A digest is
 * recorded only when every container of its image runs it now; otherwise the next tick sees the revert and
 * re-pins.
 */
async function keepOnlySettledRecords(p: ProgramContext, state: TickState): Promise<void> {
  for (const image of managedImages) {
    const key = keys.record(image.name);
    const recorded = state.annotate[key];
    if (recorded === undefined || recorded === null) continue;
    // Only what this tick re-imaged: a first observation records what the registry says, not what runs.
    const reimaged = image.slots.some((slot) => state.sets.some((set) => set.workload === slot.workload && set.container === slot.container));
    if (!reimaged) continue;
    for (const slot of image.slots) {
      const live = liveImage(await p.client.get(refOf(slot.workload)), slot.container);
      if (digestPart(live) === recorded) continue;
      await p.log(`  WARN: ${slot.workload}/${slot.container} settled on ${live ?? "nothing"}, not ${recorded} (another writer?); not recording it`);
      delete state.annotate[key];
      break;
    }
  }
}

/** The settled guard: a tick while jobs-manager is mid-rollout does nothing but count. */
async function skipUnsettled(p: ProgramContext, env: TickEnv, deploy: KubeObject): Promise<number> {
  const streak = Number(deploy.metadata.annotations?.[keys.skipStreak] ?? "0") + 1;
  await annotate(p.client, env, { [keys.skipStreak]: String(streak) });
  if (streak >= skipTicksMax) {
    await p.log(`ERROR: jobs-manager has not settled for ${streak} ticks; image refresh cannot run`);
    return 1;
  }
  await p.log(`jobs-manager not settled; skipping this tick (streak ${streak})`);
  return 0;
}

async function consume(env: TickEnv, which: "registryReads" | "liveReads" | "writeFailures" | "lostResponses"): Promise<ArmedFailures> {
  let after: ArmedFailures | undefined;
  await env.armed.write((a) => (after = { ...a, [which]: Math.max(0, a[which] - 1), consumed: a.consumed + 1 }));
  return after!;
}

/**
 * The live images of every container running this image, or "unreadable" (fail-closed: the image is skipped
 * this tick, and retried on the next, rather than re-asserted on a guess).
 */
async function readLive(
  p: ProgramContext,
  env: TickEnv,
  image: ManagedImage,
  armed: () => ArmedFailures,
  setArmed: (a: ArmedFailures) => void,
): Promise<string[] | "unreadable"> {
  const images: string[] = [];
  for (const slot of image.slots) {
    let ref: string | undefined;
    if (armed().liveReads > 0) {
      setArmed(await consume(env, "liveReads"));
    } else {
      try {
        ref = liveImage(await p.client.get(refOf(slot.workload)), slot.container);
      } catch (error) {
        if (!isApiError(error)) throw error;
      }
    }
    if (ref === undefined) {
      await p.log(`LIVE ${image.name}: could not read the live image of ${slot.workload}/${slot.container}; skipping it this tick`);
      return "unreadable";
    }
    images.push(ref);
  }
  return images;
}

/** The `recorded == latest` branch: where the variants differ. */
async function unchangedDigest(
  p: ProgramContext,
  env: TickEnv,
  state: TickState,
  image: ManagedImage,
  latest: string,
  live: string[] | undefined,
  pending: number,
): Promise<void> {
  if (live === undefined) {
    // b0: the registry has not moved, so nothing to do; whether the workload runs it is never asked.
    await p.log(`  ${image.name}: digest unchanged; no-op`);
    return;
  }
  const want = pinnedRef(image, latest);
  const onDigest = env.variant === "b3" ? live.every((have) => have === want) : live.every((have) => digestPart(have) === latest);
  if (!onDigest) {
    await p.log(`  ${image.name}: workload is not on the pinned digest (fresh install, or a helm re-render reverted the pin); re-imaging`);
    planReimage(state, image, latest);
    return;
  }
  const bounded = env.variant !== "b1";
  if (pending > 0 && (!bounded || pending < refreshAttemptsMax)) {
    await p.log(`  ${image.name}: ${keys.attempt}=${pending}: an earlier re-image never settled; re-running the rollout`);
    planReimage(state, image, latest);
    return;
  }
  if (pending >= refreshAttemptsMax && env.variant !== "b2") {
    if (state.flapWritten) {
      await p.log(`  ${image.name}: on the pinned digest; refresh is latched (see the WARN above)`);
      return;
    }
    await p.log(
      `  WARN: ${image.name} is on the pinned digest but ${keys.attempt}=${pending} (>= ${refreshAttemptsMax}) -- FLAP LATCHED: image refresh is STOPPED for ALL control-plane images. MANUAL ATTENTION NEEDED: ${latchRemedy} on deployment/jobs-manager to re-arm refresh.`,
    );
    await annotate(p.client, env, { [keys.flap]: String(pending) });
    state.flapWritten = true;
    return;
  }
  await p.log(`  ${image.name}: digest unchanged and workload already on the pinned digest; no-op`);
}

function planReimage(state: TickState, image: ManagedImage, latest: string): void {
  state.restart = true;
  for (const slot of image.slots) state.sets.push({ ...slot, image: pinnedRef(image, latest) });
}

/**
 * Re-image and wait: the attempt counter goes up first, the counter and the flap mark come off only after every
 * rollout settled. Returns the exit code when the tick ends here, undefined to go on to the annotations.
 */
async function restartBlock(p: ProgramContext, env: TickEnv, state: TickState): Promise<number | undefined> {
  // Read again, fail-closed: an unreadable counter is an API error, and the Job goes red.
  const attempt = attemptOf(await p.client.get(jobsManager));
  if (attempt >= refreshAttemptsMax) {
    await p.log(
      `WARN: FLAP DETECTED: ${keys.attempt}=${attempt} re-images did not settle; image refresh is STOPPED. MANUAL ATTENTION NEEDED: ${latchRemedy} on deployment/jobs-manager to re-arm refresh.`,
    );
    await annotate(p.client, env, { [keys.flap]: String(attempt) });
    return 0;
  }
  await annotate(p.client, env, { [keys.attempt]: String(attempt + 1) });
  for (const set of state.sets) await setImage(p.client, env, set);
  // Rollout status on the whole control plane, not only what this tick re-imaged: the counter says "the last
  // re-image has not settled", and a workload another writer (helm) is rolling at the same time is part of that.
  for (const name of Object.keys(workloads) as WorkloadName[]) {
    if (!(await rolloutStatus(p, env, name))) {
      await p.log(`ERROR: rollout of ${name} did not settle within ${env.rolloutTimeoutMs / 1000}s; ${keys.attempt}=${attempt + 1}`);
      return 1;
    }
  }
  await annotate(p.client, env, { [keys.attempt]: null, [keys.flap]: null });
  await p.log(`re-image settled; ${keys.attempt} cleared`);
  return undefined;
}

/**
 * Every write of the script goes through here: an armed write failure makes it fail unapplied (500), an armed
 * lost response makes it fail after it was applied (504), as `kubectl` sees a flaky API server.
 */
async function write(env: TickEnv, send: () => Promise<unknown>): Promise<void> {
  const armed = await env.armed.read();
  if (armed.writeFailures > 0) {
    await consume(env, "writeFailures");
    throw new ApiError("InternalError", 500, "Internal error occurred: injected write failure");
  }
  await send();
  if (armed.lostResponses > 0) {
    await consume(env, "lostResponses");
    throw new ApiError("Timeout", 504, "the server was unable to return a response in the time allotted");
  }
}

/** `kubectl set image`: a patch of one container's image, computed against the object it read. */
async function setImage(client: Client, env: TickEnv, set: SetImage): Promise<void> {
  const current = await client.get(refOf(set.workload));
  const spec = current.spec as { template: { spec: { containers: Array<{ name: string; image?: string }> } } };
  const index = spec.template.spec.containers.findIndex((c) => c.name === set.container);
  if (index < 0 || spec.template.spec.containers[index]!.image === set.image) return; // an empty patch: nothing sent
  const path = `/spec/template/spec/containers/${index}`;
  const patch = [
    { op: "test", path: `${path}/name`, value: set.container },
    { op: "replace", path: `${path}/image`, value: set.image },
  ];
  await write(env, () => client.patch({ ...refOf(set.workload), patchType: "json", patch }));
}

/** `kubectl rollout status --timeout`: true once settled, false at the timeout. */
async function rolloutStatus(p: ProgramContext, env: TickEnv, name: WorkloadName): Promise<boolean> {
  const deadline = p.clock.now() + env.rolloutTimeoutMs;
  for (;;) {
    if (rolloutDone(await p.client.get(refOf(name)))) return true;
    if (p.clock.now() + env.rolloutPollMs > deadline) return false;
    await p.clock.sleep(env.rolloutPollMs);
  }
}

/** `kubectl annotate --overwrite` (null removes the key, as `key-` does). */
async function annotate(client: Client, env: TickEnv, values: Record<string, string | null>): Promise<void> {
  await write(env, () => client.patch({ ...jobsManager, patchType: "merge", patch: { metadata: { annotations: values } } }));
}
