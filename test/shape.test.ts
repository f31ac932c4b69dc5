// Limits on the shape of the code where it is hardest to follow (STYLE.md 8 and 13): no function of src/module,
// src/explore or src/drill over 80 lines, counted from its first line to its closing brace with the functions
// nested in it, and src/module asserting its invariants at least once per 100 lines.
//
// Functions are found from the text, not a parser: strings, template literals and comments are blanked first, then
// a line that starts a function declaration, a method (class member or object literal shorthand) or an arrow
// function bound to a name opens one, and its body runs to the matching brace. A function the pattern misses is
// not measured, so the test of the finder itself below holds it to each form used in src/.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const repo = fileURLToPath(new URL("../", import.meta.url));

/** Functions may be at most this many lines long. */
const functionLinesMax = 80;
/** src/module asserts at least once per this many lines. */
const linesPerAssertMax = 100;

/** The text with every string, template literal and comment replaced by spaces (line breaks kept). */
export function blanked(source: string): string {
  let out = "";
  let i = 0;
  const blank = (text: string) => text.replace(/[^\n]/g, " ");
  while (i < source.length) {
    const c = source[i]!;
    if (source.startsWith("//", i)) {
      const end = source.indexOf("\n", i);
      const j = end < 0 ? source.length : end;
      out += blank(source.slice(i, j));
      i = j;
    } else if (source.startsWith("/*", i)) {
      const end = source.indexOf("*/", i + 2);
      const j = end < 0 ? source.length : end + 2;
      out += blank(source.slice(i, j));
      i = j;
    } else if (c === '"' || c === "'" || c === "`") {
      const j = stringEnd(source, i);
      out += c + blank(source.slice(i + 1, j)) + c;
      i = j + 1;
    } else {
      out += c;
      i++;
    }
  }
  return out;
}

/** The index of the quote that closes the string or template literal opened at `start` (`${...}` skipped whole). */
function stringEnd(source: string, start: number): number {
  const quote = source[start]!;
  let j = start + 1;
  while (j < source.length && source[j] !== quote) {
    if (source[j] === "\\") j += 2;
    else if (quote === "`" && source.startsWith("${", j)) {
      let depth = 1;
      j += 2;
      while (j < source.length && depth > 0) {
        if (source[j] === "{") depth++;
        else if (source[j] === "}") depth--;
        j++;
      }
    } else j++;
  }
  return j;
}

const functionStart =
  /^\s*(?:export\s+)?(?:default\s+)?(?:async\s+)?(?:function\*?\s+[\w$]+|(?:(?:static|private|public|protected|readonly|override|get|set|async)\s+)*#?[\w$]+\s*(?:<[^>]*>)?\s*\(|(?:const|let)\s+[\w$]+\s*(?::[^=]+)?=\s*(?:async\s*)?(?:\([^)]*\)|[\w$]+)\s*(?::\s*[^=]+)?=>)/;
const notAFunction = /^\s*(?:if|for|while|switch|return|catch|await|throw|new|super|this)\b/;

export interface FunctionSpan {
  line: number;
  lines: number;
  head: string;
}

/** Every function the text declares, with its length in lines (first line to closing brace). */
export function functionSpans(source: string): FunctionSpan[] {
  const text = blanked(source);
  const lines = text.split("\n");
  const offsets: number[] = [];
  let at = 0;
  for (const line of lines) {
    offsets.push(at);
    at += line.length + 1;
  }
  const spans: FunctionSpan[] = [];
  lines.forEach((line, k) => {
    if (!functionStart.test(line) || notAFunction.test(line)) return;
    const open = bodyStart(text, offsets[k]!);
    if (open === undefined) return;
    const close = matchingBrace(text, open);
    if (close === undefined) return;
    const last = text.slice(0, close).split("\n").length;
    spans.push({ line: k + 1, lines: last - k, head: source.split("\n")[k]!.trim().slice(0, 80) });
  });
  return spans;
}

/** The `{` that opens the body of a function whose head starts at `from`, or undefined for a declaration without one. */
function bodyStart(text: string, from: number): number | undefined {
  let parens = 0;
  for (let i = from; i < text.length; i++) {
    const c = text[i];
    if (c === "(") parens++;
    else if (c === ")") parens--;
    else if (parens === 0 && c === "{") {
      // An arrow's body may be an expression: then the brace after `=>` must come first on the head's last line.
      return i;
    } else if (parens === 0 && (c === ";" || (c === "\n" && /=>\s*[^\s{]/.test(text.slice(from, i))))) return undefined;
  }
  return undefined;
}

function matchingBrace(text: string, open: number): number | undefined {
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    if (text[i] === "{") depth++;
    else if (text[i] === "}" && --depth === 0) return i;
  }
  return undefined;
}

function tsFiles(dir: string): string[] {
  return readdirSync(join(repo, dir))
    .sort()
    .flatMap((name) => {
      const path = `${dir}/${name}`;
      if (statSync(join(repo, path)).isDirectory()) return tsFiles(path);
      return name.endsWith(".ts") ? [path] : [];
    });
}

test("the function finder measures each form used in src/, nested functions inside their function", () => {
  const source = [
    "export async function a(x: string): Promise<void> {",
    "  const inner = (y: number) => {",
    "    return `${y} }`; // a brace in a string and a comment: }",
    "  };",
    "}",
    "class K {",
    "  #b(): void {",
    "    if (true) {",
    "    }",
    "  }",
    "  static get c(): number {",
    "    return 1;",
    "  }",
    "}",
    "const d = async (e: number): Promise<number> => {",
    "  return e;",
    "};",
    "const f = (g: number) => g + 1;",
  ].join("\n");
  const spans = functionSpans(source).map((s) => `${s.line}:${s.lines}`);
  assert.deepEqual(spans, ["1:5", "2:3", "7:4", "11:3", "15:3"]);
});

test(`no function of src/module, src/explore or src/drill is over ${functionLinesMax} lines`, () => {
  const long: string[] = [];
  for (const file of ["src/module", "src/explore", "src/drill"].flatMap(tsFiles)) {
    for (const span of functionSpans(readFileSync(join(repo, file), "utf8"))) {
      if (span.lines > functionLinesMax) long.push(`${file}:${span.line} ${span.lines} lines: ${span.head}`);
    }
  }
  assert.deepEqual(long, []);
});

test(`src/module asserts at least once per ${linesPerAssertMax} lines`, () => {
  const files = tsFiles("src/module");
  const text = files.map((file) => readFileSync(join(repo, file), "utf8")).join("\n");
  const lines = text.split("\n").length;
  const asserts = [...blanked(text).matchAll(/\bassert\(/g)].length;
  assert.ok(asserts * linesPerAssertMax >= lines, `${asserts} assert calls in ${lines} lines of src/module`);
});
