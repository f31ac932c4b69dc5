// Sieve's stale-state class, as a destructive action on an object the controller read before a long step: the
// user marks a member for retirement and takes the mark back while it drains.
import { always, defineActor, eventually, scenario, type WorldView } from "settle/sim";
import type { KubeObject } from "settle";
import { configMapKind, namespace, namespaceObject, zooTiming } from "../common.ts";
import { runDecommissioner } from "./controller.ts";

const members = ["node-a", "node-b", "node-c"];

function retireMarks(view: WorldView): Map<string, string | undefined> {
  return new Map(view.list({ ...configMapKind, namespace, labelSelector: "role=member" }).map((m) => [m.metadata.name!, m.metadata.labels?.retire]));
}

async function mark(client: import("settle").Client, name: string, retire: string): Promise<void> {
  await client.patch({ ...configMapKind, namespace, name, patchType: "merge", patch: { metadata: { labels: { retire } } } });
}

export default scenario({
  name: "zoo-stale-delete",
  description: "A delete decided on an object read before a long drain removes a member whose retirement was revoked.",
  variants: {
    buggy: { expect: "finding", description: "deletes after the drain without a resourceVersion precondition" },
    fixed: { expect: "ok", description: "deletes with the decided-on resourceVersion as a precondition" },
  },
  setup: () => [namespaceObject(), ...members.map((name) => ({ ...configMapKind, metadata: { name, namespace, labels: { role: "member" } }, data: {} }) as KubeObject)],
  actors: ({ variant }) => [defineActor({ name: "decommissioner", start: (ctx) => runDecommissioner(ctx, variant) })],
  workloads: {
    "retire-then-revoke": async (ctx) => {
      await ctx.clock.sleep(2000);
      await mark(ctx.client, "node-b", "true");
      await mark(ctx.client, "node-c", "true");
      await ctx.clock.sleep(500);
      await mark(ctx.client, "node-b", "false");
    },
  },
  timing: zooTiming,
  summary: (view) => `members [${[...retireMarks(view)].map(([name, retire]) => `${name}${retire === "true" ? " (retiring)" : ""}`).join(", ")}]`,
  properties: () => {
    // The marks at the previous step: a member that disappears must have been marked at the moment it went.
    let before = new Map<string, string | undefined>();
    return [
      always("a member is deleted only while it is marked retire=true", (view) => {
        const now = retireMarks(view);
        const wrong = [...before].some(([name, retire]) => !now.has(name) && retire !== "true");
        before = now;
        return !wrong;
      }),
      eventually("exactly the members not marked for retirement remain", (view) => {
        const now = retireMarks(view);
        return now.size === 2 && now.has("node-a") && now.has("node-b");
      }),
    ];
  },
});
