// The garbage collector and the namespace/CRD cleanup controllers, as explicit steps: the store tracks
// which objects may need work (written objects, dependents of written owners, terminating namespaces and
// CRDs) and `next()` plans one action at a time, so a simulator can schedule garbage collection like any actor.
import type { PropagationPolicy } from "../api/client.ts";
import type { KubeObject, OwnerReference } from "../api/object.ts";
import { describeRef } from "../api/object.ts";
import type { KindState } from "./registry.ts";
import { crdCleanupFinalizer } from "./crd.ts";
import { foregroundFinalizer, namespaceFinalizer, namespaceSpecFinalizers, orphanFinalizer } from "./delete.ts";

export interface Located {
  state: KindState;
  key: string;
  object: KubeObject;
}

/** What the collector needs from the store: lookups, and writes that go through the normal write path. */
export interface GcHost {
  at(loc: string): Located | undefined;
  byUid(uid: string): Located | undefined;
  /**
   * The first object of a namespace, in a fixed order (kinds, then keys), that is live and, for "active", not being
   * deleted; undefined when there is none.
   */
  firstInNamespace(namespace: Located, which: "active" | "live"): Located | undefined;
  /** Live objects of the kind a CRD defines. */
  ofCrd(crd: KubeObject): Located[];
  /** True when the kind named by an owner reference is served (else its owners cannot be resolved). */
  knows(apiVersion: string, kind: string): boolean;
  update(next: KubeObject): void;
  remove(target: Located, policy: PropagationPolicy): void;
  namespace(name: string): Located | undefined;
  crdOf(state: KindState): Located | undefined;
}

export interface GcAction {
  description: string;
  run(): void;
}

export function locOf(state: KindState, key: string): string {
  return `${state.id}|${key}`;
}

function describe(object: KubeObject): string {
  return describeRef({ kind: object.kind, namespace: object.metadata.namespace, name: object.metadata.name });
}

export function isDeleting(object: KubeObject): boolean {
  return object.metadata.deletionTimestamp !== undefined && object.metadata.deletionTimestamp !== null;
}

const noUids: readonly string[] = Object.freeze([]);

function ownerUids(object: KubeObject | undefined): readonly string[] {
  const refs = object?.metadata.ownerReferences;
  return refs === undefined || refs === null || refs.length === 0 ? noUids : refs.map((ref) => ref.uid);
}

function withoutFinalizer(object: KubeObject, finalizer: string): KubeObject {
  const finalizers = (object.metadata.finalizers ?? []).filter((f) => f !== finalizer);
  const metadata: KubeObject["metadata"] = { ...object.metadata, finalizers };
  if (finalizers.length === 0) delete metadata.finalizers;
  return { ...object, metadata };
}

function withoutOwners(object: KubeObject, drop: (ref: OwnerReference) => boolean): KubeObject {
  const ownerReferences = (object.metadata.ownerReferences ?? []).filter((ref) => !drop(ref));
  const metadata: KubeObject["metadata"] = { ...object.metadata, ownerReferences };
  if (ownerReferences.length === 0) delete metadata.ownerReferences;
  return { ...object, metadata };
}

export class GarbageCollector {
  /** Owner uid -> locations of the objects that name it in `ownerReferences`. */
  readonly #dependents = new Map<string, Set<string>>();
  /** Locations that may need an action, in the order they became interesting (deterministic). */
  readonly #queue = new Set<string>();

  constructor(readonly host: GcHost) {}

  /** Records one committed write of the object at `state`/`key`. */
  track(state: KindState, key: string, before: KubeObject | undefined, after: KubeObject | undefined): void {
    const beforeUids = ownerUids(before);
    const afterUids = ownerUids(after);
    // The location text is needed only to link owners or to queue this object; most writes do neither, and
    // building the string was a measurable part of a write.
    const deleting = after !== undefined && isDeleting(after);
    const loc = beforeUids.length > 0 || afterUids.length > 0 || deleting ? locOf(state, key) : "";
    for (const uid of beforeUids) if (!afterUids.includes(uid)) this.#unlink(uid, loc);
    for (const uid of afterUids) this.#link(uid, loc);
    if (after !== undefined && (afterUids.length > 0 || deleting)) this.#queue.add(loc);
    const self = after ?? before;
    if (self === undefined) return;
    if (after === undefined || isDeleting(after)) {
      for (const dependent of this.#dependents.get(self.metadata.uid ?? "") ?? []) this.#queue.add(dependent);
    }
    // Every owner named before or after, once, in the order of both lists (as a set of them would give): the
    // order they are queued in is the order the collector acts in. Without building the set: this runs per write.
    for (let i = 0; i < beforeUids.length; i++) {
      if (beforeUids.indexOf(beforeUids[i]!) === i) this.#wake(this.host.byUid(beforeUids[i]!));
    }
    for (let i = 0; i < afterUids.length; i++) {
      const uid = afterUids[i]!;
      if (afterUids.indexOf(uid) === i && !beforeUids.includes(uid)) this.#wake(this.host.byUid(uid));
    }
    const namespace = self.metadata.namespace;
    if (namespace !== undefined && namespace !== "") this.#wake(this.host.namespace(namespace));
    if (state.terminating) this.#wake(this.host.crdOf(state));
  }

  #wake(owner: Located | undefined): void {
    if (owner !== undefined && isDeleting(owner.object)) this.#queue.add(locOf(owner.state, owner.key));
  }

  #link(uid: string, loc: string): void {
    let set = this.#dependents.get(uid);
    if (set === undefined) this.#dependents.set(uid, (set = new Set()));
    set.add(loc);
  }

  #unlink(uid: string, loc: string): void {
    const set = this.#dependents.get(uid);
    if (set === undefined) return;
    set.delete(loc);
    if (set.size === 0) this.#dependents.delete(uid);
  }

  /** The next action, dropping queued locations that need none (a later write re-queues them). */
  next(): GcAction | undefined {
    for (const loc of this.#queue) {
      const action = this.#plan(loc);
      if (action !== undefined) return action;
      this.#queue.delete(loc);
    }
    return undefined;
  }

  #plan(loc: string): GcAction | undefined {
    const target = this.host.at(loc);
    if (target === undefined) return undefined;
    const object = target.object;
    if (isDeleting(object)) {
      const finalizers = object.metadata.finalizers ?? [];
      if (finalizers.includes(orphanFinalizer)) return this.#orphan(target);
      if (finalizers.includes(foregroundFinalizer)) {
        const action = this.#foreground(target);
        if (action !== undefined) return action;
      }
      if (namespaceSpecFinalizers(object).includes(namespaceFinalizer)) return this.#cleanNamespace(target);
      if (finalizers.includes(crdCleanupFinalizer)) return this.#cleanCrd(target);
    }
    if ((object.metadata.ownerReferences ?? []).length > 0) return this.#dependent(target);
    return undefined;
  }

  /** Live objects that name `owner` (by uid) as an owner, in a fixed order. */
  #liveDependents(owner: KubeObject): Located[] {
    const locs = [...(this.#dependents.get(owner.metadata.uid ?? "") ?? [])].sort();
    return locs.map((loc) => this.host.at(loc)).filter((d): d is Located => d !== undefined);
  }

  #orphan(owner: Located): GcAction {
    const uid = owner.object.metadata.uid;
    const dependent = this.#liveDependents(owner.object)[0];
    if (dependent !== undefined) {
      return {
        description: `gc: orphan ${describe(dependent.object)}: remove its ownerReference to ${describe(owner.object)}`,
        run: () => this.host.update(withoutOwners(dependent.object, (ref) => ref.uid === uid)),
      };
    }
    return {
      description: `gc: remove finalizer ${orphanFinalizer} from ${describe(owner.object)}: dependents orphaned`,
      run: () => this.host.update(withoutFinalizer(owner.object, orphanFinalizer)),
    };
  }

  #foreground(owner: Located): GcAction | undefined {
    const uid = owner.object.metadata.uid;
    const dependents = this.#liveDependents(owner.object);
    const next = dependents.find((d) => !isDeleting(d.object));
    if (next !== undefined) {
      return {
        description: `gc: delete ${describe(next.object)} (foreground deletion of ${describe(owner.object)})`,
        run: () => this.host.remove(next, "Foreground"),
      };
    }
    const blocking = dependents.some((d) => (d.object.metadata.ownerReferences ?? []).some((r) => r.uid === uid && r.blockOwnerDeletion === true));
    if (blocking) return undefined;
    return {
      description: `gc: remove finalizer ${foregroundFinalizer} from ${describe(owner.object)}: dependents deleted`,
      run: () => this.host.update(withoutFinalizer(owner.object, foregroundFinalizer)),
    };
  }

  #dependent(target: Located): GcAction | undefined {
    const object = target.object;
    const absent: OwnerReference[] = [];
    let solid = 0;
    let waiting = 0;
    for (const ref of object.metadata.ownerReferences ?? []) {
      const owner = this.host.byUid(ref.uid);
      const same = owner !== undefined && owner.object.kind === ref.kind && owner.object.metadata.name === ref.name;
      if (!same && !this.host.knows(ref.apiVersion, ref.kind)) return undefined;
      if (!same) absent.push(ref);
      else if (isDeleting(owner.object) && (owner.object.metadata.finalizers ?? []).includes(foregroundFinalizer)) waiting++;
      else solid++;
    }
    if (solid > 0) {
      if (absent.length === 0) return undefined;
      const names = absent.map((ref) => `${ref.kind} ${ref.name}`).join(", ");
      return {
        description: `gc: remove dangling ownerReferences (${names}) from ${describe(object)}`,
        run: () => this.host.update(withoutOwners(object, (ref) => absent.includes(ref))),
      };
    }
    if (isDeleting(object)) return undefined;
    const policy: PropagationPolicy = waiting > 0 ? "Foreground" : "Background";
    const why = waiting > 0 ? "its owners are being deleted in the foreground" : "its owners are gone";
    return { description: `gc: delete ${describe(object)} (${why})`, run: () => this.host.remove(target, policy) };
  }

  /** The namespace controller: delete the namespace's content, then remove its "kubernetes" finalizer. */
  #cleanNamespace(namespace: Located): GcAction | undefined {
    const next = this.host.firstInNamespace(namespace, "active");
    if (next !== undefined) {
      return {
        description: `namespace controller: delete ${describe(next.object)} (namespace terminating)`,
        run: () => this.host.remove(next, "Background"),
      };
    }
    if (this.host.firstInNamespace(namespace, "live") !== undefined) return undefined;
    const spec = { ...(namespace.object.spec as Record<string, unknown>), finalizers: [] };
    return {
      description: `namespace controller: finalize ${describe(namespace.object)} (namespace empty)`,
      run: () => this.host.update({ ...namespace.object, spec }),
    };
  }

  /** The apiextensions finalizer: delete every custom resource of the CRD, then let the CRD go. */
  #cleanCrd(crd: Located): GcAction | undefined {
    const content = this.host.ofCrd(crd.object);
    const next = content.find((c) => !isDeleting(c.object));
    if (next !== undefined) {
      return {
        description: `crd cleanup: delete ${describe(next.object)} (CustomResourceDefinition ${crd.object.metadata.name} terminating)`,
        run: () => this.host.remove(next, "Background"),
      };
    }
    if (content.length > 0) return undefined;
    return {
      description: `crd cleanup: remove finalizer ${crdCleanupFinalizer} from ${describe(crd.object)}`,
      run: () => this.host.update(withoutFinalizer(crd.object, crdCleanupFinalizer)),
    };
  }
}
