// A small, strict XML reader for the tests: elements, attributes, text and the five predefined entities.
// Enough to check the structure of the JUnit settle writes without a dependency; throws on malformed input.
export interface XmlElement {
  name: string;
  attributes: Record<string, string>;
  children: XmlElement[];
  text: string;
}

const entities: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'" };

function decode(text: string): string {
  return text.replace(/&(#x[0-9a-f]+|#\d+|\w+);|&/gi, (match, name: string | undefined) => {
    if (name === undefined) throw new Error("a bare & in XML text");
    if (name.startsWith("#x") || name.startsWith("#X")) return String.fromCodePoint(parseInt(name.slice(2), 16));
    if (name.startsWith("#")) return String.fromCodePoint(Number(name.slice(1)));
    const value = entities[name];
    if (value === undefined) throw new Error(`unknown entity ${match}`);
    return value;
  });
}

export function parseXml(source: string): XmlElement {
  let at = 0;
  const prolog = /^<\?xml[^?]*\?>\s*/.exec(source);
  if (prolog) at = prolog[0].length;
  const root: XmlElement = { name: "#document", attributes: {}, children: [], text: "" };
  const stack: XmlElement[] = [root];
  const tag = /<(\/?)([A-Za-z_][\w.-]*)((?:\s+[A-Za-z_][\w.:-]*\s*=\s*(?:"[^"<]*"|'[^'<]*'))*)\s*(\/?)>/y;
  while (at < source.length) {
    const lt = source.indexOf("<", at);
    const text = source.slice(at, lt < 0 ? source.length : lt);
    if (text.length > 0) {
      if (stack.length === 1 && text.trim() !== "") throw new Error("text outside the root element");
      stack[stack.length - 1]!.text += decode(text);
    }
    if (lt < 0) break;
    tag.lastIndex = lt;
    const m = tag.exec(source);
    if (m === null) throw new Error(`malformed tag at ${lt}: ${source.slice(lt, lt + 40)}`);
    const [, closing, name, attrText, selfClosing] = m as unknown as [string, string, string, string, string];
    at = tag.lastIndex;
    if (closing) {
      const open = stack.pop();
      if (open === undefined || open.name !== name) throw new Error(`</${name}> closes <${open?.name}>`);
      continue;
    }
    const element: XmlElement = { name, attributes: {}, children: [], text: "" };
    for (const a of attrText.matchAll(/([A-Za-z_][\w.:-]*)\s*=\s*(?:"([^"]*)"|'([^']*)')/g)) {
      if (a[1]! in element.attributes) throw new Error(`duplicate attribute ${a[1]}`);
      element.attributes[a[1]!] = decode(a[2] ?? a[3] ?? "");
    }
    stack[stack.length - 1]!.children.push(element);
    if (!selfClosing) stack.push(element);
  }
  if (stack.length !== 1) throw new Error(`unclosed <${stack[stack.length - 1]!.name}>`);
  if (root.children.length !== 1) throw new Error("an XML document has exactly one root element");
  return root.children[0]!;
}
