// The objects of the bootc rollout: the two CRDs (BootcNodePool, BootcNode), the host's state (what
// `bootc status` and the kernel would tell), and the small helpers the controller, the daemon, the
// properties and the fault kind share.
import type { KubeObject } from "settle";

export const group = "bootc.settle.dev";
export const poolKind = { apiVersion: `${group}/v1alpha1`, kind: "BootcNodePool" } as const;
export const bootcNodeKind = { apiVersion: `${group}/v1alpha1`, kind: "BootcNode" } as const;
export const nodeKind = { apiVersion: "v1", kind: "Node" } as const;

/**
 * What the pool controller keeps on a BootcNode while it holds a reboot slot: a label (so that the
 * controller can count slots with a cheap, current, selected list) and an annotation.
 */
export const slotLabel = `${group}/in-reboot-slot`;
export const wasCordonedAnnotation = `${group}/was-cordoned`;

/** Reboot tokens the daemon writes start with this (fault reboots start with `fault-`). */
export const daemonRebootPrefix = "bootc-";

export type ImageState = "Staged" | "Booted";

export interface Condition {
  type: string;
  status: "True" | "False";
  reason: string;
}

export interface PoolSpec {
  image: { ref: string };
  rollout: { maxUnavailable: number | string; paused?: boolean };
}

export interface BootcNodePool extends KubeObject {
  spec: PoolSpec;
  status?: { targetDigest?: string; updatedNodes?: number; nodes?: number; slotted?: number };
}

export interface Deployment {
  digest: string;
}

export interface BootcNodeStatus {
  booted?: Deployment | null;
  staged?: Deployment | null;
  rollback?: Deployment | null;
  conditions?: Condition[];
  observedGeneration?: number;
  /** Fixed variant: the approval a reboot used and the boot it was issued from. */
  lastReboot?: { approval: number; bootId: string } | null;
}

export interface BootcNode extends KubeObject {
  spec: { desiredImage: string; desiredImageState: ImageState; rebootApproval?: number };
  status?: BootcNodeStatus;
}

export interface NodeObject extends KubeObject {
  spec?: { unschedulable?: boolean };
  status?: { conditions?: Array<{ type: string; status: string; reason?: string }>; nodeInfo?: { bootID?: string } };
}

/** What `bootc status` reports: digests of the booted, staged and rollback deployments. */
export interface BootcStatus {
  booted: string;
  staged: string | null;
  rollback: string | null;
}

/**
 * The host (external state: it survives the daemon and every reboot). `bootId`, `bootCount` and
 * `lastRebootToken` are the kubelet's; the rest is the bootc side of the machine.
 */
export interface BootcHost {
  bootId: string;
  bootCount: number;
  lastRebootToken?: string;
  [field: string]: unknown;
  booted: string;
  staged: string | null;
  rollback: string | null;
  /** The image a `bootc stage` process is writing now (null when none runs). */
  staging: string | null;
  /** Deployments as they were just before the last reboot (what a stale early-boot read shows). */
  preBoot: BootcStatus | null;
  /** Fault: the first `bootc status` of boot number `staleBootCount` returns `preBoot`. */
  staleBootCount: number | null;
  /** Fault parameter: whether the stale read still shows the staged deployment. */
  staleKeepsStaged: boolean;
  /** The boot count of the last boot whose status has been read once (the stale window is over). */
  statusReadBootCount: number | null;
  /** The boot count during which a `bootc stage` was last killed by a cancel. */
  stageCancelledBootCount: number | null;
  /** Reboots the daemon issued, by the image booted after them (power-cycle faults are not counted). */
  rebootsInto: Record<string, number>;
}

export function initialHost(booted: string): Omit<BootcHost, "bootId" | "bootCount"> {
  return {
    booted,
    staged: null,
    rollback: null,
    staging: null,
    preBoot: null,
    staleBootCount: null,
    staleKeepsStaged: true,
    statusReadBootCount: null,
    stageCancelledBootCount: null,
    rebootsInto: {},
  };
}

/** What a reboot does to the host (the kubelet's `onReboot` hook): the staged deployment becomes booted. */
export function bootStaged<H extends BootcHost>(host: H): H {
  const preBoot: BootcStatus = { booted: host.booted, staged: host.staged, rollback: host.rollback };
  const swapped = host.staged === null ? {} : { booted: host.staged, rollback: host.booted, staged: null };
  const next = { ...host, ...swapped, staging: null, preBoot };
  if (!(host.lastRebootToken ?? "").startsWith(daemonRebootPrefix)) return next;
  const image = next.booted;
  return { ...next, rebootsInto: { ...host.rebootsInto, [image]: (host.rebootsInto[image] ?? 0) + 1 } };
}

export function condition(status: BootcNodeStatus | undefined, type: string): Condition | undefined {
  return status?.conditions?.find((c) => c.type === type);
}

export function isNodeReady(node: NodeObject | undefined): boolean {
  return node?.status?.conditions?.find((c) => c.type === "Ready")?.status === "True";
}

export function isNodeRebooting(node: NodeObject | undefined): boolean {
  const ready = node?.status?.conditions?.find((c) => c.type === "Ready");
  return ready?.status === "False" && ready.reason === "Rebooting";
}

/** `maxUnavailable` as an absolute number: an integer, or a percentage of `total` rounded down, at least 1. */
export function resolveMaxUnavailable(value: number | string, total: number): number {
  if (typeof value === "number") return Math.max(1, Math.floor(value));
  const percent = /^(\d+)%$/.exec(value);
  if (percent !== null) return Math.max(1, Math.floor((Number(percent[1]) * total) / 100));
  const n = Number(value);
  return Number.isInteger(n) && n > 0 ? n : 1;
}

export function hostCellOf(node: string): string {
  return `host/${node}`;
}

const deploymentSchema = { type: "object", nullable: true, properties: { digest: { type: "string" } } };
const conditionsSchema = {
  type: "array",
  items: { type: "object", properties: { type: { type: "string" }, status: { type: "string" }, reason: { type: "string" } } },
};

function crd(plural: string, kind: string, schema: Record<string, unknown>): KubeObject {
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: `${plural}.${group}` },
    spec: {
      group,
      scope: "Cluster",
      names: { plural, singular: kind.toLowerCase(), kind, listKind: `${kind}List` },
      versions: [{ name: "v1alpha1", served: true, storage: true, subresources: { status: {} }, schema: { openAPIV3Schema: schema } }],
    },
  };
}

export const poolCrd = crd("bootcnodepools", "BootcNodePool", {
  type: "object",
  properties: {
    spec: {
      type: "object",
      required: ["image"],
      properties: {
        image: { type: "object", required: ["ref"], properties: { ref: { type: "string" } } },
        rollout: {
          type: "object",
          properties: { maxUnavailable: { "x-kubernetes-int-or-string": true }, paused: { type: "boolean" } },
        },
      },
    },
    status: {
      type: "object",
      properties: { targetDigest: { type: "string" }, updatedNodes: { type: "integer" }, nodes: { type: "integer" }, slotted: { type: "integer" } },
    },
  },
});

export const bootcNodeCrd = crd("bootcnodes", "BootcNode", {
  type: "object",
  properties: {
    spec: {
      type: "object",
      required: ["desiredImage", "desiredImageState"],
      properties: {
        desiredImage: { type: "string" },
        desiredImageState: { type: "string", enum: ["Staged", "Booted"] },
        rebootApproval: { type: "integer", minimum: 0 },
      },
    },
    status: {
      type: "object",
      properties: {
        booted: deploymentSchema,
        staged: deploymentSchema,
        rollback: deploymentSchema,
        conditions: conditionsSchema,
        observedGeneration: { type: "integer" },
        lastReboot: { type: "object", nullable: true, properties: { approval: { type: "integer" }, bootId: { type: "string" } } },
      },
    },
  },
});
