// The Status-reason predicates a controller author branches on, checked against errors the store really
// produces where the store produces them, and against the exact Status every other reason arrives as.
import { test } from "node:test";
import assert from "node:assert/strict";
import * as settle from "../../src/runtime/index.ts";
import { ApiError, type StatusReason } from "../../src/api/errors.ts";
import { createStore } from "../../src/store/index.ts";

const predicates = {
  BadRequest: settle.isBadRequest,
  NotFound: settle.isNotFound,
  AlreadyExists: settle.isAlreadyExists,
  Conflict: settle.isConflict,
  Invalid: settle.isInvalid,
  Expired: settle.isExpired,
  RequestEntityTooLarge: settle.isRequestEntityTooLarge,
  TooManyRequests: settle.isTooManyRequests,
  InternalError: settle.isInternalError,
  Timeout: settle.isTimeout,
  ServerTimeout: settle.isServerTimeout,
  MethodNotAllowed: settle.isMethodNotAllowed,
  UnsupportedMediaType: settle.isUnsupportedMediaType,
  NotAcceptable: settle.isNotAcceptable,
  Forbidden: settle.isForbidden,
  Unauthorized: settle.isUnauthorized,
} satisfies Record<Exclude<StatusReason, "Gone">, (e: unknown) => boolean>;

const codes: Record<StatusReason, number> = {
  BadRequest: 400, NotFound: 404, AlreadyExists: 409, Conflict: 409, Invalid: 422, Gone: 410, Expired: 410,
  RequestEntityTooLarge: 413, TooManyRequests: 429, InternalError: 500, Timeout: 504, ServerTimeout: 500,
  MethodNotAllowed: 405, UnsupportedMediaType: 415, NotAcceptable: 406, Forbidden: 403, Unauthorized: 401,
};

function caught(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  assert.fail("expected the call to throw");
}

test("every Status reason has exactly one predicate that recognises it", () => {
  for (const [reason, code] of Object.entries(codes) as Array<[StatusReason, number]>) {
    const error = ApiError.fromStatus({ apiVersion: "v1", kind: "Status", metadata: {}, status: "Failure", reason, code, message: reason });
    const matching = Object.entries(predicates).filter(([, is]) => is(error)).map(([name]) => name);
    assert.deepEqual(matching, reason === "Gone" ? [] : [reason], `reason ${reason}`);
  }
});

test("isGone covers both 410 reasons, Gone and Expired, and nothing else", () => {
  for (const [reason, code] of Object.entries(codes) as Array<[StatusReason, number]>) {
    assert.equal(settle.isGone(new ApiError(reason, code, reason)), code === 410, reason);
  }
});

test("a bare 429 or 504 from a proxy (no Status reason) counts as throttling or a timeout, not an internal error", () => {
  const bare = (code: number) => ApiError.fromStatus({ apiVersion: "v1", kind: "Status", metadata: {}, code, message: "upstream" });
  assert.equal(settle.isTooManyRequests(bare(429)), true);
  assert.equal(settle.isInternalError(bare(429)), false);
  assert.equal(settle.isTimeout(bare(504)), true);
  assert.equal(settle.isInternalError(bare(504)), false);
  assert.equal(settle.isInternalError(bare(502)), true);
  assert.equal(settle.isTimeout("a string is not an ApiError"), false);
});

// One isNotFound serves the server (which asked "is this the store's 404?" by the code) and every client (which
// asked by the reason): the reason decides when the server gave one, and only a 404 without one is told by its code.
test("a bare 404 from a proxy (no Status reason) is a NotFound and nothing else; a 404 naming another reason is not", () => {
  const bare = (code: number) => ApiError.fromStatus({ apiVersion: "v1", kind: "Status", metadata: {}, code, message: "upstream" });
  const matching = (error: unknown) => Object.entries(predicates).filter(([, is]) => is(error)).map(([name]) => name);
  assert.deepEqual(matching(bare(404)), ["NotFound"]);
  assert.deepEqual(matching(bare(429)), ["TooManyRequests"]);
  assert.deepEqual(matching(bare(504)), ["Timeout"]);
  assert.deepEqual(matching(bare(502)), ["InternalError"]);
  assert.deepEqual(matching(new ApiError("Forbidden", 404, "a webhook's odd denial")), ["Forbidden"]);
  assert.equal(settle.isNotFound(new ApiError("NotFound", 404, `configmaps "a" not found`)), true);
  assert.equal(settle.isNotFound({ code: 404, reason: "NotFound" }), false, "only an ApiError");
});

test("the store's own errors answer to the predicates of their reasons", () => {
  const store = createStore({ now: () => 0, historyRevisionsMax: 2 });
  const cm = { apiVersion: "v1", kind: "ConfigMap", metadata: { namespace: "default", name: "a" }, data: {} };
  store.create(cm);
  assert.ok(settle.isAlreadyExists(caught(() => store.create(cm))));
  assert.ok(settle.isNotFound(caught(() => store.get({ apiVersion: "v1", kind: "ConfigMap", namespace: "default", name: "b" }))));
  const read = store.get({ apiVersion: "v1", kind: "ConfigMap", namespace: "default", name: "a" });
  store.update({ ...read, data: { changed: "yes" } });
  assert.ok(settle.isConflict(caught(() => store.update({ ...read, data: { changed: "again" } }))));
  assert.ok(settle.isInvalid(caught(() => store.create({ ...cm, metadata: { namespace: "default", name: "Not_A_Name" } }))));
  const ahead = caught(() => store.list({ apiVersion: "v1", kind: "ConfigMap", revision: 999 }));
  assert.ok(settle.isTimeout(ahead), String(ahead));
  assert.equal(settle.retryAfterSeconds(ahead), 1);
  for (let i = 0; i < 5; i++) store.create({ ...cm, metadata: { namespace: "default", name: `c${i}` } });
  const old = caught(() => store.watch({ apiVersion: "v1", kind: "ConfigMap", fromRevision: 1 }, () => {}));
  assert.ok(settle.isExpired(old) && settle.isGone(old), String(old));
  assert.ok(settle.isForbidden(caught(() => store.delete({ apiVersion: "v1", kind: "Namespace", name: "default" }))));
});
