// `settle/register`: lets node run a user's TypeScript test files, e.g.
// `node --import settle/register --test test/*.test.ts`, in an ES-module or a CommonJS project. It registers
// tsx (which settle depends on, so a project needs nothing else installed) for the whole process. The CLI does
// not use it: there only the scenario files go through tsx.
//
// One exception keeps settle a single copy: tsx's CommonJS loader compiles any `.js` file it is asked to
// require, settle's compiled ES modules included, which would give a CommonJS test file a second copy of
// settle beside the ES-module one its scenario runs on (and `instanceof ApiError` would fail across them).
// Files inside settle's own `dist/` keep node's own `.js` loader, which loads them with require(esm).
import { createRequire } from "node:module";
import { register as registerEsm } from "tsx/esm/api";
import { register as registerCjs } from "tsx/cjs/api";

type JsLoader = (module: unknown, filename: string) => unknown;
const cjs = createRequire(import.meta.url)("node:module") as { _extensions: Record<string, JsLoader> };
const distDir = new URL("../", import.meta.url).pathname;
const nodeJsLoader = cjs._extensions[".js"]!;

registerEsm();
registerCjs();
const tsxJsLoader = cjs._extensions[".js"]!;
cjs._extensions[".js"] = function (this: unknown, module: unknown, filename: string): unknown {
  return (filename.startsWith(distDir) ? nodeJsLoader : tsxJsLoader).call(this, module, filename);
};
