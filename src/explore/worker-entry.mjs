// Worker threads start here only when settle runs from its TypeScript sources (the repository's tests and
// benchmarks): node 20 does not pass `--import` loaders to workers, so the worker registers tsx itself before
// it loads the TypeScript worker. The worker inherits `--conditions=settle-source`, so a scenario's
// `import "settle/sim"` resolves to the same sources. The compiled package starts `dist/explore/worker.js`.
import { register } from "tsx/esm/api";

register();
await import("./worker.ts");
