// Scenario: a deploy script pauses Flux's image-verification policy owner (`parent`) and its child fence
// (`child`), restarts the kustomize-controller, and must prove the pause stable before it hands off. The
// kustomize-controller runs as the program of its Deployment's pod (kubelet, ReplicaSet and Deployment
// controllers from the cluster library), so a rollout restart kills its executions with their pod. The
// buggy proof also requires no `Reconciling=True` on the suspended parent, which a reconcile that started
// between the quiescence check and the suspend leaves behind for good.
import { always, cluster, clusterExternals, defineActor, defineFaultKind, eventually, scenario } from "settle/sim";
import type { ActorContext, ScenarioContext, WorldView } from "settle/sim";
import type { KubeObject } from "settle";
import {
  childRef,
  controllerImage,
  controllerLabels,
  controllerRef,
  controllerRepo,
  fluxNamespace,
  frozenReconcilingStatus,
  handoffOwnerAnnotation,
  kustomizationKind,
  kustomizeControllerProgram,
  parentOwnerAnnotation,
  parentRef,
  requestedAtAnnotation,
  type Kustomization,
} from "./kustomize.ts";
import { Script, flakyReads, readFaultsCell, stdoutCell, type ReadFaults, type ScriptOutput } from "./script.ts";
import { propertiesFor } from "./properties.ts";

const params = {
  /** The script's `SYNC_ATTEMPTS` and `SYNC_INTERVAL`. */
  syncAttempts: 60,
  syncIntervalMs: 2000,
  /** Kustomization interval, read-to-`Reconciling=True` gap, and the work before `Ready=True`. */
  intervalMs: 10_000,
  gapMs: 3000,
  workMs: 30_000,
  /** The deploy job reaches this step after `scriptStartMs` plus up to `scriptJitterMs` (drawn from the seed). */
  scriptStartMs: 20_000,
  scriptJitterMs: 45_000,
  /** The other writer changes something this often (at most half of `syncIntervalMs`, so every proof pair sees a write). */
  writerPeriodMs: 1000,
  /** The lease holder id of this run (private). */
  holder: "ghcr-auth-38510782818-7d1c",
};
export type FluxPauseParams = typeof params;

const previousHolder = "ghcr-auth-38497110422-a3f0";

function kustomization(ref: typeof parentRef | typeof childRef, path: string, frozen: boolean, annotationKey: string): Kustomization {
  return {
    ...kustomizationKind,
    metadata: { name: ref.name, namespace: ref.namespace, ...(frozen ? { annotations: { [annotationKey]: previousHolder } } : {}) },
    spec: { interval: "10m", path, prune: true, suspend: frozen, sourceRef: { kind: "GitRepository", name: "flux-system" } },
  };
}

const crd: KubeObject = {
  apiVersion: "apiextensions.k8s.io/v1",
  kind: "CustomResourceDefinition",
  metadata: { name: "kustomizations.kustomize.toolkit.fluxcd.io" },
  spec: {
    group: "kustomize.toolkit.fluxcd.io",
    scope: "Namespaced",
    names: { plural: "kustomizations", singular: "kustomization", kind: "Kustomization", listKind: "KustomizationList" },
    versions: [
      {
        name: "v1",
        served: true,
        storage: true,
        subresources: { status: {} },
        schema: { openAPIV3Schema: { type: "object", "x-kubernetes-preserve-unknown-fields": true } },
      },
    ],
  },
};

const controllerDeployment: KubeObject = {
  apiVersion: "apps/v1",
  kind: "Deployment",
  metadata: { name: controllerRef.name, namespace: controllerRef.namespace, labels: { ...controllerLabels } },
  spec: {
    replicas: 1,
    selector: { matchLabels: { ...controllerLabels } },
    template: {
      metadata: { labels: { ...controllerLabels } },
      spec: { terminationGracePeriodSeconds: 10, containers: [{ name: "manager", image: controllerImage }] },
    },
  },
};

/** Waits until the script has printed its exit status (the CI step ended). */
async function untilScriptEnds(ctx: ActorContext): Promise<void> {
  const out = ctx.external<ScriptOutput>(stdoutCell);
  while ((await out.read()).result === undefined) await ctx.clock.sleep(5000);
}

/**
 * `flux reconcile kustomization parent` every so often while the job is on its way, so the parent is often
 * mid-reconcile (a `Reconciling=True` that clears) when the job checks it. The user stops once the parent is
 * claimed: after that a request would be another writer.
 */
async function reconcileUntilClaimed(ctx: ActorContext, p: FluxPauseParams): Promise<void> {
  await ctx.clock.sleep(ctx.rng.between(0, p.scriptStartMs));
  for (;;) {
    const parent = await ctx.client.get(parentRef).catch(() => undefined);
    if (parent?.metadata.annotations?.[parentOwnerAnnotation] === p.holder) break;
    const patch = { metadata: { annotations: { [requestedAtAnnotation]: new Date(ctx.clock.now()).toISOString() } } };
    await ctx.client.patch({ ...parentRef, patchType: "merge", patch }).catch(() => undefined);
    await ctx.clock.sleep(ctx.rng.between(5000, 20_000));
  }
  await untilScriptEnds(ctx);
}

/**
 * A competing transaction or a human, at work before the job arrives and until it ends: every period it changes
 * an owner annotation or `suspend` of parent or child, or some other field (a label), and the period after it
 * puts an owner or `suspend` change back.
 */
async function otherWriter(ctx: ActorContext, p: FluxPauseParams): Promise<void> {
  await ctx.clock.sleep(ctx.rng.between(0, p.scriptStartMs));
  const out = ctx.external<ScriptOutput>(stdoutCell);
  let undo: { ref: typeof parentRef | typeof childRef; patch: Record<string, unknown> } | undefined;
  for (let n = 1; (await out.read()).result === undefined; n++) {
    try {
      if (undo !== undefined) {
        const { ref, patch } = undo;
        undo = undefined;
        await ctx.client.patch({ ...ref, patchType: "merge", patch });
      } else {
        const ref = ctx.rng.pick([parentRef, childRef]);
        const change = await otherChange(ctx, ref, n);
        undo = change.undo === undefined ? undefined : { ref, patch: change.undo };
        await ctx.client.patch({ ...ref, patchType: "merge", patch: change.patch });
      }
    } catch {
      // A failed `kubectl` is followed by the next change.
    }
    await ctx.clock.sleep(p.writerPeriodMs);
  }
  // The writer leaves both objects suspended, so the cluster goes quiet once Flux's last executions end.
  for (const ref of [parentRef, childRef]) await ctx.client.patch({ ...ref, patchType: "merge", patch: { spec: { suspend: true } } }).catch(() => undefined);
}

/** One change of the other writer, remembering how to put an owner or `suspend` change back. */
type Patch = Record<string, unknown>;
async function otherChange(ctx: ActorContext, ref: typeof parentRef | typeof childRef, n: number): Promise<{ patch: Patch; undo?: Patch }> {
  const change = ctx.rng.pick(["owner", "suspend", "label"] as const);
  if (change === "label") return { patch: { metadata: { labels: { touched: String(n) } } } };
  const current = await ctx.client.get<Kustomization>(ref);
  if (change === "suspend") return { patch: { spec: { suspend: current.spec.suspend !== true } }, undo: { spec: { suspend: current.spec.suspend === true } } };
  const key = ref === parentRef ? parentOwnerAnnotation : handoffOwnerAnnotation;
  const undo = { metadata: { annotations: { [key]: current.metadata.annotations?.[key] ?? null } } };
  return { patch: { metadata: { annotations: { [key]: `someone-else-${n}` } } }, undo };
}

const failRead = defineFaultKind({
  name: "fail-read",
  targets: (view: WorldView) => (view.external<ScriptOutput>(stdoutCell).result === undefined ? ["script"] : []),
  apply: (sim) => {
    const cell = sim.external<ReadFaults>(readFaultsCell);
    const now = cell.get();
    cell.set({ pending: now.pending + 1, applied: now.applied + 1 });
    return "the script's next read fails with 500";
  },
});

export default scenario<FluxPauseParams>({
  name: "flux-pause",
  description: "A deploy script's stable-pause proof of a suspended Flux Kustomization, across a kustomize-controller restart.",
  variants: {
    buggy: { expect: "finding", description: "the proof also requires no Reconciling=True on the suspended parent" },
    fixed: { expect: "ok", description: "owned and suspended, both resourceVersions unchanged on two consecutive reads" },
  },
  params,
  setup(ctx: ScenarioContext<FluxPauseParams>, world) {
    const frozen = ctx.workload === "frozen-condition-at-claim";
    world.create(crd);
    for (const name of [fluxNamespace, childRef.namespace]) world.create({ apiVersion: "v1", kind: "Namespace", metadata: { name } });
    world.create(controllerDeployment);
    // At the frozen-condition workload, an earlier run died after suspending both, with the parent caught mid-reconcile.
    const parent = world.create(kustomization(parentRef, "./policies", frozen, parentOwnerAnnotation));
    world.create(kustomization(childRef, "./infrastructure", frozen, handoffOwnerAnnotation));
    if (frozen) world.updateStatus({ ...parent, status: frozenReconcilingStatus(Date.UTC(2026, 0, 1)) });
  },
  externals: () => ({
    ...clusterExternals({ nodes: 1, registry: { [controllerImage]: "sha256:9b1c0ffee4a7d2e3f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8" } }),
    [stdoutCell]: { lines: [] } satisfies ScriptOutput,
    [readFaultsCell]: { pending: 0, applied: 0 } satisfies ReadFaults,
  }),
  actors: ({ variant, workload, params: p }) => [
    ...cluster({
      nodes: 1,
      kubelet: { heartbeatMs: 0, programs: { [controllerRepo]: kustomizeControllerProgram({ intervalMs: p.intervalMs, gapMs: p.gapMs, workMs: p.workMs }) } },
      without: ["node-lifecycle", "daemonset-controller", "job-controller", "cronjob-controller", "disruption-controller"],
    }),
    defineActor({
      name: "script",
      // A CI step that dies fails the job; it is never restarted from the middle.
      crashable: false,
      start: async (ctx) => {
        await ctx.clock.sleep(p.scriptStartMs + ctx.rng.between(0, p.scriptJitterMs));
        const client = workload === "flaky-reads" ? flakyReads(ctx) : ctx.client;
        const options = { variant: variant === "buggy" ? "buggy" : "fixed", holder: p.holder, syncAttempts: p.syncAttempts, syncIntervalMs: p.syncIntervalMs } as const;
        await new Script(ctx, client, options).run();
      },
    }),
  ],
  workloads: {
    plain: (ctx) => untilScriptEnds(ctx),
    "frozen-condition-at-claim": (ctx) => untilScriptEnds(ctx),
    "transient-reconcile": (ctx, { params: p }) => reconcileUntilClaimed(ctx, p),
    "other-writer": (ctx, { params: p }) => otherWriter(ctx, p),
    "flaky-reads": (ctx) => untilScriptEnds(ctx),
  },
  faultKinds: [failRead],
  faults: ({ workload }) => ({
    chance: [1, 40],
    counts: { crash: 2, "delay-watch": 2, "close-watch": 1, ...(workload === "flaky-reads" ? { "fail-read": 6 } : {}) },
  }),
  // Requests take no virtual time here: L1 counts the script's polls ("OK within two polls after the restart") at
  // the precision of the scenario document, which a few milliseconds of latency per request would blur.
  timing: { faultPhaseMs: 120_000, horizonMs: 900_000, settleWindowMs: 60_000, requestLatencyMs: [0, 0] },
  properties: (ctx) => propertiesFor(ctx),
});
