// Worker threads start here: node 20 does not pass `--import` loaders to workers, so the worker registers
// tsx itself before it loads the TypeScript worker (and, through it, the scenario).
import { register } from "tsx/esm/api";

register();
await import("./worker.ts");
