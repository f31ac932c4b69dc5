// The pool controller: one BootcNode per Node, the pool's image resolved to a digest and written to every
// BootcNode, and the rollout gate: at most `maxUnavailable` nodes hold a reboot slot; a slotted node is
// cordoned and drained, then approved to reboot (`desiredImageState: Booted`), and uncordoned once it
// reports the target image. The fixed variant also counts approvals (`spec.rebootApproval`), so that the
// daemon can tell a fresh approval from one it has already used.
import assert from "node:assert/strict";
import { Action, defineController, isAlreadyExists, isNotFound, setControllerReference, type Client, type ReconcileContext } from "settle";
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
  /** From the cache, in name order (see `survey`); looked up with `nodeOf`. */
  nodes: readonly NodeObject[];
  /** From the cache, in name order: writes use its resourceVersions, so a stale copy fails with a conflict and is retried. */
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
  /** Every Node has its BootcNode and no BootcNode is left without a Node. */
  complete: boolean;
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
      const bootcNodes = ctx.lister<BootcNode>(bootcNodeKind).list();
      const nodes = ctx.lister<NodeObject>(nodeKind).list();
      const pass: Pass = {
        pool,
        target,
        nodes,
        bootcNodes,
        survey: survey(bootcNodes, nodes, target),
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

/** The pass's copy of a Node, by binary search: a pass looks up only the nodes it acts on. */
function nodeOf(pass: Pass, name: string): NodeObject | undefined {
  let low = 0;
  let high = pass.nodes.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (pass.nodes[middle]!.metadata.name! < name) low = middle + 1;
    else high = middle;
  }
  const node = pass.nodes[low];
  return node?.metadata.name === name ? node : undefined;
}

/**
 * Sorts the pass's nodes into a `Survey`. The pass works in name order: a lister lists in key order, which for
 * cluster-scoped objects is name order by UTF-16 code units, and for node names (DNS subdomains: lowercase
 * letters, digits, '-', '.') that is the order `localeCompare` gives too. Sorting again cost every pass thousands
 * of comparisons at fleet size, so the survey only checks the order, on the names it compares anyway.
 */
function survey(bootcNodes: readonly BootcNode[], nodes: readonly NodeObject[], target: string): Survey {
  const result: Survey = { stale: [], slotted: [], candidates: [], updated: 0, complete: bootcNodes.length === nodes.length };
  let ordered = true;
  let last = "";
  let lastNode = "";
  for (let i = 0; i < bootcNodes.length; i++) {
    const bn = bootcNodes[i]!;
    const name = bn.metadata.name!;
    const node = i < nodes.length ? nodes[i]!.metadata.name! : "";
    ordered &&= i === 0 || (last < name && (node === "" || lastNode < node));
    result.complete &&= node === name;
    last = name;
    lastNode = node;
    classify(result, bn, target);
  }
  assert(ordered, "a lister lists in name order");
  assert(result.candidates.length + result.slotted.length <= bootcNodes.length, "a candidate holds no slot");
  return result;
}

/** What a pass needs to know of one BootcNode for one target. */
interface Facts {
  target: string;
  stale: boolean;
  slotted: boolean;
  upToDate: boolean;
  staged: boolean;
}

/**
 * Facts by cached copy. A cached copy is frozen, so its facts for a target never change; most nodes are unchanged
 * from one pass to the next, and reading every copy's fields again was most of a pass's cost at fleet size.
 */
const factsByCopy = new WeakMap<BootcNode, Facts>();

function factsOf(bn: BootcNode, target: string): Facts {
  const known = factsByCopy.get(bn);
  if (known !== undefined && known.target === target) return known;
  assert(Object.isFrozen(bn), "facts are kept only for copies that cannot change");
  const onTarget = bn.spec.desiredImage === target;
  const { upToDate, staged } = onTarget ? reported(bn) : { upToDate: false, staged: false };
  const facts: Facts = { target, stale: !onTarget || didNotApply(bn), slotted: isSlotted(bn), upToDate, staged };
  factsByCopy.set(bn, facts);
  return facts;
}

function classify(result: Survey, bn: BootcNode, target: string): void {
  const facts = factsOf(bn, target);
  if (facts.stale) result.stale.push(bn);
  if (facts.slotted) result.slotted.push(bn);
  if (facts.upToDate) result.updated++;
  if (!facts.slotted && facts.staged) result.candidates.push(bn);
}

/** An approval to reboot that the daemon reports did not apply: `syncSpecs` takes it back. */
function didNotApply(bn: BootcNode): boolean {
  if (bn.spec.desiredImageState !== "Booted") return false;
  const degraded = condition(bn.status, "Degraded");
  return degraded?.status === "True" && degraded.reason === "RebootDidNotApply";
}

async function createMissing(pass: Pass): Promise<void> {
  if (pass.survey.complete) return;
  const have = new Set(pass.bootcNodes.map((b) => b.metadata.name));
  for (const name of pass.nodes.map((n) => n.metadata.name!)) {
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
    if (!reported(bn).upToDate || !isNodeReady(nodeOf(pass, name))) continue;
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
    if (nodeOf(pass, name)?.spec?.unschedulable !== true) await setCordon(pass.client, name, true);
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
    const was = nodeOf(pass, name)?.spec?.unschedulable === true ? "true" : "false";
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
