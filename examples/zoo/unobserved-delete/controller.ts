// A Site controller: each Site gets a DNS record in a provider outside Kubernetes (the external cell `dns`,
// host -> site uid).
//
// - buggy: removes the record in its informer's delete handler. A Site deleted while the controller is down
//   (restarting after a crash, during a rollout) is never seen deleted: the restarted informer lists a world in
//   which the Site is simply absent, and the record stays forever (Sieve's unobserved-state class).
// - fixed: holds a finalizer on every Site before it creates the record and removes the record before the
//   finalizer, so the deletion waits for the controller, however long it is down.
import { Action, Informer, defineController, runController, type KubeObject } from "settle";
import type { ActorContext, ExternalHandle } from "settle/sim";
import { apiVersion } from "../common.ts";

export const siteKind = { apiVersion, kind: "Site" } as const;
export const finalizer = "zoo.settle.dev/dns-record";

export interface Site extends KubeObject {
  spec: { host: string };
}

export type Dns = Record<string, string>;

function withRecord(site: Site): (records: Dns) => Dns {
  return (records) => ({ ...records, [site.spec.host]: site.metadata.uid! });
}

function withoutRecords(uid: string): (records: Dns) => Dns {
  return (records) => Object.fromEntries(Object.entries(records).filter(([, owner]) => owner !== uid));
}

/** Creates records on add and update and removes them on the delete event: what the bug trusts. */
async function runEventHandlers(ctx: ActorContext, dns: ExternalHandle<Dns>): Promise<void> {
  const informer = new Informer<Site>({ client: ctx.client, clock: ctx.clock, kind: siteKind, resyncMs: 0, log: ctx.log });
  let chain: Promise<void> = Promise.resolve();
  const later = (work: () => Promise<void>) => {
    chain = chain.then(work).catch((error: unknown) => ctx.log("handler failed", { error: String(error) }));
  };
  informer.addHandler({
    add: (site) => later(() => dns.write(withRecord(site))),
    update: (_old, site) => later(() => dns.write((records) => withRecord(site)(withoutRecords(site.metadata.uid!)(records)))),
    delete: (site) => later(() => dns.write(withoutRecords(site.metadata.uid!))),
  });
  await informer.start();
}

async function runFinalizing(ctx: ActorContext, dns: ExternalHandle<Dns>): Promise<void> {
  const controller = defineController<Site>({
    name: "site",
    for: siteKind,
    async reconcile(site, rctx) {
      const ref = { ...siteKind, namespace: site.metadata.namespace!, name: site.metadata.name! };
      const finalizers = site.metadata.finalizers ?? [];
      if (site.metadata.deletionTimestamp !== undefined) {
        if (!finalizers.includes(finalizer)) return Action.awaitChange();
        await dns.write(withoutRecords(site.metadata.uid!));
        const rest = finalizers.filter((f) => f !== finalizer);
        await rctx.client.patch({ ...ref, patchType: "json", patch: [{ op: "test", path: "/metadata/finalizers", value: finalizers }, { op: "replace", path: "/metadata/finalizers", value: rest }] });
        return Action.awaitChange();
      }
      if (!finalizers.includes(finalizer)) {
        await rctx.client.patch({ ...ref, patchType: "merge", patch: { metadata: { finalizers: [...finalizers, finalizer] } } });
      }
      await dns.write((records) => withRecord(site)(withoutRecords(site.metadata.uid!)(records)));
      return Action.awaitChange();
    },
  });
  await runController(controller, { client: ctx.client, clock: ctx.clock, log: ctx.log }).done;
}

export async function runSiteController(ctx: ActorContext, variant: string): Promise<void> {
  const dns = ctx.external<Dns>("dns");
  await (variant === "buggy" ? runEventHandlers(ctx, dns) : runFinalizing(ctx, dns));
}
