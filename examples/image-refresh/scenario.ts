// Scenario: tracebloc's image-refresh CronJob against helm, the registry and the kubelets' image caches.
// Every 15 minutes a Job runs the script; an hourly auto-upgrade Job runs `helm upgrade` when a chart was
// released, which puts every container back on `repo:tag`; a publisher moves tags; a human clears the attempt
// counter; and the explorer adds crashes, failed requests and failed registry or live-image reads. Each of
// b0..b3 breaks the invariant the model says it breaks; `fixed` keeps them all.
import type { KubeObject } from "settle";
import {
  cluster,
  clusterExternals,
  defineActor,
  defineFaultKind,
  emptyImageCache,
  imageCacheCell,
  kubelet,
  parseImage,
  registryCell,
  scenario,
  type ActorContext,
  type ActorDefinition,
  type Admission,
  type FaultBudget,
  type ImageCache,
  type Registry,
  type ScenarioContext,
} from "settle/sim";
import { chartRepoCell, releaseRecord, rollback, runAutoUpgrade, type ChartRepo } from "./helm.ts";
import { humanClearsCell, imageRefreshProperties } from "./properties.ts";
import { armedFailuresCell, runTick, variants, type ArmedFailures, type Variant } from "./tick.ts";
import {
  helmImage,
  imageRegistry,
  initialRegistry,
  keys,
  managedImages,
  mirrorLabel,
  mirrorRegistry,
  namespace,
  publish,
  refreshImage,
  renderChart,
  taggedRef,
} from "./system.ts";

const minuteMs = 60_000;
const tickMs = 15 * minuteMs;
const chartInstalled = "1.9.108";
const chartReleased = "1.9.109";

const params = {
  /** `kubectl rollout status --timeout` in the script. */
  rolloutTimeoutMs: 5 * minuteMs,
  rolloutPollMs: 5000,
  /** Ticks a run goes on after its event, before the CronJobs are suspended (keeps a run cheap). */
  ticksAfterEvent: 12,
};
type ImageRefreshParams = typeof params;
type Ctx = ScenarioContext<ImageRefreshParams>;

/** The nodes that run kubelets; scenario b adds `n3`, a Node whose kubelet never comes back. */
const nodes = ["n1", "n2"];

/** How each workload renders the chart: behind the mirror webhook (c), with a slow jobs-manager (d). */
function chartOptions(workload: string): { mirrored: boolean; jobsManagerReadyMs?: number } {
  if (workload === "c-mirror-webhook") return { mirrored: true };
  if (workload === "d-rollout-timeout") return { mirrored: false, jobsManagerReadyMs: 6 * minuteMs };
  return { mirrored: false };
}

function cronJob(name: string, schedule: string, image: string): KubeObject {
  const labels = { app: name };
  return {
    apiVersion: "batch/v1",
    kind: "CronJob",
    metadata: { name, namespace },
    spec: {
      schedule,
      concurrencyPolicy: "Forbid",
      jobTemplate: {
        metadata: { labels },
        spec: { backoffLimit: 0, template: { metadata: { labels }, spec: { restartPolicy: "Never", containers: [{ name, image }] } } },
      },
    },
  };
}

function setup(ctx: Ctx): KubeObject[] {
  const objects: KubeObject[] = [{ apiVersion: "v1", kind: "Namespace", metadata: { name: namespace } }];
  if (ctx.workload === "b-notready-latch") {
    // A node that stays NotReady: its kubelet is gone. The DaemonSet tolerates it, so its rollout never settles.
    objects.push({
      apiVersion: "v1",
      kind: "Node",
      metadata: { name: "n3", labels: { "kubernetes.io/hostname": "n3" } },
      spec: {},
      status: { conditions: [{ type: "Ready", status: "False", reason: "KubeletNotReady" }] },
    });
  }
  objects.push(...renderChart(chartInstalled, chartOptions(ctx.workload)));
  objects.push(releaseRecord(chartInstalled, 1));
  objects.push(cronJob("image-refresh", "*/15 * * * *", refreshImage));
  objects.push(cronJob("auto-upgrade", "0 * * * *", helmImage));
  return objects;
}

function externals(_ctx: Ctx): Record<string, unknown> {
  const cells = clusterExternals({ nodes, registry: initialRegistry() });
  // n1 pulled jobs-manager:prod long ago: under IfNotPresent, `:prod` there runs this stale digest.
  const jobsManager = managedImages[0]!;
  const stale: ImageCache = { tags: { [taggedRef(jobsManager)]: "sha256:jm-0" }, digests: [`${imageRegistry}/${jobsManager.repo}@sha256:jm-0`] };
  cells[imageCacheCell("n1")] = stale;
  cells[imageCacheCell("n2")] = emptyImageCache();
  const armed: ArmedFailures = { registryReads: 0, liveReads: 0, writeFailures: 0, lostResponses: 0, consumed: 0 };
  const charts: ChartRepo = { latest: chartInstalled };
  return { ...cells, [armedFailuresCell]: armed, [chartRepoCell]: charts, [humanClearsCell]: 0 };
}

/** A kubelet whose programs (the two cron scripts) reach the registry and the chart repository. */
function node(name: string, ctx: Ctx): ActorDefinition {
  const render = (version: string) => renderChart(version, chartOptions(ctx.workload));
  return defineActor({
    name: `kubelet-${name}`,
    restartDelayMs: 1000,
    start: (actx: ActorContext) => {
      const tickEnv = {
        variant: ctx.variant as Variant,
        registry: actx.external<Registry>(registryCell),
        armed: actx.external<ArmedFailures>(armedFailuresCell),
        rolloutTimeoutMs: ctx.params.rolloutTimeoutMs,
        rolloutPollMs: ctx.params.rolloutPollMs,
      };
      const programs = {
        [parseImage(refreshImage).repo]: (p: Parameters<typeof runTick>[0]) => runTick(p, tickEnv),
        [parseImage(helmImage).repo]: (p: Parameters<typeof runTick>[0]) => runAutoUpgrade(p, { charts: actx.external<ChartRepo>(chartRepoCell), render }),
      };
      // Heartbeats off: the run must be able to settle once the CronJobs are suspended.
      return kubelet({ node: name, heartbeatMs: 0, programs }).start(actx);
    },
  });
}

/** A mutating webhook (objectSelector on the rewrite label) moving docker.io images to the mirror, `@digest` kept. */
const mirrorWebhook: Admission = {
  name: "registry-rewrite",
  mutate(request) {
    if (request.subresource !== undefined || (request.resource.kind !== "Deployment" && request.resource.kind !== "DaemonSet")) return;
    if (request.object.metadata.labels?.[mirrorLabel] !== "enabled") return;
    const spec = request.object.spec as { template?: { spec?: { containers?: Array<{ image?: string }> } } };
    for (const container of spec.template?.spec?.containers ?? []) {
      if (container.image?.startsWith(`${imageRegistry}/`)) container.image = `${mirrorRegistry}/${container.image.slice(imageRegistry.length + 1)}`;
    }
  },
};

const registryReadFail = defineFaultKind({
  name: "registry-read-fail",
  targets: () => ["registry"],
  apply(target) {
    const cell = target.external<ArmedFailures>(armedFailuresCell);
    cell.set({ ...cell.get(), registryReads: cell.get().registryReads + 1 });
    return "the next registry HEAD fails";
  },
});

const scriptWriteFails = defineFaultKind({
  name: "script-write-fails",
  targets: () => ["image-refresh"],
  apply(target) {
    const cell = target.external<ArmedFailures>(armedFailuresCell);
    cell.set({ ...cell.get(), writeFailures: cell.get().writeFailures + 1 });
    return "the script's next write fails (500, not applied)";
  },
});

const scriptWriteLost = defineFaultKind({
  name: "script-write-lost",
  targets: () => ["image-refresh"],
  apply(target) {
    const cell = target.external<ArmedFailures>(armedFailuresCell);
    cell.set({ ...cell.get(), lostResponses: cell.get().lostResponses + 1 });
    return "the script's next write is applied, its response lost (504)";
  },
});

const liveReadFail = defineFaultKind({
  name: "live-read-fail",
  targets: () => ["apiserver"],
  apply(target) {
    const cell = target.external<ArmedFailures>(armedFailuresCell);
    cell.set({ ...cell.get(), liveReads: cell.get().liveReads + 1 });
    return "the next live-image read fails";
  },
});

async function sleepUntil(actx: ActorContext, atMs: number, startMs: number): Promise<void> {
  const waitMs = startMs + atMs - actx.clock.now();
  if (waitMs > 0) await actx.clock.sleep(waitMs);
}

/** The end of a run: both CronJobs suspended, so the world can settle and the run be judged. */
async function endRun(actx: ActorContext, eventMs: number, ctx: Ctx, startMs: number): Promise<void> {
  await sleepUntil(actx, eventMs + ctx.params.ticksAfterEvent * tickMs + minuteMs, startMs);
  for (const name of ["image-refresh", "auto-upgrade"]) {
    await actx.client.patch({ apiVersion: "batch/v1", kind: "CronJob", namespace, name, patchType: "merge", patch: { spec: { suspend: true } } });
  }
}

async function publishAll(actx: ActorContext, atMs: number, startMs: number): Promise<void> {
  await sleepUntil(actx, atMs, startMs);
  await actx.external<Registry>(registryCell).write((r) => managedImages.reduce((acc, image) => publish(acc, image, `${r[taggedRef(image)]}-2`), r));
}

async function releaseChart(actx: ActorContext, atMs: number, startMs: number): Promise<void> {
  await sleepUntil(actx, atMs, startMs);
  await actx.external<ChartRepo>(chartRepoCell).write({ latest: chartReleased });
}

/**
 * Every image published at 0:20, so the 0:30 tick pins it (the script before the PR pins only on a new digest);
 * the digest then stays put. A chart released at 0:40 makes the 1:00 auto-upgrade re-render every image to `:prod`.
 */
async function helmRevert(actx: ActorContext, ctx: Ctx): Promise<void> {
  const start = actx.clock.now();
  await publishAll(actx, 20 * minuteMs, start);
  await releaseChart(actx, 40 * minuteMs, start);
  await endRun(actx, 60 * minuteMs, ctx, start);
}

async function notReadyLatch(actx: ActorContext, ctx: Ctx): Promise<void> {
  const start = actx.clock.now();
  // The human reads the alert (or the WARN) and clears the counter well after the latch at 1:15.
  await sleepUntil(actx, 130 * minuteMs, start);
  const deploy = await actx.client.get({ apiVersion: "apps/v1", kind: "Deployment", namespace, name: "jobs-manager" });
  if (deploy.metadata.annotations?.[keys.attempt] !== undefined) {
    await actx.external<number>(humanClearsCell).write((n) => n + 1);
    const patch = { metadata: { annotations: { [keys.attempt]: null, [keys.flap]: null } } };
    await actx.client.patch({ apiVersion: "apps/v1", kind: "Deployment", namespace, name: "jobs-manager", patchType: "merge", patch });
  }
  await endRun(actx, 30 * minuteMs, ctx, start);
}

/** A publish of jobs-manager at 0:40; its pods need 6 minutes to become Ready, past the 5-minute timeout. */
async function rolloutTimeout(actx: ActorContext, ctx: Ctx): Promise<void> {
  const start = actx.clock.now();
  await sleepUntil(actx, 40 * minuteMs, start);
  await actx.external<Registry>(registryCell).write((r) => publish(r, managedImages[0]!, "sha256:jm-2"));
  await endRun(actx, 40 * minuteMs, ctx, start);
}

/** As (a), and at 1:40 a human runs `helm rollback`, which re-applies the stored `:prod` manifest: a second revert. */
async function helmRollback(actx: ActorContext, ctx: Ctx): Promise<void> {
  const start = actx.clock.now();
  await publishAll(actx, 20 * minuteMs, start);
  await releaseChart(actx, 40 * minuteMs, start);
  await sleepUntil(actx, 100 * minuteMs, start);
  await rollback(actx.client, (version) => renderChart(version, chartOptions(ctx.workload)));
  await endRun(actx, 100 * minuteMs, ctx, start);
}

/**
 * Faults a real cluster gives a cron script: its API writes fail (unapplied) or time out (applied), its registry
 * HEAD or live-image read fails, an actor stalls. Not the built-in crash, stale-read or delay-watch (they make
 * the explorer spend its first thousands of runs on systematic points of the cluster actors, which this system
 * is not about), nor the built-in fail-request (the library's ReplicaSet controller does not forget a delete
 * expectation when the delete fails, and then never scales again: a simulator bug, reported, not this system's).
 * Scenario b draws early (the first ticks matter there), scenario e late and often (after the revert).
 */
function budget(ctx: Ctx): FaultBudget {
  const early = ctx.workload === "b-notready-latch";
  const reads = ctx.workload === "e-live-read-fails" ? 3 : 1;
  return {
    chance: early ? [1, 100] : ctx.workload === "e-live-read-fails" ? [1, 500] : [1, 300],
    counts: { pause: 1, "script-write-fails": 1, "script-write-lost": 1, "registry-read-fail": 1, "live-read-fail": reads },
    pauseMs: [1000, 60_000],
  };
}

export default scenario<ImageRefreshParams>({
  name: "image-refresh",
  description: "A CronJob that re-pins image digests; helm re-renders revert the pin, and a latched flap must be loud.",
  variants: {
    b0: { expect: "finding", description: "the script before the PR: recorded == latest is a no-op, a helm revert is never re-pinned" },
    b1: { expect: "finding", description: "74f1a14: forced retry without the < MAX bound; latched ticks drop their bookkeeping" },
    b2: { expect: "finding", description: "ea89c76: bounded retry, but the latched arm is a silent green no-op" },
    b3: { expect: "finding", description: "whole-reference comparison: a prefix-rewriting webhook reads as a revert every tick" },
    fixed: { expect: "ok", description: "digest comparison, skip on unreadable, bounded retry, loud latch (WARN + FLAP)" },
  },
  params,
  setup: (ctx) => setup(ctx),
  externals,
  actors: (ctx) => {
    if (!(variants as readonly string[]).includes(ctx.variant)) throw new Error(`unknown variant ${ctx.variant}`);
    return [...nodes.map((name) => node(name, ctx)), ...cluster({ nodes: [], without: ["node-lifecycle", "disruption-controller"] })];
  },
  workloads: {
    "a-helm-revert": (actx, ctx) => helmRevert(actx, ctx),
    "b-notready-latch": (actx, ctx) => notReadyLatch(actx, ctx),
    "c-mirror-webhook": (actx, ctx) => helmRevert(actx, ctx),
    "d-rollout-timeout": (actx, ctx) => rolloutTimeout(actx, ctx),
    "e-live-read-fails": (actx, ctx) => helmRevert(actx, ctx),
    "f-helm-rollback": (actx, ctx) => helmRollback(actx, ctx),
  },
  faults: budget,
  faultKinds: [registryReadFail, liveReadFail, scriptWriteFails, scriptWriteLost],
  admission: [mirrorWebhook],
  properties: (ctx) => imageRefreshProperties({ tickMs, rolloutTimeoutMs: ctx.params.rolloutTimeoutMs }),
  timing: { faultPhaseMs: 240 * minuteMs, horizonMs: 360 * minuteMs, settleWindowMs: 20 * minuteMs, stepsMax: 400_000 },
});
