// Encodes JSON objects of built-in kinds as protobuf, through the generated wire table: the inverse of the decoder
// in protobuf.ts. Fields the table does not know, nulls and values of the wrong JSON type are left out (a Go client
// reads an absent field as its zero value). Map entries are written in key order and repeated fields unpacked, as
// Go's generated marshallers write them.
import type { WireField } from "../../api/wire-types.ts";
import { parseGoDuration } from "../duration.ts";
import { wireKinds } from "../../api/generated/k8s-api.ts";
import { isRecord, type JsonObject } from "../../api/json.ts";
import { isScalar, wireFields } from "./wire.ts";

const magic = Uint8Array.from([0x6b, 0x38, 0x73, 0x00]);

/**
 * A string's UTF-8 bytes. Buffer.from, not TextEncoder: the same bytes (a lone surrogate becomes U+FFFD in both),
 * but TextEncoder.encode is a native call per string, about four times slower for the short strings of object
 * metadata, and encoding every object of a watch for a client-go program made it the server's largest cost.
 */
function utf8(text: string): Uint8Array {
  return Buffer.from(text, "utf8");
}

/** The one-byte varints (0..127), shared: chunks are only ever copied out, never written to. */
const smallVarints = Array.from({ length: 0x80 }, (_, i) => Uint8Array.of(i));

class Writer {
  readonly chunks: Uint8Array[] = [];
  #scratch: number[] = [];

  /** A varint; negative numbers as Go writes them, in 64-bit two's complement (ten bytes). */
  varint(value: number | bigint): void {
    if (typeof value === "number" && value >= 0 && value < 0x80) return void this.chunks.push(smallVarints[value]!);
    const bytes = this.#scratch;
    bytes.length = 0;
    if (typeof value === "number" && value >= 0 && Number.isSafeInteger(value)) {
      let v = value;
      while (v >= 0x80) {
        bytes.push((v % 0x80) | 0x80);
        v = Math.floor(v / 0x80);
      }
      bytes.push(v);
    } else {
      let v = BigInt.asUintN(64, BigInt(value));
      while (v >= 0x80n) {
        bytes.push(Number(v & 0x7fn) | 0x80);
        v >>= 7n;
      }
      bytes.push(Number(v));
    }
    this.chunks.push(Uint8Array.from(bytes));
  }

  tag(number: number, wire: number): void {
    this.varint(number * 8 + wire);
  }

  bytes(number: number, data: Uint8Array): void {
    this.tag(number, 2);
    this.varint(data.length);
    this.chunks.push(data);
  }

  finish(): Uint8Array {
    return Buffer.concat(this.chunks);
  }
}


function timeMessage(value: unknown, micro: boolean): Uint8Array | undefined {
  if (typeof value !== "string") return undefined;
  const ms = Date.parse(value);
  if (Number.isNaN(ms)) return undefined;
  const w = new Writer();
  const seconds = Math.floor(ms / 1000);
  w.tag(1, 0);
  w.varint(seconds);
  const fractionText = /\.(\d+)/.exec(value)?.[1];
  const nanos = micro && fractionText !== undefined ? Number(fractionText.padEnd(9, "0").slice(0, 9)) : 0;
  if (nanos !== 0) {
    w.tag(2, 0);
    w.varint(nanos);
  }
  return w.finish();
}

function rawMessage(value: unknown): Uint8Array | undefined {
  if (value === undefined || value === null) return undefined;
  const w = new Writer();
  w.bytes(1, utf8(JSON.stringify(value)));
  return w.finish();
}

/** Messages with a JSON form of their own (see protobuf.ts); `undefined` when `type` is an ordinary message. */
function specialMessage(type: string, value: unknown): Uint8Array | null | undefined {
  switch (type) {
    case "meta/v1.Time":
      return timeMessage(value, false) ?? null;
    case "meta/v1.MicroTime":
      return timeMessage(value, true) ?? null;
    case "meta/v1.Duration":
      return typeof value === "string" ? encodeMessage({ duration: Number(parseGoDuration(value)) }, type) : null;
    case "resource.Quantity":
    case "resource.QuantityValue":
      return typeof value === "string" || typeof value === "number" ? encodeMessage({ string: String(value) }, type) : null;
    case "intstr.IntOrString":
      if (typeof value === "number") return encodeMessage({ type: 0, intVal: value }, type);
      return typeof value === "string" ? encodeMessage({ type: 1, strVal: value }, type) : null;
    case "runtime.RawExtension":
    case "meta/v1.FieldsV1":
      return rawMessage(value) ?? null;
    default:
      return undefined;
  }
}

function writeScalar(w: Writer, number: number, type: string, value: unknown): void {
  if (type === "string") {
    if (typeof value === "string") w.bytes(number, utf8(value));
  } else if (type === "bytes") {
    if (typeof value === "string") w.bytes(number, Buffer.from(value, "base64"));
  } else if (type === "bool") {
    if (typeof value !== "boolean") return;
    w.tag(number, 0);
    w.varint(value ? 1 : 0);
  } else if (type === "double" || type === "float") {
    if (typeof value !== "number") return;
    const buf = Buffer.alloc(type === "double" ? 8 : 4);
    if (type === "double") buf.writeDoubleLE(value);
    else buf.writeFloatLE(value);
    w.tag(number, type === "double" ? 1 : 5);
    w.chunks.push(buf);
  } else {
    if (typeof value !== "number" || !Number.isInteger(value)) return;
    w.tag(number, 0);
    w.varint(value);
  }
}

function writeValue(w: Writer, number: number, type: string, value: unknown): void {
  if (value === null || value === undefined) return;
  if (isScalar(type)) return writeScalar(w, number, type, value);
  const special = specialMessage(type, value);
  if (special === null) return;
  if (special !== undefined) return w.bytes(number, special);
  if (isRecord(value)) w.bytes(number, encodeMessage(value, type));
}

function writeField(w: Writer, spec: WireField, value: unknown): void {
  if (spec.map !== undefined) {
    if (!isRecord(value)) return;
    for (const key of Object.keys(value).sort()) {
      const entry = new Writer();
      writeScalar(entry, 1, spec.map, spec.map === "string" ? key : Number(key));
      writeValue(entry, 2, spec.type, value[key]);
      w.bytes(spec.id, entry.finish());
    }
  } else if (spec.repeated === true) {
    if (Array.isArray(value)) for (const item of value) writeValue(w, spec.id, spec.type, item);
  } else writeValue(w, spec.id, spec.type, value);
}

/** Messages of kinds: the objects a store keeps frozen, whose encodings are kept (see encodeMessage). */
const kindMessages = new Set(wireKinds.map((k) => k.message));
const encodedObjects = new WeakMap<object, Uint8Array>();

/**
 * Encodes the JSON form of one message. A frozen object of a kind (a stored object, alone or as a list item) never
 * changes, so its encoding is made once and reused by every later answer and watch event that carries it.
 */
export function encodeMessage(value: JsonObject, message: string): Uint8Array {
  const cacheable = Object.isFrozen(value) && kindMessages.has(message);
  const cached = cacheable ? encodedObjects.get(value) : undefined;
  if (cached !== undefined) return cached;
  const encoded = encodeFields(value, message);
  if (cacheable) encodedObjects.set(value, encoded);
  return encoded;
}

function encodeFields(value: JsonObject, message: string): Uint8Array {
  const w = new Writer();
  for (const spec of wireFields(message)) {
    // A Go-inlined struct takes its fields from the parent's JSON; Go writes it even when empty.
    if (spec.inline === true) w.bytes(spec.id, encodeMessage(value, spec.type));
    else if (Object.hasOwn(value, spec.name)) writeField(w, spec, value[spec.name]);
  }
  return w.finish();
}

/** A whole protobuf response body: the magic prefix and a `runtime.Unknown` holding the encoded object. */
export function encodeProtobuf(object: JsonObject, message: string): Uint8Array {
  const w = new Writer();
  w.chunks.push(magic);
  // runtime.Unknown in field order: typeMeta (1), raw (2), contentEncoding (3), contentType (4); Go writes the
  // two empty strings too.
  w.bytes(1, encodeMessage({ apiVersion: object.apiVersion, kind: object.kind }, "runtime.TypeMeta"));
  w.bytes(2, encodeMessage(object, message));
  w.bytes(3, new Uint8Array(0));
  w.bytes(4, new Uint8Array(0));
  return w.finish();
}

/**
 * One frame of a protobuf watch stream, as kube-apiserver writes them: a 4-byte big-endian length, then a
 * `meta/v1.WatchEvent` encoded raw (the stream serializer writes no magic prefix and no envelope) whose object's
 * `raw` bytes are a whole protobuf body (`encodeProtobuf`: magic prefix and `runtime.Unknown`).
 */
export function encodeWatchFrame(type: string, body: Uint8Array): Uint8Array {
  const object = new Writer();
  object.bytes(1, body);
  const w = new Writer();
  w.chunks.push(new Uint8Array(4));
  w.bytes(1, utf8(type));
  w.bytes(2, object.finish());
  const frame = w.finish();
  new DataView(frame.buffer, frame.byteOffset, frame.byteLength).setUint32(0, frame.byteLength - 4);
  return frame;
}
