// A TypeScript scenario running the client-go fixture through `goActor` of settle/sim (its folder resolved from the
// current directory, the repository's root in the test).
import { eventually, goActor, scenario, type WorldView } from "settle/sim";

const children = (view: WorldView) => view.list({ apiVersion: "v1", kind: "ConfigMap", namespace: "default", labelSelector: "child-of" }).length;
const parents = (view: WorldView) => view.list({ apiVersion: "v1", kind: "ConfigMap", namespace: "default", labelSelector: "role=parent" }).length;

export default scenario({
  name: "go-ts",
  variants: { level: { expect: "ok" } },
  setup: () => [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "a", namespace: "default", labels: { role: "parent" } } }],
  actors: () => goActor({ name: "op", dir: "test/go/fixtures/clientgo" }),
  workloads: {
    add: async (ctx) => {
      await ctx.clock.sleep(500);
      await ctx.client.create({ object: { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "b", namespace: "default", labels: { role: "parent" } } } });
    },
  },
  properties: () => [eventually("every parent has a child", (view) => children(view) === parents(view))],
});
