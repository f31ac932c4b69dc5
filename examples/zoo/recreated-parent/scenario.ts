// Sieve's stale-state class where one kind's cache is older than another's: a Shard is deleted and recreated under
// the same name, and a controller keyed by name tells its children from the old Shard's leftovers by owner uid.
// Only a restart whose Shard list is served from before the recreation while its ConfigMap list is fresh pairs the
// old Shard with the new Shard's children.
import { always, defineActor, eventually, scenario, type WorldView } from "settle/sim";
import { controllerOf, controllerReference, type KubeObject } from "settle";
import { configMapKind, crdFor, namespace, namespaceObject, zooTiming } from "../common.ts";
import { childName, runShardController, shardKind, shardLabel, type Shard } from "./controller.ts";

const name = "orders";
const replicas = 2;

function shardOf(view: WorldView): Shard | undefined {
  return view.get({ ...shardKind, namespace, name }) as Shard | undefined;
}

/** The uids of the children owned by the Shard that exists now. */
function childrenOfLiveShard(view: WorldView): Set<string> {
  const uid = shardOf(view)?.metadata.uid;
  const children = view.list({ ...configMapKind, namespace, labelSelector: `${shardLabel}=${name}` });
  return new Set(children.filter((c) => uid !== undefined && controllerOf(c)?.uid === uid).map((c) => c.metadata.uid!));
}

export default scenario({
  name: "zoo-recreated-parent",
  description: "A controller that trusts its cached parent's uid deletes a recreated parent's children after a per-kind stale relist.",
  variants: {
    buggy: { expect: "finding", description: "deletes a child whose owner uid differs from the cached Shard's" },
    fixed: { expect: "ok", description: "confirms with a live read of the Shard before it deletes" },
  },
  setup: (_ctx, world) => {
    world.create(crdFor("Shard", "shards"));
    world.create(namespaceObject());
    const shard = world.create<KubeObject>({ ...shardKind, metadata: { name, namespace }, spec: { replicas } });
    for (let i = 0; i < replicas; i++) {
      const metadata = { name: childName(name, i), namespace, labels: { [shardLabel]: name }, ownerReferences: [controllerReference(shard)] };
      world.create({ ...configMapKind, metadata, data: { index: String(i) } });
    }
  },
  actors: ({ variant }) => [defineActor({ name: "shard-controller", start: (ctx) => runShardController(ctx, variant) })],
  workloads: {
    "recreate-shard": async (ctx) => {
      await ctx.clock.sleep(1000);
      await ctx.client.delete({ ...shardKind, namespace, name });
      await ctx.client.create({ object: { ...shardKind, metadata: { name, namespace }, spec: { replicas } } as KubeObject });
    },
  },
  timing: zooTiming,
  summary: (view) => `shard ${shardOf(view)?.metadata.uid ?? "none"}, its children ${childrenOfLiveShard(view).size}/${replicas}`,
  properties: () => {
    // The live Shard's children at the previous step: one gone while the same Shard still exists was deleted by
    // someone who had no business deleting it (the garbage collector deletes only the children of a gone Shard).
    let before: { shard: string | undefined; children: Set<string> } = { shard: undefined, children: new Set() };
    return [
      always("a child of a live Shard is never deleted", (view) => {
        const now = { shard: shardOf(view)?.metadata.uid, children: childrenOfLiveShard(view) };
        const lost = now.shard !== undefined && now.shard === before.shard && [...before.children].some((uid) => !now.children.has(uid));
        before = now;
        return !lost;
      }),
      eventually("the Shard has spec.replicas children of its own", (view) => childrenOfLiveShard(view).size === replicas),
    ];
  },
});
