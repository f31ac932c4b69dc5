// The scenario's own fault kind: a stale early-boot `bootc status`. During early boot the daemon's first
// read may still describe the deployments of the previous boot (booted = the old image, staged = the new
// one or nothing); its watcher caches that read until the first fsnotify or poll refresh. The explorer
// draws it like any built-in fault, shrinks it, and writes it to replay files.
import { defineFaultKind, type FaultKind, type WorldView } from "settle/sim";
import { hostCellOf, isNodeRebooting, nodeKind, type BootcHost, type NodeObject } from "./model.ts";

export const staleStatusFault = "stale-host-status";

/** The boot whose first read the fault would make stale: the one starting (or about to start) on the node, if any. */
function targetBoot(view: WorldView, node: string): number | undefined {
  const host = view.external<BootcHost>(hostCellOf(node));
  const current = host.statusReadBootCount !== host.bootCount;
  if (current && host.bootCount > 0) return host.bootCount;
  if (isNodeRebooting(view.get({ ...nodeKind, name: node }) as NodeObject | undefined)) return host.bootCount + 1;
  return undefined;
}

/**
 * Stale host status, targeting nodes in (or going into) early boot. Every failure seen in the field came
 * after a cancelled stage, so such a node is drawn three times as often as another.
 */
export function staleStatusFaultKind(): FaultKind {
  return defineFaultKind({
    name: staleStatusFault,
    targets(view) {
      const targets: string[] = [];
      for (const node of view.list(nodeKind).map((n) => n.metadata.name!).sort()) {
        const boot = targetBoot(view, node);
        if (boot === undefined) continue;
        const host = view.external<BootcHost>(hostCellOf(node));
        const cancelledBefore = host.stageCancelledBootCount === boot - 1;
        targets.push(...Array<string>(cancelledBefore ? 3 : 1).fill(node));
      }
      return targets;
    },
    params: (rng) => ({ keepsStaged: rng.chance(1, 2) }),
    apply(sim, fault) {
      const boot = targetBoot(sim.view, fault.target);
      if (boot === undefined) return "skipped: not in early boot";
      const cell = sim.external<BootcHost>(hostCellOf(fault.target));
      cell.set({ ...cell.get(), staleBootCount: boot, staleKeepsStaged: fault.keepsStaged !== false });
      const staged = fault.keepsStaged === false ? "staged none" : "staged kept";
      return `boot ${boot} of ${fault.target}: the first bootc status returns the pre-reboot deployments (${staged})`;
    },
  });
}
