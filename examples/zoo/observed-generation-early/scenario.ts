// Sieve's intermediate-state class: `status.observedGeneration` written before the work it stands for. The user
// resizes a Cache; a crash or a failed request between the controller's two writes leaves the status claiming
// a generation whose ConfigMap was never rendered.
import { defineActor, eventually, scenario, type WorldView } from "settle/sim";
import type { KubeObject } from "settle";
import { configMapKind, crdFor, namespace, namespaceObject, zooTiming } from "../common.ts";
import { cacheKind, configName, runCacheController, type Cache } from "./controller.ts";

const name = "sessions";

function state(view: WorldView): { cache: Cache | undefined; size: string | undefined } {
  const cache = view.get({ ...cacheKind, namespace, name }) as Cache | undefined;
  const cm = view.get({ ...configMapKind, namespace, name: configName(name) }) as { data?: { size?: string } } | undefined;
  return { cache, size: cm?.data?.size };
}

export default scenario({
  name: "zoo-observed-generation-early",
  description: "status.observedGeneration written before the work is done hides the work from every later reconcile.",
  variants: {
    buggy: { expect: "finding", description: "status first, work second, skip when observedGeneration == generation" },
    fixed: { expect: "ok", description: "work first, status last, decide from the world" },
  },
  setup: () => [crdFor("Cache", "caches"), namespaceObject(), { ...cacheKind, metadata: { name, namespace }, spec: { size: "1Gi" } } as KubeObject],
  actors: ({ variant }) => [defineActor({ name: "cache-controller", start: (ctx) => runCacheController(ctx, variant) })],
  workloads: {
    resize: async (ctx) => {
      await ctx.clock.sleep(2000);
      await ctx.client.patch({ ...cacheKind, namespace, name, patchType: "merge", patch: { spec: { size: "4Gi" } } });
    },
  },
  timing: zooTiming,
  summary: (view) => {
    const { cache, size } = state(view);
    return `spec.size ${String(cache?.spec.size)}, configmap size ${String(size)}, observedGeneration ${String(cache?.status?.observedGeneration)} of ${String(cache?.metadata.generation)}`;
  },
  properties: () => [
    eventually("configmap size == spec.size", (view) => {
      const { cache, size } = state(view);
      return size === cache?.spec.size;
    }),
    eventually("status.observedGeneration == generation", (view) => {
      const { cache } = state(view);
      return cache?.status?.observedGeneration === cache?.metadata.generation;
    }),
  ],
});
