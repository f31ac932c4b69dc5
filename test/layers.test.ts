// The layering of src/ as docs/architecture.md states it, checked against the imports. Its "Layers, bottom-up"
// list names every folder of src/ once; a file may import only from its own folder or from a folder listed
// before its own. Type-only imports (`import type`, `export type`) count too: a lower layer that names an upper
// layer's types is coupled to it all the same, and none is needed. Inside a folder no run-time cycle is allowed
// (a type-only import is erased and cannot cycle at run time). Under `verbatimModuleSyntax` an import whose
// specifiers are all `type X` still loads its module, so it is a run-time import here, as it is for node.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, normalize } from "node:path";
import { fileURLToPath } from "node:url";

const repo = fileURLToPath(new URL("../", import.meta.url));

export interface ImportEdge {
  /** The importing file, relative to the repository, e.g. `src/explore/run.ts`. */
  from: string;
  /** The imported file, relative to the repository. */
  to: string;
  line: number;
  typeOnly: boolean;
}

/**
 * The relative imports of one source file: `import ... from`, `export ... from`, bare `import "x"`, and
 * `import("x")` with a literal specifier. Package imports (no leading `.`) are left out. Comments are blanked
 * first so a specifier quoted in a comment is not read as an import.
 */
export function importsOf(file: string, text: string): ImportEdge[] {
  const code = text.replace(/\/\*[\s\S]*?\*\//g, (c) => c.replace(/[^\n]/g, " ")).replace(/(^|[^:"'`\\])\/\/[^\n]*/g, (c, head: string) => head + " ".repeat(c.length - head.length));
  const edges: ImportEdge[] = [];
  const add = (specifier: string, index: number, typeOnly: boolean) => {
    if (!specifier.startsWith(".")) return;
    const to = normalize(join(dirname(file), specifier));
    edges.push({ from: file, to, line: code.slice(0, index).split("\n").length, typeOnly });
  };
  const statement = /^[ \t]*(import|export)\s+(type\s+)?(?:[^;"'`]*?\s+from\s+|)["']([^"']+)["']/gm;
  for (const match of code.matchAll(statement)) add(match[3]!, match.index, match[2] !== undefined);
  for (const match of code.matchAll(/\bimport\(\s*["']([^"']+)["']\s*\)/g)) add(match[1]!, match.index, false);
  return edges;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(join(repo, dir))
    .sort()
    .flatMap((name) => {
      const path = join(dir, name);
      if (statSync(join(repo, path)).isDirectory()) return sourceFiles(path);
      return /\.(ts|mts|mjs)$/.test(name) ? [path] : [];
    });
}

/** The folders of docs/architecture.md's "Layers, bottom-up" list, in its order. */
export function readmeLayers(readme: string): string[] {
  const start = readme.indexOf("Layers, bottom-up:");
  assert.ok(start >= 0, "docs/architecture.md has a 'Layers, bottom-up:' list");
  const end = readme.indexOf("Public entry points", start);
  assert.ok(end > start, "the layer list ends where 'Public entry points' begins");
  return [...readme.slice(start, end).matchAll(/`src\/([a-z-]+)`/g)].map((m) => m[1]!);
}

/** The folder under src/ a file belongs to. */
function folderOf(path: string): string {
  const parts = path.split("/");
  assert.equal(parts[0], "src", `${path} is under src/`);
  return parts[1]!;
}

/** Arrows that point from a folder to one listed after it (or to a folder the list does not name). */
export function upwardArrows(edges: readonly ImportEdge[], layers: readonly string[]): string[] {
  const rank = new Map(layers.map((name, index) => [name, index]));
  const found: string[] = [];
  for (const edge of edges) {
    const from = folderOf(edge.from);
    const to = folderOf(edge.to);
    if (from === to) continue;
    const up = rank.get(from) === undefined || rank.get(to) === undefined || rank.get(to)! > rank.get(from)!;
    if (up) found.push(`${edge.from}:${edge.line} imports ${edge.to}${edge.typeOnly ? " (type only)" : ""}: src/${to} is not below src/${from}`);
  }
  return found;
}

/**
 * The import cycles among files, each as its files (strongly connected components of two or more): run-time imports
 * only, or with `typeOnly` every import, type-only ones included.
 */
export function importCycles(edges: readonly ImportEdge[], options: { typeOnly: boolean } = { typeOnly: false }): string[][] {
  const next = new Map<string, string[]>();
  for (const edge of edges) {
    if (edge.typeOnly && !options.typeOnly) continue;
    next.set(edge.from, [...(next.get(edge.from) ?? []), edge.to]);
  }
  // Tarjan's strongly connected components, iteratively (a deep import chain must not exhaust the stack).
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const cycles: string[][] = [];
  let counter = 0;
  for (const root of [...next.keys()].sort()) {
    if (index.has(root)) continue;
    const work: Array<{ node: string; child: number }> = [{ node: root, child: 0 }];
    index.set(root, counter);
    low.set(root, counter++);
    stack.push(root);
    onStack.add(root);
    while (work.length > 0) {
      const frame = work[work.length - 1]!;
      const children = next.get(frame.node) ?? [];
      if (frame.child < children.length) {
        const child = children[frame.child++]!;
        if (!index.has(child)) {
          index.set(child, counter);
          low.set(child, counter++);
          stack.push(child);
          onStack.add(child);
          work.push({ node: child, child: 0 });
        } else if (onStack.has(child)) {
          low.set(frame.node, Math.min(low.get(frame.node)!, index.get(child)!));
        }
        continue;
      }
      work.pop();
      if (work.length > 0) {
        const parent = work[work.length - 1]!.node;
        low.set(parent, Math.min(low.get(parent)!, low.get(frame.node)!));
      }
      if (low.get(frame.node) !== index.get(frame.node)) continue;
      const component: string[] = [];
      for (;;) {
        const member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
        if (member === frame.node) break;
      }
      const selfLoop = (next.get(frame.node) ?? []).includes(frame.node);
      if (component.length > 1 || selfLoop) cycles.push(component.sort());
    }
  }
  return cycles;
}

function allEdges(): ImportEdge[] {
  return sourceFiles("src").flatMap((file) => importsOf(file, readFileSync(join(repo, file), "utf8")));
}

test("docs/architecture.md's layer list names every folder of src/ once", () => {
  const layers = readmeLayers(readFileSync(join(repo, "docs", "architecture.md"), "utf8"));
  const folders = readdirSync(join(repo, "src"))
    .filter((name) => statSync(join(repo, "src", name)).isDirectory())
    .sort();
  assert.deepEqual([...layers].sort(), folders);
  assert.equal(new Set(layers).size, layers.length, "no folder is listed twice");
});

test("no import runs up docs/architecture.md's layer list", () => {
  const layers = readmeLayers(readFileSync(join(repo, "docs", "architecture.md"), "utf8"));
  const edges = allEdges();
  assert.ok(edges.length > 500, `the parser finds the imports (${edges.length})`);
  assert.deepEqual(upwardArrows(edges, layers), []);
});

test("no import cycle among the files of src/, type-only imports included", () => {
  // A type-only import is erased at run time, but two files that name each other's types still cannot be read,
  // changed or moved one without the other: no circle of any kind.
  assert.deepEqual(importCycles(allEdges(), { typeOnly: true }), []);
});

test("every relative import names a file that exists", () => {
  const missing = allEdges()
    .filter((edge) => !existsFile(edge.to))
    .map((edge) => `${edge.from}:${edge.line} imports ${edge.to}`);
  assert.deepEqual(missing, []);
});

function existsFile(path: string): boolean {
  try {
    return statSync(join(repo, path)).isFile();
  } catch {
    return false;
  }
}

test("the import reader finds static, re-exported, type-only and lazy imports, and skips comments", () => {
  const text = [
    'import { a } from "./a.ts";',
    'import type { B } from "../b/b.ts";',
    'export { c } from "./c.ts";',
    'export type { D } from "./d.ts";',
    'import "./side.ts";',
    "// import { x } from \"./commented.ts\";",
    'const lazy = await import("./lazy.ts");',
    'import {\n  e,\n  type F,\n} from "./e.ts";',
    'import pkg from "node:fs";',
  ].join("\n");
  const edges = importsOf("src/x/file.ts", text).map((e) => `${e.to}${e.typeOnly ? " type" : ""}`);
  assert.deepEqual(edges.sort(), ["src/b/b.ts type", "src/x/a.ts", "src/x/c.ts", "src/x/d.ts type", "src/x/e.ts", "src/x/lazy.ts", "src/x/side.ts"].sort());
});

test("an upward arrow and a cycle are found; a type-only cycle counts only when type-only imports are asked for", () => {
  const edge = (from: string, to: string, typeOnly = false): ImportEdge => ({ from, to, line: 1, typeOnly });
  assert.equal(upwardArrows([edge("src/api/a.ts", "src/store/s.ts", true)], ["api", "store"]).length, 1);
  assert.equal(upwardArrows([edge("src/store/s.ts", "src/api/a.ts")], ["api", "store"]).length, 0);
  assert.equal(upwardArrows([edge("src/new/n.ts", "src/api/a.ts")], ["api", "store"]).length, 1, "an unlisted folder is an error");
  assert.deepEqual(importCycles([edge("src/a/x.ts", "src/a/y.ts"), edge("src/a/y.ts", "src/a/z.ts"), edge("src/a/z.ts", "src/a/x.ts")]), [["src/a/x.ts", "src/a/y.ts", "src/a/z.ts"]]);
  assert.deepEqual(importCycles([edge("src/a/x.ts", "src/a/y.ts"), edge("src/a/y.ts", "src/a/x.ts", true)]), []);
  assert.deepEqual(importCycles([edge("src/a/x.ts", "src/a/y.ts"), edge("src/a/y.ts", "src/a/x.ts", true)], { typeOnly: true }), [["src/a/x.ts", "src/a/y.ts"]]);
});
