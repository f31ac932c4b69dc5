// A Fleet controller: each Fleet keeps `spec.replicas` worker ConfigMaps, counted from the informer cache.
//
// - buggy: creates `spec.replicas - count` workers with `generateName`. The cache does not yet hold the
//   controller's own recent creates when the next reconcile runs (a watch event still in flight, a lagging
//   relist after a restart, a create applied whose response was lost), so it creates them again, under new
//   names, and the fleet overshoots. (client-go's ReplicaSet controller keeps "expectations" for this reason.)
// - fixed: gives the workers deterministic names (`<fleet>-<i>` for each missing i): creating one the cache has
//   not caught up with fails with AlreadyExists, which counts as done.
import { Action, defineController, isAlreadyExists, runController, setControllerReference, type KubeObject } from "settle";
import type { ActorContext } from "settle/sim";
import { apiVersion, configMapKind } from "../common.ts";

export const fleetKind = { apiVersion, kind: "Fleet" } as const;

export interface Fleet extends KubeObject {
  spec: { replicas: number };
}

export async function runFleetController(ctx: ActorContext, variant: string): Promise<void> {
  const controller = defineController<Fleet>({
    name: "fleet",
    for: fleetKind,
    owns: [configMapKind],
    async reconcile(fleet, rctx) {
      const ns = fleet.metadata.namespace!;
      const name = fleet.metadata.name!;
      const workers = rctx.lister(configMapKind).list({ namespace: ns, labelSelector: `fleet=${name}` });
      const names = new Set(workers.map((w) => w.metadata.name!));
      for (let i = 0; i < fleet.spec.replicas && names.size < fleet.spec.replicas; i++) {
        const wanted = `${name}-${i}`;
        if (variant === "fixed" && names.has(wanted)) continue;
        const metadata = variant === "buggy" ? { generateName: `${name}-`, namespace: ns, labels: { fleet: name } } : { name: wanted, namespace: ns, labels: { fleet: name } };
        try {
          const created = await rctx.client.create({ object: setControllerReference(fleet, { ...configMapKind, metadata, data: {} } as KubeObject) });
          names.add(created.metadata.name!);
        } catch (error) {
          if (!isAlreadyExists(error)) throw error;
          names.add(wanted);
        }
      }
      return Action.awaitChange();
    },
  });
  await runController(controller, { client: ctx.client, clock: ctx.clock, log: ctx.log }).done;
}
