// HTTP/1.1 message boundaries, as far as the wire needs them: where a request ends (so it can become one step),
// where a response's head and body end, and the chunks of a chunked body (so each watch event is one step). The
// bytes themselves are parsed by Node's own HTTP parser on either side; this only finds boundaries.

export interface Head {
  /** Bytes of the head, the blank line included. */
  length: number;
  firstLine: string;
  headers: Map<string, string>;
}

const CRLFCRLF = Buffer.from("\r\n\r\n");

/** The head at the start of `buffer`, or undefined while it is incomplete. */
export function parseHead(buffer: Buffer): Head | undefined {
  const end = buffer.indexOf(CRLFCRLF);
  if (end < 0) return undefined;
  const lines = buffer.subarray(0, end).toString("latin1").split("\r\n");
  const headers = new Map<string, string>();
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(":");
    if (colon > 0) headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
  }
  return { length: end + 4, firstLine: lines[0] ?? "", headers };
}

export function isChunked(head: Head): boolean {
  return /\bchunked\b/i.test(head.headers.get("transfer-encoding") ?? "");
}

/**
 * One chunk of a chunked body at `offset`: its data and the offset after it, or undefined while incomplete.
 * The last chunk (size 0) has empty data; its trailer section is skipped.
 */
export function parseChunk(buffer: Buffer, offset: number): { data: Buffer; next: number; last: boolean } | undefined {
  const lineEnd = buffer.indexOf("\r\n", offset, "latin1");
  if (lineEnd < 0) return undefined;
  const size = Number.parseInt(buffer.subarray(offset, lineEnd).toString("latin1").split(";")[0]!.trim(), 16);
  if (!Number.isFinite(size) || size < 0) throw new Error("malformed chunk size");
  if (size === 0) {
    // Trailers end with an empty line.
    const end = buffer.indexOf(CRLFCRLF, lineEnd, "latin1");
    if (buffer.length >= lineEnd + 4 && buffer.subarray(lineEnd, lineEnd + 4).equals(CRLFCRLF)) return { data: Buffer.alloc(0), next: lineEnd + 4, last: true };
    if (end < 0) return undefined;
    return { data: Buffer.alloc(0), next: end + 4, last: true };
  }
  const dataStart = lineEnd + 2;
  if (buffer.length < dataStart + size + 2) return undefined;
  return { data: buffer.subarray(dataStart, dataStart + size), next: dataStart + size + 2, last: false };
}

/** The length of a complete message (head and body) at the start of `buffer`, or undefined while incomplete. */
export function completeMessageLength(buffer: Buffer, head: Head, bodyless: boolean): number | undefined {
  if (bodyless) return head.length;
  if (isChunked(head)) {
    let offset = head.length;
    for (;;) {
      const chunk = parseChunk(buffer, offset);
      if (chunk === undefined) return undefined;
      offset = chunk.next;
      if (chunk.last) return offset;
    }
  }
  const length = Number(head.headers.get("content-length") ?? "0");
  const total = head.length + (Number.isFinite(length) ? length : 0);
  return buffer.length >= total ? total : undefined;
}

/** Encodes one chunk of a chunked body. */
export function encodeChunk(data: Buffer): Buffer {
  return Buffer.concat([Buffer.from(`${data.length.toString(16)}\r\n`, "latin1"), data, Buffer.from("\r\n", "latin1")]);
}

export const LAST_CHUNK = Buffer.from("0\r\n\r\n", "latin1");
