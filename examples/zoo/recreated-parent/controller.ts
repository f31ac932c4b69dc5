// A Shard controller: each Shard owns `spec.replicas` ConfigMaps named `<shard>-<i>`, each carrying a controller
// owner reference with the Shard's uid. Keyed by name, it treats a child whose owner uid is not its Shard's as a
// leftover of an earlier Shard of the same name (deleted and recreated by a user) and deletes it.
//
// - buggy: compares the child's owner uid with the uid of the Shard in its cache. Its caches are one per kind,
//   each filled by its own list: after a restart the Shard list may be served by an API server cache that lags
//   (kube-apiserver keeps one watch cache per resource, and behind a load balancer each server has its own) while
//   the ConfigMap list is fresh. The cache then pairs the old Shard with the new Shard's children, and the
//   controller deletes the children of a Shard that exists.
// - fixed: before it deletes a child whose owner uid differs from the cached Shard's, it reads the Shard from the
//   API server (a plain GET is never served from a lagging cache) and deletes only when the live Shard's uid
//   differs too; a cache that disagrees with the live Shard just waits for its watch to catch up.
import { Action, defineController, isAlreadyExists, isNotFound, runController, setControllerReference, controllerOf, type KubeObject } from "settle";
import type { ActorContext } from "settle/sim";
import { apiVersion, configMapKind } from "../common.ts";

export const shardKind = { apiVersion, kind: "Shard" } as const;

export interface Shard extends KubeObject {
  spec: { replicas: number };
}

export function childName(shard: string, index: number): string {
  return `${shard}-${index}`;
}

export const shardLabel = "zoo.settle.dev/shard";

export async function runShardController(ctx: ActorContext, variant: string): Promise<void> {
  const controller = defineController<Shard>({
    name: "shard",
    for: shardKind,
    owns: [configMapKind],
    async reconcile(shard, rctx) {
      const name = shard.metadata.name!;
      const namespace = shard.metadata.namespace!;
      const children = rctx.lister(configMapKind).list({ namespace, labelSelector: `${shardLabel}=${name}` });
      let waiting = false;
      for (const child of children) {
        const owner = controllerOf(child)?.uid;
        if (owner === shard.metadata.uid) continue;
        if (variant === "fixed") {
          const live = await rctx.client.get<Shard>({ ...shardKind, namespace, name }).catch((error: unknown) => {
            if (isNotFound(error)) return undefined;
            throw error;
          });
          if (live?.metadata.uid === owner) {
            waiting = true;
            continue;
          }
        }
        try {
          await rctx.client.delete({ ...configMapKind, namespace, name: child.metadata.name!, preconditions: { uid: child.metadata.uid! } });
        } catch (error) {
          if (!isNotFound(error)) throw error;
        }
        waiting = true;
      }
      for (let i = 0; i < shard.spec.replicas; i++) {
        const want = childName(name, i);
        if (children.some((c) => c.metadata.name === want)) continue;
        const child: KubeObject = { ...configMapKind, metadata: { name: want, namespace, labels: { [shardLabel]: name } }, data: { index: String(i) } };
        try {
          await rctx.client.create({ object: setControllerReference(shard, child) });
        } catch (error) {
          // A leftover of the same name not yet gone: its delete event brings this Shard back.
          if (!isAlreadyExists(error)) throw error;
          waiting = true;
        }
      }
      return waiting ? Action.requeueAfter(1000) : Action.awaitChange();
    },
  });
  await runController(controller, { client: ctx.client, clock: ctx.clock, log: ctx.log }).done;
}
