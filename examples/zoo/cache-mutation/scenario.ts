// Objects from the informer cache mutated in place (controller-runtime's and client-go's documented rule: objects
// from a lister are shared and must be deep-copied before any change). The user scales a Widget.
import { defineActor, eventually, scenario, type WorldView } from "settle/sim";
import { controllerReference, type KubeObject } from "settle";
import { configMapKind, crdFor, namespace, namespaceObject, zooTiming } from "../common.ts";
import { configName, runWidgetController, widgetKind, type Widget } from "./controller.ts";

const name = "worker";

function replicas(view: WorldView): { want: string; have: string | undefined } {
  const widget = view.get({ ...widgetKind, namespace, name }) as Widget | undefined;
  const cm = view.get({ ...configMapKind, namespace, name: configName(name) }) as { data?: { replicas?: string } } | undefined;
  return { want: String(widget?.spec.replicas), have: cm?.data?.replicas };
}

export default scenario({
  name: "zoo-cache-mutation",
  description: "A controller that edits the object the informer cache handed it, instead of a copy, never updates it.",
  variants: {
    buggy: { expect: "finding", description: "edits the cached ConfigMap in place" },
    fixed: { expect: "ok", description: "edits a deep copy and sends it with the cached resourceVersion" },
  },
  setup: (_ctx, world) => {
    world.create(crdFor("Widget", "widgets"));
    world.create(namespaceObject());
    const widget = world.create<KubeObject>({ ...widgetKind, metadata: { name, namespace }, spec: { replicas: 2 } });
    world.create({ ...configMapKind, metadata: { name: configName(name), namespace, ownerReferences: [controllerReference(widget)] }, data: { replicas: "2" } });
  },
  actors: ({ variant }) => [defineActor({ name: "widget-controller", start: (ctx) => runWidgetController(ctx, variant) })],
  workloads: {
    scale: async (ctx) => {
      await ctx.clock.sleep(2000);
      await ctx.client.patch({ ...widgetKind, namespace, name, patchType: "merge", patch: { spec: { replicas: 5 } } });
    },
  },
  timing: zooTiming,
  summary: (view) => `spec.replicas ${replicas(view).want}, configmap replicas ${String(replicas(view).have)}`,
  properties: () => [eventually("configmap replicas == spec.replicas", (view) => replicas(view).want === replicas(view).have)],
});
