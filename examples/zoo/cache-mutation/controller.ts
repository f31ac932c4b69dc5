// A Widget controller that keeps `data.replicas` of its ConfigMap `<name>-config` equal to `spec.replicas`.
//
// - buggy: edits the ConfigMap it got from the informer cache in place and sends it (the Go habit of skipping
//   DeepCopy). In client-go and controller-runtime that silently changes the cache: every later reconcile sees its
//   own unsent edit as the server's state. settle's cache hands out deep-frozen objects, so the edit throws a
//   TypeError where it happens instead; either way the ConfigMap is never updated.
// - fixed: copies the cached object first (DeepCopy) and sends the copy with the cached resourceVersion.
import { Action, defineController, runController, type KubeObject } from "settle";
import type { ActorContext } from "settle/sim";
import { apiVersion, configMapKind } from "../common.ts";

export const widgetKind = { apiVersion, kind: "Widget" } as const;

export interface Widget extends KubeObject {
  spec: { replicas: number };
}

type ConfigMap = KubeObject & { data: Record<string, string> };

export function configName(widget: string): string {
  return `${widget}-config`;
}

export async function runWidgetController(ctx: ActorContext, variant: string): Promise<void> {
  const controller = defineController<Widget>({
    name: "widget",
    for: widgetKind,
    owns: [configMapKind],
    async reconcile(widget, rctx) {
      const cached = rctx.lister<ConfigMap>(configMapKind).getByName(configName(widget.metadata.name!), widget.metadata.namespace);
      const replicas = String(widget.spec.replicas);
      if (cached === undefined || cached.data.replicas === replicas) return Action.awaitChange();
      const desired = variant === "buggy" ? cached : structuredClone(cached);
      desired.data.replicas = replicas;
      // A 409 from a stale copy is an error: retried through the rate limiter once the cache has caught up.
      await rctx.client.update({ object: desired });
      return Action.awaitChange();
    },
  });
  await runController(controller, { client: ctx.client, clock: ctx.clock, log: ctx.log }).done;
}
