// An event filter that drops the change that matters (controller-runtime issues about GenerationChangedPredicate
// hiding label and annotation changes): the user moves a Widget to another tier with a label.
import { defineActor, eventually, scenario, type WorldView } from "settle/sim";
import type { KubeObject } from "settle";
import { configMapKind, crdFor, namespace, namespaceObject, zooTiming } from "../common.ts";
import { configName, runWidgetController, widgetKind } from "./controller.ts";

const name = "frontend";

function tiers(view: WorldView): { want: string | undefined; have: string | undefined } {
  const widget = view.get({ ...widgetKind, namespace, name });
  const cm = view.get({ ...configMapKind, namespace, name: configName(name) });
  return { want: widget?.metadata.labels?.tier, have: cm?.metadata.labels?.tier };
}

export default scenario({
  name: "zoo-generation-filter",
  description: "A generation-changed event filter drops a label change the controller must act on.",
  variants: {
    buggy: { expect: "finding", description: "updates pass only when metadata.generation changed" },
    fixed: { expect: "ok", description: "updates pass when the generation or the labels changed" },
  },
  setup: (_ctx, world) => {
    world.create(crdFor("Widget", "widgets"));
    world.create(namespaceObject());
    world.create({ ...widgetKind, metadata: { name, namespace, labels: { tier: "silver" } }, spec: { replicas: 1 } } as KubeObject);
    world.create({ ...configMapKind, metadata: { name: configName(name), namespace, labels: { tier: "silver" } }, data: {} } as KubeObject);
  },
  actors: ({ variant }) => [defineActor({ name: "widget-controller", start: (ctx) => runWidgetController(ctx, variant) })],
  workloads: {
    "relabel-tier": async (ctx) => {
      await ctx.clock.sleep(2000);
      await ctx.client.patch({ ...widgetKind, namespace, name, patchType: "merge", patch: { metadata: { labels: { tier: "gold" } } } });
    },
  },
  timing: zooTiming,
  summary: (view) => `widget tier ${String(tiers(view).want)}, configmap tier ${String(tiers(view).have)}`,
  properties: () => [eventually("configmap tier == widget tier", (view) => tiers(view).want === tiers(view).have)],
});
