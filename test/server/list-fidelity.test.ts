// Lists and reads at a resourceVersion, as kube-apiserver answers them: `continue` excludes a resourceVersion,
// paged lists count what is left (`remainingItemCount`), and a revision the store has not reached is waited for (on
// the server's clock, up to 3 s, while other requests go on) before a 504 "Too large resource version".
import { test } from "node:test";
import assert from "node:assert/strict";
import { createServerStore } from "../../src/server/index.ts";
import { ManualClock } from "../runtime/manual-clock.ts";
import { configMap, readEvents, request, testServer, watchRequest } from "./helpers.ts";

const base = "/api/v1/namespaces/default/configmaps";

test("continue together with a resourceVersion other than 0 is a 400, as kube-apiserver's storage answers", async () => {
  const t = await testServer();
  try {
    for (const name of ["a", "b", "c"]) await request(t.server, "POST", base, { body: configMap(name) });
    const first = await request(t.server, "GET", `${base}?limit=1`);
    const token = encodeURIComponent(first.json.metadata.continue);
    const rv = first.json.metadata.resourceVersion;
    for (const query of [`resourceVersion=${rv}`, `resourceVersion=${rv}&resourceVersionMatch=NotOlderThan`, `resourceVersion=${rv}&resourceVersionMatch=Exact`]) {
      const refused = await request(t.server, "GET", `${base}?limit=1&continue=${token}&${query}`);
      assert.equal(refused.status, 400, query);
      assert.equal(refused.json.reason, "BadRequest");
      assert.equal(refused.json.message, "specifying resource version is not allowed when using continue");
    }
    // "0" (any revision) and an empty value are no resourceVersion: the token's revision is read.
    for (const query of ["resourceVersion=0", "resourceVersion="]) {
      const next = await request(t.server, "GET", `${base}?limit=1&continue=${token}&${query}`);
      assert.equal(next.status, 200, query);
      assert.deepEqual(next.json.items.map((o: any) => o.metadata.name), ["b"]);
    }
  } finally {
    await t.close();
  }
});

test("a paged list tells how many items are left, unless a selector makes the count unknown", async () => {
  const t = await testServer();
  try {
    for (const name of ["a", "b", "c", "d", "e"]) await request(t.server, "POST", base, { body: configMap(name, {}, { tier: name < "c" ? "front" : "back" }) });
    await request(t.server, "POST", "/api/v1/namespaces/kube-system/configmaps", { body: configMap("elsewhere") });
    const seen: Array<[string[], number | undefined]> = [];
    let token: string | undefined;
    do {
      const page = await request(t.server, "GET", `${base}?limit=2${token === undefined ? "" : `&continue=${encodeURIComponent(token)}`}`);
      seen.push([page.json.items.map((o: any) => o.metadata.name), page.json.metadata.remainingItemCount]);
      token = page.json.metadata.continue;
    } while (token !== undefined);
    assert.deepEqual(seen, [[["a", "b"], 3], [["c", "d"], 1], [["e"], undefined]]);
    // A deletion after the first page does not change what the token's revision holds.
    const first = await request(t.server, "GET", `${base}?limit=1`);
    await request(t.server, "DELETE", `${base}/e`);
    const second = await request(t.server, "GET", `${base}?limit=1&continue=${encodeURIComponent(first.json.metadata.continue)}`);
    assert.equal(second.json.metadata.remainingItemCount, 3);
    // With a selector kube-apiserver cannot count what is left, and leaves the field out.
    const selected = await request(t.server, "GET", `${base}?limit=1&labelSelector=tier%3Dback`);
    assert.ok(selected.json.metadata.continue !== undefined);
    assert.equal(selected.json.metadata.remainingItemCount, undefined);
    // Across namespaces, every namespace's items count.
    const total = (await request(t.server, "GET", "/api/v1/configmaps")).json.items.length;
    assert.equal((await request(t.server, "GET", "/api/v1/configmaps?limit=3")).json.metadata.remainingItemCount, total - 3);
    // A Table of a page carries the list's metadata, as kube-apiserver's table convertor copies it.
    const table = await request(t.server, "GET", `${base}?limit=2`, { headers: { accept: "application/json;as=Table;v=v1;g=meta.k8s.io" } });
    assert.equal(table.json.kind, "Table");
    assert.equal(table.json.metadata.remainingItemCount, 2);
  } finally {
    await t.close();
  }
});

/** Resolves with the answer's status and body; `answered` tells whether it came yet. */
function pending(promise: Promise<Response>): { answered: () => boolean; reply: Promise<{ status: number; json: any }> } {
  let done = false;
  const reply = promise.then(async (response) => {
    const json = await response.json();
    done = true;
    return { status: response.status, json };
  });
  return { answered: () => done, reply };
}

test("a read at a resourceVersion the store has not reached waits for it on the server's clock, then answers 504 Too large resource version", async () => {
  const clock = new ManualClock();
  const t = await testServer({ clock, store: createServerStore({ now: () => clock.now() }) });
  const headers = { authorization: `Bearer ${t.server.token}` };
  try {
    await request(t.server, "POST", base, { body: configMap("a") });
    const now = t.server.store.revision;
    // Reached while waiting: the list is answered once the write lands.
    const list = pending(fetch(`${t.server.url}${base}?resourceVersion=${now + 1}`, { headers }));
    const item = pending(fetch(`${t.server.url}${base}/a?resourceVersion=${now + 1}`, { headers }));
    await clock.advance(500);
    // Other requests go on meanwhile (the write the reads wait for among them).
    assert.equal((await request(t.server, "GET", "/healthz", { auth: false })).status, 200);
    assert.equal(list.answered() || item.answered(), false, "a read ahead of the store was answered at once");
    await request(t.server, "POST", base, { body: configMap("b") });
    await clock.advance(50);
    const listed = await list.reply;
    assert.equal(listed.status, 200);
    assert.deepEqual(listed.json.items.map((o: any) => o.metadata.name), ["a", "b"]);
    assert.equal((await item.reply).status, 200);

    // Never reached: 504 after 3 s of the server's clock, not before.
    const ahead = t.server.store.revision + 5;
    const late = pending(fetch(`${t.server.url}${base}?resourceVersion=${ahead}&resourceVersionMatch=Exact`, { headers }));
    await clock.advance(2990);
    assert.equal((await request(t.server, "GET", `${base}/a`)).status, 200);
    assert.equal(late.answered(), false, "answered before the 3 s wait was over");
    await clock.advance(20);
    const timedOut = await late.reply;
    assert.equal(timedOut.status, 504);
    assert.deepEqual(
      { reason: timedOut.json.reason, code: timedOut.json.code, message: timedOut.json.message, details: timedOut.json.details },
      {
        reason: "Timeout",
        code: 504,
        message: `Timeout: Too large resource version: ${ahead}, current: ${t.server.store.revision}`,
        details: { causes: [{ reason: "ResourceVersionTooLarge", message: "Too large resource version" }], retryAfterSeconds: 1 },
      },
    );
  } finally {
    await t.close();
  }
});

test("a watch from a revision ahead of the store opens at once and sends what comes after it", async () => {
  const clock = new ManualClock();
  const t = await testServer({ clock, store: createServerStore({ now: () => clock.now() }) });
  try {
    const now = t.server.store.revision;
    const abort = new AbortController();
    const response = await watchRequest(t.server, `${base}?watch=true&resourceVersion=${now + 2}`, abort.signal);
    assert.equal(response.status, 200);
    for (const name of ["skipped-1", "skipped-2", "seen"]) await request(t.server, "POST", base, { body: configMap(name) });
    const events = await readEvents(response, (e) => e.length >= 1);
    assert.deepEqual(events.map((e) => [e.type, e.object.metadata.name]), [["ADDED", "seen"]]);
    abort.abort();
  } finally {
    await t.close();
  }
});

test("a WatchList (sendInitialEvents=true) from a revision ahead of the store waits for it, then answers 504", async () => {
  const clock = new ManualClock();
  const t = await testServer({ clock, store: createServerStore({ now: () => clock.now() }) });
  try {
    const ahead = t.server.store.revision + 1;
    const query = `watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&resourceVersion=${ahead}`;
    const list = pending(fetch(`${t.server.url}${base}?${query}&timeoutSeconds=1`, { headers: { authorization: `Bearer ${t.server.token}` } }));
    await clock.advance(1000);
    assert.equal(list.answered(), false);
    await clock.advance(2000);
    const timedOut = await list.reply;
    assert.equal(timedOut.status, 504);
    assert.equal(timedOut.json.message, `Timeout: Too large resource version: ${ahead}, current: ${ahead - 1}`);
  } finally {
    await t.close();
  }
});
