// A drift fixed only by a periodic resync that is off (controller-runtime's SyncPeriod and kube-rs issues about
// drift that is never corrected): someone edits the rendered ConfigMap by hand.
import { defineActor, eventually, scenario, type WorldView } from "settle/sim";
import { controllerReference, type KubeObject } from "settle";
import { configMapKind, crdFor, namespace, namespaceObject, zooTiming } from "../common.ts";
import { configName, runWidgetController, widgetKind, type Widget } from "./controller.ts";

const name = "search";

function drift(view: WorldView): { want: string; have: string } {
  const widget = view.get({ ...widgetKind, namespace, name }) as Widget | undefined;
  const cm = view.get({ ...configMapKind, namespace, name: configName(name) }) as { data?: Record<string, string> } | undefined;
  return { want: JSON.stringify(widget?.spec.settings ?? null), have: JSON.stringify(cm?.data ?? null) };
}

export default scenario({
  name: "zoo-resync-off-drift",
  description: "A controller that does not watch what it renders leaves a hand edit in place when its resync is off.",
  variants: {
    buggy: { expect: "finding", description: "watches only Widgets, resync off" },
    fixed: { expect: "ok", description: "owns the ConfigMap, so its changes trigger a reconcile" },
  },
  setup: (_ctx, world) => {
    world.create(crdFor("Widget", "widgets"));
    world.create(namespaceObject());
    const widget = world.create<KubeObject>({ ...widgetKind, metadata: { name, namespace }, spec: { settings: { shards: "3" } } });
    // Rendered already, so the hand edit never races the first render.
    world.create({ ...configMapKind, metadata: { name: configName(name), namespace, ownerReferences: [controllerReference(widget)] }, data: { shards: "3" } });
  },
  actors: ({ variant }) => [defineActor({ name: "widget-controller", start: (ctx) => runWidgetController(ctx, variant) })],
  workloads: {
    "hand-edit": async (ctx) => {
      await ctx.clock.sleep(2000);
      await ctx.client.patch({ ...configMapKind, namespace, name: configName(name), patchType: "merge", patch: { data: { shards: "1" } } });
    },
  },
  timing: zooTiming,
  summary: (view) => `spec.settings ${drift(view).want}, configmap data ${drift(view).have}`,
  properties: () => [eventually("configmap data == spec.settings", (view) => drift(view).want === drift(view).have)],
});
