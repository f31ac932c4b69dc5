// A Widget controller that copies `data.level` of the ConfigMap a Widget names (`spec.settings`) into the
// Widget's `status.level`. It watches ConfigMaps and maps each one to the Widgets that reference it.
//
// - buggy: the mapping returns the Widget's name without its namespace (controller-runtime's map functions
//   return a `reconcile.Request`, and leaving `Namespace` empty compiles fine). The key matches no cached
//   Widget, so a settings change is dropped: the Widget is reconciled again only when the Widget itself changes.
// - fixed: the mapping returns namespace and name, the whole key.
import { Action, defineController, runController, type KubeObject, type PrimaryRef } from "settle";
import type { ActorContext } from "settle/sim";
import { apiVersion, configMapKind } from "../common.ts";

export const widgetKind = { apiVersion, kind: "Widget" } as const;

export interface Widget extends KubeObject {
  spec: { settings: string };
  status?: { level?: string };
}

export async function runWidgetController(ctx: ActorContext, variant: string): Promise<void> {
  const controller = defineController<Widget>({
    name: "widget",
    for: widgetKind,
    watches: [
      {
        ...configMapKind,
        map(cm, mctx): PrimaryRef[] {
          const widgets = mctx.lister<Widget>(widgetKind).list({ namespace: cm.metadata.namespace! });
          const users = widgets.filter((w) => w.spec.settings === cm.metadata.name);
          // The bug: a key without a namespace names a cluster-scoped object that does not exist.
          return users.map((w) => (variant === "buggy" ? { name: w.metadata.name! } : { namespace: w.metadata.namespace!, name: w.metadata.name! }));
        },
      },
    ],
    async reconcile(widget, rctx) {
      const settings = rctx.lister(configMapKind).getByName(widget.spec.settings, widget.metadata.namespace);
      const level = (settings as { data?: { level?: string } } | undefined)?.data?.level;
      if (level === undefined || widget.status?.level === level) return Action.awaitChange();
      await rctx.client.patchStatus({ ...widgetKind, namespace: widget.metadata.namespace!, name: widget.metadata.name!, patchType: "merge", patch: { status: { level } } });
      return Action.awaitChange();
    },
  });
  await runController(controller, { client: ctx.client, clock: ctx.clock, log: ctx.log }).done;
}
