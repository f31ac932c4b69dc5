// Store benchmark: gets/s, updates/s, a 10k-object selector list, watch fan-out, memory per ConfigMap and for
// a 100k-revision history. Run alone with `node --import tsx bench/store.ts`, or through `npm run bench`.
import { performance } from "node:perf_hooks";
import { pathToFileURL } from "node:url";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import type { KubeObject } from "../src/api/object.ts";
import { createStore } from "../src/store/index.ts";
import type { Store } from "../src/store/types.ts";

const cms = { apiVersion: "v1", kind: "ConfigMap" };

function configMap(i: number): KubeObject {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: `cm-${i}`, namespace: "default", labels: { app: `app-${i % 10}`, tier: i % 2 === 0 ? "front" : "back" } },
    data: { key: `value-${i}` },
  };
}

function fill(store: Store, count: number): void {
  for (let i = 0; i < count; i++) store.create(configMap(i));
}

/** A full collection, even without --expose-gc (through V8's flag API), so heap figures are exact. */
function collect(): void {
  const exposed = (globalThis as { gc?: () => void }).gc;
  if (exposed !== undefined) return exposed();
  setFlagsFromString("--expose-gc");
  (runInNewContext("gc") as () => void)();
}

function heapUsed(): number {
  collect();
  collect();
  return process.memoryUsage().heapUsed;
}

/** Runs `body` repeatedly for about `ms` (after as long a warm-up for the JIT) and returns operations per second. */
function rate(ms: number, body: (i: number) => void): number {
  let n = 0;
  const warmUpEnd = performance.now() + ms;
  while (performance.now() < warmUpEnd) for (let k = 0; k < 1000; k++) body(n++);
  const start = performance.now();
  const first = n;
  let elapsed = 0;
  while (elapsed < ms) {
    for (let k = 0; k < 1000; k++) body(n++);
    elapsed = performance.now() - start;
  }
  return Math.round(((n - first) / elapsed) * 1000);
}

function benchGets(): number {
  const store = createStore();
  fill(store, 10_000);
  return rate(500, (i) => store.get({ ...cms, namespace: "default", name: `cm-${i % 10_000}` }));
}

function benchUpdates(): number {
  const store = createStore({ historyRevisionsMax: 10_000 });
  fill(store, 1_000);
  return rate(500, (i) => {
    const current = store.get({ ...cms, namespace: "default", name: `cm-${i % 1_000}` });
    store.update({ ...current, data: { key: `v${i}` } });
  });
}

function benchSelectorList(): number {
  const store = createStore();
  fill(store, 10_000);
  store.list({ ...cms, labelSelector: "app=app-3,tier in (front,back)" });
  const runs = 20;
  const start = performance.now();
  for (let i = 0; i < runs; i++) store.list({ ...cms, namespace: "default", labelSelector: "app=app-3,tier in (front,back)" });
  return Number(((performance.now() - start) / runs).toFixed(2));
}

function benchFanOut(): number {
  const store = createStore({ historyRevisionsMax: 10_000 });
  fill(store, 100);
  let delivered = 0;
  for (let w = 0; w < 100; w++) store.watch({ ...cms, fromRevision: store.revision }, () => delivered++);
  const start = performance.now();
  for (let i = 0; i < 20_000; i++) {
    store.update({ ...configMap(i % 100), data: { key: `v${i}` } });
  }
  return Math.round((delivered / (performance.now() - start)) * 1000);
}

function bytesPerConfigMap(count: number): number {
  const before = heapUsed();
  const store = createStore({ historyRevisionsMax: 1 });
  fill(store, count);
  const after = heapUsed();
  const perObject = Math.round((after - before) / count);
  if (store.revision < count) throw new Error("unreachable: keeps the store alive until measured");
  return perObject;
}

function historyMiB(revisions: number): number {
  const before = heapUsed();
  const store = createStore({ historyRevisionsMax: revisions });
  fill(store, 1_000);
  for (let i = 0; store.revision < revisions + 1_000; i++) store.update({ ...configMap(i % 1_000), data: { key: `v${i}` } });
  const after = heapUsed();
  if (store.history(store.compactedRevision).length !== revisions) throw new Error("history is not full");
  return Number(((after - before) / 1024 / 1024).toFixed(1));
}

export async function benchStore(): Promise<Record<string, string | number>> {
  return {
    "gets/s (10k objects)": benchGets(),
    "updates/s (1k objects)": benchUpdates(),
    "list 10k objects with a label selector (ms)": benchSelectorList(),
    "watch fan-out, 100 watchers (events/s)": benchFanOut(),
    "bytes per small ConfigMap at 10k": bytesPerConfigMap(10_000),
    "bytes per small ConfigMap at 100k": bytesPerConfigMap(100_000),
    "heap for 100k revisions of history (MiB)": historyMiB(100_000),
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  for (const [key, value] of Object.entries(await benchStore())) process.stdout.write(`${key}: ${value}\n`);
}
