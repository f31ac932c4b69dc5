// Sieve's unobserved-state class: cleanup that depends on seeing a delete event. The user moves a Site to a new
// host and deletes it half a second later; a controller restart in between hides the delete.
import { defineActor, eventually, scenario, type WorldView } from "settle/sim";
import type { KubeObject } from "settle";
import { crdFor, namespace, namespaceObject, zooTiming } from "../common.ts";
import { runSiteController, siteKind, type Dns } from "./controller.ts";

const name = "shop";

function leaked(view: WorldView): string[] {
  const uids = new Set(view.list({ ...siteKind, namespace }).map((s) => s.metadata.uid!));
  return Object.entries(view.external<Dns>("dns"))
    .filter(([, uid]) => !uids.has(uid))
    .map(([host]) => host);
}

export default scenario({
  name: "zoo-unobserved-delete",
  description: "Cleanup done in a delete handler leaks when the delete happens while the controller is down.",
  variants: {
    buggy: { expect: "finding", description: "removes the DNS record in the informer's delete handler" },
    fixed: { expect: "ok", description: "a finalizer holds the Site until its record is removed" },
  },
  setup: () => [crdFor("Site", "sites"), namespaceObject(), { ...siteKind, metadata: { name, namespace }, spec: { host: "shop.example.com" } } as KubeObject],
  externals: () => ({ dns: {} satisfies Dns }),
  actors: ({ variant }) => [defineActor({ name: "site-controller", start: (ctx) => runSiteController(ctx, variant) })],
  workloads: {
    "move-then-delete": async (ctx) => {
      await ctx.clock.sleep(2000);
      await ctx.client.patch({ ...siteKind, namespace, name, patchType: "merge", patch: { spec: { host: "shop.example.org" } } });
      await ctx.clock.sleep(500);
      await ctx.client.delete({ ...siteKind, namespace, name });
    },
  },
  timing: zooTiming,
  summary: (view) => `sites ${view.list({ ...siteKind, namespace }).length}, leaked records [${leaked(view).join(", ")}]`,
  properties: () => [eventually("no DNS record outlives its Site", (view) => leaked(view).length === 0)],
});
