// A Cache controller: each Cache renders `spec.size` into its ConfigMap `<name>-config` and reports
// `status.observedGeneration`, which by convention means "the status describes this generation of the spec".
//
// - buggy: writes `observedGeneration` first and does the work after, and skips a Cache whose
//   `observedGeneration` already equals its generation. A crash or a failed request between the two writes
//   leaves an intermediate state (status says done, work not done) that every later reconcile trusts.
// - fixed: does the work first, writes the status last, and decides from the world, not from its own status.
import { Action, defineController, isAlreadyExists, runController, setControllerReference, type KubeObject } from "settle";
import type { ActorContext } from "settle/sim";
import { apiVersion, configMapKind } from "../common.ts";

export const cacheKind = { apiVersion, kind: "Cache" } as const;

export interface Cache extends KubeObject {
  spec: { size: string };
  status?: { observedGeneration?: number };
}

export function configName(cache: string): string {
  return `${cache}-config`;
}

/** Creates or updates the ConfigMap to `spec.size`; reads it live, so the decision is never made on a stale copy. */
async function render(client: ActorContext["client"], cache: Cache): Promise<void> {
  const ns = cache.metadata.namespace!;
  const name = configName(cache.metadata.name!);
  const desired = setControllerReference(cache, { ...configMapKind, metadata: { name, namespace: ns }, data: { size: cache.spec.size } } as KubeObject);
  try {
    await client.create({ object: desired });
    return;
  } catch (error) {
    if (!isAlreadyExists(error)) throw error;
  }
  await client.patch({ ...configMapKind, namespace: ns, name, patchType: "merge", patch: { data: { size: cache.spec.size } } });
}

export async function runCacheController(ctx: ActorContext, variant: string): Promise<void> {
  const controller = defineController<Cache>({
    name: "cache",
    for: cacheKind,
    owns: [configMapKind],
    async reconcile(cache, rctx) {
      const ref = { ...cacheKind, namespace: cache.metadata.namespace!, name: cache.metadata.name!, patchType: "merge" as const };
      const observed = { status: { observedGeneration: cache.metadata.generation } };
      if (variant === "buggy") {
        if (cache.status?.observedGeneration === cache.metadata.generation) return Action.awaitChange();
        await rctx.client.patchStatus({ ...ref, patch: observed });
        await render(rctx.client, cache);
        return Action.awaitChange();
      }
      await render(rctx.client, cache);
      if (cache.status?.observedGeneration !== cache.metadata.generation) await rctx.client.patchStatus({ ...ref, patch: observed });
      return Action.awaitChange();
    },
  });
  await runController(controller, { client: ctx.client, clock: ctx.clock, log: ctx.log }).done;
}
