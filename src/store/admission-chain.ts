// The store's admission chain, as kube-apiserver runs its plugins on every write: mutating admission first, in
// registration order, on the object being written; then validating admission, in the same order, on that object
// frozen, so that no validator sees another's changes or makes any. The write pipeline (`MemoryStore`) calls the
// two phases in that order, with the plugins `concerned` answered for the write.
//
// Bounds: the plugins a write concerns are remembered per resource type and kind of write (create, update, update
// of status, delete): at most four lists per resource type the store serves, dropped with the type (a weak map).
import type { WriteOptions } from "../api/client.ts";
import { deepFreeze } from "../api/json.ts";
import type { KubeObject } from "../api/object.ts";
import type { ResourceType } from "../api/resources.ts";
import type { Admission, AdmissionOperation, AdmissionRequest } from "./types.ts";

/** Which part of an object a write addresses: the main resource or its status subresource. */
export type Subresource = "main" | "status";

export class AdmissionChain {
  readonly #plugins: readonly Admission[];
  readonly #byResource = new WeakMap<ResourceType, Map<string, readonly Admission[]>>();

  constructor(plugins: readonly Admission[]) {
    this.#plugins = [...plugins];
  }

  /** How many plugins the store runs (those no write concerns included). */
  get size(): number {
    return this.#plugins.length;
  }

  /**
   * The admission plugins a write concerns, in registration order. Remembered per resource type (a custom kind
   * registered again gets a new one) and kind of write, as `Admission.concerns` answers from those alone.
   */
  concerned(operation: AdmissionOperation, sub: Subresource | undefined, resource: ResourceType): readonly Admission[] {
    if (this.#plugins.length === 0) return this.#plugins;
    let byWrite = this.#byResource.get(resource);
    if (byWrite === undefined) this.#byResource.set(resource, (byWrite = new Map()));
    const key = sub === "status" ? `${operation}/status` : operation;
    let plugins = byWrite.get(key);
    if (plugins === undefined) {
      const status = sub === "status" ? "status" : undefined;
      plugins = this.#plugins.filter((a) => a.concerns === undefined || a.concerns(operation, resource, status));
      byWrite.set(key, plugins);
    }
    return plugins;
  }
}

/** The mutating phase: each concerned plugin's `mutate`, in order, on the object as it is being written. */
export function mutate(plugins: readonly Admission[], operation: AdmissionOperation, sub: Subresource | undefined, resource: ResourceType, object: KubeObject, old: KubeObject | undefined, options: WriteOptions): void {
  for (const admission of plugins) {
    if (admission.mutate === undefined) continue;
    admission.mutate(admissionRequest(operation, sub, resource, object, old, options));
  }
}

/** The validating phase: the object is frozen (it is what will be stored), then each plugin's `validate`, in order. */
export function validate(plugins: readonly Admission[], operation: AdmissionOperation, sub: Subresource | undefined, resource: ResourceType, object: KubeObject, old: KubeObject | undefined, options: WriteOptions): void {
  if (plugins.length === 0) return;
  deepFreeze(object);
  for (const admission of plugins) {
    if (admission.validate === undefined) continue;
    admission.validate(admissionRequest(operation, sub, resource, object, old, options));
  }
}

/**
 * One admission's request, new for each admission so that none sees what another did to the request itself. Built
 * field by field in the order the spread form had (`subresource`, then `oldObject`, only when they apply): this runs
 * twice per write per admission.
 */
function admissionRequest(operation: AdmissionOperation, sub: Subresource | undefined, resource: ResourceType, object: KubeObject, old: KubeObject | undefined, options: WriteOptions): AdmissionRequest {
  const request: AdmissionRequest = { operation, resource, object, dryRun: options.dryRun === true };
  if (sub === "status") request.subresource = sub;
  if (old !== undefined) request.oldObject = old;
  return request;
}
