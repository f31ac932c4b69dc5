// A decommission controller: a member (a ConfigMap labelled `role=member`) marked `retire=true` is drained (its
// data moved elsewhere, which takes a second) and then deleted.
//
// - buggy: deletes the member it read before the drain. If the mark was taken back meanwhile, or the object it
//   read was already stale (a lagging cache, a relist served from an old revision after a restart), it deletes
//   a member that nobody retires.
// - fixed: deletes with a resourceVersion precondition, the version it decided on. Any change since then makes
//   the delete fail with 409 Conflict, and the retry decides again from the newer object (the precondition is
//   what Kubernetes' own controllers use to delete only what they looked at).
import { Action, defineController, isConflict, isNotFound, runController, type KubeObject } from "settle";
import type { ActorContext } from "settle/sim";
import { configMapKind } from "../common.ts";

export const drainMs = 1000;

export async function runDecommissioner(ctx: ActorContext, variant: string): Promise<void> {
  const controller = defineController<KubeObject>({
    name: "decommission",
    for: { ...configMapKind, labelSelector: "role=member" },
    async reconcile(member, rctx) {
      if (member.metadata.labels?.retire !== "true") return Action.awaitChange();
      await rctx.clock.sleep(drainMs);
      const ref = { ...configMapKind, namespace: member.metadata.namespace!, name: member.metadata.name! };
      const preconditions = variant === "buggy" ? { uid: member.metadata.uid! } : { uid: member.metadata.uid!, resourceVersion: member.metadata.resourceVersion! };
      try {
        await rctx.client.delete({ ...ref, preconditions });
      } catch (error) {
        if (isNotFound(error)) return Action.awaitChange();
        // A changed member: decide again once the cache has the newer version.
        if (isConflict(error)) return Action.requeueAfter(100);
        throw error;
      }
      return Action.awaitChange();
    },
  });
  await runController(controller, { client: ctx.client, clock: ctx.clock, log: ctx.log }).done;
}
