// A tiny in-test store (older revisions are rebuilt from a history that is never compacted here): enough of the `Store` interface (namespaced objects, revisions, history, watches,
// reads at an older revision, 409 on a stale resourceVersion) to test the simulator's machinery on its own.
import { alreadyExists, conflict, expired, notFound } from "../../src/api/errors.ts";
import type { KubeObject, ObjectList, ObjectRef } from "../../src/api/object.ts";
import type { PatchOptions, DeleteOptions } from "../../src/api/client.ts";
import type { Store, StoreEvent, StoreListOptions, StoreOptions, StoreWatchOptions, StoreWatchListener } from "../../src/store/types.ts";

function key(ref: { kind: string; namespace?: string | undefined; name?: string | undefined; metadata?: { namespace?: string; name?: string } }): string {
  const namespace = ref.metadata?.namespace ?? ref.namespace ?? "";
  const name = ref.metadata?.name ?? ref.name ?? "";
  return `${ref.kind}/${namespace}/${name}`;
}

function freeze<T>(value: T): T {
  if (value !== null && typeof value === "object" && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) freeze(v);
  }
  return value;
}

export function createFakeStore(options: StoreOptions = {}): Store {
  const historyMax = options.historyRevisionsMax ?? 100_000;
  let revision = 0;
  let compacted = 0;
  const history: StoreEvent[] = [];
  const watchers = new Set<{ options: StoreWatchOptions; listener: StoreWatchListener }>();
  const latest = new Map<string, KubeObject>();

  function stateAt(at: number): Map<string, KubeObject> {
    if (at >= revision) return latest;
    const objects = new Map<string, KubeObject>();
    for (const event of history) {
      if (event.revision > at) break;
      if (event.type === "DELETED") objects.delete(key(event.object));
      else objects.set(key(event.object), event.object);
    }
    return objects;
  }
  const matches = (o: { kind: string; namespace?: string }, event: StoreEvent) =>
    event.object.kind === o.kind && (o.namespace === undefined || event.object.metadata.namespace === o.namespace);

  function write(type: StoreEvent["type"], object: KubeObject): KubeObject {
    revision++;
    const stored = freeze({ ...object, metadata: { ...object.metadata, resourceVersion: String(revision) } });
    const event: StoreEvent = { type, object: stored, revision };
    history.push(event);
    if (type === "DELETED") latest.delete(key(stored));
    else latest.set(key(stored), stored);
    while (history.length > historyMax) compacted = history.shift()!.revision;
    for (const w of [...watchers]) if (matches(w.options, event)) w.listener(event);
    return stored;
  }
  function current(ref: ObjectRef): KubeObject {
    const found = stateAt(revision).get(key(ref));
    if (found === undefined) throw notFound(ref.kind.toLowerCase() + "s", ref.name);
    return found;
  }

  const store: Store = {
    get revision() {
      return revision;
    },
    get compactedRevision() {
      return compacted;
    },
    resources: () => [],
    resourceFor: () => {
      throw new Error("fake store has no resources");
    },
    resourceForPlural: () => undefined,
    get(ref, opts) {
      const found = stateAt(opts?.revision ?? revision).get(key(ref));
      if (found === undefined) throw notFound(ref.kind.toLowerCase() + "s", ref.name);
      return found;
    },
    list(o: StoreListOptions): ObjectList {
      const at = o.revision ?? revision;
      if (at < compacted) throw expired("too old resource version");
      const items = [...stateAt(at).values()].filter((obj) => matches(o, { type: "ADDED", object: obj, revision: 0 }));
      items.sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
      return { apiVersion: "v1", kind: `${o.kind}List`, metadata: { resourceVersion: String(at) }, items };
    },
    create(object) {
      if (stateAt(revision).has(key(object))) throw alreadyExists("objects", object.metadata.name ?? "");
      return write("ADDED", object);
    },
    update(object) {
      const old = current({ ...object, name: object.metadata.name ?? "", namespace: object.metadata.namespace } as ObjectRef);
      const rv = object.metadata.resourceVersion;
      if (rv !== undefined && rv !== old.metadata.resourceVersion) throw conflict("objects", object.metadata.name ?? "", "stale");
      return write("MODIFIED", object);
    },
    updateStatus(object) {
      return store.update(object);
    },
    patch(o: PatchOptions) {
      const old = current(o);
      return write("MODIFIED", { ...old, ...(o.patch as object), metadata: old.metadata });
    },
    patchStatus(o) {
      return store.patch(o);
    },
    delete(o: DeleteOptions) {
      const old = current(o);
      return write("DELETED", old);
    },
    watch(o, listener) {
      if (o.fromRevision < compacted) throw expired("too old resource version");
      for (const event of history) if (event.revision > o.fromRevision && matches(o, event)) listener(event);
      const entry = { options: o, listener };
      watchers.add(entry);
      return { close: () => void watchers.delete(entry) };
    },
    history(after) {
      if (after < compacted) throw expired("too old resource version");
      return history.filter((event) => event.revision > after);
    },
    hasGarbage: () => false,
    collectGarbage: () => undefined,
  };
  return store;
}
