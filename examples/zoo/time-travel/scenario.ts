// Sieve's stale-state class in its time-travel form, and its intermediate-state twin: the controller's record of
// what it did outside Kubernetes lives in a status its cache may not show. The user creates one Gateway.
import { always, defineActor, eventually, scenario, type WorldView } from "settle/sim";
import type { KubeObject } from "settle";
import { crdFor, namespace, namespaceObject, zooTiming } from "../common.ts";
import { gatewayKind, runGatewayController, type Allocation, type Gateway } from "./controller.ts";

const name = "edge";

function allocations(view: WorldView): readonly Allocation[] {
  return view.external<Allocation[]>("ipam");
}

export default scenario({
  name: "zoo-time-travel",
  description: "A controller that trusts its cached status as the record of an outside allocation allocates twice.",
  variants: {
    buggy: { expect: "finding", description: "allocates whenever its cached status has no address" },
    fixed: { expect: "ok", description: "looks up the allocation tagged with the Gateway's uid first" },
  },
  setup: () => [crdFor("Gateway", "gateways"), namespaceObject()],
  externals: () => ({ ipam: [] satisfies Allocation[] }),
  actors: ({ variant }) => [defineActor({ name: "gateway-controller", start: (ctx) => runGatewayController(ctx, variant) })],
  workloads: {
    "create-gateway": async (ctx) => {
      await ctx.clock.sleep(1000);
      await ctx.client.create({ object: { ...gatewayKind, metadata: { name, namespace }, spec: {} } as KubeObject });
    },
  },
  timing: zooTiming,
  summary: (view) => {
    const gateway = view.get({ ...gatewayKind, namespace, name }) as Gateway | undefined;
    return `allocations [${allocations(view).map((a) => a.address).join(", ")}], status.address ${String(gateway?.status?.address)}`;
  },
  properties: () => [
    always("at most one address per Gateway", (view) => new Set(allocations(view).map((a) => a.owner)).size === allocations(view).length),
    eventually("the Gateway's status.address is its allocation", (view) => {
      const gateway = view.get({ ...gatewayKind, namespace, name }) as Gateway | undefined;
      const mine = allocations(view).filter((a) => a.owner === gateway?.metadata.uid);
      return mine.length === 1 && gateway?.status?.address === mine[0]!.address;
    }),
  ],
});
