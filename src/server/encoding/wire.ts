// Lookups in the generated wire table (src/api/generated/k8s-api.ts): the message of a built-in kind and the
// fields of a message by JSON name or by protobuf number.
import { wireKinds, wireMessages } from "../../api/generated/k8s-api.ts";
import type { WireField } from "../../api/wire-types.ts";

const kindMessages = new Map(wireKinds.map((k) => [`${k.group}/${k.version}/${k.kind}`, k.message]));

/** The message id of a built-in kind (`apps/v1.Deployment`), or undefined for kinds the table does not hold. */
export function messageOfKind(group: string, version: string, kind: string): string | undefined {
  return kindMessages.get(`${group}/${version}/${kind}`);
}

export function wireFields(message: string): readonly WireField[] {
  const fields = wireMessages[message];
  if (fields === undefined) throw new Error(`message ${message} is not in the wire table`);
  return fields;
}

const byName = new Map<string, Map<string, WireField>>();

/** The field of `message` with JSON name `name`. */
export function wireField(message: string, name: string): WireField | undefined {
  let fields = byName.get(message);
  if (fields === undefined) {
    fields = new Map(wireFields(message).map((f) => [f.name, f]));
    byName.set(message, fields);
  }
  return fields.get(name);
}

export function isScalar(type: string): boolean {
  return !type.includes(".");
}
