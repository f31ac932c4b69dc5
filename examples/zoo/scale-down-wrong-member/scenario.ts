// A scale-down that removes the wrong member (Sieve and Acto found operators that decommission the wrong
// replica; here the ordinal is compared as a string): a 12-member Ring shrinks to 10.
import { always, defineActor, eventually, scenario, type WorldView } from "settle/sim";
import { controllerReference, type KubeObject } from "settle";
import { configMapKind, crdFor, namespace, namespaceObject, zooTiming } from "../common.ts";
import { memberName, ordinalOf, ringKind, runRingController, type Ring } from "./controller.ts";

const name = "ring";
const initialMembers = 12;

function members(view: WorldView): string[] {
  return view.list({ ...configMapKind, namespace, labelSelector: `ring=${name}` }).map((m) => m.metadata.name!);
}

function wanted(view: WorldView): number {
  return (view.get({ ...ringKind, namespace, name }) as Ring | undefined)?.spec.members ?? 0;
}

export default scenario({
  name: "zoo-scale-down-wrong-member",
  description: "A scale-down that sorts member names as strings removes members the ring still needs.",
  variants: {
    buggy: { expect: "finding", description: "removes the last member by string order" },
    fixed: { expect: "ok", description: "removes the highest ordinal" },
  },
  setup: (_ctx, world) => {
    world.create(crdFor("Ring", "rings"));
    world.create(namespaceObject());
    const ring = world.create<KubeObject>({ ...ringKind, metadata: { name, namespace }, spec: { members: initialMembers } });
    for (let i = 0; i < initialMembers; i++) {
      world.create({ ...configMapKind, metadata: { name: memberName(name, i), namespace, labels: { ring: name }, ownerReferences: [controllerReference(ring)] }, data: {} });
    }
  },
  actors: ({ variant }) => [defineActor({ name: "ring-controller", start: (ctx) => runRingController(ctx, variant) })],
  workloads: {
    "scale-down": async (ctx) => {
      await ctx.clock.sleep(2000);
      await ctx.client.patch({ ...ringKind, namespace, name, patchType: "merge", patch: { spec: { members: 10 } } });
    },
  },
  timing: zooTiming,
  summary: (view) => `members [${members(view).map(ordinalOf).sort((a, b) => a - b).join(",")}] of spec.members ${wanted(view)}`,
  properties: () => [
    always("members 0..spec.members-1 are never removed", (view) => {
      const present = new Set(members(view).map(ordinalOf));
      const n = Math.min(wanted(view), initialMembers);
      return Array.from({ length: n }, (_, i) => i).every((i) => present.has(i));
    }),
    eventually("members are exactly ordinals 0..spec.members-1", (view) => {
      const present = members(view).map(ordinalOf).sort((a, b) => a - b);
      return present.length === wanted(view) && present.every((ordinal, i) => ordinal === i);
    }),
  ],
});
