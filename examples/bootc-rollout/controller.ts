// The pool controller: one BootcNode per Node, the pool's image resolved to a digest and written to every
// BootcNode, and the rollout gate: at most `maxUnavailable` nodes hold a reboot slot; a slotted node is
// cordoned and drained, then approved to reboot (`desiredImageState: Booted`), and uncordoned once it
// reports the target image. The fixed variant also counts approvals (`spec.rebootApproval`), so that the
// daemon can tell a fresh approval from one it has already used.
import assert from "node:assert/strict";
import { Action, defineController, isAlreadyExists, isNotFound, setControllerReference, type Client, type KubeObject, type ReconcileContext } from "settle";
import { cordon, drainOnce, registryCell, type Registry } from "settle/sim";
import {
  bootcNodeKind,
  condition,
  isNodeReady,
  nodeKind,
  poolKind,
  resolveMaxUnavailable,
  slotLabel,
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
  /**
   * At most one pass per this many ms: a pass reads every BootcNode, and in a large pool every node's status
   * change would otherwise bring its own pass. Events in between are coalesced into the next pass. Default 1000.
   */
  passIntervalMsMin?: number;
  /** Reads the registry (external state) to resolve a tag; given by the actor. */
  readRegistry(): Promise<Registry>;
}

interface Pass {
  pool: BootcNodePool;
  target: string;
  nodes: Map<string, NodeObject>;
  /** From the cache: writes use its resourceVersions, so a stale copy fails with a conflict and is retried. */
  bootcNodes: readonly BootcNode[];
  /** What the pass's steps need of `bootcNodes`, read once: a pass at fleet size reads every node otherwise five times. */
  survey: Survey;
  client: Client;
  now: number;
}

/**
 * The BootcNodes of one pass sorted into what each step of the pass looks at, each list in name order. Every
 * step reads the same cached copies, so sorting them once gives each step exactly the nodes its own filter would.
 */
interface Survey {
  /** Not on the target, or approved for a reboot that did not apply: `syncSpecs` rewrites their specs. */
  stale: BootcNode[];
  slotted: BootcNode[];
  /** Out of a slot, on the target and reporting it staged: `fillSlots` may give them a slot. */
  candidates: BootcNode[];
  /** On the target and reporting it booted. */
  updated: number;
}

export function poolController(options: PoolControllerOptions) {
  const drainRetryMs = options.drainRetryMs ?? 2000;
  const passIntervalMsMin = options.passIntervalMsMin ?? 1000;
  let lastPassMs = Number.NEGATIVE_INFINITY;
  return defineController<BootcNodePool>({
    name: "bootc-pool-controller",
    for: poolKind,
    owns: [bootcNodeKind],
    // Every pool cares about every Node (cordons, readiness, new nodes); there is one pool here.
    watches: [{ ...nodeKind, map: () => [{ name: "workers" }] }],
    resyncMs: 0,
    rateLimiter: { baseDelayMs: 500, maxDelayMs: 30_000 },
    async reconcile(pool, ctx) {
      const waitMs = lastPassMs + passIntervalMsMin - ctx.clock.now();
      if (waitMs > 0) return Action.requeueAfter(waitMs);
      lastPassMs = ctx.clock.now();
      const registry = await options.readRegistry();
      const target = registry[pool.spec.image.ref];
      if (target === undefined) return Action.requeueAfter(10_000);
      const bootcNodes = ctx.lister<BootcNode>(bootcNodeKind).list().slice().sort(byName);
      const pass: Pass = {
        pool,
        target,
        nodes: new Map(ctx.lister<NodeObject>(nodeKind).list().map((n) => [n.metadata.name!, n])),
        bootcNodes,
        survey: survey(bootcNodes, target),
        client: ctx.client,
        now: ctx.clock.now(),
      };
      await createMissing(pass);
      if (await syncSpecs(pass)) return Action.awaitChange(); // the next pass sees the new specs
      const freed = await freeSlots(pass);
      const draining = await drainAndApprove(pass, freed, options.countApprovals);
      await fillSlots(pass, freed);
      await writeStatus(pass, ctx);
      return draining ? Action.requeueAfter(drainRetryMs) : Action.awaitChange();
    },
  });
}

/**
 * Name order by UTF-16 code units. Node names are DNS subdomains (lowercase letters, digits, '-', '.'), where
 * this is the order `localeCompare` gives too, at a fraction of its cost: the cache lists them in this order
 * already, and a pass at fleet size sorts thousands of names.
 */
function byName(a: KubeObject, b: KubeObject): number {
  const x = a.metadata.name ?? "";
  const y = b.metadata.name ?? "";
  return x < y ? -1 : x > y ? 1 : 0;
}

function survey(bootcNodes: readonly BootcNode[], target: string): Survey {
  const result: Survey = { stale: [], slotted: [], candidates: [], updated: 0 };
  for (const bn of bootcNodes) {
    const onTarget = bn.spec.desiredImage === target;
    if (!onTarget || didNotApply(bn)) result.stale.push(bn);
    const slotted = isSlotted(bn);
    if (slotted) result.slotted.push(bn);
    if (!onTarget) continue;
    const { upToDate, staged } = reported(bn);
    if (upToDate) result.updated++;
    if (!slotted && staged) result.candidates.push(bn);
  }
  assert(result.stale.length <= bootcNodes.length, "a survey sorts the pass's nodes");
  assert(result.candidates.length + result.slotted.length <= bootcNodes.length, "a candidate holds no slot");
  return result;
}

/** An approval to reboot that the daemon reports did not apply: `syncSpecs` takes it back. */
function didNotApply(bn: BootcNode): boolean {
  if (bn.spec.desiredImageState !== "Booted") return false;
  const degraded = condition(bn.status, "Degraded");
  return degraded?.status === "True" && degraded.reason === "RebootDidNotApply";
}

async function createMissing(pass: Pass): Promise<void> {
  if (pass.bootcNodes.length === pass.nodes.size && pass.bootcNodes.every((b) => pass.nodes.has(b.metadata.name!))) return;
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

/** A new target revokes any approval: the only place `Booted` goes back to `Staged`. Returns whether it wrote. */
async function syncSpecs(pass: Pass): Promise<boolean> {
  let wrote = false;
  for (const bn of pass.survey.stale) {
    await pass.client.update({ object: { ...bn, spec: { ...bn.spec, desiredImage: pass.target, desiredImageState: "Staged" } } });
    wrote = true;
  }
  return wrote;
}

/** What the daemon reports, trusted only once it has seen the current spec. */
function reported(bn: BootcNode): { upToDate: boolean; staged: boolean } {
  const current = bn.status?.observedGeneration === bn.metadata.generation;
  const upToDate = current && bn.status?.booted?.digest === bn.spec.desiredImage;
  const idle = condition(bn.status, "Idle");
  return { upToDate, staged: current && !upToDate && idle?.status === "False" && idle.reason === "Staged" };
}

function isSlotted(bn: BootcNode): boolean {
  return bn.metadata.labels?.[slotLabel] === "true";
}

async function setCordon(client: Client, node: string, unschedulable: boolean): Promise<void> {
  try {
    await cordon(client, node, unschedulable);
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
}

/** Ends the slot of every slotted node that reports the target and is Ready; returns their names. */
async function freeSlots(pass: Pass): Promise<Set<string>> {
  const freed = new Set<string>();
  for (const bn of pass.survey.slotted) {
    if (bn.spec.desiredImage !== pass.target) continue;
    const name = bn.metadata.name!;
    if (!reported(bn).upToDate || !isNodeReady(pass.nodes.get(name))) continue;
    if (bn.metadata.annotations?.[wasCordonedAnnotation] !== "true") await setCordon(pass.client, name, false);
    const patch = { metadata: { labels: { [slotLabel]: null }, annotations: { [wasCordonedAnnotation]: null } } };
    await pass.client.patch({ ...bootcNodeKind, name, patchType: "merge", patch });
    freed.add(name);
  }
  return freed;
}

/** Cordons and drains every slotted node not yet approved, and approves it once drained. Returns whether a drain goes on. */
async function drainAndApprove(pass: Pass, freed: ReadonlySet<string>, countApprovals: boolean): Promise<boolean> {
  let draining = false;
  for (const bn of pass.survey.slotted) {
    const name = bn.metadata.name!;
    if (freed.has(name) || bn.spec.desiredImageState === "Booted" || bn.spec.desiredImage !== pass.target) continue;
    if (pass.nodes.get(name)?.spec?.unschedulable !== true) await setCordon(pass.client, name, true);
    if ((await drainOnce(pass.client, name, pass.now)) > 0) {
      draining = true;
      continue;
    }
    assert(isSlotted(bn), "only a slotted, drained node is approved");
    const approval = countApprovals ? { rebootApproval: (bn.spec.rebootApproval ?? 0) + 1 } : {};
    // An update, not a patch: a stale copy fails with a conflict instead of approving twice.
    await pass.client.update({ object: { ...bn, spec: { ...bn.spec, desiredImageState: "Booted", ...approval } } });
  }
  return draining;
}

/**
 * Slots Staged nodes up to the budget. The count of slots comes from a live, selected list, not the cache:
 * a cache that has not yet seen the last slot written would let the budget be exceeded.
 */
async function fillSlots(pass: Pass, freed: ReadonlySet<string>): Promise<void> {
  if (pass.pool.spec.rollout?.paused === true) return;
  const budget = resolveMaxUnavailable(pass.pool.spec.rollout?.maxUnavailable ?? 1, pass.bootcNodes.length);
  const candidates = pass.survey.candidates;
  const cachedSlots = pass.survey.slotted.filter((bn) => !freed.has(bn.metadata.name!)).length;
  if (candidates.length === 0 || cachedSlots >= budget) return;
  const live = await pass.client.list<BootcNode>({ ...bootcNodeKind, labelSelector: `${slotLabel}=true` });
  const slotted = new Set(live.items.map((bn) => bn.metadata.name!));
  for (const bn of candidates) {
    if (slotted.size >= budget) return;
    const name = bn.metadata.name!;
    if (slotted.has(name)) continue;
    const was = pass.nodes.get(name)?.spec?.unschedulable === true ? "true" : "false";
    const metadata = { ...bn.metadata, labels: { ...bn.metadata.labels, [slotLabel]: "true" }, annotations: { ...bn.metadata.annotations, [wasCordonedAnnotation]: was } };
    await pass.client.update({ object: { ...bn, metadata } });
    slotted.add(name);
    assert(slotted.size <= budget, "slots never exceed the budget");
  }
}

async function writeStatus(pass: Pass, ctx: ReconcileContext): Promise<void> {
  const status = {
    targetDigest: pass.target,
    nodes: pass.bootcNodes.length,
    updatedNodes: pass.survey.updated,
    slotted: pass.survey.slotted.length,
  };
  const current = pass.pool.status ?? {};
  if (current.targetDigest === status.targetDigest && current.nodes === status.nodes && current.updatedNodes === status.updatedNodes && current.slotted === status.slotted) return;
  await ctx.client.patchStatus({ ...poolKind, name: pass.pool.metadata.name!, patchType: "merge", patch: { status } });
}
