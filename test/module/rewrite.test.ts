// The per-file rewrite before bundling (src/module/rewrite.ts): what names a file's own place becomes a literal of
// that file, a createRequire'd require becomes what esbuild bundles, and nothing else of the file moves.
import assert from "node:assert/strict";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { dirname } from "node:path";
import { isCommonJsSource, rewriteSource } from "../../src/module/rewrite.ts";

const file = fileURLToPath(new URL("fixtures/forms/cjs/lib/helper.js", import.meta.url));
const cjs = { entry: false, packageType: "commonjs" } as const;
const esm = { entry: false, packageType: "module" } as const;

test("a file that mentions nothing of its place is left to esbuild (undefined)", () => {
  assert.equal(rewriteSource("module.exports = 1;\n", file, cjs), undefined);
});

test("CommonJS __dirname and __filename become the file's own; shorthand keeps its key; a file's own declaration wins", () => {
  const out = rewriteSource("const where = { __dirname, file: __filename };\nfoo.__dirname = 1;\n", file, cjs)!.contents;
  assert.equal(out, `const where = { __dirname: ${JSON.stringify(dirname(file))}, file: ${JSON.stringify(file)} };\nfoo.__dirname = 1;\n`);
  assert.equal(rewriteSource("var __dirname = '/elsewhere'; use(__dirname);", file, cjs), undefined);
  // An ES module has no __dirname in Node: left alone.
  assert.equal(rewriteSource("export const d = __dirname;", file, esm), undefined);
});

test("import.meta.url, filename and dirname become the file's own", () => {
  const out = rewriteSource("export const a = [import.meta.url, import.meta.filename, import.meta.dirname];", file, esm)!.contents;
  assert.equal(out, `export const a = [${JSON.stringify(`file://${file}`)}, ${JSON.stringify(file)}, ${JSON.stringify(dirname(file))}];`);
});

test("a createRequire(import.meta.url) require: literal calls go to the bundled require, resolve to Node's path, other uses to the renamed binding", () => {
  const text = 'import { createRequire } from "node:module";\nconst require = createRequire(import.meta.url);\nconst a = require("./helper.js");\nconst p = require.resolve("./helper.js");\nconst b = require(name);\n';
  const rewritten = rewriteSource(text, file, esm)!;
  assert.deepEqual(rewritten.createRequires, ["require"]);
  const lines = rewritten.contents.split("\n");
  assert.equal(lines[1], `const __settle_createRequire_require = createRequire(${JSON.stringify(`file://${file}`)});`);
  assert.equal(lines[2], 'const a = require("./helper.js");');
  assert.equal(lines[3], `const p = ${JSON.stringify(file)};`);
  assert.equal(lines[4], "const b = __settle_createRequire_require(name);");
});

test("require.main is the entry's own module in CommonJS, untouched elsewhere", () => {
  assert.equal(rewriteSource("if (require.main === module) run();", file, { entry: true, packageType: "commonjs" })!.contents, "if (module === module) run();");
  assert.equal(rewriteSource("if (require.main === module) run();", file, cjs), undefined);
});

test("import() of a computed name is reported with its line; literals and comments are not", () => {
  const rewritten = rewriteSource('// import() in a comment\nawait import("./a.mjs");\nawait import(`./b.mjs`);\nawait import(name);\nawait import(`./${name}.mjs`);\n', file, esm)!;
  assert.deepEqual(rewritten.unbundled.map((u) => u.line), [4, 5]);
});

test("a file's kind as Node decides it: by extension, then by its package's type, then (no type) by its syntax", () => {
  assert.equal(isCommonJsSource("/a/x.cjs", "export {}", "module"), true);
  assert.equal(isCommonJsSource("/a/x.mts", "", "commonjs"), false);
  assert.equal(isCommonJsSource("/a/x.js", "module.exports = 1", "module"), false);
  assert.equal(isCommonJsSource("/a/x.js", "module.exports = 1", "commonjs"), true);
  assert.equal(isCommonJsSource("/a/x.js", 'import x from "y";', "commonjs"), false);
});
