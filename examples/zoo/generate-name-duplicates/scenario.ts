// Acting on a cache that has not seen the controller's own writes (Sieve's stale-state class; the reason for
// client-go's expectations): a Fleet scales from 1 to 3 workers created with generateName.
import { always, defineActor, eventually, scenario, type WorldView } from "settle/sim";
import { controllerReference, type KubeObject } from "settle";
import { configMapKind, crdFor, namespace, namespaceObject, zooTiming } from "../common.ts";
import { fleetKind, runFleetController, type Fleet } from "./controller.ts";

const name = "render";

function counts(view: WorldView): { workers: number; replicas: number } {
  const fleet = view.get({ ...fleetKind, namespace, name }) as Fleet | undefined;
  return { workers: view.list({ ...configMapKind, namespace, labelSelector: `fleet=${name}` }).length, replicas: fleet?.spec.replicas ?? 0 };
}

export default scenario({
  name: "zoo-generate-name-duplicates",
  description: "Counting from a cache that lags the controller's own creates overshoots when names are generated.",
  variants: {
    buggy: { expect: "finding", description: "creates replicas - cached count workers with generateName" },
    fixed: { expect: "ok", description: "creates each missing <fleet>-<i>; AlreadyExists counts as done" },
  },
  setup: (_ctx, world) => {
    world.create(crdFor("Fleet", "fleets"));
    world.create(namespaceObject());
    const fleet = world.create<KubeObject>({ ...fleetKind, metadata: { name, namespace }, spec: { replicas: 1 } });
    world.create({ ...configMapKind, metadata: { name: `${name}-0`, namespace, labels: { fleet: name }, ownerReferences: [controllerReference(fleet)] }, data: {} });
  },
  actors: ({ variant }) => [defineActor({ name: "fleet-controller", start: (ctx) => runFleetController(ctx, variant) })],
  workloads: {
    "scale-up": async (ctx) => {
      await ctx.clock.sleep(2000);
      await ctx.client.patch({ ...fleetKind, namespace, name, patchType: "merge", patch: { spec: { replicas: 3 } } });
    },
  },
  timing: zooTiming,
  summary: (view) => `workers ${counts(view).workers} of spec.replicas ${counts(view).replicas}`,
  properties: () => [
    always("workers <= spec.replicas", (view) => counts(view).workers <= counts(view).replicas),
    eventually("workers == spec.replicas", (view) => counts(view).workers === counts(view).replicas),
  ],
});
