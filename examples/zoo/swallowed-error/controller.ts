// A Widget controller that creates the ConfigMap `<name>-config` for each Widget.
//
// - buggy: catches the error of its create, logs it and returns "wait for a change", as if logging were
//   handling. A failed create (500, 429, a conflict) is never retried: the Widget waits for a change that
//   never comes (kube-rs and controller-runtime both warn that an error must be returned to be retried).
// - fixed: returns the error, so the work queue retries it with backoff.
import { Action, defineController, isAlreadyExists, runController, setControllerReference, type KubeObject } from "settle";
import type { ActorContext } from "settle/sim";
import { apiVersion, configMapKind } from "../common.ts";

export const widgetKind = { apiVersion, kind: "Widget" } as const;

export function configName(widget: string): string {
  return `${widget}-config`;
}

export async function runWidgetController(ctx: ActorContext, variant: string): Promise<void> {
  const controller = defineController({
    name: "widget",
    for: widgetKind,
    owns: [configMapKind],
    async reconcile(widget, rctx) {
      const ns = widget.metadata.namespace!;
      const name = configName(widget.metadata.name!);
      if (rctx.lister(configMapKind).getByName(name, ns) !== undefined) return Action.awaitChange();
      const child = setControllerReference(widget, { ...configMapKind, metadata: { name, namespace: ns }, data: { owner: widget.metadata.name! } } as KubeObject);
      try {
        await rctx.client.create({ object: child });
      } catch (error) {
        if (isAlreadyExists(error)) return Action.awaitChange();
        if (variant === "fixed") throw error;
        rctx.log("create failed", { error: String(error) });
      }
      return Action.awaitChange();
    },
  });
  await runController(controller, { client: ctx.client, clock: ctx.clock, log: ctx.log }).done;
}
