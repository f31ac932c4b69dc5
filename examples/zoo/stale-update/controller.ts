// A Widget controller that renders `spec.color` into a ConfigMap it shares with another writer: a backup tool
// stamps an annotation on the same ConfigMap.
//
// - buggy: copies the ConfigMap from its informer cache, sets `data`, and sends an unconditional update (the
//   resourceVersion removed "to avoid conflicts"). When the cache lags behind the other writer, the update
//   replaces the whole object with the stale copy and the annotation is gone for good: nobody writes it again.
// - fixed: sends the cached resourceVersion. A stale copy gets 409 Conflict, the reconcile is retried after the
//   cache has caught up, and the update carries the other writer's fields.
import { Action, defineController, isNotFound, runController, type KubeObject } from "settle";
import type { ActorContext } from "settle/sim";
import { apiVersion, configMapKind } from "../common.ts";

export const widgetKind = { apiVersion, kind: "Widget" } as const;

export interface Widget extends KubeObject {
  spec: { color: string };
}

export function configName(widget: string): string {
  return `${widget}-config`;
}

export async function runWidgetController(ctx: ActorContext, variant: string): Promise<void> {
  const controller = defineController<Widget>({
    name: "widget",
    for: widgetKind,
    owns: [configMapKind],
    async reconcile(widget, rctx) {
      const cached = rctx.lister(configMapKind).getByName(configName(widget.metadata.name!), widget.metadata.namespace);
      if (cached === undefined) return Action.awaitChange();
      if ((cached as { data?: Record<string, string> }).data?.color === widget.spec.color) return Action.awaitChange();
      const metadata = { ...cached.metadata };
      // The bug: dropping the resourceVersion turns "update this version" into "replace whatever is there".
      if (variant === "buggy") delete metadata.resourceVersion;
      try {
        await rctx.client.update({ object: { ...cached, metadata, data: { color: widget.spec.color } } });
      } catch (error) {
        if (isNotFound(error)) return Action.awaitChange();
        throw error; // A 409 is retried through the rate limiter, by when the cache has the newer object.
      }
      return Action.awaitChange();
    },
  });
  await runController(controller, { client: ctx.client, clock: ctx.clock, log: ctx.log }).done;
}
