// Ownership helpers: controller references and `ensureOwned`, which makes an owned object match the state a
// controller wants for it (create it, or update the fields the controller sets), tolerating the races a
// real cluster produces: AlreadyExists (our own earlier create whose response was lost, or a stale cache) and
// Conflict (someone wrote in between).
import { AssertionError, assert } from "../api/assert.ts";
import type { Client } from "../api/client.ts";
import { isAlreadyExists, isConflict, isNotFound } from "../api/errors.ts";
import { controllerOf, keyOf } from "../api/object.ts";
import type { KubeObject, OwnerReference } from "../api/object.ts";
import type { Lister } from "./cache.ts";

/** The object already has a different controller: a retry helps only once that owner lets go. */
export class OwnershipError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "OwnershipError";
  }
}

export function controllerReference(owner: KubeObject): OwnerReference {
  const { name, uid } = owner.metadata;
  assert(name !== undefined, "owner-has-name");
  assert(uid !== undefined, "owner-has-uid");
  return { apiVersion: owner.apiVersion, kind: owner.kind, name, uid, controller: true, blockOwnerDeletion: true };
}

export function isControlledBy(object: KubeObject, owner: KubeObject): boolean {
  const ref = controllerOf(object);
  return ref !== undefined && ref.uid === owner.metadata.uid;
}

/**
 * Returns a copy of `object` whose controller reference is `owner`. Throws `OwnershipError` when another
 * controller owns it. A namespaced owner must be in the object's namespace (the API server's rule).
 */
export function setControllerReference<T extends KubeObject>(owner: KubeObject, object: T): T {
  const ref = controllerReference(owner);
  const ownerNamespace = owner.metadata.namespace;
  assert(ownerNamespace === undefined || ownerNamespace === object.metadata.namespace, "owner-in-object-namespace");
  const existing = controllerOf(object);
  if (existing !== undefined && existing.uid !== ref.uid) {
    throw new OwnershipError(`${object.kind} ${object.metadata.name} is controlled by ${existing.kind} ${existing.name}`);
  }
  const others = (object.metadata.ownerReferences ?? []).filter((r) => r.uid !== ref.uid);
  return { ...object, metadata: { ...object.metadata, ownerReferences: [...others, ref] } };
}

/** True when every field set in `want` has the same value in `have` (arrays compare whole). */
export function isSubset(want: unknown, have: unknown): boolean {
  if (want === have) return true;
  if (typeof want !== "object" || want === null || typeof have !== "object" || have === null) return false;
  if (Array.isArray(want) || Array.isArray(have)) {
    if (!Array.isArray(want) || !Array.isArray(have) || want.length !== have.length) return false;
    return want.every((item, i) => isSubset(item, have[i]) && isSubset(have[i], item));
  }
  const haveRecord = have as Record<string, unknown>;
  return Object.entries(want as Record<string, unknown>).every(([k, v]) => isSubset(v, haveRecord[k]));
}

const metadataFieldsCompared = ["labels", "annotations"] as const;
const topFieldsSkipped = new Set(["apiVersion", "kind", "metadata", "status"]);

/** True when `current` already has everything `desired` asks for, including the controller reference. */
export function matchesDesired(current: KubeObject, desired: KubeObject): boolean {
  for (const field of metadataFieldsCompared) {
    if (!isSubset(desired.metadata[field] ?? {}, current.metadata[field] ?? {})) return false;
  }
  const want = controllerOf(desired);
  if (want !== undefined && controllerOf(current)?.uid !== want.uid) return false;
  return Object.keys(desired).every((k) => topFieldsSkipped.has(k) || isSubset(desired[k], current[k]));
}

/** `current` with the desired fields laid over it (labels and annotations merged, other fields replaced). */
function merged<T extends KubeObject>(current: T, desired: T): T {
  const next: Record<string, unknown> = { ...current };
  for (const [k, v] of Object.entries(desired)) if (!topFieldsSkipped.has(k)) next[k] = v;
  const metadata = {
    ...current.metadata,
    labels: { ...(current.metadata.labels ?? {}), ...(desired.metadata.labels ?? {}) },
    annotations: { ...(current.metadata.annotations ?? {}), ...(desired.metadata.annotations ?? {}) },
    ownerReferences: desired.metadata.ownerReferences ?? current.metadata.ownerReferences ?? [],
  };
  return { ...(next as T), metadata };
}

export interface EnsureOwnedOptions {
  client: Client;
  /** Read the current object from this cache first (cheaper; a stale read ends in a Conflict, then a GET). */
  lister?: Lister;
  /** Attempts after a Conflict. Default 3. */
  conflictRetriesMax?: number;
  fieldManager?: string;
}

export type EnsureOperation = "created" | "updated" | "unchanged";

export interface EnsureResult<T extends KubeObject> {
  object: T;
  operation: EnsureOperation;
}

/**
 * Makes the object `desired` describes exist, controlled by `owner`, with every field `desired` sets.
 * Fields it does not set (server defaults, other writers' labels) are left alone. Throws `OwnershipError`
 * when another controller owns the object, and the last `ApiError` when retries run out.
 */
export async function ensureOwned<T extends KubeObject>(owner: KubeObject, desired: T, options: EnsureOwnedOptions): Promise<EnsureResult<T>> {
  const namespace = desired.metadata.namespace ?? owner.metadata.namespace;
  const want = setControllerReference(owner, { ...desired, metadata: { ...desired.metadata, ...(namespace === undefined ? {} : { namespace }) } });
  const name = want.metadata.name;
  assert(name !== undefined, "ensure-owned-desired-named");
  const ref = { apiVersion: want.apiVersion, kind: want.kind, name, ...(namespace === undefined ? {} : { namespace }) };
  const write = options.fieldManager === undefined ? {} : { fieldManager: options.fieldManager };
  const retriesMax = options.conflictRetriesMax ?? 3;
  let current = options.lister?.get(keyOf({ namespace, name })) as T | undefined;
  for (let attempt = 0; ; attempt++) {
    try {
      if (current === undefined) {
        const created = await options.client.create<T>({ object: want, ...write });
        return { object: created, operation: "created" };
      }
      if (!isControlledBy(current, owner) && controllerOf(current) !== undefined) {
        throw new OwnershipError(`${want.kind} ${name} is controlled by another owner`);
      }
      if (matchesDesired(current, want)) return { object: current, operation: "unchanged" };
      const updated = await options.client.update<T>({ object: merged(current, want), ...write });
      return { object: updated, operation: "updated" };
    } catch (error) {
      if (error instanceof AssertionError || error instanceof OwnershipError) throw error;
      const retryable = isAlreadyExists(error) || isConflict(error) || (isNotFound(error) && current !== undefined);
      if (!retryable || attempt >= retriesMax) throw error;
      // Read the truth from the server, not the cache, before trying again.
      current = await getOrUndefined<T>(options.client, ref);
    }
  }
}

async function getOrUndefined<T extends KubeObject>(client: Client, ref: { apiVersion: string; kind: string; name: string; namespace?: string }): Promise<T | undefined> {
  try {
    return await client.get<T>(ref);
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
}
