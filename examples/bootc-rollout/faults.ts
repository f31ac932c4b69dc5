// The scenario's own fault kind: a stale early-boot `bootc status`. During early boot the daemon's first
// read may still describe the deployments of the previous boot (booted = the old image, staged = the new
// one or nothing); its watcher caches that read until the first fsnotify or poll refresh. The explorer
// draws it like any built-in fault, shrinks it, and writes it to replay files.
import { defineFaultKind, rebootFaultKind, type FaultKind } from "settle/sim";
import { hostCellOf, nodeKind, type BootcHost } from "./model.ts";

export const staleStatusFault = "stale-host-status";

/**
 * The boot whose first read the fault makes stale: the current one while its status has not been read yet
 * (early boot), otherwise the next one. So the fault means "boot k of node n starts with a stale read" at
 * whatever step it is injected, and a shrunk or shifted plan still has it land.
 */
function targetBoot(host: BootcHost): number {
  const early = host.bootCount > 0 && host.statusReadBootCount !== host.bootCount;
  return early ? host.bootCount : host.bootCount + 1;
}

/**
 * Stale host status on any node's coming (or current, early) boot. Every failure seen in the field came
 * after a cancelled stage, so a node whose stage was cancelled in the boot that is ending is drawn three
 * times as often as another.
 */
export function staleStatusFaultKind(): FaultKind {
  return defineFaultKind({
    name: staleStatusFault,
    targets(view) {
      const targets: string[] = [];
      for (const node of view.list(nodeKind).map((n) => n.metadata.name!).sort()) {
        const host = view.external<BootcHost>(hostCellOf(node));
        const cancelledBefore = host.stageCancelledBootCount === targetBoot(host) - 1;
        targets.push(...Array<string>(cancelledBefore ? 3 : 1).fill(node));
      }
      return targets;
    },
    params: (rng) => ({ keepsStaged: rng.chance(1, 2) }),
    apply(sim, fault) {
      const cell = sim.external<BootcHost>(hostCellOf(fault.target));
      const boot = targetBoot(cell.get());
      cell.set({ ...cell.get(), staleBootCount: boot, staleKeepsStaged: fault.keepsStaged !== false });
      const staged = fault.keepsStaged === false ? "staged none" : "staged kept";
      return `boot ${boot} of ${fault.target}: its first bootc status returns the pre-reboot deployments (${staged})`;
    },
  });
}

/**
 * Power cycles: the cluster library's `reboot` fault, on any node, slotted or not, at any time. The kubelet
 * ties every reboot request to the boot it was made in, so a `systemctl reboot` the daemon issues while a power
 * cycle is already taking the host down lapses with that boot instead of rebooting the next one, as on a real
 * host. A power cycle boots whatever is staged, like any reboot, and does not count as the daemon's reboot.
 */
export function powerCycleFaultKind(): FaultKind {
  return rebootFaultKind();
}
