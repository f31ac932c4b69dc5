// Sieve's stale-state class, as a lost update: a controller writes a whole object built from its informer cache,
// after another writer changed it. Two writers share one ConfigMap: the Widget controller owns `data`, a backup
// tool owns an annotation. The user changes the Widget's color while the tool stamps the ConfigMap.
import { defineActor, eventually, scenario, type WorldView } from "settle/sim";
import type { Client, KubeObject } from "settle";
import { configMapKind, crdFor, namespace, namespaceObject, zooTiming } from "../common.ts";
import { configName, runWidgetController, widgetKind } from "./controller.ts";

const widget = "web";
const stamp = "backup.example.com/last-run";

function configMap(view: WorldView): KubeObject | undefined {
  return view.get({ ...configMapKind, namespace, name: configName(widget) });
}

async function recolor(client: Client, color: string): Promise<void> {
  await client.patch({ ...widgetKind, namespace, name: widget, patchType: "merge", patch: { spec: { color } } });
}

async function stampBackup(client: Client, run: string): Promise<void> {
  await client.patch({ ...configMapKind, namespace, name: configName(widget), patchType: "merge", patch: { metadata: { annotations: { [stamp]: run } } } });
}

export default scenario({
  name: "zoo-stale-update",
  description: "An unconditional update built from a stale cached object drops another writer's annotation.",
  variants: {
    buggy: { expect: "finding", description: "update without resourceVersion from the cache (last writer wins)" },
    fixed: { expect: "ok", description: "update with the cached resourceVersion; 409 Conflict is retried" },
  },
  setup: (_ctx, world) => {
    world.create(crdFor("Widget", "widgets"));
    world.create(namespaceObject());
    const owner = world.create<KubeObject>({ ...widgetKind, metadata: { name: widget, namespace }, spec: { color: "red" } });
    const ownerRef = { apiVersion: owner.apiVersion, kind: owner.kind, name: widget, uid: owner.metadata.uid!, controller: true };
    world.create({ ...configMapKind, metadata: { name: configName(widget), namespace, ownerReferences: [ownerRef] }, data: { color: "red" } });
  },
  actors: ({ variant }) => [defineActor({ name: "widget-controller", start: (ctx) => runWidgetController(ctx, variant) })],
  workloads: {
    // The user and the backup tool act in the same instant, in either order: the controller's cache sees
    // the tool's annotation only when its watch event arrives, which the schedule decides.
    "recolor-while-backup": async (ctx) => {
      await ctx.clock.sleep(2000);
      await recolor(ctx.client, "blue");
      await stampBackup(ctx.client, "run-1");
      await ctx.clock.sleep(2000);
      await stampBackup(ctx.client, "run-2");
      await recolor(ctx.client, "green");
    },
  },
  timing: zooTiming,
  summary: (view) => {
    const cm = configMap(view);
    return `configmap color ${String((cm as { data?: { color?: string } } | undefined)?.data?.color)}, backup stamp ${cm?.metadata.annotations?.[stamp] ?? "missing"}`;
  },
  properties: () => [
    eventually("the backup tool's latest stamp is on the ConfigMap", (view) => configMap(view)?.metadata.annotations?.[stamp] === "run-2"),
    eventually("configmap color == spec.color", (view) => {
      const w = view.get({ ...widgetKind, namespace, name: widget }) as { spec?: { color?: string } } | undefined;
      return (configMap(view) as { data?: { color?: string } } | undefined)?.data?.color === w?.spec?.color;
    }),
  ],
});
