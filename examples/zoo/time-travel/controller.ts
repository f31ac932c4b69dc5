// A Gateway controller: each Gateway gets one public address from an address manager outside Kubernetes (the
// external cell `ipam`, a list of allocations tagged with the owner's uid) and records it in `status.address`.
//
// - buggy: takes "no `status.address` in my cache" to mean "no address allocated". The cache is not the world:
//   after a restart its first list may be served by a lagging API server cache from before the status write
//   (time travel), and a crash between the allocation and the status write leaves no status at all. Either
//   way it allocates a second address, which nobody releases.
// - fixed: looks in the address manager for an allocation tagged with the Gateway's uid before it allocates
//   (what cloud controllers do with resource tags), and records the one it finds.
import { Action, defineController, runController, type KubeObject } from "settle";
import type { ActorContext } from "settle/sim";
import { apiVersion } from "../common.ts";

export const gatewayKind = { apiVersion, kind: "Gateway" } as const;

export interface Gateway extends KubeObject {
  status?: { address?: string };
}

export interface Allocation {
  address: string;
  owner: string;
}

export async function runGatewayController(ctx: ActorContext, variant: string): Promise<void> {
  const ipam = ctx.external<Allocation[]>("ipam");
  const controller = defineController<Gateway>({
    name: "gateway",
    for: gatewayKind,
    async reconcile(gateway, rctx) {
      if (gateway.status?.address !== undefined) return Action.awaitChange();
      const uid = gateway.metadata.uid!;
      let address = variant === "fixed" ? (await ipam.read()).find((a) => a.owner === uid)?.address : undefined;
      if (address === undefined) {
        let allocated = "";
        await ipam.write((all) => {
          allocated = `203.0.113.${all.length + 10}`;
          return [...all, { address: allocated, owner: uid }];
        });
        address = allocated;
      }
      const ref = { ...gatewayKind, namespace: gateway.metadata.namespace!, name: gateway.metadata.name! };
      await rctx.client.patchStatus({ ...ref, patchType: "merge", patch: { status: { address } } });
      return Action.awaitChange();
    },
  });
  await runController(controller, { client: ctx.client, clock: ctx.clock, log: ctx.log }).done;
}
