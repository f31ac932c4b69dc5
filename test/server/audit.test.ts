// Audit events (`--audit-log-path` under `--audit-policy-file`, src/server/audit.ts): one audit.k8s.io/v1 Event per
// JSON line for each request the policy's first matching rule selects, at the stages it keeps, with the audit ID the
// answer's Audit-Id header carries, the verb, the user, the object reference and the response status.
import { test } from "node:test";
import assert from "node:assert/strict";
import { realClock } from "../../src/api/clock.ts";
import { Auditor, parseAuditPolicy } from "../../src/server/index.ts";
import { configMap, readEvents, request, testServer, watchRequest } from "./helpers.ts";

const policy = parseAuditPolicy({
  apiVersion: "audit.k8s.io/v1",
  kind: "Policy",
  rules: [
    { level: "None", nonResourceURLs: ["/healthz*", "/version"] },
    { level: "None", resources: [{ group: "", resources: ["secrets"] }] },
    { level: "RequestResponse", verbs: ["create", "delete"], resources: [{ group: "", resources: ["configmaps"] }], omitStages: ["RequestReceived"] },
    { level: "Metadata" },
  ],
});

test("the policy selects requests, and each selected one is an Event line at ResponseComplete", async () => {
  const lines: string[] = [];
  const t = await testServer({ audit: new Auditor(policy, (line) => lines.push(line), realClock) });
  try {
    const created = await request(t.server, "POST", "/api/v1/namespaces/default/configmaps", { body: configMap("audited"), headers: { "user-agent": "audit-test/1.0" } });
    assert.equal(created.status, 201, created.text);
    const missing = await request(t.server, "GET", "/api/v1/namespaces/default/configmaps/absent");
    assert.equal(missing.status, 404);
    assert.equal((await request(t.server, "GET", "/api/v1/namespaces/default/secrets")).status, 200);
    assert.equal((await request(t.server, "GET", "/healthz", { auth: false })).status, 200);
    assert.equal((await request(t.server, "GET", "/api/v1/namespaces", { auth: false })).status, 401);
    for (let i = 0; i < 50 && lines.length < 5; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    const events = lines.map((line) => {
      assert.ok(line.endsWith("\n") && !line.slice(0, -1).includes("\n"), "one event per line");
      return JSON.parse(line);
    });
    // The create (ResponseComplete only: its rule omits RequestReceived), the 404 and the 401 (both stages: the
    // catch-all rule omits none); secrets and /healthz are level None.
    assert.deepEqual(events.map((e) => `${e.stage} ${e.verb} ${e.requestURI} ${e.responseStatus?.code ?? "-"}`), [
      "ResponseComplete create /api/v1/namespaces/default/configmaps 201",
      "RequestReceived get /api/v1/namespaces/default/configmaps/absent -",
      "ResponseComplete get /api/v1/namespaces/default/configmaps/absent 404",
      "RequestReceived get /api/v1/namespaces -",
      "ResponseComplete get /api/v1/namespaces 401",
    ]);
    const [create, received, notFound] = events;
    assert.equal(received.auditID, notFound.auditID, "one audit ID for the stages of a request");
    assert.equal(received.stageTimestamp, received.requestReceivedTimestamp);
    assert.equal(create.kind, "Event");
    assert.equal(create.apiVersion, "audit.k8s.io/v1");
    assert.equal(create.level, "Metadata", "events carry the Metadata level's fields, and say so");
    assert.equal(create.auditID, created.headers.get("audit-id"));
    assert.match(create.auditID, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    assert.equal(create.user.username, "settle-admin");
    assert.ok(create.user.groups.includes("system:masters"));
    assert.deepEqual(create.sourceIPs, ["127.0.0.1"]);
    assert.equal(create.userAgent, "audit-test/1.0");
    assert.deepEqual(create.objectRef, { resource: "configmaps", namespace: "default", apiVersion: "v1" });
    assert.deepEqual(create.responseStatus, { metadata: {}, code: 201 });
    assert.match(create.requestReceivedTimestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    assert.ok(create.stageTimestamp >= create.requestReceivedTimestamp);
    assert.deepEqual(notFound.objectRef, { resource: "configmaps", namespace: "default", name: "absent", apiVersion: "v1" });
    assert.deepEqual(notFound.responseStatus, { metadata: {}, status: "Failure", message: 'configmaps "absent" not found', reason: "NotFound", code: 404 });
    assert.deepEqual(events[4].user, {});
  } finally {
    await t.close();
  }
});

test("a policy that is not one is refused naming the field", () => {
  assert.throws(() => parseAuditPolicy({ apiVersion: "v1", kind: "ConfigMap" }), /expected an audit policy: apiVersion "audit.k8s.io\/v1", kind "Policy"/);
  assert.throws(() => parseAuditPolicy({ apiVersion: "audit.k8s.io/v1", kind: "Policy", rules: [{ level: "Loud" }] }), /rules\[0\]\.level: expected one of None, Metadata, Request, RequestResponse/);
  assert.throws(() => parseAuditPolicy({ apiVersion: "audit.k8s.io/v1", kind: "Policy", rules: [{ level: "None", verbs: "get" }] }), /rules\[0\]\.verbs: expected a list of strings/);
});

test("a watch is audited at RequestReceived, ResponseStarted when its headers go out, and ResponseComplete when it ends", async () => {
  const lines: string[] = [];
  const everything = parseAuditPolicy({ apiVersion: "audit.k8s.io/v1", kind: "Policy", rules: [{ level: "Metadata", resources: [{ group: "", resources: ["configmaps"] }] }] });
  const t = await testServer({ audit: new Auditor(everything, (line) => lines.push(line), realClock) });
  try {
    const abort = new AbortController();
    const watch = await watchRequest(t.server, "/api/v1/namespaces/default/configmaps?watch=true", abort.signal);
    assert.equal(watch.status, 200);
    const started = lines.map((line) => JSON.parse(line));
    assert.deepEqual(started.map((e) => `${e.stage} ${e.verb} ${e.responseStatus?.code ?? "-"}`), ["RequestReceived watch -", "ResponseStarted watch 200"]);
    const events = readEvents(watch, (seen) => seen.length >= 1);
    assert.equal((await request(t.server, "POST", "/api/v1/namespaces/default/configmaps", { body: configMap("seen") })).status, 201);
    await events;
    abort.abort();
    for (let i = 0; i < 100 && !lines.some((line) => line.includes('"ResponseComplete","requestURI":"/api/v1/namespaces/default/configmaps?watch=true"')); i++) await new Promise((resolve) => setTimeout(resolve, 10));
    const all = lines.map((line) => JSON.parse(line)).filter((e) => e.verb === "watch");
    assert.deepEqual(all.map((e) => e.stage), ["RequestReceived", "ResponseStarted", "ResponseComplete"]);
    assert.equal(new Set(all.map((e) => e.auditID)).size, 1);
  } finally {
    await t.close();
  }
});
