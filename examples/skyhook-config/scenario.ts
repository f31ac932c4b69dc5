// Scenario: NVIDIA Skyhook's owned ConfigMap left out of sync (the HandleConfigUpdates gate).
//
// One node, one Skyhook with one package (`dexter`), the chainsaw steps of `config-skyhook`: the initial
// apply, the no-interrupt update (only `ui.properties` changes) and the glob update (`*.properties` joins
// `configInterrupts`, `game.properties` changes). The operator, the stage pods on the kubelet and the
// informer caches run under the explorer's schedule and fault budget; nothing here scripts the race.
import { always, clusterExternals, defineActor, eventually, scenario, type ActorContext, type WorldView } from "settle/sim";
import { isAlreadyExists, isApiError, type KubeObject } from "settle";
import { runOperator, variants, type Variant } from "./operator.ts";
import { changedKeys, configMapKind, configMapName, configInterruptsFor, labels, operatorNamespace, podKind, sameData, skyhookCrd, skyhookKind, type PackageSpec, type Skyhook } from "./skyhook.ts";
import { stageKubelet } from "./stage-pods.ts";

const skyhookName = "config-skyhook";
const node = "kind-worker";
/** The chainsaw assert timeout of the test, and the deadline of the liveness property. */
const assertTimeoutMs = 270_000;
const assertPollMs = 1000;

const dexter: PackageSpec = {
  version: "1.2.3",
  image: "skyhook/dexter:1.2.3",
  interrupt: { type: "reboot" },
  configInterrupts: { "game.properties": { type: "service", services: ["rsyslog"] } },
  configMap: { "game.properties": "initial\n", "ui.properties": "initial\n" },
};

function skyhookOf(view: WorldView): Skyhook | undefined {
  return view.get({ ...skyhookKind, name: skyhookName }) as Skyhook | undefined;
}

/** Every package's ConfigMap holds what its spec asks (vacuously true before the Skyhook exists). */
function configMapsInSync(view: WorldView): boolean {
  const skyhook = skyhookOf(view);
  if (skyhook === undefined) return true;
  return Object.entries(skyhook.spec.packages).every(([name, pkg]) => {
    if (pkg.configMap === undefined) return true;
    const cm = view.get({ ...configMapKind, namespace: operatorNamespace, name: configMapName(skyhookName, name, pkg.version) });
    return cm !== undefined && sameData(cm.data as Record<string, string> | undefined, pkg.configMap);
  });
}

// The user: kubectl apply of each chainsaw step, each followed by the step's assert (polled, 270 s at most).
// A failed request is tried again a second later, as chainsaw's retries do.
async function retrying<T>(ctx: ActorContext, request: () => Promise<T>): Promise<T> {
  for (;;) {
    try {
      return await request();
    } catch (error) {
      if (!isApiError(error)) throw error;
      await ctx.clock.sleep(1000);
    }
  }
}

async function apply(ctx: ActorContext, patch: Record<string, unknown>): Promise<void> {
  await retrying(ctx, () => ctx.client.patch({ ...skyhookKind, name: skyhookName, patchType: "merge", patch }));
}

async function assertSettled(ctx: ActorContext): Promise<void> {
  const deadline = ctx.clock.now() + assertTimeoutMs;
  while (ctx.clock.now() < deadline) {
    const skyhook = await retrying(ctx, () => ctx.client.get<Skyhook>({ ...skyhookKind, name: skyhookName }));
    const pkg = skyhook.spec.packages.dexter!;
    const cm = await ctx.client.get({ ...configMapKind, namespace: operatorNamespace, name: configMapName(skyhookName, "dexter", pkg.version) }).catch(() => undefined);
    const inSync = cm !== undefined && sameData(cm.data as Record<string, string>, pkg.configMap);
    // The step's assert also waits for the last stage pod to be gone, so each step starts from a quiet node.
    const pods = await retrying(ctx, () => ctx.client.list({ ...podKind, namespace: operatorNamespace, labelSelector: `${labels.skyhook}=${skyhookName}` }));
    const complete = skyhook.status?.status === "complete" && skyhook.status.observedGeneration === skyhook.metadata.generation;
    if (complete && inSync && pods.items.length === 0) return;
    await ctx.clock.sleep(assertPollMs);
  }
  ctx.log("chainsaw: assert timed out; the next step is applied anyway");
}

async function configSkyhook(ctx: ActorContext): Promise<void> {
  await ctx.clock.sleep(1000);
  const skyhook: Skyhook = { ...skyhookKind, metadata: { name: skyhookName }, spec: { packages: { dexter }, interruptionBudget: { count: 1 } } };
  await retrying(ctx, () =>
    ctx.client.create({ object: skyhook as KubeObject }).catch((error: unknown) => {
      // A create whose response was lost is done.
      if (!isAlreadyExists(error)) throw error;
    }),
  );
  await assertSettled(ctx);
  // no-interrupt update: a key that no configInterrupt matches.
  await apply(ctx, { spec: { packages: { dexter: { configMap: { "ui.properties": "changed\n" } } } } });
  await assertSettled(ctx);
  // glob update: a glob that also matches the key recorded by the step before, and a change of game.properties.
  const service = { type: "service", services: ["rsyslog"] };
  await apply(ctx, { spec: { packages: { dexter: { configInterrupts: { "*.properties": service }, configMap: { "game.properties": "changed via glob\n" } } } } });
}

/** S1: a Skyhook that says `complete` while a ConfigMap is out of sync, for at most `boundMs`. */
function maskingBounded(boundMs: number) {
  let since: number | undefined;
  return always(`complete but out of sync never lasts over ${boundMs / 1000} s`, (view) => {
    const masking = skyhookOf(view)?.status?.status === "complete" && !configMapsInSync(view);
    if (!masking) {
      since = undefined;
      return true;
    }
    since ??= view.now();
    return view.now() - since <= boundMs;
  });
}

/**
 * S2: an interrupt pod created while config updates are recorded for its package (a config-driven interrupt)
 * needs one of those keys to have changed in the spec generation it runs for.
 */
export function noStaleConfigInterrupt() {
  let generation = 0;
  let lastConfig: Record<string, Record<string, string>> = {};
  let changedNow: Record<string, string[]> = {};
  const seen = new Set<string>();
  return always("no config-driven interrupt without a key changed in this generation", (view) => {
    const skyhook = skyhookOf(view);
    if (skyhook === undefined) return true;
    if (skyhook.metadata.generation !== generation) {
      generation = skyhook.metadata.generation!;
      const config = Object.fromEntries(Object.entries(skyhook.spec.packages).map(([name, pkg]) => [name, pkg.configMap ?? {}]));
      changedNow = Object.fromEntries(Object.entries(config).map(([name, data]) => [name, changedKeys(lastConfig[name] ?? {}, data)]));
      lastConfig = config;
    }
    for (const pod of view.list({ ...podKind, namespace: operatorNamespace, labelSelector: `${labels.stage}=interrupt` })) {
      if (seen.has(pod.metadata.uid!)) continue;
      seen.add(pod.metadata.uid!);
      const name = pod.metadata.labels?.[labels.package] ?? "";
      const updates = skyhook.status?.configUpdates?.[name] ?? [];
      const pkg = skyhook.spec.packages[name];
      if (pkg === undefined || updates.length === 0 || configInterruptsFor(pkg, updates).length === 0) continue;
      if (!updates.some((key) => (changedNow[name] ?? []).includes(key))) return false;
    }
    return true;
  });
}

export default scenario({
  name: "skyhook-config",
  description: "NVIDIA Skyhook: the owned ConfigMap left out of sync behind the completedNodes == nodeCount gate.",
  variants: {
    buggy: { expect: "finding", description: "as reported: a missed gate records nothing and asks for no retry" },
    fixed: { expect: "ok", description: "as landed upstream: a 30 s requeue while a ConfigMap diff waits behind the gate" },
    "always-write-cm": { expect: "ok", description: "option A: write the ConfigMap whenever it differs; the node reset stays gated" },
    "clear-on-generation": { expect: "finding", description: "option C alone: drop recorded config updates when the spec generation changes" },
  },
  params: { stageMs: 3000, startMs: 1000, podStopMsMin: 500, podStopMsMax: 10_000, requeueMs: 2000, pendingSyncMs: 30_000, maxIntervalMs: 600_000, restartDelayMs: 1000 },
  // The kind cluster's worker node is there before the test applies anything (its kubelet reports Ready at start).
  setup: () => [
    skyhookCrd,
    { apiVersion: "v1", kind: "Namespace", metadata: { name: operatorNamespace } },
    { apiVersion: "v1", kind: "Node", metadata: { name: node, labels: { "kubernetes.io/hostname": node } }, spec: {} },
  ],
  externals: () => clusterExternals({ nodes: [node], registry: { "skyhook/dexter:1.2.3": "sha256:d3x7e4", "skyhook/pause:3.9": "sha256:9a05e" } }),
  actors: ({ variant, params }) => {
    if (!(variants as readonly string[]).includes(variant)) throw new Error(`unknown variant ${variant}`);
    const options = { variant: variant as Variant, requeueMs: Number(params.requeueMs), pendingSyncMs: Number(params.pendingSyncMs), maxIntervalMs: Number(params.maxIntervalMs) };
    return [
      stageKubelet({ node, stageMs: Number(params.stageMs), startMs: Number(params.startMs), stopMs: [Number(params.podStopMsMin), Number(params.podStopMsMax)] }),
      defineActor({
        name: "skyhook-operator",
        restartDelayMs: Number(params.restartDelayMs),
        start: (ctx) => runOperator({ client: ctx.client, clock: ctx.clock, log: ctx.log }, options),
      }),
    ];
  },
  workloads: { "config-skyhook": configSkyhook },
  // A stalled kubelet keeps a deleted pod terminating longer (a pause of at most 15 s on top of a stop of at most
  // 10 s stays inside the pod's 30 s grace period); informer events arrive up to 5 s late. Conflicts (409) come
  // from the operator's own optimistic writes, not from injection: the kubelet reads a 409 on its final pod
  // delete as "the pod was replaced" and never retries it, which a real API server only answers for a uid
  // mismatch.
  faults: {
    chance: [1, 40],
    counts: { crash: 1, pause: 1, "delay-watch": 2, "close-watch": 1, "stale-read": 1, "fail-request": 2, "lost-response": 1 },
    pauseMs: [1000, 15_000],
    delayWatchMs: [100, 5000],
    failCodes: [429, 500],
  },
  timing: { faultPhaseMs: 120_000, horizonMs: 900_000, settleWindowMs: 90_000 },
  properties: ({ variant }) => [
    eventually("ConfigMap == spec.packages[p].configMap within 270 s", configMapsInSync, { withinMs: assertTimeoutMs }),
    eventually("idle implies ConfigMap == spec.packages[p].configMap", configMapsInSync),
    maskingBounded(60_000),
    ...(variant === "clear-on-generation" ? [noStaleConfigInterrupt()] : []),
  ],
});
