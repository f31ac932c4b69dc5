// Bounded work per request: a single pass over the raw bytes of a JSON or YAML body that finds nesting deeper than
// the bound before any parser runs. Parsers build every level they meet (the YAML library keeps a node per level and
// recurses over them), so a 2 MiB body nested a million deep would otherwise hold the event loop for many seconds
// and take a gigabyte of memory; the scan answers it in milliseconds. It may overcount YAML nesting a little (a
// mapping under a sequence item counts twice), never undercount it, and real manifests sit far below the bound.
// The YAML library also spends about 20-30 µs per node, so YAML bodies get a bound on their nodes as well (lines,
// plus items of flow collections; lines of block scalars count an eighth, being cheap to read).

const enum Byte {
  Tab = 0x09,
  Newline = 0x0a,
  Return = 0x0d,
  Space = 0x20,
  DoubleQuote = 0x22,
  Hash = 0x23,
  Quote = 0x27,
  Comma = 0x2c,
  Dash = 0x2d,
  Colon = 0x3a,
  Greater = 0x3e,
  Question = 0x3f,
  OpenBracket = 0x5b,
  Backslash = 0x5c,
  CloseBracket = 0x5d,
  OpenBrace = 0x7b,
  Pipe = 0x7c,
  CloseBrace = 0x7d,
}

/** True when the JSON text nests arrays and objects deeper than `depthMax` (strings are skipped). */
export function jsonNestedDeeper(body: Uint8Array, depthMax: number): boolean {
  // Every level opens with a byte of its own: a body no longer than the bound cannot pass it (most bodies).
  if (body.length <= depthMax) return false;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < body.length; i++) {
    const c = body[i]!;
    if (inString) {
      if (c === Byte.Backslash) i++;
      else if (c === Byte.DoubleQuote) inString = false;
    } else if (c === Byte.DoubleQuote) inString = true;
    else if (c === Byte.OpenBracket || c === Byte.OpenBrace) {
      if (++depth > depthMax) return true;
    } else if (c === Byte.CloseBracket || c === Byte.CloseBrace) depth--;
  }
  return false;
}

const isBlank = (c: number | undefined) => c === undefined || c === Byte.Space || c === Byte.Tab || c === Byte.Newline || c === Byte.Return;

/** The scanner's state across lines: flow depth, an open quoted scalar, a block scalar being skipped. */
interface YamlScan {
  body: Uint8Array;
  flow: number;
  /** The quote byte of a quoted scalar still open at the end of the last line, or 0. */
  quote: number;
  /** Lines indented deeper than this belong to a block scalar (`|`, `>`) and are skipped; -1 when none. */
  blockScalarIndent: number;
  indents: number[];
  /** Nodes seen so far, in eighths (block scalar lines count one, everything else eight). */
  nodeEighths: number;
}

/** Skips a quoted scalar from `i` (just past its opening quote); returns the index after it, or the line end. */
function skipQuoted(s: YamlScan, i: number, end: number): number {
  const b = s.body;
  for (; i < end; i++) {
    if (s.quote === Byte.DoubleQuote && b[i] === Byte.Backslash) i++;
    else if (b[i] === s.quote) {
      if (s.quote === Byte.Quote && b[i + 1] === Byte.Quote) i++;
      else {
        s.quote = 0;
        return i + 1;
      }
    }
  }
  return end;
}

/** Scans one line's content from `i`: flow brackets, quotes, comments and block scalar headers. */
function scanContent(s: YamlScan, i: number, end: number, lineIndent: number, depthMax: number): boolean {
  const b = s.body;
  let valueStart = true;
  for (; i < end; i++) {
    const c = b[i]!;
    if (c === Byte.Hash && (i === 0 || isBlank(b[i - 1]))) return false;
    if (valueStart && (c === Byte.DoubleQuote || c === Byte.Quote)) {
      s.quote = c;
      i = skipQuoted(s, i + 1, end) - 1;
      valueStart = false;
      continue;
    }
    if ((c === Byte.OpenBracket || c === Byte.OpenBrace) && (valueStart || s.flow > 0)) {
      if (++s.flow + s.indents.length > depthMax) return true;
      valueStart = true;
      continue;
    }
    if (s.flow > 0 && (c === Byte.CloseBracket || c === Byte.CloseBrace)) s.flow--;
    if (s.flow > 0 && c === Byte.Comma) s.nodeEighths += 8;
    if (s.flow === 0 && valueStart && (c === Byte.Pipe || c === Byte.Greater)) {
      s.blockScalarIndent = lineIndent;
      return false;
    }
    if (isBlank(c)) continue;
    valueStart = (c === Byte.Colon || c === Byte.Dash || c === Byte.Question || (s.flow > 0 && c === Byte.Comma)) && isBlank(b[i + 1]);
    if (!valueStart && s.flow > 0 && c === Byte.Comma) valueStart = true;
  }
  return false;
}

/** Block nesting of one line: its indentation against the open levels, plus compact `- ` and `? ` indicators. */
function scanLine(s: YamlScan, start: number, end: number, depthMax: number): boolean {
  const b = s.body;
  let i = start;
  if (s.quote !== 0) {
    i = skipQuoted(s, i, end);
    if (s.quote !== 0) return false;
    return scanContent(s, i, end, s.indents.at(-1) ?? 0, depthMax);
  }
  while (i < end && b[i] === Byte.Space) i++;
  const indent = i - start;
  if (i >= end || b[i] === Byte.Hash || b[i] === Byte.Return) return false;
  if (s.blockScalarIndent >= 0) {
    s.nodeEighths++;
    if (indent > s.blockScalarIndent) return false;
    s.blockScalarIndent = -1;
  }
  s.nodeEighths += 8;
  if (s.flow === 0) {
    while (s.indents.length > 0 && s.indents.at(-1)! >= indent) s.indents.pop();
    s.indents.push(indent);
    // `- - - x` nests a sequence per dash on one line.
    while ((b[i] === Byte.Dash || b[i] === Byte.Question) && isBlank(b[i + 1])) {
      i += 2;
      while (i < end && b[i] === Byte.Space) i++;
      s.indents.push(i - start);
      if (s.indents.length > depthMax) return true;
    }
  }
  if (s.indents.length + s.flow > depthMax) return true;
  return scanContent(s, i, end, indent, depthMax);
}

/**
 * Why a YAML text (one or more documents) is too much work to parse: it may nest deeper than `depthMax`, or it has
 * more than `nodesMax` nodes. Undefined when it is fine.
 */
export function yamlTooMuch(body: Uint8Array, limits: { depthMax: number; nodesMax: number }): "depth" | "nodes" | undefined {
  const s: YamlScan = { body, flow: 0, quote: 0, blockScalarIndent: -1, indents: [], nodeEighths: 0 };
  const eighthsMax = limits.nodesMax * 8;
  let start = 0;
  while (start < body.length) {
    let end = body.indexOf(Byte.Newline, start);
    if (end === -1) end = body.length;
    if (scanLine(s, start, end, limits.depthMax)) return "depth";
    if (s.nodeEighths > eighthsMax) return "nodes";
    start = end + 1;
  }
  return undefined;
}
