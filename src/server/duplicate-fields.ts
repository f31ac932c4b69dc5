// Fields a JSON body names twice in one object. JSON.parse keeps the last silently; kube-apiserver's decoder reports
// each (`duplicate field "metadata.name"`): a 400 with `fieldValidation=Strict`, a warning with `Warn` (the default).
// One pass over the text with a stack of the objects and arrays open; the body's nesting was bounded before it
// was parsed (nesting.ts), so the stack is too.
import { assert } from "../api/assert.ts";

interface ObjectFrame {
  array: false;
  path: string;
  keys: Set<string>;
  /** The key whose value comes next, once read. */
  key: string | undefined;
  /** True between `{` or `,` and the next key. */
  awaitingKey: boolean;
}

interface ArrayFrame {
  array: true;
  path: string;
  index: number;
}

type Frame = ObjectFrame | ArrayFrame;

const quote = 0x22;
const backslash = 0x5c;

/**
 * The paths (`spec.containers[0].name`) of the keys `text` repeats within one object, in the order met, at most
 * `foundMax` of them. `text` is valid JSON (it parsed).
 */
export function duplicateFields(text: string, foundMax = 100): string[] {
  assert(foundMax > 0, "duplicateFields: foundMax > 0");
  const stack: Frame[] = [];
  const found: string[] = [];
  for (let i = 0; i < text.length && found.length < foundMax; i++) {
    const c = text.charCodeAt(i);
    if (c === quote) {
      const end = stringEnd(text, i);
      const top = stack[stack.length - 1];
      if (top !== undefined && !top.array && top.awaitingKey) keyRead(top, JSON.parse(text.slice(i, end + 1)) as string, found);
      i = end;
    } else if (c === 0x7b /* { */) stack.push({ array: false, path: valuePath(stack), keys: new Set(), key: undefined, awaitingKey: true });
    else if (c === 0x5b /* [ */) stack.push({ array: true, path: valuePath(stack), index: 0 });
    else if (c === 0x7d /* } */ || c === 0x5d /* ] */) stack.pop();
    else if (c === 0x2c /* , */) {
      const top = stack[stack.length - 1];
      if (top?.array === true) top.index++;
      else if (top !== undefined) top.awaitingKey = true;
    }
  }
  return found;
}

function keyRead(frame: ObjectFrame, key: string, found: string[]): void {
  if (frame.keys.has(key)) found.push(joined(frame.path, key));
  else frame.keys.add(key);
  frame.key = key;
  frame.awaitingKey = false;
}

/** The index of the quote that ends the string starting at `start`. */
function stringEnd(text: string, start: number): number {
  for (let i = start + 1; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === backslash) i++;
    else if (c === quote) return i;
  }
  return text.length;
}

/** The path of the value about to open under the innermost frame. */
function valuePath(stack: readonly Frame[]): string {
  const top = stack[stack.length - 1];
  if (top === undefined) return "";
  if (top.array) return `${top.path}[${top.index}]`;
  return joined(top.path, top.key ?? "");
}

const joined = (path: string, key: string) => (path === "" ? key : `${path}.${key}`);
