// Kinds and resources: how a kind maps to its REST resource (plural), its scope and its subresources.
import type { NameRule } from "./validation.ts";

export interface ResourceType {
  group: string;
  version: string;
  kind: string;
  /** Lower-case plural, the REST resource name: `configmaps`. */
  plural: string;
  singular: string;
  listKind: string;
  namespaced: boolean;
  /** Writes to the main resource ignore `status`; `status` is written through the status subresource. */
  statusSubresource: boolean;
  shortNames: string[];
  /** Field selector labels this kind supports beyond `metadata.name` and `metadata.namespace`. */
  fieldLabels: string[];
  /** Returns the values of every supported field label for one object. */
  fieldsOf?: (object: import("./object.ts").KubeObject) => Record<string, string>;
  /** Discovery categories (`all` makes `kubectl get all` include the kind); none when absent. */
  categories?: string[];
  /** Discovery verbs when not the full set (ComponentStatus: get, list; Namespace: no deletecollection). */
  verbs?: string[];
  /** Served `/scale` subresource (Deployment, ReplicaSet, StatefulSet, ReplicationController, CRDs that declare one). */
  scaleSubresource?: boolean;
  /**
   * A custom resource's `/scale`, from its CRD version's `subresources.scale`: the field paths (`.spec.replicas`) of
   * the desired and observed replica counts and of the selector (a string). Built-in kinds use their own fields.
   */
  scalePaths?: { specReplicas: string; statusReplicas: string; labelSelector?: string };
  /** Name rule: most kinds use DNS-1123 subdomains; Namespace a DNS-1123 label, Service a DNS-1035 label. */
  nameRule: NameRule;
}

/** Kinds whose plural is their singular (apimachinery keeps the same list, for the same reason). */
const unpluralizedSuffixes = ["endpoints"] as const;

/**
 * kubectl's guess from kind to resource: `Ingress` -> `ingresses`, `Policy` -> `policies`, `ConfigMap` -> `configmaps`.
 *
 * These are exactly apimachinery's `UnsafeGuessKindToResource` rules, wrong English included (`Gateway` ->
 * `gatewaies`, `Box` -> `boxs`), because clients that guess (client-go's fake clients, kubectl for unknown kinds)
 * guess this way, and settle must address a kind the way they do. Kinds with a known plural (built-ins, CRDs'
 * `spec.names.plural`) never go through this.
 */
export function guessPlural(kind: string): string {
  if (kind === "") return "";
  const singular = kind.toLowerCase();
  if (unpluralizedSuffixes.some((suffix) => singular.endsWith(suffix))) return singular;
  if (singular.endsWith("s")) return `${singular}es`;
  if (singular.endsWith("y")) return `${singular.slice(0, -1)}ies`;
  return `${singular}s`;
}

/** The singular resource name kubectl derives from a kind: its lower-case form. */
export function guessSingular(kind: string): string {
  return kind.toLowerCase();
}
