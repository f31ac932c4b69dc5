// What one source file of a module needs before esbuild bundles it, so that the bundle behaves as Node runs the
// file: a bundle is one file, so whatever names a file's own place (`import.meta.url`, `import.meta.filename` and
// `dirname`, CommonJS's `__dirname` and `__filename`) is written into each file as a literal; and a require made by
// `createRequire(import.meta.url)` (the usual way an ES module loads a CommonJS package) is a function esbuild
// cannot follow, so its calls with a string literal become calls of the free `require`, which esbuild bundles, and
// its `resolve` of a string literal the path Node resolves. Pure text in, text out: the bundler calls it per file.
import { createRequire } from "node:module";
import { dirname } from "node:path";
import { pathToFileURL } from "node:url";
import { assert } from "../api/assert.ts";

/** What the rewrite did to one file, for the loader's diagnostics. */
export interface RewrittenSource {
  readonly contents: string;
  /** Bindings made by `createRequire(import.meta.url)`, renamed where the file uses them other than on a literal. */
  readonly createRequires: readonly string[];
  /** `import(expr)` of something computed, which the bundle cannot load at run time. */
  readonly unbundled: readonly { readonly line: number; readonly form: string }[];
}

/** The 1-based line of `offset` in `text`. */
function lineOf(text: string, offset: number): number {
  let line = 1;
  for (let at = text.indexOf("\n"); at >= 0 && at < offset; at = text.indexOf("\n", at + 1)) line++;
  return line;
}

/** A cheap test first: most library files mention none of these and go to esbuild untouched. */
const TRIGGERS = ["import.meta", "createRequire", "__dirname", "__filename", "require.main", "import("] as const;

/** An identifier not part of a longer one, nor a property access (`x.__dirname`). */
function word(name: string): string {
  return `(?<![\\w$.])${name.replace(/\$/g, "\\$")}(?![\\w$])`;
}

/** Whether the file declares `name` itself (a bundled library's own `var __dirname`): then it is left alone. */
function declares(text: string, name: string): boolean {
  return new RegExp(`\\b(?:var|let|const|function|class)\\s+${name}(?![\\w$])`).test(text);
}

/**
 * The free name replaced by a literal. Object shorthand (`{ __dirname }`) keeps its key; a file that declares the
 * name itself is left as it is (its own binding wins, as in Node).
 */
function replaceFree(text: string, name: string, literal: string): string {
  if (!text.includes(name) || declares(text, name)) return text;
  return text.replace(new RegExp(`([{,]\\s*)?${word(name)}(?=(\\s*[,}])?)`, "g"), (all: string, before: string | undefined, ...rest: unknown[]) => {
    const shorthandAfter = rest[0] as string | undefined;
    if (before !== undefined && shorthandAfter !== undefined) return `${before}${name}: ${literal}`;
    return `${before ?? ""}${literal}`;
  });
}

/** Whether Node runs `path` as CommonJS: `.cjs`/`.cts`, or `.js`/`.ts` not under a `"type": "module"` package. */
export function isCommonJsSource(path: string, text: string, packageType: "module" | "commonjs"): boolean {
  if (/\.c[jt]s$/.test(path)) return true;
  if (/\.m[jt]s$/.test(path)) return false;
  if (packageType === "module") return false;
  // A `.js` with import or export statements under no type is an ES module to esbuild (and to Node 22's detection).
  return !/^\s*(?:import\s*[\w${*"']|export\s)/m.test(text);
}

/**
 * `const NAME = createRequire(import.meta.url)` (also `module.createRequire`): the binding's calls with a string
 * literal become calls of the free `require` (bundled), `NAME.resolve("x")` Node's answer as a literal, and any other
 * use of NAME a renamed binding that still calls the sandbox's `createRequire` at run time (a require esbuild could
 * not see: a builtin, JSON, or an optional dependency, which get the process's copy, as for the free `require`).
 */
function rewriteCreateRequire(text: string, path: string, createRequires: string[]): string {
  const declaration = /\b(const|let|var)\s+([A-Za-z_$][\w$]*)\s*=\s*((?:[A-Za-z_$][\w$]*\.)?createRequire\s*\(\s*import\.meta\.url\s*\))/g;
  let out = text;
  for (const match of [...text.matchAll(declaration)]) {
    const name = match[2]!;
    const renamed = `__settle_createRequire_${name.replace(/\$/g, "_")}`;
    const resolveFrom = createRequire(path);
    out = out.replace(match[0], `${match[1]} ${renamed} = ${match[3]}`);
    const literal = `\\s*\\(\\s*("[^"\\n]*"|'[^'\\n]*')\\s*\\)`;
    out = out.replace(new RegExp(`${word(name)}(\\.resolve)?(?:${literal})?`, "g"), (_all: string, resolveCall: string | undefined, quoted: string | undefined) => {
      if (quoted === undefined) return resolveCall === undefined ? renamed : `${renamed}.resolve`;
      if (resolveCall === undefined) return `require(${quoted})`;
      try {
        return JSON.stringify(resolveFrom.resolve(quoted.slice(1, -1)));
      } catch {
        return `${renamed}.resolve(${quoted})`;
      }
    });
    createRequires.push(name);
  }
  return out;
}

/**
 * `import(expr)` of something computed: esbuild leaves it to run time, where a bundle evaluated by `vm` has no module
 * loader to ask (Node answers "A dynamic import callback was not specified").
 */
function computedImports(text: string, unbundled: { line: number; form: string }[]): void {
  // `import()` with nothing inside is no call (a comment naming the form).
  for (const match of text.matchAll(/(?<![\w$.])import\s*\(\s*(?!\))(["'`]?)/g)) {
    const quote = match[1]!;
    const literal = quote === '"' || quote === "'" || (quote === "`" && !/^[^`]*\$\{/.test(text.slice(match.index + match[0].length)));
    if (!literal) unbundled.push({ line: lineOf(text, match.index), form: "import(...) with an argument that is not a string literal" });
  }
}

/**
 * The file as esbuild should bundle it, or undefined when it needs nothing (esbuild then reads it itself).
 * `entry` marks the module settle runs: in CommonJS, its `require.main` is its own `module`, as `node FILE` gives.
 */
export function rewriteSource(text: string, path: string, options: { entry: boolean; packageType: "module" | "commonjs" }): RewrittenSource | undefined {
  if (!TRIGGERS.some((trigger) => text.includes(trigger))) return undefined;
  assert(path.startsWith("/"), "a source file is rewritten by its absolute path");
  const createRequires: string[] = [];
  const unbundled: { line: number; form: string }[] = [];
  if (text.includes("import(")) computedImports(text, unbundled);
  let out = text.includes("createRequire") ? rewriteCreateRequire(text, path, createRequires) : text;
  const url = JSON.stringify(pathToFileURL(path).href);
  out = out.replace(/\bimport\.meta\.url\b/g, url).replace(/\bimport\.meta\.filename\b/g, JSON.stringify(path)).replace(/\bimport\.meta\.dirname\b/g, JSON.stringify(dirname(path)));
  if (isCommonJsSource(path, text, options.packageType)) {
    out = replaceFree(out, "__dirname", JSON.stringify(dirname(path)));
    out = replaceFree(out, "__filename", JSON.stringify(path));
    // `if (require.main === module) main()`: true for the entry alone, as for `node FILE`.
    if (options.entry) out = out.replace(new RegExp(`${word("require")}\\.main(?![\\w$])`, "g"), "module");
  }
  assert(out.length > 0 || text.length === 0, "a rewrite keeps the file's text");
  return out === text && unbundled.length === 0 ? undefined : { contents: out, createRequires, unbundled };
}
