// Children deleted by a selector that also matches another owner's children (the reason controller-runtime and
// the ReplicaSet controller check controller references before they delete or adopt). Two Pools share a label;
// one scales down.
import { always, defineActor, eventually, scenario, type SetupWorld, type WorldView } from "settle/sim";
import { controllerReference, type KubeObject } from "settle";
import { configMapKind, crdFor, namespace, namespaceObject, zooTiming } from "../common.ts";
import { memberLabels, memberName, poolKind, runPoolController, type Pool } from "./controller.ts";

const pools = { cache: 3, queue: 2 } as const;

function createPool(world: SetupWorld, name: string, members: number): void {
  const pool = world.create<KubeObject>({ ...poolKind, metadata: { name, namespace }, spec: { members } });
  for (let i = 0; i < members; i++) {
    world.create({ ...configMapKind, metadata: { name: memberName(name, i), namespace, labels: memberLabels(name), ownerReferences: [controllerReference(pool)] }, data: {} });
  }
}

/** Members of `pool` present now, by name. */
function membersOf(view: WorldView, pool: string): Set<string> {
  return new Set(view.list({ ...configMapKind, namespace, labelSelector: `pool=${pool}` }).map((cm) => cm.metadata.name!));
}

function wanted(view: WorldView, pool: string): number {
  return (view.get({ ...poolKind, namespace, name: pool }) as Pool | undefined)?.spec.members ?? 0;
}

export default scenario({
  name: "zoo-selector-overlap",
  description: "A scale-down whose selector matches another owner's children deletes them too.",
  variants: {
    buggy: { expect: "finding", description: "lists members by the label all pools share" },
    fixed: { expect: "ok", description: "lists by its own label and keeps only what it controls" },
  },
  setup: (_ctx, world) => {
    world.create(crdFor("Pool", "pools"));
    world.create(namespaceObject());
    for (const [name, members] of Object.entries(pools)) createPool(world, name, members);
  },
  actors: ({ variant }) => [defineActor({ name: "pool-controller", start: (ctx) => runPoolController(ctx, variant) })],
  workloads: {
    "scale-down-cache": async (ctx) => {
      await ctx.clock.sleep(2000);
      await ctx.client.patch({ ...poolKind, namespace, name: "cache", patchType: "merge", patch: { spec: { members: 1 } } });
    },
  },
  timing: zooTiming,
  summary: (view) => Object.keys(pools).map((p) => `${p} ${membersOf(view, p).size}/${wanted(view, p)}`).join(", "),
  properties: () => {
    // The members seen at the previous step: one that disappears while its pool still wants it was deleted
    // by someone who had no business deleting it.
    let before = new Map<string, Set<string>>();
    return [
      always("a member below its pool's spec.members is never deleted", (view) => {
        const now = new Map(Object.keys(pools).map((p) => [p, membersOf(view, p)] as const));
        const lost = Object.keys(pools).some((p) => {
          const keep = new Set(Array.from({ length: wanted(view, p) }, (_, i) => memberName(p, i)));
          return [...(before.get(p) ?? [])].some((name) => keep.has(name) && !now.get(p)!.has(name));
        });
        before = now;
        return !lost;
      }),
      eventually("every pool has exactly spec.members members", (view) => Object.keys(pools).every((p) => membersOf(view, p).size === wanted(view, p))),
    ];
  },
});
