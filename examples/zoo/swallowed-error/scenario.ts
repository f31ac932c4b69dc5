// An error logged and swallowed (issue 18's own example: a controller that catches the 500 of its create and
// returns "await change" is clean until a request fails). The user creates two Widgets.
import { defineActor, eventually, scenario, type WorldView } from "settle/sim";
import type { KubeObject } from "settle";
import { configMapKind, crdFor, namespace, namespaceObject, zooTiming } from "../common.ts";
import { configName, runWidgetController, widgetKind } from "./controller.ts";

const widgets = ["orders", "payments"];

function missing(view: WorldView): string[] {
  return view
    .list({ ...widgetKind, namespace })
    .map((w) => w.metadata.name!)
    .filter((w) => view.get({ ...configMapKind, namespace, name: configName(w) }) === undefined);
}

export default scenario({
  name: "zoo-swallowed-error",
  description: "A reconcile that logs a failed create and reports success never retries it.",
  variants: {
    buggy: { expect: "finding", description: "catches the create's error and returns awaitChange" },
    fixed: { expect: "ok", description: "returns the error, so the work queue retries with backoff" },
  },
  setup: () => [crdFor("Widget", "widgets"), namespaceObject()],
  actors: ({ variant }) => [defineActor({ name: "widget-controller", start: (ctx) => runWidgetController(ctx, variant) })],
  workloads: {
    "create-widgets": async (ctx) => {
      for (const name of widgets) {
        await ctx.clock.sleep(1000);
        await ctx.client.create({ object: { ...widgetKind, metadata: { name, namespace }, spec: {} } as KubeObject });
      }
    },
  },
  timing: zooTiming,
  summary: (view) => `widgets without a ConfigMap: [${missing(view).join(", ")}]`,
  properties: () => [eventually("every Widget has its ConfigMap", (view) => missing(view).length === 0)],
});
