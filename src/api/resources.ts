// Kinds and resources: how a kind maps to its REST resource (plural), its scope and its subresources.
// STUB: signatures fixed; implementation owned by the api-utils helper.

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
  /** Name rule: most kinds use DNS-1123 subdomains; a few (Namespace) use DNS-1123 labels. */
  nameRule: "dns1123-subdomain" | "dns1123-label" | "path-segment";
}

/** kubectl's guess from kind to resource: `Ingress` -> `ingresses`, `Policy` -> `policies`, `ConfigMap` -> `configmaps`. */
export function guessPlural(kind: string): string {
  throw new Error("not implemented");
}
