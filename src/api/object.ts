// The object model shared by every layer: Kubernetes objects as plain JSON, typed with the
// definitions of the `kubernetes-types` package rather than a copy of them.
import type { ObjectMeta, OwnerReference, Status, StatusCause, LabelSelector } from "kubernetes-types/meta/v1.js";

export type { ObjectMeta, OwnerReference, Status, StatusCause, LabelSelector };

/** Any Kubernetes object: `apiVersion`, `kind`, `metadata`, and whatever the kind adds (`spec`, `status`, `data`...). */
export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  [field: string]: unknown;
}

/** Names a kind: `{ apiVersion: "apps/v1", kind: "Deployment" }`. */
export interface KindRef {
  apiVersion: string;
  kind: string;
}

/** Names one object. `namespace` is absent for cluster-scoped kinds. */
export interface ObjectRef extends KindRef {
  namespace?: string;
  name: string;
}

export interface GroupVersion {
  /** "" for the core group. */
  group: string;
  version: string;
}

export interface ListMeta {
  resourceVersion: string;
  continue?: string;
  remainingItemCount?: number;
}

export interface ObjectList<T extends KubeObject = KubeObject> {
  apiVersion: string;
  /** `<Kind>List`, as the API server names it. */
  kind: string;
  metadata: ListMeta;
  items: T[];
}

export type WatchEventType = "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK";

export interface WatchEvent<T extends KubeObject = KubeObject> {
  type: WatchEventType;
  /** For DELETED, the last state of the object. For BOOKMARK, only `metadata.resourceVersion` is meaningful. */
  object: T;
}

export function parseApiVersion(apiVersion: string): GroupVersion {
  const slash = apiVersion.indexOf("/");
  if (slash < 0) return { group: "", version: apiVersion };
  return { group: apiVersion.slice(0, slash), version: apiVersion.slice(slash + 1) };
}

export function formatApiVersion(gv: GroupVersion): string {
  return gv.group === "" ? gv.version : `${gv.group}/${gv.version}`;
}

export function refOf(object: KubeObject): ObjectRef {
  const { apiVersion, kind } = object;
  const { name, namespace } = object.metadata;
  if (name === undefined) throw new TypeError(`refOf: ${kind} has no metadata.name`);
  return namespace === undefined ? { apiVersion, kind, name } : { apiVersion, kind, namespace, name };
}

/** The work-queue key of an object, as client-go's `MetaNamespaceKeyFunc` makes it: `namespace/name` or `name`. */
export function keyOf(ref: { namespace?: string | undefined; name?: string | undefined }): string {
  if (ref.name === undefined) throw new TypeError("keyOf: the object has no name");
  return ref.namespace ? `${ref.namespace}/${ref.name}` : ref.name;
}

/** Splits a key made by `keyOf` back into namespace and name. */
export function splitKey(key: string): { namespace?: string; name: string } {
  const slash = key.indexOf("/");
  if (slash < 0) return { name: key };
  return { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}

/** A short human-readable name for an object, for logs and traces: `Kind ns/name`. */
export function describeRef(ref: { kind: string; namespace?: string | undefined; name?: string | undefined }): string {
  return `${ref.kind} ${keyOf({ namespace: ref.namespace, name: ref.name ?? "?" })}`;
}

/** The controller owner reference of an object, if it has one. */
export function controllerOf(object: KubeObject): OwnerReference | undefined {
  return object.metadata.ownerReferences?.find((owner) => owner.controller === true);
}
