// The Job controller (parallelism, completions, backoffLimit, activeDeadlineSeconds; Complete/Failed
// conditions) and the CronJob controller (standard cron schedules on the virtual clock via cron-parser,
// concurrencyPolicy Allow/Forbid/Replace, suspend, startingDeadlineSeconds, history limits).
import { createRequire } from "node:module";
import type { CronExpressionParser } from "cron-parser";
import type { PodTemplateSpec } from "kubernetes-types/core/v1.js";
import { assert } from "../api/assert.ts";
import { isAlreadyExists, isNotFound } from "../api/errors.ts";
import type { KubeObject } from "../api/object.ts";
import type { ActorDefinition } from "../sim/types.ts";
import { Action, defineController, TerminalError } from "../runtime/controller.ts";
import type { ReconcileContext } from "../runtime/controller.ts";
import { indexNames } from "../runtime/cache.ts";
import { canonicalEqual, controllerActor, cronJobKind, deleteIfPresent, eventNote, formatTime, isPodActive, isTerminating, jobKind, ownedBy, parseTime, podFromTemplate, podKind } from "./common.ts";
import type { Note } from "./common.ts";
import type { Pod, Workload } from "./common.ts";
import { Expectations } from "./replicaset.ts";
import type { WorkloadControllerOptions } from "./replicaset.ts";
import { cloneJson } from "../api/json.ts";

interface JobCondition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  lastProbeTime?: string;
  lastTransitionTime?: string;
}

const num = (value: unknown): number => (typeof value === "number" ? value : 0);

/** Complete or Failed, from its conditions. */
export function jobFinished(job: KubeObject): "Complete" | "Failed" | undefined {
  const conditions = ((job.status as { conditions?: JobCondition[] } | undefined)?.conditions ?? []).filter((c) => c.status === "True");
  if (conditions.some((c) => c.type === "Complete")) return "Complete";
  if (conditions.some((c) => c.type === "Failed")) return "Failed";
  return undefined;
}

function finishedStatus(job: Workload, counts: Record<string, number>, type: "Complete" | "Failed", reason: string, message: string, now: string): Record<string, unknown> {
  const previous = (job.status ?? {}) as { startTime?: string };
  const condition: JobCondition = { type, status: "True", reason, message, lastProbeTime: now, lastTransitionTime: now };
  return { ...counts, active: 0, startTime: previous.startTime ?? now, ...(type === "Complete" ? { completionTime: now } : {}), conditions: [condition] };
}

async function reconcileJob(job: Workload, ctx: ReconcileContext, expectations: Expectations, note: Note | undefined): Promise<Action> {
  assert(job.metadata.uid !== undefined, "job-has-uid");
  if (jobFinished(job) !== undefined || isTerminating(job) || job.spec.suspend === true) return Action.awaitChange();
  const key = job.metadata.uid;
  const pods = ownedBy(ctx.lister<Pod>(podKind).byIndex(indexNames.ownerUid, key), job);
  const pending = expectations.settle(key, pods, ctx.clock.now());
  const active = pods.filter((p) => isPodActive(p) && !pending.deleting.has(p.metadata.name ?? ""));
  const previous = (job.status ?? {}) as Record<string, unknown>;
  // Finished pods may be removed by someone else: the counts never go down.
  const succeeded = Math.max(num(previous.succeeded), pods.filter((p) => p.status?.phase === "Succeeded").length);
  const failed = Math.max(num(previous.failed), pods.filter((p) => p.status?.phase === "Failed").length);
  const completions = num(job.spec.completions) || 1;
  const now = formatTime(ctx.clock.now());
  const startTime = typeof previous.startTime === "string" ? previous.startTime : now;
  const deadlineMs = typeof job.spec.activeDeadlineSeconds === "number" ? (parseTime(startTime) ?? 0) + job.spec.activeDeadlineSeconds * 1000 : Infinity;
  let status: Record<string, unknown>;
  if (succeeded >= completions) {
    status = finishedStatus(job, { succeeded, failed }, "Complete", "CompletionsReached", "Reached expected number of succeeded pods", now);
  } else if (failed > num(job.spec.backoffLimit ?? 6) || ctx.clock.now() >= deadlineMs) {
    const overBackoff = failed > num(job.spec.backoffLimit ?? 6);
    for (const pod of active) await deleteIfPresent(ctx, { ...podKind, namespace: pod.metadata.namespace, name: pod.metadata.name ?? "" });
    status = finishedStatus(job, { succeeded, failed: failed + (overBackoff ? 0 : active.length) }, "Failed", overBackoff ? "BackoffLimitExceeded" : "DeadlineExceeded", overBackoff ? "Job has reached the specified backoff limit" : "Job was active longer than specified deadline", now);
  } else {
    const want = Math.min(num(job.spec.parallelism ?? 1), completions - succeeded) - active.length - pending.adds;
    for (let i = 0; i < want; i++) {
      const pod = podFromTemplate(job, job.spec.template as PodTemplateSpec, { generateName: `${job.metadata.name}-` });
      const created = await ctx.client.create<Pod>({ object: pod });
      expectations.expect(key, "adds", created.metadata.name ?? "", ctx.clock.now());
      if (note !== undefined) await note(job, "SuccessfulCreate", `Created pod: ${created.metadata.name}`);
    }
    status = { ...previous, startTime, active: active.length + Math.max(0, want) + pending.adds, succeeded, failed };
  }
  if (!canonicalEqual(previous, status)) {
    try {
      await ctx.client.updateStatus({ readOnly: true, object: { ...job, status } });
    } catch (error) {
      if (!isNotFound(error)) throw error;
    }
    if (note !== undefined && jobFinished({ ...job, status }) === "Complete") await note(job, "Completed", "Job completed");
  }
  return Number.isFinite(deadlineMs) && jobFinished({ ...job, status }) === undefined ? Action.requeueAfter(Math.max(0, deadlineMs - ctx.clock.now())) : Action.awaitChange();
}

export function jobController(options: WorkloadControllerOptions = {}): ActorDefinition {
  return controllerActor("job-controller", options, (ctx) => {
    const expectations = new Expectations();
    const controller = defineController<Workload>({
      name: "job-controller",
      for: jobKind,
      owns: [podKind],
      resyncMs: 0,
      reconcile: (job, rctx) => reconcileJob(job, rctx, expectations, eventNote(options.events, rctx.events)),
    });
    return [controller];
  });
}

/** Missed schedules looked at, at most (the real controller gives up past 100 and starts the latest). */
const missedSchedulesMax = 100;

let cronParserClass: typeof CronExpressionParser | undefined;

/**
 * cron-parser (with luxon) is loaded by the first CronJob: it costs every explore worker and exploration about
 * 15-100 ms, and most scenarios have no CronJob. In a worker bundle esbuild bundles the literal `require`; an ES
 * module has none, so it asks node's.
 */
function cronParser(): typeof CronExpressionParser {
  cronParserClass ??= ((typeof require === "function" ? require("cron-parser") : createRequire(import.meta.url)("cron-parser")) as typeof import("cron-parser")).CronExpressionParser;
  return cronParserClass;
}

type CronExpression = ReturnType<typeof CronExpressionParser.parse>;

/**
 * The schedule times after one instant, computed once: a CronJob reconciles on every change to it or its Jobs
 * with the same `lastScheduleTime`, and parsing the schedule plus stepping luxon cost about a tenth of the CPU of
 * the image-refresh example. A cron-parser expression is stateful (`next()` moves its current date), so it is kept
 * only to extend `timesMs`, always continuing where it stopped; the times are a pure function of (schedule, time
 * zone, after), so a cached sequence gives exactly what a fresh parse would.
 */
interface CronSequence {
  expression: CronExpression;
  timesMs: number[];
}

/**
 * Sequences kept, at most; the oldest goes first. One schedule has several live starting points (each run of an
 * exploration starts again from its first, stale reads show an older `lastScheduleTime`), so they are all keyed.
 */
const cronSequencesMax = 256;
const cronSequences = new Map<string, CronSequence>();

function parseSchedule(schedule: string, timeZone: string, afterMs: number): CronExpression {
  try {
    return cronParser().parse(schedule, { currentDate: afterMs, tz: timeZone });
  } catch (error) {
    throw new TerminalError(`unparseable schedule "${schedule}": ${error instanceof Error ? error.message : String(error)}`);
  }
}

function cronSequence(key: string, schedule: string, timeZone: string, afterMs: number): CronSequence {
  const known = cronSequences.get(key);
  if (known !== undefined) return known;
  const sequence: CronSequence = { expression: parseSchedule(schedule, timeZone, afterMs), timesMs: [] };
  if (cronSequences.size >= cronSequencesMax) cronSequences.delete(cronSequences.keys().next().value!);
  cronSequences.set(key, sequence);
  return sequence;
}

/** The `index`-th schedule time of a sequence (0: the first after `afterMs`), stepping the expression as needed. */
function cronTimeAt(sequence: CronSequence, key: string, index: number): number {
  assert(index <= sequence.timesMs.length, "cron-time-in-order");
  if (index === sequence.timesMs.length) {
    try {
      sequence.timesMs.push(sequence.expression.next().getTime());
    } catch (error) {
      // Where a failed step leaves the expression is not said: start over from a fresh parse next time.
      cronSequences.delete(key);
      throw error;
    }
  }
  return sequence.timesMs[index]!;
}

/** The latest schedule time in (after, now], and the next one after now. Throws TerminalError on a bad schedule. */
export function cronTimes(schedule: string, timeZone: string | undefined, afterMs: number, nowMs: number): { latest?: number; next: number } {
  const fields = schedule.trim().split(/\s+/);
  if (!schedule.trim().startsWith("@") && fields.length !== 5) throw new TerminalError(`unparseable schedule "${schedule}": want 5 fields`);
  const zone = timeZone ?? "UTC";
  const key = `${afterMs} ${zone.length} ${zone} ${schedule}`; // the zone's length keeps the key unambiguous
  const sequence = cronSequence(key, schedule, zone, afterMs);
  let latest: number | undefined;
  for (let i = 0; ; i++) {
    const at = cronTimeAt(sequence, key, i);
    if (at > nowMs) return latest === undefined ? { next: at } : { latest, next: at };
    latest = at;
    if (i >= missedSchedulesMax) {
      // Too many missed: jump to the schedule just before now (rare, so parsed afresh).
      const previous = parseSchedule(schedule, zone, nowMs).prev().getTime();
      const next = parseSchedule(schedule, zone, nowMs).next().getTime();
      return { latest: Math.max(previous, latest), next };
    }
  }
}

interface CronJobSpec {
  schedule: string;
  timeZone?: string;
  suspend?: boolean;
  concurrencyPolicy?: "Allow" | "Forbid" | "Replace";
  startingDeadlineSeconds?: number;
  successfulJobsHistoryLimit?: number;
  failedJobsHistoryLimit?: number;
  jobTemplate: { metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> }; spec: Record<string, unknown> };
}

const scheduledAnnotation = "batch.kubernetes.io/cronjob-scheduled-timestamp";

function jobFor(cronJob: KubeObject, spec: CronJobSpec, scheduledMs: number): KubeObject {
  const meta = spec.jobTemplate.metadata ?? {};
  return {
    ...jobKind,
    metadata: {
      // As the real controller: the scheduled time in minutes, so a repeated create is AlreadyExists.
      name: `${cronJob.metadata.name}-${Math.floor(scheduledMs / 60_000)}`,
      namespace: cronJob.metadata.namespace,
      labels: { ...(meta.labels ?? {}) },
      annotations: { ...(meta.annotations ?? {}), [scheduledAnnotation]: formatTime(scheduledMs) },
      ownerReferences: [{ ...cronJobKind, name: cronJob.metadata.name ?? "", uid: cronJob.metadata.uid ?? "", controller: true, blockOwnerDeletion: true }],
    },
    spec: cloneJson(spec.jobTemplate.spec),
  };
}

async function deleteJob(ctx: ReconcileContext, job: KubeObject): Promise<void> {
  await deleteIfPresent(ctx, { ...jobKind, namespace: job.metadata.namespace, name: job.metadata.name ?? "", propagationPolicy: "Background" });
}

/** Deletes the oldest finished Jobs beyond the history limits. */
async function cleanupFinished(spec: CronJobSpec, jobs: KubeObject[], ctx: ReconcileContext): Promise<void> {
  const byAge = (a: KubeObject, b: KubeObject) => String(a.metadata.creationTimestamp ?? "").localeCompare(String(b.metadata.creationTimestamp ?? "")) || (a.metadata.name ?? "").localeCompare(b.metadata.name ?? "");
  for (const [state, limit] of [["Complete", spec.successfulJobsHistoryLimit ?? 3], ["Failed", spec.failedJobsHistoryLimit ?? 1]] as const) {
    const finished = jobs.filter((job) => jobFinished(job) === state && !isTerminating(job)).sort(byAge);
    for (const job of finished.slice(0, Math.max(0, finished.length - limit))) await deleteJob(ctx, job);
  }
}

async function reconcileCronJob(cronJob: KubeObject, ctx: ReconcileContext, note?: Note): Promise<Action> {
  assert(cronJob.metadata.uid !== undefined, "cronjob-has-uid");
  const spec = cronJob.spec as CronJobSpec;
  const status = (cronJob.status ?? {}) as { lastScheduleTime?: string; lastSuccessfulTime?: string; active?: unknown[] };
  const jobs = ownedBy(ctx.lister(jobKind).byIndex(indexNames.ownerUid, cronJob.metadata.uid), cronJob);
  const running = jobs.filter((job) => jobFinished(job) === undefined && !isTerminating(job));
  const nowMs = ctx.clock.now();
  await cleanupFinished(spec, jobs, ctx);
  const after = parseTime(status.lastScheduleTime) ?? parseTime(cronJob.metadata.creationTimestamp) ?? nowMs;
  const { latest, next } = cronTimes(spec.schedule, spec.timeZone, after, nowMs);
  let lastScheduleMs = parseTime(status.lastScheduleTime);
  const tooLate = latest !== undefined && spec.startingDeadlineSeconds !== undefined && latest + spec.startingDeadlineSeconds * 1000 < nowMs;
  let active = running;
  if (latest !== undefined && spec.suspend !== true && !tooLate) {
    const policy = spec.concurrencyPolicy ?? "Allow";
    if (policy === "Forbid" && running.length > 0) {
      // Skipped, not recorded: once the running Job finishes, this schedule (if still the latest) starts.
      return Action.requeueAfter(next - nowMs);
    }
    if (policy === "Replace") {
      for (const job of running) await deleteJob(ctx, job);
      active = [];
    }
    try {
      const created = await ctx.client.create({ object: jobFor(cronJob, spec, latest) });
      active = [...active, created];
      if (note !== undefined) await note(cronJob, "SuccessfulCreate", `Created job ${created.metadata.name}`);
    } catch (error) {
      if (!isAlreadyExists(error)) throw error;
    }
    lastScheduleMs = latest;
  }
  const lastSuccess = jobs.filter((job) => jobFinished(job) === "Complete").map((job) => parseTime((job.status as { completionTime?: string }).completionTime) ?? 0);
  const next_status: Record<string, unknown> = {
    ...(lastScheduleMs === undefined ? {} : { lastScheduleTime: formatTime(lastScheduleMs) }),
    ...(lastSuccess.length > 0 ? { lastSuccessfulTime: formatTime(Math.max(...lastSuccess)) } : status.lastSuccessfulTime === undefined ? {} : { lastSuccessfulTime: status.lastSuccessfulTime }),
    ...(active.length > 0 ? { active: active.map((job) => ({ ...jobKind, namespace: job.metadata.namespace, name: job.metadata.name, uid: job.metadata.uid })) } : {}),
  };
  if (!canonicalEqual(cronJob.status ?? {}, next_status)) {
    try {
      await ctx.client.updateStatus({ readOnly: true, object: { ...cronJob, status: next_status } });
    } catch (error) {
      if (!isNotFound(error)) throw error;
    }
  }
  return Action.requeueAfter(Math.max(0, next - nowMs));
}

export function cronJobController(options: WorkloadControllerOptions = {}): ActorDefinition {
  return controllerActor("cronjob-controller", options, (ctx) => {
    const controller = defineController({
      name: "cronjob-controller",
      for: cronJobKind,
      owns: [jobKind],
      resyncMs: 0,
      reconcile: (cronJob, rctx) => reconcileCronJob(cronJob, rctx, eventNote(options.events, rctx.events)),
    });
    return [controller];
  });
}
