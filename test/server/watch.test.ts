// Watches over HTTP: NDJSON events in revision order, 410 as an ERROR event, WatchList, bookmarks, timeouts,
// selector transitions, and slow consumers cut off instead of buffered without bound.
import { test } from "node:test";
import assert from "node:assert/strict";
import { get } from "node:http";
import { createStore } from "../../src/store/index.ts";
import { realClock } from "../../src/api/clock.ts";
import { configMap, readEvents, request, testServer, watchRequest, widgetCrd } from "./helpers.ts";
import { decodeMessage, decodeProtobuf } from "../../src/server/encoding/protobuf.ts";

const base = "/api/v1/namespaces/default/configmaps";

test("a watch from a list's revision sees every later write in order, with headers sent before any event", async () => {
  const t = await testServer();
  try {
    await request(t.server, "POST", base, { body: configMap("a") });
    const rv = (await request(t.server, "GET", base)).json.metadata.resourceVersion;
    const response = await watchRequest(t.server, `${base}?watch=true&resourceVersion=${rv}`);
    assert.equal(response.status, 200);
    assert.equal(response.headers.get("content-type"), "application/json");
    await request(t.server, "POST", base, { body: configMap("b") });
    await request(t.server, "PATCH", `${base}/a`, { body: { data: { x: "1" } }, contentType: "application/merge-patch+json" });
    await request(t.server, "DELETE", `${base}/b`);
    const events = await readEvents(response, (e) => e.length >= 3);
    assert.deepEqual(events.map((e) => `${e.type} ${e.object.metadata.name}`), ["ADDED b", "MODIFIED a", "DELETED b"]);
    const revisions = events.map((e) => Number(e.object.metadata.resourceVersion));
    assert.deepEqual(revisions, [...revisions].sort((x, y) => x - y));
  } finally {
    await t.close();
  }
});

test("a watch without a resourceVersion starts with the current objects as ADDED", async () => {
  const t = await testServer();
  try {
    await request(t.server, "POST", base, { body: configMap("a") });
    const response = await watchRequest(t.server, `${base}?watch=1`);
    await request(t.server, "POST", base, { body: configMap("b") });
    const events = await readEvents(response, (e) => e.length >= 2);
    assert.deepEqual(events.map((e) => `${e.type} ${e.object.metadata.name}`), ["ADDED a", "ADDED b"]);
  } finally {
    await t.close();
  }
});

test("a watch from a compacted revision gets 200, then an ERROR event with a 410 Expired Status, then the end", async () => {
  const t = await testServer({ store: createStore({ historyRevisionsMax: 3, now: () => realClock.now() }) });
  try {
    for (let i = 0; i < 6; i++) await request(t.server, "POST", base, { body: configMap(`c${i}`) });
    const response = await watchRequest(t.server, `${base}?watch=true&resourceVersion=2`);
    assert.equal(response.status, 200);
    const events = await readEvents(response, () => false);
    assert.equal(events.length, 1);
    assert.equal(events[0].type, "ERROR");
    assert.equal(events[0].object.code, 410);
    assert.equal(events[0].object.reason, "Expired");
  } finally {
    await t.close();
  }
});

test("WatchList sends the objects, then the initial-events-end bookmark; without bookmarks it is a 422", async () => {
  const t = await testServer();
  try {
    await request(t.server, "POST", base, { body: configMap("a") });
    await request(t.server, "POST", base, { body: configMap("b") });
    const query = "watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan";
    const refused = await request(t.server, "GET", `${base}?${query}`);
    assert.equal(refused.status, 422);
    assert.equal(refused.json.reason, "Invalid");
    const response = await watchRequest(t.server, `${base}?${query}&allowWatchBookmarks=true`);
    const events = await readEvents(response, (e) => e.length >= 3);
    assert.deepEqual(events.map((e) => e.type), ["ADDED", "ADDED", "BOOKMARK"]);
    assert.equal(events[2].object.metadata.annotations["k8s.io/initial-events-end"], "true");
    assert.equal(events[2].object.metadata.resourceVersion, String(t.server.store.revision));
  } finally {
    await t.close();
  }
});

test("bookmarks come only when asked, and timeoutSeconds ends the watch", async () => {
  const t = await testServer({ bookmarkIntervalMs: 20 });
  try {
    const rv = t.server.store.revision;
    const withBookmarks = await watchRequest(t.server, `${base}?watch=true&resourceVersion=${rv}&allowWatchBookmarks=true`);
    const bookmarks = await readEvents(withBookmarks, (e) => e.length >= 2);
    assert.deepEqual(bookmarks.map((e) => e.type), ["BOOKMARK", "BOOKMARK"]);
    assert.equal(bookmarks[0].object.kind, "ConfigMap");
    const timed = await watchRequest(t.server, `${base}?watch=true&resourceVersion=${rv}&timeoutSeconds=1`);
    const events = await readEvents(timed, () => false);
    assert.deepEqual(events, []);
  } finally {
    await t.close();
  }
});

test("an object that stops matching a label-selected watch is DELETED there, and ADDED when it matches again", async () => {
  const t = await testServer();
  try {
    await request(t.server, "POST", base, { body: configMap("a", {}, { app: "x" }) });
    const rv = t.server.store.revision;
    const response = await watchRequest(t.server, `${base}?watch=true&resourceVersion=${rv}&labelSelector=app%3Dx`);
    const label = (value: string | null) => request(t.server, "PATCH", `${base}/a`, { body: { metadata: { labels: { app: value } } }, contentType: "application/merge-patch+json" });
    await label("y");
    await label("x");
    const events = await readEvents(response, (e) => e.length >= 2);
    assert.deepEqual(events.map((e) => e.type), ["DELETED", "ADDED"]);
  } finally {
    await t.close();
  }
});

test("a watch consumer that stops reading is cut off with 410 instead of being buffered without bound", async () => {
  const t = await testServer({ watchBufferBytesMax: 64 * 1024 });
  try {
    const url = new URL(`${t.server.url}${base}?watch=true&resourceVersion=${t.server.store.revision}`);
    const chunks: Buffer[] = [];
    const ended = new Promise<void>((resolve) => {
      const req = get(url, { headers: { authorization: `Bearer ${t.server.token}` } }, (res) => {
        res.pause();
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", resolve);
        res.on("error", () => resolve());
        // Reading starts only once the server has given up on this consumer.
        const resume = () => (t.server.watches === 0 ? res.resume() : void realClock.sleep(5).then(resume));
        resume();
      });
      req.on("error", () => resolve());
    });
    // The watch is open once the server counts it (a loaded machine may take a while to get there).
    for (let i = 0; i < 500 && t.server.watches === 0; i++) await realClock.sleep(10);
    assert.equal(t.server.watches, 1);
    const payload = "x".repeat(100 * 1024);
    for (let i = 0; i < 400 && t.server.watches > 0; i++) {
      t.server.store.create({ ...configMap(`big${i}`, { payload }), metadata: { name: `big${i}`, namespace: "default" } });
      await realClock.sleep(0);
    }
    assert.equal(t.server.watches, 0);
    await ended;
    const lines = Buffer.concat(chunks).toString("utf8").trim().split("\n");
    const last = JSON.parse(lines[lines.length - 1]!);
    assert.equal(last.type, "ERROR");
    assert.equal(last.object.code, 410);
  } finally {
    await t.close();
  }
});

/** Reads length-prefixed protobuf watch frames until `until` says stop: each a raw WatchEvent (type, object.raw). */
async function readFrames(response: Response, until: (frames: Array<{ type: string; raw: Uint8Array }>) => boolean) {
  const frames: Array<{ type: string; raw: Uint8Array }> = [];
  const reader = response.body!.getReader();
  let buffered = Buffer.alloc(0);
  while (!until(frames)) {
    const { done, value } = await reader.read();
    if (done) break;
    buffered = Buffer.concat([buffered, value]);
    while (buffered.length >= 4 && buffered.length >= 4 + buffered.readUInt32BE(0)) {
      const event = buffered.subarray(4, 4 + buffered.readUInt32BE(0));
      buffered = buffered.subarray(4 + event.length);
      frames.push(watchEvent(event));
    }
  }
  await reader.cancel().catch(() => {});
  return frames;
}

/** The two length-delimited fields of a WatchEvent (type = 1, object = 2) and the object's `raw` (1). */
function watchEvent(bytes: Uint8Array): { type: string; raw: Uint8Array } {
  const fields = delimitedFields(bytes);
  return { type: Buffer.from(fields.get(1)!).toString(), raw: delimitedFields(fields.get(2)!).get(1)! };
}

/** The fields of a message whose fields are all length-delimited (WatchEvent, RawExtension, runtime.Unknown). */
function delimitedFields(bytes: Uint8Array): Map<number, Uint8Array> {
  const fields = new Map<number, Uint8Array>();
  let i = 0;
  const varint = () => {
    let n = 0;
    for (let shift = 0; ; shift += 7) {
      const b = bytes[i++]!;
      n += (b & 0x7f) * 2 ** shift;
      if (b < 0x80) return n;
    }
  };
  while (i < bytes.length) {
    const tag = varint();
    assert.equal(tag & 7, 2, "every WatchEvent field is length-delimited");
    const length = varint();
    fields.set(tag >> 3, bytes.subarray(i, i + length));
    i += length;
  }
  return fields;
}

test("a client that prefers protobuf watches a built-in kind as length-prefixed WatchEvent frames holding protobuf bodies", async () => {
  const t = await testServer();
  try {
    await request(t.server, "POST", base, { body: configMap("a", { k: "v" }) });
    const accept = "application/vnd.kubernetes.protobuf;stream=watch";
    const response = await fetch(`${t.server.url}${base}?watch=true&allowWatchBookmarks=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan`, { headers: { authorization: `Bearer ${t.server.token}`, accept } });
    assert.equal(response.status, 200);
    assert.equal(response.headers.get("content-type"), "application/vnd.kubernetes.protobuf;stream=watch");
    await request(t.server, "PATCH", `${base}/a`, { body: { data: { k: "w" } }, contentType: "application/merge-patch+json" });
    await request(t.server, "DELETE", `${base}/a`);
    const frames = await readFrames(response, (f) => f.length >= 4);
    assert.deepEqual(frames.map((f) => f.type), ["ADDED", "BOOKMARK", "MODIFIED", "DELETED"]);
    const objects = frames.map((f) => decodeProtobuf(f.raw) as any);
    assert.deepEqual(objects.map((o) => `${o.apiVersion}/${o.kind} ${o.metadata.name ?? ""}`), ["v1/ConfigMap a", "v1/ConfigMap ", "v1/ConfigMap a", "v1/ConfigMap a"]);
    assert.deepEqual(objects[2].data, { k: "w" });
    assert.equal(objects[1].metadata.annotations["k8s.io/initial-events-end"], "true");
    // Custom resources have no protobuf form: a protobuf-only watch of one is refused as a read would be.
    await request(t.server, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", { body: widgetCrd });
    const custom = await fetch(`${t.server.url}/apis/example.com/v1/namespaces/default/widgets?watch=true`, { headers: { authorization: `Bearer ${t.server.token}`, accept } });
    assert.equal(custom.status, 406);
    await custom.body?.cancel();
  } finally {
    await t.close();
  }
});

test("a protobuf watch from a compacted revision ends with an ERROR frame carrying a 410 Status", async () => {
  const store = createStore({ now: () => realClock.now(), historyRevisionsMax: 2 });
  const t = await testServer({ store });
  try {
    for (const name of ["a", "b", "c", "d"]) await request(t.server, "POST", base, { body: configMap(name) });
    const response = await fetch(`${t.server.url}${base}?watch=true&resourceVersion=1`, { headers: { authorization: `Bearer ${t.server.token}`, accept: "application/vnd.kubernetes.protobuf, application/json" } });
    const frames = await readFrames(response, () => false);
    assert.deepEqual(frames.map((f) => f.type), ["ERROR"]);
    // The object is a whole protobuf body: the k8s magic, then runtime.Unknown with typeMeta (1) and raw (2).
    const body = frames[0]!.raw;
    assert.deepEqual([...body.subarray(0, 4)], [0x6b, 0x38, 0x73, 0x00]);
    const envelope = delimitedFields(body.subarray(4));
    assert.deepEqual(decodeMessage(envelope.get(1)!, "runtime.TypeMeta"), { apiVersion: "v1", kind: "Status" });
    const status = decodeMessage(envelope.get(2)!, "meta/v1.Status") as any;
    assert.equal(status.code, 410);
    assert.equal(status.reason, "Expired");
  } finally {
    await t.close();
  }
});
