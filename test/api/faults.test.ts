// The shared fault model: every kind, its parameters and defaults, the errors that name the field, and the one
// mapping from a fail code to a Status.
import { test } from "node:test";
import assert from "node:assert/strict";
import { isApiError } from "../../src/api/errors.ts";
import {
  builtinFaultKinds,
  failCodes,
  faultCountParam,
  faultDrawDefaults,
  faultIntegerParam,
  faultParam,
  faultParamErrors,
  faultParams,
  injectedRequestError,
  isServerFaultKind,
  serverFaultKinds,
} from "../../src/api/faults.ts";
import type { BuiltinFaultKind } from "../../src/api/faults.ts";

const kindTable: ReadonlyArray<{ kind: BuiltinFaultKind; params: Record<string, number | string>; onServer: boolean }> = [
  { kind: "crash", params: { relistAtRevision: 0, relistKind: "", relistCatchUpMs: 0 }, onServer: false },
  { kind: "pause", params: { durationMs: 1000 }, onServer: false },
  { kind: "stale-read", params: { lagRevisions: 1 }, onServer: true },
  { kind: "delay-watch", params: { delayMs: 1000 }, onServer: true },
  { kind: "close-watch", params: { relistAtRevision: 0, relistCatchUpMs: 0, expired: 0 }, onServer: true },
  { kind: "fail-request", params: { code: 500 }, onServer: true },
  { kind: "lost-response", params: {}, onServer: true },
  { kind: "clock-skew", params: { offsetMs: 0 }, onServer: false },
  { kind: "clock-step", params: { deltaMs: 0 }, onServer: false },
];

test("every built-in kind has its parameters and defaults, and the server applies all but crash, pause and the clock kinds", () => {
  assert.deepEqual(kindTable.map((row) => row.kind), [...builtinFaultKinds]);
  for (const { kind, params, onServer } of kindTable) {
    const defaults = Object.fromEntries(faultParams[kind].map((p) => [p.name, p.default]));
    assert.deepEqual(defaults, params, kind);
    for (const name of Object.keys(params)) assert.equal(faultParam(kind, name).default, params[name], `${kind}.${name}`);
    assert.equal(isServerFaultKind(kind), onServer, kind);
  }
  assert.deepEqual([...serverFaultKinds], kindTable.filter((row) => row.onServer).map((row) => row.kind));
  assert.equal(faultCountParam.default, 1);
});

test("asking for a parameter a kind does not have is a programmer error", () => {
  assert.throws(() => faultParam("crash", "durationMs"), /fault kind crash has a parameter durationMs/);
  assert.throws(() => faultIntegerParam("crash", "relistKind"), /fault parameter crash.relistKind is an integer/);
});

test("the default draw ranges of a budget lie inside the parameters' bounds", () => {
  assert.deepEqual(faultDrawDefaults.pauseMs, [1000, 30_000]);
  assert.deepEqual(faultDrawDefaults.delayWatchMs, [100, 5000]);
  assert.equal(faultDrawDefaults.staleLagRevisionsMax, 5);
  assert.deepEqual([...faultDrawDefaults.failCodes], [409, 429, 500, 504]);
  const within = (kind: BuiltinFaultKind, name: string, value: number) => faultParamErrors(kind, { [name]: value }).length === 0;
  for (const ms of faultDrawDefaults.pauseMs) assert.ok(within("pause", "durationMs", ms));
  for (const ms of faultDrawDefaults.delayWatchMs) assert.ok(within("delay-watch", "delayMs", ms));
  assert.ok(within("stale-read", "lagRevisions", faultDrawDefaults.staleLagRevisionsMax));
  for (const code of faultDrawDefaults.failCodes) assert.ok(within("fail-request", "code", code));
  // A drawn close-watch sometimes expires its watch: a proper chance, neither never nor always.
  const [numerator, denominator] = faultDrawDefaults.closeWatchExpired;
  assert.ok(numerator > 0 && numerator < denominator, `${numerator}/${denominator}`);
});

const invalidTable: ReadonlyArray<{ kind: BuiltinFaultKind; fault: Record<string, unknown>; field: string; type: string; message: string }> = [
  { kind: "pause", fault: { durationMs: -1 }, field: "f.durationMs", type: "FieldValueInvalid", message: "Invalid value: must be an integer from 0 to 86400000" },
  { kind: "pause", fault: { durationMs: 1.5 }, field: "f.durationMs", type: "FieldValueInvalid", message: "Invalid value: must be an integer from 0 to 86400000" },
  { kind: "stale-read", fault: { lagRevisions: 0 }, field: "f.lagRevisions", type: "FieldValueInvalid", message: "Invalid value: must be an integer from 1 to 1000000" },
  { kind: "stale-read", fault: { lagRevisions: "2" }, field: "f.lagRevisions", type: "FieldValueInvalid", message: "Invalid value: must be an integer from 1 to 1000000" },
  { kind: "delay-watch", fault: { delayMs: 600_001 }, field: "f.delayMs", type: "FieldValueInvalid", message: "Invalid value: must be an integer from 0 to 600000" },
  { kind: "fail-request", fault: { code: 418 }, field: "f.code", type: "FieldValueNotSupported", message: "Unsupported value: 418: supported values: 409, 429, 500, 504" },
  { kind: "fail-request", fault: { code: "500" }, field: "f.code", type: "FieldValueNotSupported", message: 'Unsupported value: "500": supported values: 409, 429, 500, 504' },
  { kind: "crash", fault: { relistKind: 3 }, field: "f.relistKind", type: "FieldValueInvalid", message: "Invalid value: must be a string of at most 253 characters" },
  { kind: "crash", fault: { relistKind: "x".repeat(254) }, field: "f.relistKind", type: "FieldValueInvalid", message: "Invalid value: must be a string of at most 253 characters" },
];

test("each bad parameter is an error that names the field and says what was expected", () => {
  for (const { kind, fault, field, type, message } of invalidTable) {
    assert.deepEqual(faultParamErrors(kind, fault, "f"), [{ field, type, message }], `${kind} ${JSON.stringify(fault)}`);
  }
  assert.deepEqual(faultParamErrors("stale-read", { lagRevisions: 0 }).map((e) => e.field), ["lagRevisions"], "no path, the bare field");
});

test("absent parameters and fields of no parameter are no error", () => {
  for (const kind of builtinFaultKinds) assert.deepEqual(faultParamErrors(kind, { atStep: 3, target: "a" }), [], kind);
  assert.deepEqual(faultParamErrors("crash", { durationMs: -1 }), [], "crash has no durationMs to check");
});

test("each fail code maps to one Status reason, in the simulator's words and in the server's", () => {
  const table = [
    { code: 409, reason: "Conflict", simulator: 'Operation cannot be fulfilled on objects "update ConfigMap ns/a": the object has been modified; please apply your changes to the latest version and try again' },
    { code: 429, reason: "TooManyRequests", simulator: "too many requests: update ConfigMap ns/a", retryAfterSeconds: 1 },
    { code: 500, reason: "InternalError", simulator: "internal error: update ConfigMap ns/a" },
    { code: 504, reason: "Timeout", simulator: "the request timed out: update ConfigMap ns/a", retryAfterSeconds: 1 },
  ];
  assert.deepEqual(table.map((row) => row.code), [...failCodes]);
  for (const row of table) {
    const sim = injectedRequestError(row.code, { wording: "simulator", resource: "objects", name: "update ConfigMap ns/a" });
    const server = injectedRequestError(row.code, { wording: "server", resource: "configmaps", name: "a" });
    for (const error of [sim, server]) {
      assert.ok(isApiError(error));
      assert.equal(error.code, row.code);
      assert.equal(error.reason, row.reason);
      assert.equal(error.status.details?.retryAfterSeconds, row.retryAfterSeconds);
    }
    assert.equal(sim.message, row.simulator);
    assert.match(server.message, / \(injected fault\)$/);
  }
  const conflict = injectedRequestError(409, { wording: "server", resource: "configmaps", name: "a" });
  assert.deepEqual(conflict.status.details, { kind: "configmaps", name: "a" });
  assert.match(conflict.message, /^Operation cannot be fulfilled on configmaps "a": the object has been modified/);
  const onCollection = injectedRequestError(409, { wording: "server", resource: "configmaps" });
  assert.deepEqual(onCollection.status.details, { kind: "configmaps" });
  assert.match(onCollection.message, /^Operation cannot be fulfilled on configmaps: /);
});

test("a code outside failCodes is a programmer error, never a silent 500", () => {
  assert.throws(() => injectedRequestError(418, { wording: "server", resource: "configmaps" }), /one of failCodes/);
});
