// Faults on demand while serving: armed through the authenticated control endpoint or `startServer({ faults })`.
import { test } from "node:test";
import assert from "node:assert/strict";
import { configMap, readEvents, request, testServer, watchRequest } from "./helpers.ts";

const base = "/api/v1/namespaces/default/configmaps";
const cmRef = (name: string) => ({ apiVersion: "v1", kind: "ConfigMap", namespace: "default", name });

test("the control endpoint needs the token, checks its input, arms, lists and clears faults", async () => {
  const t = await testServer();
  try {
    assert.equal((await request(t.server, "POST", "/settle/faults", { body: { kind: "fail-request" }, auth: false })).status, 401);
    const bad = await request(t.server, "POST", "/settle/faults", { body: [{ kind: "explode" }, { kind: "fail-request", code: 418, extra: 1 }] });
    assert.equal(bad.status, 422);
    assert.deepEqual(bad.json.details.causes.map((c: any) => c.field), ["faults[0].kind", "faults[1].extra", "faults[1].code"]);
    // A per-kind stale relist needs one watch cache per kind: only the simulator models it, so the server refuses it.
    const simulatorOnly = await request(t.server, "POST", "/settle/faults", { body: { kind: "close-watch", relistAtRevision: 3 } });
    assert.equal(simulatorOnly.status, 422);
    assert.deepEqual(simulatorOnly.json.details.causes.map((c: any) => [c.field, c.message]), [["faults[0].relistAtRevision", "Unsupported field"]]);
    const armed = await request(t.server, "POST", "/settle/faults", { raw: "faults:\n- {kind: fail-request, code: 429, verb: create, count: 2}\n", contentType: "application/yaml" });
    assert.equal(armed.status, 201);
    assert.equal((await request(t.server, "GET", "/settle/faults")).json.items.length, 1);
    assert.equal((await request(t.server, "DELETE", "/settle/faults")).json.cleared, 1);
    assert.equal(t.server.faults.length, 0);
  } finally {
    await t.close();
  }
});

test("injected 409, 429, 500 and 504 answer matching requests count times without touching the store", async () => {
  const t = await testServer();
  try {
    await request(t.server, "POST", "/settle/faults", { body: [{ kind: "fail-request", code: 409, verb: "create", resource: "configmaps", count: 2 }, { kind: "fail-request", code: 429, verb: "get" }, { kind: "fail-request", code: 500, verb: "list" }, { kind: "fail-request", code: 504, verb: "delete" }] });
    const revision = t.server.store.revision;
    const first = await request(t.server, "POST", base, { body: configMap("a") });
    assert.equal(first.status, 409);
    assert.equal(first.json.reason, "Conflict");
    assert.equal((await request(t.server, "POST", base, { body: configMap("a") })).status, 409);
    assert.equal(t.server.store.revision, revision);
    assert.equal((await request(t.server, "POST", base, { body: configMap("a") })).status, 201);
    const throttled = await request(t.server, "GET", `${base}/a`);
    assert.equal(throttled.status, 429);
    assert.equal(throttled.headers.get("retry-after"), "1");
    assert.equal((await request(t.server, "GET", `${base}/a`)).status, 200);
    assert.equal((await request(t.server, "GET", base)).status, 500);
    assert.equal((await request(t.server, "DELETE", `${base}/a`)).status, 504);
    assert.equal((await request(t.server, "DELETE", `${base}/a`)).status, 200);
    assert.equal(t.server.faults.length, 0);
  } finally {
    await t.close();
  }
});

test("a lost response: the write is applied, and the client sees the connection drop", async () => {
  const t = await testServer({ faults: [{ kind: "lost-response", verb: "create" }] });
  try {
    await assert.rejects(request(t.server, "POST", base, { body: configMap("lost", { a: "b" }) }));
    assert.deepEqual(t.server.store.get(cmRef("lost")).data, { a: "b" });
    const retry = await request(t.server, "POST", base, { body: configMap("lost", { a: "b" }) });
    assert.equal(retry.status, 409, "the retry finds what the lost request created");
    assert.equal(retry.json.reason, "AlreadyExists");
  } finally {
    await t.close();
  }
});

test("a stale read serves resourceVersion=0 lists and watches from an older revision; other reads stay current", async () => {
  const t = await testServer();
  try {
    await request(t.server, "POST", base, { body: configMap("one") });
    await request(t.server, "POST", base, { body: configMap("two") });
    await request(t.server, "POST", base, { body: configMap("three") });
    t.server.injectFaults([{ kind: "stale-read", lagRevisions: 2, count: 3 }]);
    const current = await request(t.server, "GET", base);
    assert.equal(current.json.items.length, 3, "a consistent list is not served from the cache");
    const stale = await request(t.server, "GET", `${base}?resourceVersion=0`);
    assert.deepEqual(stale.json.items.map((i: any) => i.metadata.name), ["one"]);
    assert.equal(Number(stale.json.metadata.resourceVersion), t.server.store.revision - 2);
    // A stale watch starts from the old state and then catches up: late, never lossy.
    const events = await readEvents(await watchRequest(t.server, `${base}?watch=true&resourceVersion=0`), (e) => e.length >= 3);
    assert.deepEqual(events.map((e) => `${e.type} ${e.object.metadata.name}`), ["ADDED one", "ADDED two", "ADDED three"]);
  } finally {
    await t.close();
  }
});

/** A clock whose timers fire only when the test advances it. */
function manualClock() {
  let now = Date.parse("2026-01-01T00:00:00Z");
  let timers: Array<{ due: number; fn: () => void; cancelled: boolean }> = [];
  return {
    now: () => now,
    sleep: () => new Promise<void>(() => {}),
    setTimer(ms: number, fn: () => void) {
      const timer = { due: now + ms, fn, cancelled: false };
      timers.push(timer);
      return { cancel: () => void (timer.cancelled = true) };
    },
    advance(ms: number) {
      now += ms;
      const due = timers.filter((x) => x.due <= now && !x.cancelled);
      timers = timers.filter((x) => x.due > now && !x.cancelled);
      for (const timer of due) timer.fn();
    },
  };
}

test("close-watch ends the matching open watches, and delay-watch holds their events and then delivers them in order", async () => {
  const clock = manualClock();
  const t = await testServer({ clock });
  try {
    const controller = new AbortController();
    const rv = t.server.store.revision;
    const response = await watchRequest(t.server, `${base}?watch=true&resourceVersion=${rv}`, controller.signal);
    const other = await watchRequest(t.server, `/api/v1/namespaces?watch=true&resourceVersion=${rv}`);
    while (t.server.watches < 2) await new Promise((resolve) => setTimeout(resolve, 5));
    const applied = t.server.injectFaults([{ kind: "delay-watch", resource: "configmaps", delayMs: 300 }]);
    assert.equal(applied[0]!.hits, 1);
    const seen: any[] = [];
    const reading = readEvents(response, (e) => {
      seen.splice(0, seen.length, ...e);
      return e.length >= 2;
    });
    await request(t.server, "POST", base, { body: configMap("x") });
    await request(t.server, "POST", base, { body: configMap("y") });
    await request(t.server, "GET", base);
    assert.deepEqual(seen, [], "held while the delay lasts");
    clock.advance(300);
    const events = await reading;
    assert.deepEqual(events.map((e) => e.object.metadata.name), ["x", "y"]);
    const closed = t.server.injectFaults([{ kind: "close-watch", resource: "namespaces" }]);
    assert.equal(closed[0]!.hits, 1);
    assert.deepEqual(await readEvents(other, () => false), []);
    controller.abort();
  } finally {
    await t.close();
  }
});

test("close-watch with expired fails the matching open watches with a 410 Expired ERROR event, then ends them", async () => {
  const t = await testServer();
  try {
    const rv = t.server.store.revision;
    const response = await watchRequest(t.server, `${base}?watch=true&resourceVersion=${rv}`);
    while (t.server.watches < 1) await new Promise((resolve) => setTimeout(resolve, 5));
    const applied = t.server.injectFaults([{ kind: "close-watch", resource: "configmaps", expired: 1 }]);
    assert.equal(applied[0]!.hits, 1);
    const events = await readEvents(response, () => false);
    assert.equal(events.length, 1);
    assert.equal(events[0].type, "ERROR");
    assert.deepEqual([events[0].object.kind, events[0].object.status, events[0].object.reason, events[0].object.code], ["Status", "Failure", "Expired", 410]);
    const bad = await request(t.server, "POST", "/settle/faults", { body: { kind: "close-watch", expired: 2 } });
    assert.deepEqual(bad.json.details.causes.map((c: any) => c.field), ["faults[0].expired"]);
  } finally {
    await t.close();
  }
});
