// The protobuf request decoder, against bodies built the way client-go encodes them.
import { test } from "node:test";
import assert from "node:assert/strict";
import { decodeProtobuf } from "../../src/server/protobuf.ts";
import { isApiError } from "../../src/api/errors.ts";
import { bytesField, entry, envelope, int, str } from "./helpers.ts";

const meta = (name: string, extra: number[] = []) => bytesField(1, [...str(1, name), ...str(2, ""), ...str(3, "default"), ...bytesField(8, []), ...extra]);

test("a protobuf ConfigMap decodes to its JSON form, without the empty fields Go's encoder writes", () => {
  const raw = [...meta("cm", [...entry(11, "app", "x"), ...str(14, "f1")]), ...entry(2, "a", "b"), ...entry(3, "bin", [1, 2, 3]), ...int(4, 1)];
  assert.deepEqual(decodeProtobuf(envelope("v1", "ConfigMap", raw)), {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: "cm", namespace: "default", labels: { app: "x" }, finalizers: ["f1"] },
    data: { a: "b" },
    binaryData: { bin: "AQID" },
    immutable: true,
  });
});

test("a protobuf Secret, Namespace and DeleteOptions decode", () => {
  const secret = decodeProtobuf(envelope("v1", "Secret", [...meta("s"), ...entry(2, "k", [...Buffer.from("v")]), ...str(3, "Opaque")]));
  assert.deepEqual(secret.data, { k: "dg==" });
  assert.equal(secret.type, "Opaque");
  const namespace = decodeProtobuf(envelope("v1", "Namespace", [...bytesField(1, str(1, "team")), ...bytesField(2, str(1, "kubernetes"))]));
  assert.deepEqual(namespace.spec, { finalizers: ["kubernetes"] });
  const options = decodeProtobuf(envelope("meta.k8s.io/v1", "DeleteOptions", [...int(1, 0), ...bytesField(2, str(1, "u1")), ...str(4, "Foreground"), ...str(5, "All")]));
  assert.deepEqual(options, { apiVersion: "meta.k8s.io/v1", kind: "DeleteOptions", gracePeriodSeconds: 0, preconditions: { uid: "u1" }, propagationPolicy: "Foreground", dryRun: ["All"] });
});

test("malformed protobuf is a 400 and an unknown type a 415, never a crash", () => {
  const code = (body: Uint8Array) => {
    try {
      decodeProtobuf(body);
      return 200;
    } catch (error) {
      assert.ok(isApiError(error), String(error));
      return error.code;
    }
  };
  assert.equal(code(new Uint8Array([1, 2, 3])), 400);
  assert.equal(code(new Uint8Array([0x6b, 0x38, 0x73, 0x00, 0x0a, 0xff])), 400);
  assert.equal(code(new Uint8Array([0x6b, 0x38, 0x73, 0x00, 0x0f])), 400);
  assert.equal(code(envelope("v1", "Pod", [])), 415);
  assert.equal(code(envelope("v1", "ConfigMap", [...bytesField(2, [0xff, 0xff])])), 400);
  assert.equal(code(envelope("v1", "ConfigMap", [...meta("x", bytesField(8, int(1, 2 ** 52)))])), 400);
});
