// The protobuf request decoder, against bodies built the way client-go encodes them.
import { test } from "node:test";
import assert from "node:assert/strict";
import { decodeProtobuf, encodeProtobuf } from "../../src/server/encoding/protobuf.ts";
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

test("a protobuf map entry keyed __proto__ or constructor decodes to a member of that name, not a prototype", () => {
  const raw = [...meta("cm"), ...entry(2, "__proto__", "p"), ...entry(2, "constructor", "c"), ...entry(2, "a", "b")];
  const data = decodeProtobuf(envelope("v1", "ConfigMap", raw)).data as Record<string, unknown>;
  assert.equal(Object.getPrototypeOf(data), Object.prototype);
  assert.deepEqual(Object.keys(data), ["__proto__", "constructor", "a"]);
  assert.equal(Object.getOwnPropertyDescriptor(data, "__proto__")?.value, "p");
  assert.equal(JSON.stringify(data), '{"__proto__":"p","constructor":"c","a":"b"}');
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

test("DeleteOptions decode in the group version of the object deleted, as client-go sends them (a Job's are batch/v1)", () => {
  for (const apiVersion of ["v1", "batch/v1", "apps/v1"]) {
    const options = decodeProtobuf(envelope(apiVersion, "DeleteOptions", [...str(4, "Background")]));
    assert.deepEqual(options, { apiVersion, kind: "DeleteOptions", propagationPolicy: "Background" });
  }
  assert.throws(() => decodeProtobuf(envelope("example.com/v1", "DeleteOptions", [...str(4, "Background")])), /not supported by this server/);
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
  assert.equal(code(envelope("example.com/v1", "Widget", [])), 415);
  // The message types bound protobuf nesting; embedded JSON (a ControllerRevision's data) has the JSON body's bound.
  const deep = [...Buffer.from(`${"[".repeat(5000)}${"]".repeat(5000)}`)];
  assert.equal(code(envelope("apps/v1", "ControllerRevision", bytesField(2, bytesField(1, deep)))), 400);
  assert.equal(code(envelope("apps/v1", "ControllerRevision", bytesField(2, bytesField(1, [...Buffer.from("{]")])))), 400);
  assert.equal(code(envelope("v1", "ConfigMap", [...bytesField(2, [0xff, 0xff])])), 400);
  assert.equal(code(envelope("v1", "ConfigMap", [...meta("x", bytesField(8, int(1, 2 ** 52)))])), 400);
});

test("a protobuf Deployment decodes through the wire table: pointer zeros kept, IntOrString and Quantity in JSON form", () => {
  const container = [...str(1, "web"), ...str(2, "nginx"), ...bytesField(6, [...int(3, 80), ...str(4, "TCP")]), ...bytesField(8, entry(1, "cpu", str(1, "100m")))];
  const template = bytesField(3, [...bytesField(1, entry(11, "app", "web")), ...bytesField(2, bytesField(2, container))]);
  const strategy = bytesField(4, [...str(1, "RollingUpdate"), ...bytesField(2, [...bytesField(1, [...int(1, 0), ...int(2, 0)]), ...bytesField(2, [...int(1, 1), ...str(3, "25%")])])]);
  const spec = bytesField(2, [...int(1, 0), ...bytesField(2, entry(1, "app", "web")), ...template, ...strategy, ...int(5, 0), ...int(7, 0)]);
  const deployment = decodeProtobuf(envelope("apps/v1", "Deployment", [...meta("web"), ...spec]));
  assert.deepEqual(deployment.spec, {
    replicas: 0,
    selector: { matchLabels: { app: "web" } },
    template: {
      metadata: { labels: { app: "web" } },
      spec: { containers: [{ name: "web", image: "nginx", ports: [{ containerPort: 80, protocol: "TCP" }], resources: { limits: { cpu: "100m" } } }] },
    },
    strategy: { type: "RollingUpdate", rollingUpdate: { maxUnavailable: 0, maxSurge: "25%" } },
  });
});

test("encoding then decoding gives the object back, for kinds across groups", () => {
  const objects = [
    {
      apiVersion: "batch/v1",
      kind: "CronJob",
      metadata: { name: "nightly", namespace: "default", creationTimestamp: "2026-01-02T03:04:05Z", labels: { a: "b" }, ownerReferences: [{ apiVersion: "v1", kind: "X", name: "x", uid: "u", controller: true }] },
      spec: { schedule: "0 0 * * *", suspend: false, jobTemplate: { spec: { backoffLimit: 0, template: { spec: { restartPolicy: "Never", containers: [{ name: "c", image: "busybox", args: ["a", "b"], env: [{ name: "K", value: "V" }] }] } } } } },
      status: { lastScheduleTime: "2026-01-02T00:00:00Z" },
    },
    { apiVersion: "v1", kind: "Service", metadata: { name: "web", namespace: "default" }, spec: { type: "ClusterIP", ports: [{ name: "http", port: 80, targetPort: "http", protocol: "TCP" }], selector: { app: "web" } }, status: { loadBalancer: {} } },
    { apiVersion: "events.k8s.io/v1", kind: "Event", metadata: { name: "e", namespace: "default" }, eventTime: "2026-01-02T03:04:05.123456Z", reason: "R", regarding: { kind: "Pod", name: "p" } },
    { apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRole", metadata: { name: "system:x" }, rules: [{ apiGroups: [""], resources: ["pods"], verbs: ["get", "list"] }] },
    { apiVersion: "apps/v1", kind: "ControllerRevision", metadata: { name: "r", namespace: "default" }, data: { spec: { a: [1, 2] } }, revision: 3 },
    { apiVersion: "v1", kind: "ConfigMapList", metadata: { resourceVersion: "42" }, items: [{ metadata: { name: "a" }, data: { k: "v" } }] },
  ];
  const messages: Record<string, string> = { CronJob: "batch/v1.CronJob", Service: "core/v1.Service", Event: "events/v1.Event", ClusterRole: "rbac/v1.ClusterRole", ControllerRevision: "apps/v1.ControllerRevision", ConfigMapList: "core/v1.ConfigMapList" };
  for (const object of objects) {
    const body = encodeProtobuf(object, messages[object.kind]!);
    assert.deepEqual([...body.subarray(0, 4)], [0x6b, 0x38, 0x73, 0x00]);
    assert.deepEqual(decodeProtobuf(body), object, object.kind);
  }
});
