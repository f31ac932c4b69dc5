// A Widget controller that copies the Widget's `tier` label onto its ConfigMap `<name>-config`, written with its
// own informer and work queue so that it can filter events, as controller-runtime's predicates do.
//
// - buggy: passes an update only when `metadata.generation` changed (GenerationChangedPredicate, the usual way to
//   ignore status writes). A label change does not bump the generation, so the change that matters is dropped.
// - fixed: passes generation changes or label changes (predicate.Or with a label-change predicate).
import { Informer, WorkQueue, exponentialRateLimiter, isNotFound, keyOf, type KubeObject } from "settle";
import type { ActorContext } from "settle/sim";
import { apiVersion, configMapKind } from "../common.ts";

export const widgetKind = { apiVersion, kind: "Widget" } as const;

export function configName(widget: string): string {
  return `${widget}-config`;
}

function passes(variant: string, before: KubeObject, after: KubeObject): boolean {
  const generationChanged = before.metadata.generation !== after.metadata.generation;
  if (variant === "buggy") return generationChanged;
  return generationChanged || JSON.stringify(before.metadata.labels ?? {}) !== JSON.stringify(after.metadata.labels ?? {});
}

async function reconcile(ctx: ActorContext, widget: KubeObject): Promise<void> {
  const tier = widget.metadata.labels?.tier ?? "none";
  const ns = widget.metadata.namespace!;
  const name = configName(widget.metadata.name!);
  try {
    await ctx.client.patch({ ...configMapKind, namespace: ns, name, patchType: "merge", patch: { metadata: { labels: { tier } } } });
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
}

export async function runWidgetController(ctx: ActorContext, variant: string): Promise<void> {
  const informer = new Informer({ client: ctx.client, clock: ctx.clock, kind: widgetKind, resyncMs: 0, log: ctx.log });
  const queue = new WorkQueue<string>({ clock: ctx.clock, rateLimiter: exponentialRateLimiter<string>() });
  informer.addHandler({
    add: (w) => queue.add(keyOf(w.metadata)),
    update: (before, after) => {
      if (passes(variant, before, after)) queue.add(keyOf(after.metadata));
    },
  });
  // The informer and the worker run side by side; either failing fails the process, as in a real controller.
  await Promise.all([informer.start(), work(ctx, informer, queue)]);
}

/** One worker: a key at a time from the queue, retried through the rate limiter when its reconcile fails. */
async function work(ctx: ActorContext, informer: Informer, queue: WorkQueue<string>): Promise<void> {
  for (;;) {
    const key = await queue.get();
    if (key === undefined) return;
    const widget = informer.lister.get(key);
    try {
      if (widget !== undefined) await reconcile(ctx, widget);
      queue.forget(key);
    } catch (error) {
      ctx.log("reconcile failed", { key, error: String(error) });
      queue.addRateLimited(key);
    } finally {
      queue.done(key);
    }
  }
}
