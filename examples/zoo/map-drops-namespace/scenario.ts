// A work-queue key that ignores the namespace (controller-runtime and kube-rs issues about requests mapped from
// a watched object without its namespace): the Widget follows its settings ConfigMap until the ConfigMap changes.
import { defineActor, eventually, scenario, type WorldView } from "settle/sim";
import type { KubeObject } from "settle";
import { configMapKind, crdFor, namespace, namespaceObject, zooTiming } from "../common.ts";
import { runWidgetController, widgetKind, type Widget } from "./controller.ts";

const widget = "api";
const settings = "api-settings";

function levels(view: WorldView): { want: string | undefined; have: string | undefined } {
  const cm = view.get({ ...configMapKind, namespace, name: settings }) as { data?: { level?: string } } | undefined;
  const w = view.get({ ...widgetKind, namespace, name: widget }) as Widget | undefined;
  return { want: cm?.data?.level, have: w?.status?.level };
}

export default scenario({
  name: "zoo-map-drops-namespace",
  description: "A watch mapping that drops the namespace from the key loses every change of the watched object.",
  variants: {
    buggy: { expect: "finding", description: "the ConfigMap-to-Widget mapping returns { name } only" },
    fixed: { expect: "ok", description: "the mapping returns { namespace, name }" },
  },
  setup: () => [
    crdFor("Widget", "widgets"),
    namespaceObject(),
    { ...configMapKind, metadata: { name: settings, namespace }, data: { level: "info" } } as KubeObject,
    { ...widgetKind, metadata: { name: widget, namespace }, spec: { settings } } as KubeObject,
  ],
  actors: ({ variant }) => [defineActor({ name: "widget-controller", start: (ctx) => runWidgetController(ctx, variant) })],
  workloads: {
    "change-settings": async (ctx) => {
      await ctx.clock.sleep(2000);
      await ctx.client.patch({ ...configMapKind, namespace, name: settings, patchType: "merge", patch: { data: { level: "debug" } } });
    },
  },
  timing: zooTiming,
  summary: (view) => {
    const { want, have } = levels(view);
    return `settings level ${String(want)}, widget status.level ${String(have)}`;
  },
  properties: () => [eventually("widget status.level == settings data.level", (view) => levels(view).want === levels(view).have)],
});
