// Protobuf bodies of every built-in kind, decoded and encoded through the generated wire table
// (src/api/generated/k8s-api.ts): client-go >= 1.32 typed clients send them (kubectl create deployment, job,
// configmap...; helm's release Secrets) and ask for them back.
//
// Wire facts: a body is the 4-byte magic `k8s\0` followed by a `runtime.Unknown` message (typeMeta {apiVersion,
// kind}, raw, contentEncoding, contentType) whose `raw` holds the typed message. Field numbers and types come from
// the Kubernetes `generated.proto` files. A few message types have a JSON form of their own: `Time` and `MicroTime`
// (RFC 3339 strings), `Duration` (Go's duration text), `Quantity` (its string), `IntOrString` (a number or a
// string), `RawExtension` and `FieldsV1` (embedded JSON).
import { formatTimestamp } from "../../api/clock.ts";
import { ApiError, badRequest } from "../../api/errors.ts";
import { cloneJsonChecked } from "../../api/patch.ts";
import { wireKinds } from "../../api/generated/k8s-api.ts";
import type { WireField } from "../../api/wire-types.ts";
import { isScalar, wireFields } from "./wire.ts";
import { goDuration, parseGoDuration } from "../duration.ts";
import { setKey, type JsonObject } from "../../api/json.ts";

export const protobufContentType = "application/vnd.kubernetes.protobuf";
const magic = Uint8Array.from([0x6b, 0x38, 0x73, 0x00]);
/** Nesting bound of decoded messages: a CronJob's pod template is about 15 deep; hostile input stops here. */
const depthMax = 64;

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

function fieldsIn(buf: Uint8Array, depth: number): Field[] {
  if (depth > depthMax) throw malformed("nested too deeply");
  const reader = new Reader(buf);
  const out: Field[] = [];
  while (!reader.done) out.push(reader.field());
  return out;
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

function text(field: Field): string {
  if (field.bytes === undefined || field.wire !== 2) throw malformed(`field ${field.number} is not a string`);
  try {
    return utf8.decode(field.bytes);
  } catch {
    throw malformed(`field ${field.number} is not UTF-8`);
  }
}

function bytesOf(field: Field): Uint8Array {
  if (field.bytes === undefined || field.wire !== 2) throw malformed(`field ${field.number} is not length-delimited`);
  return field.bytes;
}

/**
 * Scalar fields whose zero value means something (Go pointers: `replicas: 0`, `automountServiceAccountToken:
 * false`, `storageClassName: ""`) or that Go always writes to JSON. The definitions do not say which fields are
 * pointers; Go's encoder writes every non-pointer scalar, so other zero values are dropped as JSON's `omitempty`
 * drops them.
 */
const zeroKept = new Set([
  "apps/v1.DeploymentSpec.replicas", "apps/v1.DeploymentSpec.revisionHistoryLimit", "apps/v1.DeploymentSpec.progressDeadlineSeconds",
  "apps/v1.ReplicaSetSpec.replicas", "apps/v1.StatefulSetSpec.replicas", "apps/v1.StatefulSetSpec.revisionHistoryLimit",
  "apps/v1.DaemonSetSpec.revisionHistoryLimit", "apps/v1.RollingUpdateStatefulSetStrategy.partition",
  "batch/v1.JobSpec.parallelism", "batch/v1.JobSpec.completions", "batch/v1.JobSpec.activeDeadlineSeconds", "batch/v1.JobSpec.backoffLimit",
  "batch/v1.JobSpec.backoffLimitPerIndex", "batch/v1.JobSpec.maxFailedIndexes", "batch/v1.JobSpec.ttlSecondsAfterFinished",
  "batch/v1.JobSpec.suspend", "batch/v1.JobSpec.manualSelector", "batch/v1.CronJobSpec.startingDeadlineSeconds", "batch/v1.CronJobSpec.suspend",
  "batch/v1.CronJobSpec.successfulJobsHistoryLimit", "batch/v1.CronJobSpec.failedJobsHistoryLimit",
  "core/v1.PodSpec.terminationGracePeriodSeconds", "core/v1.PodSpec.activeDeadlineSeconds", "core/v1.PodSpec.automountServiceAccountToken",
  "core/v1.PodSpec.shareProcessNamespace", "core/v1.PodSpec.enableServiceLinks", "core/v1.PodSpec.setHostnameAsFQDN", "core/v1.PodSpec.hostUsers",
  "core/v1.ServiceAccount.automountServiceAccountToken", "core/v1.ConfigMap.immutable", "core/v1.Secret.immutable",
  "core/v1.SecurityContext.runAsUser", "core/v1.SecurityContext.runAsGroup", "core/v1.SecurityContext.runAsNonRoot", "core/v1.SecurityContext.privileged",
  "core/v1.SecurityContext.readOnlyRootFilesystem", "core/v1.SecurityContext.allowPrivilegeEscalation",
  "core/v1.PodSecurityContext.runAsUser", "core/v1.PodSecurityContext.runAsGroup", "core/v1.PodSecurityContext.runAsNonRoot", "core/v1.PodSecurityContext.fsGroup",
  "core/v1.PersistentVolumeClaimSpec.storageClassName", "core/v1.ServiceSpec.allocateLoadBalancerNodePorts",
  "core/v1.ConfigMapVolumeSource.defaultMode", "core/v1.SecretVolumeSource.defaultMode", "core/v1.KeyToPath.mode",
  "core/v1.ConfigMapVolumeSource.optional", "core/v1.SecretVolumeSource.optional", "core/v1.ConfigMapKeySelector.optional", "core/v1.SecretKeySelector.optional",
  "autoscaling/v2.HorizontalPodAutoscalerSpec.minReplicas", "scheduling/v1.PriorityClass.value",
  "meta/v1.ObjectMeta.deletionGracePeriodSeconds", "meta/v1.DeleteOptions.gracePeriodSeconds", "meta/v1.DeleteOptions.orphanDependents",
  "meta/v1.OwnerReference.controller", "meta/v1.OwnerReference.blockOwnerDeletion",
]);

const byNumber = new Map<string, Map<number, WireField>>();

function fieldByNumber(message: string, number: number): WireField | undefined {
  let fields = byNumber.get(message);
  if (fields === undefined) byNumber.set(message, (fields = new Map(wireFields(message).map((f) => [f.id, f]))));
  return fields.get(number);
}

function scalarValue(type: string, field: Field): unknown {
  if (type === "string") return text(field);
  if (type === "bytes") return Buffer.from(bytesOf(field)).toString("base64");
  if (type === "double" || type === "float") {
    if (field.bytes === undefined) throw malformed(`field ${field.number} is not a ${type}`);
    const view = new DataView(field.bytes.buffer, field.bytes.byteOffset, field.bytes.byteLength);
    return type === "double" ? view.getFloat64(0, true) : view.getFloat32(0, true);
  }
  if (field.int === undefined) throw malformed(`field ${field.number} is not a ${type}`);
  if (type === "bool") return field.int !== 0n;
  if (type.startsWith("uint")) return Number(field.int);
  if (type === "int32") return Number(BigInt.asIntN(32, field.int));
  return Number(BigInt.asIntN(64, field.int));
}

function isZero(value: unknown): boolean {
  return value === "" || value === 0 || value === false;
}

/** The seconds and nanos of a `Time`/`MicroTime` as RFC 3339 text; undefined for the zero time. */
function timeText(raw: Uint8Array, depth: number, micro: boolean): string | undefined {
  let seconds = 0;
  let nanos = 0;
  for (const f of fieldsIn(raw, depth)) {
    if (f.number === 1) seconds = scalarValue("int64", f) as number;
    else if (f.number === 2) nanos = scalarValue("int32", f) as number;
  }
  if (seconds === 0 && nanos === 0) return undefined;
  // Years 0..9999 only: RFC 3339 has no other.
  if (!(seconds >= -62_135_596_800 && seconds <= 253_402_300_799)) throw malformed("time out of range");
  if (!micro) return formatTimestamp(seconds * 1000);
  const base = formatTimestamp(seconds * 1000).replace(/Z$/, "");
  return `${base}.${String(Math.floor(nanos / 1000)).padStart(6, "0")}Z`;
}

function embeddedJson(raw: Uint8Array, what: string): unknown {
  if (raw.length === 0) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(utf8.decode(raw));
  } catch {
    throw malformed(`${what} is not JSON`);
  }
  // The same nesting bound as a JSON body: the message types bound protobuf nesting, embedded JSON has none.
  return cloneJsonChecked(value, what);
}

/** Decodes a message of a type with a JSON form of its own; `noSpecial` for ordinary messages. */
function specialValue(type: string, raw: Uint8Array, depth: number): unknown {
  if (type === "meta/v1.Time") return timeText(raw, depth, false);
  if (type === "meta/v1.MicroTime") return timeText(raw, depth, true);
  if (type === "meta/v1.Duration") return goDuration(BigInt(Number(decodeMessage(raw, type, depth).duration ?? 0)));
  if (type === "resource.Quantity" || type === "resource.QuantityValue") return decodeMessage(raw, type, depth).string ?? "0";
  if (type === "intstr.IntOrString") {
    const v = decodeMessage(raw, type, depth);
    return v.type === 1 ? (v.strVal ?? "") : (v.intVal ?? 0);
  }
  if (type === "runtime.RawExtension") return embeddedJson(fieldsIn(raw, depth).find((f) => f.number === 1)?.bytes ?? new Uint8Array(0), "an embedded object");
  if (type === "meta/v1.FieldsV1") return embeddedJson(fieldsIn(raw, depth).find((f) => f.number === 1)?.bytes ?? new Uint8Array(0), "fieldsV1");
  return noSpecial;
}
const noSpecial = Symbol("no special form");

function valueOf(type: string, field: Field, depth: number): unknown {
  if (isScalar(type)) return scalarValue(type, field);
  const raw = bytesOf(field);
  const special = specialValue(type, raw, depth + 1);
  return special === noSpecial ? decodeMessage(raw, type, depth + 1) : special;
}

/** Repeated numbers may come packed (one length-delimited field) or one per field. */
function repeatedValues(spec: WireField, field: Field, depth: number): unknown[] {
  const numeric = isScalar(spec.type) && spec.type !== "string" && spec.type !== "bytes";
  if (!numeric || field.wire !== 2) return [valueOf(spec.type, field, depth)];
  const reader = new Reader(bytesOf(field));
  const values: unknown[] = [];
  while (!reader.done) values.push(scalarValue(spec.type, { number: field.number, wire: 0, int: reader.varint() }));
  return values;
}

function mapEntry(spec: WireField, field: Field, depth: number): [string, unknown] {
  let key = "";
  let value: unknown;
  for (const f of fieldsIn(bytesOf(field), depth + 1)) {
    if (f.number === 1) key = String(scalarValue(spec.map!, f));
    else if (f.number === 2) value = valueOf(spec.type, f, depth + 1);
  }
  return [key, value ?? (spec.type === "string" ? "" : isScalar(spec.type) ? undefined : {})];
}

/** Decodes one message into its JSON form. Unknown field numbers are skipped, as Go's decoder skips them. */
export function decodeMessage(raw: Uint8Array, message: string, depth = 0): JsonObject {
  const out: JsonObject = {};
  for (const f of fieldsIn(raw, depth)) {
    const spec = fieldByNumber(message, f.number);
    if (spec === undefined) continue;
    if (spec.map !== undefined) {
      const entries = (out[spec.name] ??= {}) as JsonObject;
      const [key, value] = mapEntry(spec, f, depth);
      if (value !== undefined) setKey(entries, key, value);
    } else if (spec.repeated === true) {
      ((out[spec.name] ??= []) as unknown[]).push(...repeatedValues(spec, f, depth));
    } else if (spec.inline === true) {
      // A Go-inlined struct: its fields are the parent's in JSON.
      Object.assign(out, decodeMessage(bytesOf(f), spec.type, depth + 1));
    } else {
      const value = valueOf(spec.type, f, depth);
      // Only scalars have zero values to drop: a present message (an `IntOrString` of 0) was set by the client.
      if (value === undefined || (isScalar(spec.type) && isZero(value) && !zeroKept.has(`${message}.${spec.name}`))) delete out[spec.name];
      else out[spec.name] = value;
    }
  }
  return out;
}

/** The message of `apiVersion`/`kind`: a built-in kind, or one of the meta kinds (DeleteOptions, Status). */
export function messageFor(apiVersion: string, kind: string): string | undefined {
  // Status is registered unversioned in the core group: every server writes it as apiVersion v1, in any group.
  if (kind === "Status" && apiVersion === "v1") return "meta/v1.Status";
  const slash = apiVersion.indexOf("/");
  const group = slash < 0 ? "" : apiVersion.slice(0, slash);
  const version = slash < 0 ? apiVersion : apiVersion.slice(slash + 1);
  // DeleteOptions is registered in every group version, and client-go names the one of the object it deletes
  // (controller-runtime's Delete of a Job sends batch/v1 DeleteOptions).
  if (kind === "DeleteOptions" && (group === "meta.k8s.io" || wireKinds.some((k) => k.group === group && k.version === version))) return "meta/v1.DeleteOptions";
  const found = wireKinds.find((k) => k.group === group && k.version === version && k.kind === kind);
  if (found !== undefined) return found.message;
  if (kind.endsWith("List")) {
    const item = wireKinds.find((k) => k.group === group && k.version === version && k.kind === kind.slice(0, -4) && k.list);
    if (item !== undefined) return `${item.message}List`;
  }
  return undefined;
}

/**
 * Decodes a protobuf request body into the JSON object the client meant. 400 for bytes that are not a valid
 * envelope or message; 415 for a well-formed envelope of a type this server does not know.
 */
export function decodeProtobuf(body: Uint8Array): Record<string, unknown> {
  if (body.length < magic.length || magic.some((b, i) => body[i] !== b)) throw malformed("missing the k8s protobuf prefix");
  const outer = body.subarray(magic.length);
  // The envelope's fields other than `raw`, decoded as JSON; `raw` is taken as bytes (it may be large).
  const envelope = decodeMessage(outer, "runtime.Unknown");
  const rawField = fieldsIn(outer, 0).findLast((f) => f.number === 2);
  const typeMeta = (envelope.typeMeta ?? {}) as JsonObject;
  const apiVersion = String(typeMeta.apiVersion ?? "");
  const kind = String(typeMeta.kind ?? "");
  if (envelope.contentEncoding !== undefined) throw malformed(`unsupported content encoding ${JSON.stringify(envelope.contentEncoding)}`);
  const message = messageFor(apiVersion, kind);
  if (message === undefined) {
    throw new ApiError("UnsupportedMediaType", 415, `the protobuf body of ${apiVersion}/${kind} is not supported by this server; send JSON`);
  }
  return { apiVersion, kind, ...decodeMessage(rawField === undefined ? new Uint8Array(0) : bytesOf(rawField), message) };
}

export { encodeProtobuf, encodeMessage, encodeWatchFrame } from "./protobuf-encode.ts";
export { goDuration, parseGoDuration };
