// The loader swaps esbuild's keepNames helper for one that skips redefining a name that is already right
// (src/module/loader.ts, `cheaperKeepNames`): a cost of every incarnation's load. The swap must find the helper in
// what esbuild emits today, and every function and class must end with the name and the `name` property the
// original helper gives it.
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { test } from "node:test";
import { runInNewContext } from "node:vm";
import { cheaperKeepNames } from "../../src/module/loader.ts";

const { build } = createRequire(import.meta.url)("esbuild") as typeof import("esbuild");

// Two modules declaring the same names (esbuild renames one of each), anonymous functions and classes given names
// by assignment, a class whose static `name` is an accessor, one whose static `name` is a field, and a frozen function.
const files: Record<string, string> = {
  "a.js": `export function helper() {} export class Thing {} export const anon = [function () {}][0]; export const arrow = (() => () => 1)();`,
  "b.js": `export function helper() {} export class Thing { static get name() { return "Thing"; } } export class Fielded { static name = "Fielded"; }`,
  "entry.js": `import * as a from "./a.js"; import * as b from "./b.js";
    let later = function () {}; later = function () {};
    const frozen = Object.freeze(function frozenOne() {});
    export const all = { aHelper: a.helper, aThing: a.Thing, anon: a.anon, arrow: a.arrow, bHelper: b.helper, bThing: b.Thing, fielded: b.Fielded, later, frozen };`,
};

async function bundle(): Promise<string> {
  const result = await build({
    stdin: { contents: files["entry.js"]!, resolveDir: "/", sourcefile: "entry.js" },
    bundle: true,
    format: "iife",
    globalName: "bundled",
    platform: "node",
    target: "node20",
    write: false,
    keepNames: true,
    logLevel: "silent",
    plugins: [
      {
        name: "in-memory",
        setup(build) {
          build.onResolve({ filter: /^\.\// }, (args) => ({ path: args.path.slice(2), namespace: "mem" }));
          build.onLoad({ filter: /.*/, namespace: "mem" }, (args) => ({ contents: files[args.path]!, loader: "js" }));
        },
      },
    ],
  });
  return result.outputFiles[0]!.text;
}

/** Each export's `name` property: its descriptor, or the error reading it. */
function names(text: string): Record<string, unknown> {
  const context: { bundled?: { all: Record<string, unknown> } } = {};
  runInNewContext(text, context);
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(context.bundled!.all)) {
    const descriptor = Object.getOwnPropertyDescriptor(value, "name");
    out[key] = descriptor === undefined ? undefined : { ...descriptor, get: descriptor.get === undefined ? undefined : "getter", set: undefined };
  }
  return out;
}

test("the cheaper keepNames helper replaces the one esbuild emits", async () => {
  const text = await bundle();
  const cheaper = cheaperKeepNames(text);
  assert.notEqual(cheaper, text, "esbuild's __name helper was not found: it changed, and the loader no longer swaps it");
  assert.match(cheaper, /var __name = \(target, value\) => \{ const own = Object.getOwnPropertyDescriptor\(target, "name"\);/);
});

test("every function and class keeps the name the original helper gives it", async () => {
  const text = await bundle();
  const expected = names(text);
  assert.deepEqual(names(cheaperKeepNames(text)), expected);
  // The cases the helper is for: renamed declarations and anonymous values.
  const value = (key: string) => (expected[key] as { value?: unknown }).value;
  assert.equal(value("aHelper"), "helper");
  assert.equal(value("bHelper"), "helper");
  assert.equal(value("aThing"), "Thing");
  assert.equal(value("later"), "later");
  assert.equal(value("frozen"), "frozenOne");
  assert.equal(value("fielded"), "Fielded");
});
