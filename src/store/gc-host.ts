// What the garbage collector and the namespace and CRD cleanup controllers see of the store (`GcHost`): objects by
// location, by uid, by namespace and by CRD, and writes that go back through the store's write pipeline, as the real
// controllers read through informers and write through the API. Kept apart from the pipeline, which only tells it
// about each committed write (`indexUid`).
//
// Invariants:
// - The uid index holds exactly the live objects: a uid joins when its object is created and leaves when it is
//   deleted (an update keeps the uid, which the pipeline never changes).
// - A terminating namespace's scan position only moves forward (nothing can be created in it), so emptying it
//   visits each key once.
//
// Bounds: one uid entry per live object; one scan position per namespace terminating (two while its content goes).
import type { DeleteOptions, PropagationPolicy } from "../api/client.ts";
import type { KubeObject, ObjectRef } from "../api/object.ts";
import { crdInfo, validateCrd } from "./crd.ts";
import { isDeleting, type GcHost, type Located } from "./gc.ts";
import { lowerBound } from "./sorted-keys.ts";
import type { KindState, Registry } from "./registry.ts";
import { liveObject } from "./version.ts";

/** The store's writes the controllers make: an update as the store's own (system) write, and a delete. */
export interface GcWrites {
  update(next: KubeObject): void;
  delete(options: DeleteOptions): void;
}

export class StoreGcHost implements GcHost {
  readonly #registry: Registry;
  readonly #namespaces: KindState;
  readonly #writes: GcWrites;
  readonly #uids = new Map<string, { state: KindState; key: string }>();
  /** Where the namespace controller's scans of terminating namespaces stand (see `firstInNamespace`). */
  readonly #namespaceScans = new Map<string, { stateId: string; key: string } | "done">();

  constructor(registry: Registry, namespaces: KindState, writes: GcWrites) {
    this.#registry = registry;
    this.#namespaces = namespaces;
    this.#writes = writes;
  }

  /** Keeps the uid index current after a committed write of `key`, whose live object went from `before` to `after`. */
  indexUid(uid: string, state: KindState, key: string, before: KubeObject | undefined, after: KubeObject | undefined): void {
    if (after === undefined) this.#uids.delete(uid);
    else if (before === undefined) this.#uids.set(uid, { state, key });
  }

  at(loc: string): Located | undefined {
    const bar = loc.indexOf("|");
    const state = this.#registry.byId(loc.slice(0, bar));
    return state === undefined ? undefined : locate(state, loc.slice(bar + 1));
  }

  byUid(uid: string): Located | undefined {
    const where = this.#uids.get(uid);
    return where === undefined ? undefined : locate(where.state, where.key);
  }

  ofCrd(crd: KubeObject): Located[] {
    if (validateCrd(crd).length > 0) return [];
    const info = crdInfo(crd);
    const state = this.#registry.byId(`${info.group}/${info.kind}`);
    if (state === undefined) return [];
    return state.sortedKeys().map((key) => locate(state, key)).filter((l): l is Located => l !== undefined);
  }

  knows(apiVersion: string, kind: string): boolean {
    try {
      this.#registry.lookup({ apiVersion, kind });
      return true;
    } catch {
      return false;
    }
  }

  update(next: KubeObject): void {
    this.#writes.update(next);
  }

  remove(target: Located, policy: PropagationPolicy): void {
    this.#writes.delete({ ...refOf(target.object), propagationPolicy: policy });
  }

  namespace(name: string): Located | undefined {
    return locate(this.#namespaces, name);
  }

  crdOf(state: KindState): Located | undefined {
    const name = state.custom?.crdName;
    return name === undefined ? undefined : locate(this.#registry.lookup({ apiVersion: "apiextensions.k8s.io/v1", kind: "CustomResourceDefinition" }).state, name);
  }

  /**
   * `GcHost.firstInNamespace`. A terminating namespace only loses content: nothing may be created in it, and an
   * object being deleted stays so until it is gone. So the first answer of each kind can only move forward, and each
   * scan resumes where the last one for the same namespace (by uid) stopped: a namespace of n objects is emptied in
   * O(n) key visits, not O(n) per deletion (10,000 objects took 16 s).
   */
  firstInNamespace(namespace: Located, which: "active" | "live"): Located | undefined {
    const meta = namespace.object.metadata;
    const terminating = meta.deletionTimestamp !== undefined && meta.deletionTimestamp !== null;
    const scanKey = `${meta.uid ?? ""}|${which}`;
    const from = terminating ? this.#namespaceScans.get(scanKey) : undefined;
    if (from === "done") return undefined;
    const prefix = `${meta.name ?? ""}/`;
    const states = this.#registry.all();
    // A kind gone since (its CRD deleted) had its objects deleted first: the scan starts over, which is only slower.
    const resume = from === undefined ? -1 : states.findIndex((state) => state.id === from.stateId);
    for (let s = Math.max(0, resume); s < states.length; s++) {
      const state = states[s]!;
      if (state.versions.values().next().value?.namespaced !== true) continue;
      const keys = state.sortedKeys();
      for (let i = lowerBound(keys, s === resume ? from!.key : prefix); i < keys.length && keys[i]!.startsWith(prefix); i++) {
        const key = keys[i]!;
        const object = liveObject(state.objects.get(key));
        if (object === undefined || (which === "active" && isDeleting(object))) continue;
        if (terminating) this.#namespaceScans.set(scanKey, { stateId: state.id, key });
        return { state, key, object };
      }
    }
    if (!terminating) return undefined;
    // Empty for good: the scans of this namespace are over (bounded by the namespaces terminating at once).
    if (which === "active") this.#namespaceScans.set(scanKey, "done");
    else {
      this.#namespaceScans.delete(scanKey);
      this.#namespaceScans.delete(`${meta.uid ?? ""}|active`);
    }
    return undefined;
  }
}

function locate(state: KindState, key: string): Located | undefined {
  const object = liveObject(state.objects.get(key));
  return object === undefined ? undefined : { state, key, object };
}

function refOf(object: KubeObject): ObjectRef {
  const ref: ObjectRef = { apiVersion: object.apiVersion, kind: object.kind, name: object.metadata.name ?? "" };
  if (object.metadata.namespace !== undefined) ref.namespace = object.metadata.namespace;
  return ref;
}
