// A small decoder for the protobuf request bodies recent clients send for built-in types (client-go >= 1.32
// typed clients: kubectl create configmap/secret/namespace, helm's release Secrets, DeleteOptions). Responses
// stay JSON. Only the messages below are understood; anything else is a 415 so the client can retry as JSON.
//
// Wire facts: the body is the 4-byte magic `k8s\0` followed by a `runtime.Unknown` message
// (1: typeMeta {1: apiVersion, 2: kind}, 2: raw bytes, 3: contentEncoding, 4: contentType); `raw` holds the
// typed message. Field numbers below are those of the Kubernetes `generated.proto` files.
import { formatTimestamp } from "../api/clock.ts";
import { ApiError, badRequest } from "../api/errors.ts";

export const protobufContentType = "application/vnd.kubernetes.protobuf";
const magic = [0x6b, 0x38, 0x73, 0x00];
/** Nesting bound: no message we decode is deeper than 4 levels; hostile input stops here. */
const depthMax = 8;

type Field = { number: number; wire: number; int?: bigint; bytes?: Uint8Array };

function malformed(why: string): ApiError {
  return badRequest(`the protobuf body could not be decoded: ${why}`);
}

class Reader {
  #pos = 0;
  constructor(readonly buf: Uint8Array) {}

  get done(): boolean {
    return this.#pos >= this.buf.length;
  }

  varint(): bigint {
    let result = 0n;
    for (let shift = 0n; shift < 70n; shift += 7n) {
      if (this.#pos >= this.buf.length) throw malformed("truncated varint");
      const byte = this.buf[this.#pos++]!;
      result |= BigInt(byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) return result & 0xffff_ffff_ffff_ffffn;
    }
    throw malformed("varint too long");
  }

  take(length: number): Uint8Array {
    if (length < 0 || this.#pos + length > this.buf.length) throw malformed("truncated field");
    const out = this.buf.subarray(this.#pos, this.#pos + length);
    this.#pos += length;
    return out;
  }

  field(): Field {
    const key = this.varint();
    const number = Number(key >> 3n);
    const wire = Number(key & 7n);
    if (number < 1 || number > 536_870_911) throw malformed(`bad field number ${number}`);
    if (wire === 0) return { number, wire, int: this.varint() };
    if (wire === 1) return { number, wire, bytes: this.take(8) };
    if (wire === 2) return { number, wire, bytes: this.take(Number(this.varint())) };
    if (wire === 5) return { number, wire, bytes: this.take(4) };
    throw malformed(`unsupported wire type ${wire}`);
  }
}

function fields(buf: Uint8Array, depth: number): Field[] {
  if (depth > depthMax) throw malformed("nested too deeply");
  const reader = new Reader(buf);
  const out: Field[] = [];
  while (!reader.done) out.push(reader.field());
  return out;
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

function text(field: Field): string {
  if (field.bytes === undefined) throw malformed(`field ${field.number} is not a string`);
  try {
    return utf8.decode(field.bytes);
  } catch {
    throw malformed(`field ${field.number} is not UTF-8`);
  }
}

function bytes(field: Field): Uint8Array {
  if (field.bytes === undefined) throw malformed(`field ${field.number} is not bytes`);
  return field.bytes;
}

function int(field: Field): number {
  if (field.int === undefined) throw malformed(`field ${field.number} is not an integer`);
  return Number(BigInt.asIntN(64, field.int));
}

function bool(field: Field): boolean {
  return int(field) !== 0;
}

/** A `map<string, V>` entry: 1 key, 2 value. */
function mapEntry<V>(field: Field, depth: number, value: (f: Field) => V): [string, V | undefined] {
  let key = "";
  let val: V | undefined;
  for (const f of fields(bytes(field), depth + 1)) {
    if (f.number === 1) key = text(f);
    else if (f.number === 2) val = value(f);
  }
  return [key, val];
}

function setNonEmpty(target: Record<string, unknown>, key: string, value: string | number): void {
  if (value !== "" && value !== 0) target[key] = value;
}

/** `meta.v1.Time`: 1 seconds, 2 nanos; rendered as RFC 3339 with second precision ("" for the zero time). */
function time(field: Field, depth: number): string {
  let seconds = 0;
  for (const f of fields(bytes(field), depth + 1)) if (f.number === 1) seconds = int(f);
  if (seconds === 0) return "";
  // Years 0..9999 only: RFC 3339 has no other.
  if (!(seconds >= -62_135_596_800 && seconds <= 253_402_300_799)) throw malformed("time out of range");
  return formatTimestamp(seconds * 1000);
}

function ownerReference(field: Field, depth: number): Record<string, unknown> {
  const ref: Record<string, unknown> = {};
  const names: Record<number, string> = { 1: "kind", 3: "name", 4: "uid", 5: "apiVersion" };
  for (const f of fields(bytes(field), depth + 1)) {
    const name = names[f.number];
    if (name !== undefined) ref[name] = text(f);
    else if (f.number === 6) ref.controller = bool(f);
    else if (f.number === 7) ref.blockOwnerDeletion = bool(f);
  }
  return ref;
}

const metaStrings: Record<number, string> = { 1: "name", 2: "generateName", 3: "namespace", 4: "selfLink", 5: "uid", 6: "resourceVersion" };

function objectMeta(field: Field, depth: number): Record<string, unknown> {
  const meta: Record<string, unknown> = {};
  const labels: Record<string, string> = {};
  const annotations: Record<string, string> = {};
  const owners: Record<string, unknown>[] = [];
  const finalizers: string[] = [];
  for (const f of fields(bytes(field), depth + 1)) {
    const name = metaStrings[f.number];
    // Go's encoder writes empty strings, zero integers and empty times too; JSON omits them.
    if (name !== undefined) setNonEmpty(meta, name, text(f));
    else if (f.number === 7) setNonEmpty(meta, "generation", int(f));
    else if (f.number === 8) setNonEmpty(meta, "creationTimestamp", time(f, depth + 1));
    else if (f.number === 9) setNonEmpty(meta, "deletionTimestamp", time(f, depth + 1));
    else if (f.number === 10) meta.deletionGracePeriodSeconds = int(f);
    else if (f.number === 11) setEntry(labels, mapEntry(f, depth + 1, text));
    else if (f.number === 12) setEntry(annotations, mapEntry(f, depth + 1, text));
    else if (f.number === 13) owners.push(ownerReference(f, depth + 1));
    else if (f.number === 14) finalizers.push(text(f));
    // 17 managedFields: the server owns them; dropped.
  }
  if (Object.keys(labels).length > 0) meta.labels = labels;
  if (Object.keys(annotations).length > 0) meta.annotations = annotations;
  if (owners.length > 0) meta.ownerReferences = owners;
  if (finalizers.length > 0) meta.finalizers = finalizers;
  return meta;
}

/** Map keys are data: a key named `__proto__` must not reach the object's prototype. */
function setEntry<V>(target: Record<string, V>, [key, value]: [string, V | undefined]): void {
  Object.defineProperty(target, key, { value: value ?? ("" as V), writable: true, enumerable: true, configurable: true });
}

const base64 = (b: Uint8Array): string => Buffer.from(b).toString("base64");

function configMap(raw: Uint8Array): Record<string, unknown> {
  const object: Record<string, unknown> = { metadata: {} };
  const data: Record<string, string> = {};
  const binaryData: Record<string, string> = {};
  for (const f of fields(raw, 0)) {
    if (f.number === 1) object.metadata = objectMeta(f, 0);
    else if (f.number === 2) setEntry(data, mapEntry(f, 0, text));
    else if (f.number === 3) setEntry(binaryData, mapEntry(f, 0, (v) => base64(bytes(v))));
    else if (f.number === 4) object.immutable = bool(f);
  }
  if (Object.keys(data).length > 0) object.data = data;
  if (Object.keys(binaryData).length > 0) object.binaryData = binaryData;
  return object;
}

function secret(raw: Uint8Array): Record<string, unknown> {
  const object: Record<string, unknown> = { metadata: {} };
  const data: Record<string, string> = {};
  const stringData: Record<string, string> = {};
  for (const f of fields(raw, 0)) {
    if (f.number === 1) object.metadata = objectMeta(f, 0);
    else if (f.number === 2) setEntry(data, mapEntry(f, 0, (v) => base64(bytes(v))));
    else if (f.number === 3) setNonEmpty(object, "type", text(f));
    else if (f.number === 4) setEntry(stringData, mapEntry(f, 0, text));
    else if (f.number === 5) object.immutable = bool(f);
  }
  if (Object.keys(data).length > 0) object.data = data;
  if (Object.keys(stringData).length > 0) object.stringData = stringData;
  return object;
}

function namespace(raw: Uint8Array): Record<string, unknown> {
  const object: Record<string, unknown> = { metadata: {} };
  for (const f of fields(raw, 0)) {
    if (f.number === 1) object.metadata = objectMeta(f, 0);
    else if (f.number === 2) {
      const finalizers = fields(bytes(f), 1).filter((s) => s.number === 1).map(text);
      object.spec = finalizers.length > 0 ? { finalizers } : {};
    }
  }
  return object;
}

function deleteOptions(raw: Uint8Array): Record<string, unknown> {
  const object: Record<string, unknown> = {};
  const dryRun: string[] = [];
  for (const f of fields(raw, 0)) {
    if (f.number === 1) object.gracePeriodSeconds = int(f);
    else if (f.number === 2) {
      const preconditions: Record<string, string> = {};
      for (const p of fields(bytes(f), 1)) {
        if (p.number === 1) preconditions.uid = text(p);
        else if (p.number === 2) preconditions.resourceVersion = text(p);
      }
      object.preconditions = preconditions;
    } else if (f.number === 3) object.orphanDependents = bool(f);
    else if (f.number === 4) object.propagationPolicy = text(f);
    else if (f.number === 5) dryRun.push(text(f));
  }
  if (dryRun.length > 0) object.dryRun = dryRun;
  return object;
}

const decoders: Record<string, (raw: Uint8Array) => Record<string, unknown>> = {
  "v1/ConfigMap": configMap,
  "v1/Secret": secret,
  "v1/Namespace": namespace,
  "v1/DeleteOptions": deleteOptions,
  "meta.k8s.io/v1/DeleteOptions": deleteOptions,
};

/**
 * Decodes a protobuf request body into the JSON object the client meant. 400 for bytes that are not a valid
 * envelope or message; 415 for a well-formed envelope of a type this server does not decode.
 */
export function decodeProtobuf(body: Uint8Array): Record<string, unknown> {
  if (body.length < magic.length || magic.some((b, i) => body[i] !== b)) throw malformed("missing the k8s protobuf prefix");
  let apiVersion = "";
  let kind = "";
  let raw: Uint8Array = new Uint8Array(0);
  for (const f of fields(body.subarray(magic.length), 0)) {
    if (f.number === 1) {
      for (const t of fields(bytes(f), 1)) {
        if (t.number === 1) apiVersion = text(t);
        else if (t.number === 2) kind = text(t);
      }
    } else if (f.number === 2) raw = bytes(f);
    else if (f.number === 3 && text(f) !== "") throw malformed(`unsupported content encoding ${JSON.stringify(text(f))}`);
  }
  const decode = Object.hasOwn(decoders, `${apiVersion}/${kind}`) ? decoders[`${apiVersion}/${kind}`] : undefined;
  if (decode === undefined) {
    throw new ApiError("UnsupportedMediaType", 415, `the protobuf body of ${apiVersion}/${kind} is not supported by this server; send JSON`);
  }
  return { apiVersion, kind, ...decode(raw) };
}
