// The store the runtime's simulation tests run on: the real `createStore` once `src/store/index.ts` exists,
// and until then the simulator's own test store, given the uids and generations the runtime relies on.
import { existsSync } from "node:fs";
import type { KubeObject } from "../../src/api/object.ts";
import type { Store, StoreOptions } from "../../src/store/types.ts";
import { createFakeStore } from "../sim/fake-store.ts";

type CreateStore = (options: StoreOptions) => Store;

const realStoreUrl = new URL("../../src/store/index.ts", import.meta.url);

async function loadCreateStore(): Promise<{ createStore: CreateStore; real: boolean }> {
  if (existsSync(realStoreUrl)) {
    const module = (await import(realStoreUrl.href)) as { createStore?: CreateStore };
    if (module.createStore !== undefined) return { createStore: module.createStore, real: true };
  }
  return { createStore: withUids(createFakeStore), real: false };
}

function withUids(make: CreateStore): CreateStore {
  return (options) => {
    const store = make(options);
    let uids = 0;
    const create = store.create.bind(store);
    store.create = (object: KubeObject, writeOptions) =>
      create({ ...object, metadata: { ...object.metadata, uid: `uid-${++uids}`, generation: 1 } }, writeOptions);
    return store;
  };
}

export const { createStore, real: usingRealStore } = await loadCreateStore();
