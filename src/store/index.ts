// The store: the API server's semantics as a pure, synchronous MVCC store.
import type { Store, StoreOptions } from "./types.ts";
import { MemoryStore } from "./store.ts";

export type * from "./types.ts";
export { builtinKinds, isBuiltinKind } from "./kinds.ts";
export { apiVersionOf } from "./resource-facts.ts";
export type { BuiltinKind, KindRules } from "./kinds.ts";

/** Kept for callers that named it: the same as `StoreOptions`. */
export type CreateStoreOptions = StoreOptions;

/**
 * A new store holding the built-in kinds and, like a fresh cluster, the namespaces `default`, `kube-system`,
 * `kube-public` and `kube-node-lease` (created as the first writes, so `revision` starts at 4).
 */
export function createStore(options: CreateStoreOptions = {}): Store {
  return new MemoryStore(options);
}
