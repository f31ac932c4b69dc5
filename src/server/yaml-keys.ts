// The duplicate-key check of YAML request bodies, in time linear in the body. The yaml package's own check compares
// each new key of a mapping with every key before it (quadratic: a 9,500-key `data` took 1.4 s), so bodies are
// parsed with `uniqueKeys: false` and checked here with one set of keys per mapping, under the same rule and message.
import { createRequire } from "node:module";
import type * as Yaml from "yaml";

let yamlModule: typeof Yaml | undefined;

/**
 * The yaml package, loaded on first use: it is 70 files and about 50 ms of a server's start, and most clients send
 * JSON and most servers have no `--setup` file. In a bundle (an explore worker's) esbuild bundles the literal
 * `require`; an ES module has none.
 */
export function yaml(): typeof Yaml {
  yamlModule ??= (typeof require === "function" ? require("yaml") : createRequire(import.meta.url)("yaml")) as typeof Yaml;
  return yamlModule;
}

/** What the body parser passes to the yaml package: its duplicate-key check off, since `duplicateKeyMessage` does it. */
export const yamlBodyParseOptions = Object.freeze({ uniqueKeys: false as const });

/**
 * The yaml package's error for the first mapping key that repeats an earlier key of its mapping, or undefined. Keys
 * are equal as the package's default check has them: two scalars whose resolved values are identical (`1` and `0x1`,
 * `null` and `~`; not `1` and `'1'`); other keys (collections, aliases) only when they are the same node.
 */
export function duplicateKeyMessage(yaml: typeof Yaml, root: unknown, text: string): string | undefined {
  const pending: unknown[] = [root];
  while (pending.length > 0) {
    const node = pending.pop();
    if (yaml.isSeq(node)) {
      for (const item of node.items) pending.push(item);
    } else if (yaml.isMap(node)) {
      const seen = new Set<unknown>();
      for (const pair of node.items) {
        const key: unknown = pair.key;
        if (key === null) continue;
        // NaN is the one value a set finds that `===` would not: `.nan` keys never repeat for the package.
        const id = yaml.isScalar(key) && !Number.isNaN(key.value) ? key.value : key;
        if (seen.has(id)) return uniqueKeysMessage(text, yaml.isNode(key) ? (key.range?.[0] ?? -1) : -1);
        seen.add(id);
        pending.push(pair.key, pair.value);
      }
    }
  }
  return undefined;
}

/** "Map keys must be unique at line L, column C:" with the line and a caret under the key, as the package words it. */
function uniqueKeysMessage(text: string, offset: number): string {
  const message = "Map keys must be unique";
  if (offset < 0) return message;
  const lineStart = text.lastIndexOf("\n", offset - 1) + 1;
  let lineEnd = text.indexOf("\n", offset);
  if (lineEnd < 0) lineEnd = text.length;
  let line = 1;
  for (let i = text.indexOf("\n"); i >= 0 && i < lineStart; i = text.indexOf("\n", i + 1)) line++;
  const column = offset - lineStart + 1;
  const shown = text.slice(lineStart, Math.min(lineEnd, lineStart + 80)).replace(/\r$/, "");
  if (column > 80) return `${message} at line ${line}, column ${column}`;
  return `${message} at line ${line}, column ${column}:\n\n${shown}\n${" ".repeat(column - 1)}^\n`;
}
