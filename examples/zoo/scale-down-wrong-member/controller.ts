// A Ring controller: a Ring of `spec.members` members, ConfigMaps `<ring>-<ordinal>`, scaled the way a
// StatefulSet is: up by adding the next ordinals, down by removing the highest, so members 0..n-1 (which hold
// the data and are what clients are configured with) stay.
//
// - buggy: picks the members to remove from the end of the list sorted by name. As strings, "ring-10" sorts
//   before "ring-2", so from 12 members down to 10 it removes ring-8 and ring-9 and keeps ring-10 and ring-11.
// - fixed: sorts by the ordinal as a number.
import { Action, defineController, isAlreadyExists, isNotFound, runController, setControllerReference, type KubeObject } from "settle";
import type { ActorContext } from "settle/sim";
import { apiVersion, configMapKind } from "../common.ts";

export const ringKind = { apiVersion, kind: "Ring" } as const;

export interface Ring extends KubeObject {
  spec: { members: number };
}

export function memberName(ring: string, ordinal: number): string {
  return `${ring}-${ordinal}`;
}

export function ordinalOf(name: string): number {
  return Number(name.slice(name.lastIndexOf("-") + 1));
}

export async function runRingController(ctx: ActorContext, variant: string): Promise<void> {
  const controller = defineController<Ring>({
    name: "ring",
    for: ringKind,
    owns: [configMapKind],
    async reconcile(ring, rctx) {
      const ns = ring.metadata.namespace!;
      const ringName = ring.metadata.name!;
      const listed = await rctx.client.list({ ...configMapKind, namespace: ns, labelSelector: `ring=${ringName}` });
      const names = listed.items.map((m) => m.metadata.name!);
      names.sort(variant === "buggy" ? undefined : (a, b) => ordinalOf(a) - ordinalOf(b));
      for (let i = names.length; i < ring.spec.members; i++) {
        const member = { ...configMapKind, metadata: { name: memberName(ringName, i), namespace: ns, labels: { ring: ringName } }, data: {} } as KubeObject;
        try {
          await rctx.client.create({ object: setControllerReference(ring, member) });
        } catch (error) {
          if (!isAlreadyExists(error)) throw error;
        }
      }
      // Remove one member at a time, the last of the sorted list, as a careful decommission would.
      if (names.length > ring.spec.members) {
        try {
          await rctx.client.delete({ ...configMapKind, namespace: ns, name: names[names.length - 1]! });
        } catch (error) {
          if (!isNotFound(error)) throw error;
        }
        return Action.requeueAfter(0);
      }
      return Action.awaitChange();
    },
  });
  await runController(controller, { client: ctx.client, clock: ctx.clock, log: ctx.log }).done;
}
