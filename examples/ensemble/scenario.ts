// Scenario: the Ensemble operator under SIGKILL. The user scales an Ensemble; the explorer kills the operator
// wherever its schedule and fault budget lead. The level variant must always converge; the delta variant
// loses the rest of a scale-up when a kill lands mid-handler, and then sits idle with the world wrong.
import { always, defineActor, eventually, scenario, type WorldView } from "settle/sim";
import type { KubeObject } from "settle";
import { childName, ensembleKind, runDeltaOperator, runLevelOperator, type Ensemble } from "./operator.ts";

const namespace = "academy-lab";
const ensembleName = "alpha";
const initialVoices = 3;

const crd: KubeObject = {
  apiVersion: "apiextensions.k8s.io/v1",
  kind: "CustomResourceDefinition",
  metadata: { name: "ensembles.academy.settle.dev" },
  spec: {
    group: "academy.settle.dev",
    scope: "Namespaced",
    names: { plural: "ensembles", singular: "ensemble", kind: "Ensemble", listKind: "EnsembleList" },
    versions: [
      {
        name: "v1",
        served: true,
        storage: true,
        subresources: { status: {} },
        schema: {
          openAPIV3Schema: {
            type: "object",
            properties: {
              spec: { type: "object", required: ["voices"], properties: { voices: { type: "integer", minimum: 0, maximum: 64 } } },
              status: { type: "object", properties: { readyVoices: { type: "integer" }, observedGeneration: { type: "integer" } } },
            },
          },
        },
      },
    ],
  },
};

function ensemble(view: WorldView): Ensemble | undefined {
  return view.get({ ...ensembleKind, namespace, name: ensembleName }) as Ensemble | undefined;
}

function childCount(view: WorldView): number {
  return view.list({ apiVersion: "v1", kind: "ConfigMap", namespace, labelSelector: `ensemble=${ensembleName}` }).length;
}

async function setVoices(client: import("settle").Client, voices: number): Promise<void> {
  await client.patch({ ...ensembleKind, namespace, name: ensembleName, patchType: "merge", patch: { spec: { voices } } });
}

export default scenario({
  name: "ensemble",
  description: "An operator that scales child ConfigMaps; delta mode loses work across a SIGKILL.",
  variants: {
    level: { expect: "ok", description: "reconciles to spec.voices on every trigger (the fix)" },
    delta: { expect: "finding", description: "the Update handler creates new - old children (the bug)" },
  },
  // userDelayMs: how long the user waits before acting (the operator starts meanwhile); a drill in real time
  // shortens it.
  params: { slowReconcileMs: 3000, resyncMs: 30_000, restartDelayMs: 2000, userDelayMs: 5000 },
  setup(_ctx, world) {
    world.create(crd);
    world.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: namespace } });
    const owner = world.create<Ensemble>({ ...ensembleKind, metadata: { name: ensembleName, namespace }, spec: { voices: initialVoices } });
    for (let i = 0; i < initialVoices; i++) {
      world.create({
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: {
          name: childName(ensembleName, i),
          namespace,
          labels: { ensemble: ensembleName },
          ownerReferences: [{ apiVersion: owner.apiVersion, kind: owner.kind, name: ensembleName, uid: owner.metadata.uid!, controller: true, blockOwnerDeletion: true }],
        },
        data: { voice: String(i) },
      });
    }
    world.updateStatus({ ...owner, status: { readyVoices: initialVoices, observedGeneration: owner.metadata.generation } });
  },
  actors: ({ variant, params }) => [
    defineActor({
      name: "operator",
      restartDelayMs: Number(params.restartDelayMs),
      start: (ctx) => {
        const options = { slowReconcileMs: Number(params.slowReconcileMs), resyncMs: Number(params.resyncMs), deltaMode: variant === "delta" };
        const octx = { client: ctx.client, clock: ctx.clock, log: ctx.log };
        return options.deltaMode ? runDeltaOperator(octx, options) : runLevelOperator(octx, options);
      },
    }),
  ],
  workloads: {
    "scale-up": async (ctx, { params }) => {
      await ctx.clock.sleep(params.userDelayMs);
      await setVoices(ctx.client, 8);
    },
    "scale-down": async (ctx, { params }) => {
      await ctx.clock.sleep(params.userDelayMs);
      await setVoices(ctx.client, 1);
    },
    "up-then-down": async (ctx, { params }) => {
      await ctx.clock.sleep(params.userDelayMs);
      await setVoices(ctx.client, 8);
      await ctx.clock.sleep(20_000);
      await setVoices(ctx.client, 3);
    },
  },
  faults: { chance: [1, 30], counts: { crash: 2, "stale-read": 1, "delay-watch": 2, "close-watch": 1 } },
  timing: { faultPhaseMs: 60_000, horizonMs: 900_000, settleWindowMs: 90_000 },
  summary: (view) => {
    const e = ensemble(view);
    return `children ${childCount(view)} of spec.voices ${e?.spec.voices ?? "?"}, status.readyVoices ${e?.status?.readyVoices ?? "?"}`;
  },
  properties: () => {
    let voicesMax = initialVoices;
    return [
      always("no overshoot: children <= the most voices ever asked", (view) => {
        voicesMax = Math.max(voicesMax, ensemble(view)?.spec.voices ?? 0);
        return childCount(view) <= voicesMax;
      }),
      eventually("children == spec.voices", (view) => childCount(view) === ensemble(view)?.spec.voices),
      eventually("status.readyVoices == spec.voices", (view) => {
        const e = ensemble(view);
        return e?.status?.readyVoices === e?.spec.voices;
      }),
      eventually("status.observedGeneration == generation", (view) => {
        const e = ensemble(view);
        return e?.status?.observedGeneration === e?.metadata.generation;
      }),
    ];
  },
});
