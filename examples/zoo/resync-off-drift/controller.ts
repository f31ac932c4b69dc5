// A Widget controller that keeps the ConfigMap `<name>-config` equal to `spec.settings`.
//
// - buggy: it watches only Widgets and counts on a periodic resync to undo changes made to the ConfigMap by
//   anyone else, but its resync is off (0, as many controllers set it to save API traffic). A hand edit of the
//   ConfigMap stays until the Widget itself changes.
// - fixed: it owns the ConfigMap, so any change to it wakes the reconcile (the level-triggered answer to drift;
//   a resync is only a safety net).
import { Action, defineController, isAlreadyExists, runController, setControllerReference, type KubeObject } from "settle";
import type { ActorContext } from "settle/sim";
import { apiVersion, configMapKind } from "../common.ts";

export const widgetKind = { apiVersion, kind: "Widget" } as const;

export interface Widget extends KubeObject {
  spec: { settings: Record<string, string> };
}

export function configName(widget: string): string {
  return `${widget}-config`;
}

export async function runWidgetController(ctx: ActorContext, variant: string): Promise<void> {
  const controller = defineController<Widget>({
    name: "widget",
    for: widgetKind,
    owns: variant === "buggy" ? [] : [configMapKind],
    resyncMs: 0,
    async reconcile(widget, rctx) {
      const ns = widget.metadata.namespace!;
      const name = configName(widget.metadata.name!);
      const desired = setControllerReference(widget, { ...configMapKind, metadata: { name, namespace: ns }, data: widget.spec.settings } as KubeObject);
      try {
        await rctx.client.create({ object: desired });
        return Action.awaitChange();
      } catch (error) {
        if (!isAlreadyExists(error)) throw error;
      }
      const current = await rctx.client.get<KubeObject & { data?: Record<string, string> }>({ ...configMapKind, namespace: ns, name });
      if (JSON.stringify(current.data ?? {}) === JSON.stringify(widget.spec.settings)) return Action.awaitChange();
      await rctx.client.update({ object: { ...current, data: widget.spec.settings } });
      return Action.awaitChange();
    },
  });
  await runController(controller, { client: ctx.client, clock: ctx.clock, log: ctx.log }).done;
}
