// The Skyhook resource and the helper semantics of NVIDIA Skyhook's operator that the ConfigMap gate depends on:
// which interrupt a package has (`hasInterrupt`), when a node counts as done with a package
// (`isPackageComplete`), which stage comes next (`nextStage`), the keys a ConfigMap edit changed, and the
// per-node package state the operator keeps in a Node annotation.
//
// Written from the public description of the operator (skyhook_types.go, skyhook_controller.go); the glob
// matching of `configInterrupts` keys uses picomatch, as the real operator uses a glob matcher.
import picomatch from "picomatch";
import type { KubeObject } from "settle";

export const skyhookKind = { apiVersion: "skyhook.nvidia.com/v1alpha1", kind: "Skyhook" } as const;
export const configMapKind = { apiVersion: "v1", kind: "ConfigMap" } as const;
export const podKind = { apiVersion: "v1", kind: "Pod" } as const;
export const nodeKind = { apiVersion: "v1", kind: "Node" } as const;

/** The namespace the operator keeps its package ConfigMaps and stage pods in. */
export const operatorNamespace = "skyhook";

export interface Interrupt {
  type: string;
  services?: string[];
}

export interface PackageSpec {
  version: string;
  image: string;
  /** The package's own interrupt (e.g. a reboot), used when no config update is recorded for it. */
  interrupt?: Interrupt;
  /** Glob over ConfigMap keys -> the interrupt a change of a matching key needs. */
  configInterrupts?: Record<string, Interrupt>;
  /** What the owned ConfigMap `<skyhook>-<package>-<version>` must hold. */
  configMap?: Record<string, string>;
}

export type Status = "in_progress" | "complete";
export type Stage = "apply" | "config" | "interrupt" | "post-interrupt";
export type State = "in_progress" | "complete" | "erroring";

export interface PackageState {
  name: string;
  version: string;
  stage: Stage;
  state: State;
}

/** One node's state for one Skyhook: `"<package>|<version>" -> state`. */
export type NodeState = Record<string, PackageState>;

export interface Skyhook extends KubeObject {
  spec: { packages: Record<string, PackageSpec>; interruptionBudget?: { count?: number } };
  status?: {
    status?: Status;
    observedGeneration?: number;
    /** Package -> ConfigMap keys whose change the current config cycle is for. */
    configUpdates?: Record<string, string[]>;
    /** A mirror of every node's annotation, as the real operator reports it. */
    nodeState?: Record<string, NodeState>;
  };
}

export const labels = {
  skyhook: "skyhook.nvidia.com/name",
  package: "skyhook.nvidia.com/package",
  version: "skyhook.nvidia.com/version",
  stage: "skyhook.nvidia.com/stage",
} as const;

export function nodeStateAnnotation(skyhook: string): string {
  return `skyhook.nvidia.com/nodeState_${skyhook}`;
}

export function packageRef(name: string, version: string): string {
  return `${name}|${version}`;
}

export function configMapName(skyhook: string, name: string, version: string): string {
  return `${skyhook}-${name}-${version}`;
}

/** The node's state for this Skyhook; an unreadable annotation counts as none (the real operator errors). */
export function readNodeState(node: KubeObject, skyhook: string): NodeState {
  const text = node.metadata.annotations?.[nodeStateAnnotation(skyhook)];
  if (text === undefined) return {};
  try {
    return JSON.parse(text) as NodeState;
  } catch {
    return {};
  }
}

/** The interrupts the recorded config updates of a package ask for: each key against each glob. */
export function configInterruptsFor(pkg: PackageSpec, updatedKeys: readonly string[]): Interrupt[] {
  const found: Interrupt[] = [];
  for (const [glob, interrupt] of Object.entries(pkg.configInterrupts ?? {})) {
    const matches = picomatch(glob);
    if (updatedKeys.some((key) => matches(key))) found.push(interrupt);
  }
  return found;
}

/**
 * Whether the package has an interrupt stage. With config updates recorded, only a configInterrupt that
 * matches one of them counts; otherwise the package's own interrupt does. A recorded key is never checked
 * against the spec generation it came from: that is the stale-entry half of the bug.
 */
export function hasInterrupt(pkg: PackageSpec, updatedKeys: readonly string[]): boolean {
  if (updatedKeys.length > 0) return configInterruptsFor(pkg, updatedKeys).length > 0;
  return pkg.interrupt !== undefined;
}

export function isPackageComplete(state: PackageState | undefined, interrupt: boolean): boolean {
  if (state === undefined || state.state !== "complete") return false;
  return state.stage === (interrupt ? "post-interrupt" : "config");
}

/** The stage after `stage`, or undefined when the lifecycle is over. */
export function nextStage(stage: Stage, interrupt: boolean): Stage | undefined {
  if (stage === "apply") return "config";
  if (!interrupt) return undefined;
  if (stage === "config") return "interrupt";
  if (stage === "interrupt") return "post-interrupt";
  return undefined;
}

/** Keys whose value differs between two ConfigMap data maps (added and removed keys included), sorted. */
export function changedKeys(before: Readonly<Record<string, string>>, after: Readonly<Record<string, string>>): string[] {
  const keys = new Set([...Object.keys(before), ...Object.keys(after)]);
  return [...keys].filter((key) => before[key] !== after[key]).sort();
}

export function sameData(a: Readonly<Record<string, string>> | undefined, b: Readonly<Record<string, string>> | undefined): boolean {
  return changedKeys(a ?? {}, b ?? {}).length === 0;
}

const interruptSchema = { type: "object", properties: { type: { type: "string" }, services: { type: "array", items: { type: "string" } } } };
const packageStateSchema = {
  type: "object",
  properties: { name: { type: "string" }, version: { type: "string" }, stage: { type: "string" }, state: { type: "string" } },
};

/** The cluster-scoped Skyhook CRD with its status subresource. */
export const skyhookCrd: KubeObject = {
  apiVersion: "apiextensions.k8s.io/v1",
  kind: "CustomResourceDefinition",
  metadata: { name: "skyhooks.skyhook.nvidia.com" },
  spec: {
    group: "skyhook.nvidia.com",
    scope: "Cluster",
    names: { plural: "skyhooks", singular: "skyhook", kind: "Skyhook", listKind: "SkyhookList" },
    versions: [
      {
        name: "v1alpha1",
        served: true,
        storage: true,
        subresources: { status: {} },
        schema: {
          openAPIV3Schema: {
            type: "object",
            properties: {
              spec: {
                type: "object",
                required: ["packages"],
                properties: {
                  interruptionBudget: { type: "object", properties: { count: { type: "integer", minimum: 1 } } },
                  packages: {
                    type: "object",
                    additionalProperties: {
                      type: "object",
                      required: ["version", "image"],
                      properties: {
                        version: { type: "string" },
                        image: { type: "string" },
                        interrupt: interruptSchema,
                        configInterrupts: { type: "object", additionalProperties: interruptSchema },
                        configMap: { type: "object", additionalProperties: { type: "string" } },
                      },
                    },
                  },
                },
              },
              status: {
                type: "object",
                properties: {
                  status: { type: "string" },
                  observedGeneration: { type: "integer" },
                  configUpdates: { type: "object", additionalProperties: { type: "array", items: { type: "string" } } },
                  nodeState: { type: "object", additionalProperties: { type: "object", additionalProperties: packageStateSchema } },
                },
              },
            },
          },
        },
      },
    ],
  },
};
