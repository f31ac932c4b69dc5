// A Pool controller: each Pool owns `spec.members` member ConfigMaps named `<pool>-<i>`, labelled as pool members.
//
// - buggy: to find its members it lists by the label every pool's members share (`component=pool-member`), so
//   the "extra members" it deletes include every other pool's members.
// - fixed: it lists by its own pool label and keeps only the objects it controls (owner reference with its uid),
//   the check Kubernetes' own controllers make before they adopt or delete.
import { Action, defineController, isControlledBy, isNotFound, runController, setControllerReference, isAlreadyExists, type KubeObject } from "settle";
import type { ActorContext } from "settle/sim";
import { apiVersion, configMapKind } from "../common.ts";

export const poolKind = { apiVersion, kind: "Pool" } as const;

export interface Pool extends KubeObject {
  spec: { members: number };
}

export function memberName(pool: string, index: number): string {
  return `${pool}-${index}`;
}

export function memberLabels(pool: string): Record<string, string> {
  return { component: "pool-member", pool };
}

export async function runPoolController(ctx: ActorContext, variant: string): Promise<void> {
  const controller = defineController<Pool>({
    name: "pool",
    for: poolKind,
    owns: [configMapKind],
    async reconcile(pool, rctx) {
      const name = pool.metadata.name!;
      const ns = pool.metadata.namespace!;
      const selector = variant === "buggy" ? "component=pool-member" : `component=pool-member,pool=${name}`;
      const listed = (await rctx.client.list({ ...configMapKind, namespace: ns, labelSelector: selector })).items;
      const members = variant === "buggy" ? listed : listed.filter((cm) => isControlledBy(cm, pool));
      const wanted = new Set(Array.from({ length: pool.spec.members }, (_, i) => memberName(name, i)));
      for (const want of wanted) {
        if (members.some((m) => m.metadata.name === want)) continue;
        const member: KubeObject = { ...configMapKind, metadata: { name: want, namespace: ns, labels: memberLabels(name) }, data: {} };
        try {
          await rctx.client.create({ object: setControllerReference(pool, member) });
        } catch (error) {
          if (!isAlreadyExists(error)) throw error;
        }
      }
      for (const extra of members.filter((m) => !wanted.has(m.metadata.name!))) {
        try {
          await rctx.client.delete({ ...configMapKind, namespace: ns, name: extra.metadata.name!, preconditions: { uid: extra.metadata.uid! } });
        } catch (error) {
          if (!isNotFound(error)) throw error;
        }
      }
      return Action.awaitChange();
    },
  });
  await runController(controller, { client: ctx.client, clock: ctx.clock, log: ctx.log }).done;
}
