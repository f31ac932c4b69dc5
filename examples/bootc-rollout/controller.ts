// The pool controller: one BootcNode per Node, the pool's image resolved to a digest and written to every
// BootcNode, and the rollout gate: at most `maxUnavailable` nodes hold a reboot slot; a slotted node is
// cordoned and drained, then approved to reboot (`desiredImageState: Booted`), and uncordoned once it
// reports the target image. The fixed variant also counts approvals (`spec.rebootApproval`), so that the
// daemon can tell a fresh approval from one it has already used.
import { Action, defineController, isAlreadyExists, isNotFound, setControllerReference, type Client, type KubeObject, type ReconcileContext } from "settle";
import { cordon, drainOnce, registryCell, type Registry } from "settle/sim";
import {
  bootcNodeKind,
  condition,
  isNodeReady,
  nodeKind,
  poolKind,
  resolveMaxUnavailable,
  slotAnnotation,
  wasCordonedAnnotation,
  type BootcNode,
  type BootcNodePool,
  type NodeObject,
} from "./model.ts";

export interface PoolControllerOptions {
  /** Count approvals in `spec.rebootApproval` (the fixed variant). */
  countApprovals: boolean;
  /** Re-check a drain this often while pods are leaving. Default 2000. */
  drainRetryMs?: number;
  /** Reads the registry (external state) to resolve a tag; given by the actor. */
  readRegistry(): Promise<Registry>;
}

interface Pass {
  pool: BootcNodePool;
  target: string;
  nodes: Map<string, NodeObject>;
  bootcNodes: BootcNode[];
  client: Client;
  now: number;
}

export function poolController(options: PoolControllerOptions) {
  const drainRetryMs = options.drainRetryMs ?? 2000;
  return defineController<BootcNodePool>({
    name: "bootc-pool-controller",
    for: poolKind,
    owns: [bootcNodeKind],
    // Every pool cares about every Node (cordons, readiness, new nodes); there is one pool here.
    watches: [{ ...nodeKind, map: () => [{ name: "workers" }] }],
    resyncMs: 0,
    rateLimiter: { baseDelayMs: 500, maxDelayMs: 30_000 },
    async reconcile(pool, ctx) {
      const registry = await options.readRegistry();
      const target = registry[pool.spec.image.ref];
      if (target === undefined) return Action.requeueAfter(10_000);
      const pass: Pass = {
        pool,
        target,
        nodes: new Map(ctx.lister<NodeObject>(nodeKind).list().map((n) => [n.metadata.name!, n])),
        // A live list, not the cache: a slot decision on a cache that has not yet seen the last slot would
        // exceed the budget.
        bootcNodes: (await ctx.client.list<BootcNode>(bootcNodeKind)).items.sort(byName),
        client: ctx.client,
        now: ctx.clock.now(),
      };
      await createMissing(pass);
      await syncSpecs(pass);
      await freeSlots(pass);
      const draining = await fillAndDrainSlots(pass, options.countApprovals);
      await writeStatus(pass, ctx);
      return draining ? Action.requeueAfter(drainRetryMs) : Action.awaitChange();
    },
  });
}

function byName(a: KubeObject, b: KubeObject): number {
  return (a.metadata.name ?? "").localeCompare(b.metadata.name ?? "");
}

async function createMissing(pass: Pass): Promise<void> {
  const have = new Set(pass.bootcNodes.map((b) => b.metadata.name));
  for (const name of [...pass.nodes.keys()].sort()) {
    if (have.has(name)) continue;
    const object: BootcNode = { ...bootcNodeKind, metadata: { name }, spec: { desiredImage: pass.target, desiredImageState: "Staged" } };
    try {
      await pass.client.create({ object: setControllerReference(pass.pool, object) });
    } catch (error) {
      if (!isAlreadyExists(error)) throw error;
    }
  }
}

/** A new target revokes any approval: the only place `Booted` goes back to `Staged`. */
async function syncSpecs(pass: Pass): Promise<void> {
  for (const bn of pass.bootcNodes) {
    const degraded = condition(bn.status, "Degraded");
    const didNotApply = degraded?.status === "True" && degraded.reason === "RebootDidNotApply" && bn.spec.desiredImageState === "Booted";
    if (bn.spec.desiredImage === pass.target && !didNotApply) continue;
    await pass.client.update({ object: { ...bn, spec: { ...bn.spec, desiredImage: pass.target, desiredImageState: "Staged" } } });
  }
}

/** What the daemon reports, trusted only once it has seen the current spec. */
function reported(bn: BootcNode): { upToDate: boolean; staged: boolean } {
  const current = bn.status?.observedGeneration === bn.metadata.generation;
  const upToDate = current && bn.status?.booted?.digest === bn.spec.desiredImage;
  const idle = condition(bn.status, "Idle");
  return { upToDate, staged: current && !upToDate && idle?.status === "False" && idle.reason === "Staged" };
}

function isSlotted(bn: BootcNode): boolean {
  return bn.metadata.annotations?.[slotAnnotation] === "true";
}

async function freeSlots(pass: Pass): Promise<void> {
  for (const bn of pass.bootcNodes) {
    if (!isSlotted(bn) || bn.spec.desiredImage !== pass.target) continue;
    const node = pass.nodes.get(bn.metadata.name!);
    if (!reported(bn).upToDate || !isNodeReady(node)) continue;
    if (bn.metadata.annotations?.[wasCordonedAnnotation] !== "true") await setCordon(pass.client, bn.metadata.name!, false);
    await pass.client.patch({
      ...bootcNodeKind,
      name: bn.metadata.name!,
      patchType: "merge",
      patch: { metadata: { annotations: { [slotAnnotation]: null, [wasCordonedAnnotation]: null } } },
    });
    bn.metadata = { ...bn.metadata, annotations: {} };
  }
}

async function setCordon(client: Client, node: string, unschedulable: boolean): Promise<void> {
  try {
    await cordon(client, node, unschedulable);
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
}

/** Slots Staged nodes up to the budget, and drains then approves every slotted node. Returns whether a drain is running. */
async function fillAndDrainSlots(pass: Pass, countApprovals: boolean): Promise<boolean> {
  const total = pass.bootcNodes.length;
  const budget = resolveMaxUnavailable(pass.pool.spec.rollout?.maxUnavailable ?? 1, total);
  const slottedBefore = pass.bootcNodes.filter(isSlotted);
  let slotted = slottedBefore.length;
  for (const bn of pass.bootcNodes) {
    if (pass.pool.spec.rollout?.paused === true || slotted >= budget) break;
    if (isSlotted(bn) || bn.spec.desiredImage !== pass.target || !reported(bn).staged) continue;
    const node = pass.nodes.get(bn.metadata.name!);
    const was = node?.spec?.unschedulable === true ? "true" : "false";
    await pass.client.patch({
      ...bootcNodeKind,
      name: bn.metadata.name!,
      patchType: "merge",
      patch: { metadata: { annotations: { [slotAnnotation]: "true", [wasCordonedAnnotation]: was } } },
    });
    slotted += 1;
  }
  // Nodes slotted in this pass are drained in the next one (the annotation's event brings it), with a fresh copy.
  let draining = false;
  for (const bn of slottedBefore) {
    if (bn.spec.desiredImageState === "Booted" || bn.spec.desiredImage !== pass.target) continue;
    const name = bn.metadata.name!;
    if (pass.nodes.get(name)?.spec?.unschedulable !== true) await setCordon(pass.client, name, true);
    const left = await drainOnce(pass.client, name, pass.now);
    if (left > 0) {
      draining = true;
      continue;
    }
    const approval = countApprovals ? { rebootApproval: (bn.spec.rebootApproval ?? 0) + 1 } : {};
    // An update, not a patch: a stale cache fails with a conflict instead of approving twice.
    await pass.client.update({ object: { ...bn, spec: { ...bn.spec, desiredImageState: "Booted", ...approval } } });
  }
  return draining;
}

async function writeStatus(pass: Pass, ctx: ReconcileContext): Promise<void> {
  const status = {
    targetDigest: pass.target,
    nodes: pass.bootcNodes.length,
    updatedNodes: pass.bootcNodes.filter((bn) => bn.spec.desiredImage === pass.target && reported(bn).upToDate).length,
    slotted: pass.bootcNodes.filter(isSlotted).length,
  };
  const current = pass.pool.status ?? {};
  if (current.targetDigest === status.targetDigest && current.nodes === status.nodes && current.updatedNodes === status.updatedNodes && current.slotted === status.slotted) return;
  await ctx.client.patchStatus({ ...poolKind, name: pass.pool.metadata.name!, patchType: "merge", patch: { status } });
}

export type { Registry };
export { registryCell };
