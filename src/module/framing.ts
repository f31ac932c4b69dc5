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

// ---- Protobuf watch frames and bodies, read only as far as a step's label needs --------------------------------

/** The k8s protobuf envelope's prefix: `k8s` and a zero byte. */
const PROTOBUF_MAGIC = [0x6b, 0x38, 0x73, 0x00];

/** The length-delimited fields of a protobuf message by number (the last one of each); undefined if malformed. */
function protobufFields(bytes: Uint8Array): Map<number, Uint8Array> | undefined {
  const fields = new Map<number, Uint8Array>();
  let at = 0;
  const varint = (): number | undefined => {
    let value = 0;
    for (let shift = 0; shift < 64 && at < bytes.length; shift += 7) {
      const byte = bytes[at++]!;
      value += (byte & 0x7f) * 2 ** shift;
      if ((byte & 0x80) === 0) return value;
    }
    return undefined;
  };
  while (at < bytes.length) {
    const key = varint();
    if (key === undefined) return undefined;
    const wire = key % 8;
    if (wire === 0 && varint() === undefined) return undefined;
    else if (wire === 1) at += 8;
    else if (wire === 5) at += 4;
    else if (wire === 2) {
      const length = varint();
      if (length === undefined || at + length > bytes.length) return undefined;
      fields.set(Math.floor(key / 8), bytes.subarray(at, at + length));
      at += length;
    } else if (wire !== 0) return undefined;
  }
  return fields;
}

const text = (bytes: Uint8Array | undefined): string => (bytes === undefined ? "" : Buffer.from(bytes).toString("utf8"));

/** Kind and metadata (name, generateName, namespace, resourceVersion) of an enveloped protobuf object. */
export function protobufObject(enveloped: Uint8Array): { kind: string; name: string; generateName: string; namespace: string; resourceVersion: string } | undefined {
  if (enveloped.length < 4 || PROTOBUF_MAGIC.some((byte, i) => enveloped[i] !== byte)) return undefined;
  const unknown = protobufFields(enveloped.subarray(4));
  const typeMeta = unknown?.get(1) === undefined ? undefined : protobufFields(unknown.get(1)!);
  const object = unknown?.get(2) === undefined ? undefined : protobufFields(unknown.get(2)!);
  const metadata = object?.get(1) === undefined ? undefined : protobufFields(object.get(1)!);
  if (metadata === undefined) return undefined;
  return { kind: text(typeMeta?.get(2)), name: text(metadata.get(1)), generateName: text(metadata.get(2)), namespace: text(metadata.get(3)), resourceVersion: text(metadata.get(6)) };
}

/** `ADDED ConfigMap ns/a@12` for one length-prefixed protobuf watch frame (a `WatchEvent`); undefined if it is not one. */
export function describeProtobufEvent(frame: Uint8Array): string | undefined {
  if (frame.length < 4) return undefined;
  const event = protobufFields(frame.subarray(4));
  const raw = event?.get(2) === undefined ? undefined : protobufFields(event.get(2)!)?.get(1);
  if (event === undefined || raw === undefined) return undefined;
  const object = protobufObject(raw);
  const type = text(event.get(1));
  if (object === undefined) return type;
  const name = object.namespace === "" ? object.name : `${object.namespace}/${object.name}`;
  return `${type} ${object.kind} ${name}@${object.resourceVersion}`;
}
