// The bundling thread starts here only when settle runs from its TypeScript sources (the repository's tests): node
// 20 does not pass `--import` loaders to workers, so it registers tsx itself before it loads the TypeScript worker.
// The compiled package starts `dist/module/bundle-worker.js`. If the worker cannot load, the waiting thread is told
// so at once rather than at the end of its wait.
import { workerData } from "node:worker_threads";

try {
  const { register } = await import("tsx/esm/api");
  register();
  await import("./bundle-worker.ts");
} catch (error) {
  workerData.port.postMessage({ errors: [], failure: `the bundling thread did not start: ${error instanceof Error ? error.message : String(error)}` });
  Atomics.store(workerData.request.signal, 0, 1);
  Atomics.notify(workerData.request.signal, 0);
}
