// The drill's view of its store's own events: every write (by the controller through the server, by the workload,
// by the garbage collector) is reported as it happens, so quiet is measured from the last write itself and safety
// properties are checked after every write, with no polling.
import type { StoreEvent, Store } from "../store/types.ts";

const writeMethods = new Set<string | symbol>(["create", "update", "updateStatus", "patch", "patchStatus", "delete", "collectGarbage"]);

/**
 * The store with its write methods reporting the events they made to `onEvents`. Methods are called on the real
 * store (its private fields need it as `this`); reads pass through untouched.
 */
export function observeStore(store: Store, onEvents: (events: readonly StoreEvent[]) => void): Store {
  return new Proxy(store, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target) as unknown;
      if (typeof value !== "function") return value;
      if (!writeMethods.has(prop)) return (value as (...args: unknown[]) => unknown).bind(target);
      return (...args: unknown[]) => {
        const before = target.revision;
        try {
          return (value as (...args: unknown[]) => unknown).apply(target, args);
        } finally {
          if (target.revision !== before) onEvents(eventsSince(target, before));
        }
      };
    },
  });
}

function eventsSince(store: Store, revision: number): readonly StoreEvent[] {
  try {
    return store.history(revision);
  } catch {
    // Compacted away already (a very long history): the change is still reported, without its objects.
    return [];
  }
}
