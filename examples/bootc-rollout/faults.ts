// The scenario's own fault kind: a stale early-boot `bootc status`. During early boot the daemon's first
// read may still describe the deployments of the previous boot (booted = the old image, staged = the new
// one or nothing); its watcher caches that read until the first fsnotify or poll refresh. The explorer
// draws it like any built-in fault, shrinks it, and writes it to replay files.
import { defineFaultKind, rebootFaultKind, type FaultKind } from "settle/sim";
import { bootcNodeKind, hostCellOf, nodeKind, slotLabel, type BootcHost } from "./model.ts";

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
 * Power cycles (the cluster library's `reboot` fault), for nodes outside a reboot slot. Declared by the
 * scenario but not in its budget: the simulated kubelet keeps a reboot request on the Node until it has
 * acted on it, so a request the daemon makes while the host is going down is carried into the next boot and
 * reboots the node once more, which a real `systemctl reboot` does not. Leaving slotted nodes out is not
 * enough (a paused kubelet starts the power cycle late, after the node got its slot), so until the kubelet
 * scopes reboot requests to a boot, power cycles are only planned by hand.
 */
export function powerCycleFaultKind(): FaultKind {
  const base = rebootFaultKind();
  return defineFaultKind({
    ...base,
    targets: (view) =>
      base.targets(view).filter((node) => view.get({ ...bootcNodeKind, name: node })?.metadata.labels?.[slotLabel] !== "true"),
  });
}
