import { test } from "node:test";
import assert from "node:assert/strict";
import { request } from "node:http";
import { realClock } from "../../src/api/clock.ts";
import { PointFeed } from "../../src/drill/drill.ts";
import { startProxy } from "../../src/drill/proxy.ts";
import type { DrillTarget } from "../../src/drill/target.ts";
import { WatchShaper } from "../../src/drill/watch-faults.ts";
import { startServer } from "../../src/server/index.ts";
import { createStore } from "../../src/store/index.ts";

const token = "t0ken";

function post(url: string, body: unknown): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: "POST", headers: { "content-type": "application/json" } }, (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode ?? 0));
    });
    req.on("error", reject);
    req.end(JSON.stringify(body));
  });
}

const configMap = (name: string) => ({ apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace: "default" } });

test("a pre-started process's requests are held until its lane is promoted, and survive the killed process's connections being dropped", async () => {
  const store = createStore({ now: () => realClock.now() });
  const server = await startServer({ store, token, log: () => {} });
  const proxy = await startProxy(server.url, () => realClock.now());
  try {
    const path = "/api/v1/namespaces/default/configmaps";
    // Lane 0 too waits for its turn: a run's first process may be started before its point begins.
    let first: number | undefined;
    const firstDone = post(`${proxy.url}${proxy.lanePrefix(0)}/token/${token}${path}`, configMap("first")).then((code) => (first = code));
    await realClock.sleep(100);
    assert.equal(first, undefined, "lane 0 was let through before it was promoted");
    proxy.promote(0);
    assert.equal(await firstDone, 201);
    let answered: number | undefined;
    const held = post(`${proxy.url}${proxy.lanePrefix(1)}/token/${token}${path}`, configMap("second")).then((code) => (answered = code));
    await realClock.sleep(200);
    assert.equal(answered, undefined, "a held lane's request was answered");
    assert.equal(store.list({ apiVersion: "v1", kind: "ConfigMap", namespace: "default" }).items.length, 1, "the server saw a held request");
    assert.equal(proxy.requestsInFlight, 0, "a held request counts as in flight");
    proxy.dropConnections();
    proxy.promote(1);
    assert.equal(await held, 201);
    assert.deepEqual(store.list({ apiVersion: "v1", kind: "ConfigMap", namespace: "default" }).items.map((o) => o.metadata.name).sort(), ["first", "second"]);
    assert.deepEqual(proxy.requests.map((r) => r.incarnation), [0, 1]);
  } finally {
    await proxy.close();
    await server.close();
  }
});

test("the proxy's own connections do not hold the server's close open", async () => {
  const store = createStore({ now: () => realClock.now() });
  const server = await startServer({ store, token, log: () => {} });
  const proxy = await startProxy(server.url, () => realClock.now());
  assert.equal(await post(`${proxy.url}/token/${token}/api/v1/namespaces/default/configmaps`, configMap("one")), 201);
  await proxy.close();
  const started = realClock.now();
  await server.close();
  // Left in a shared keep-alive pool, the proxy's connection to the server kept this waiting for seconds.
  assert.ok(realClock.now() - started < 1000, `server.close took ${realClock.now() - started} ms`);
});

test("points are handed out as the reference run reaches their write, and no more once it is done", async () => {
  const target = { defaults: { faultKinds: ["kill"] } } as unknown as DrillTarget;
  const feed = new PointFeed({}, target);
  let second: unknown = "pending";
  const first = feed.next();
  feed.reached(1);
  assert.deepEqual(await first, { index: 0, point: { afterWrite: 1, fault: "kill" } });
  void feed.next().then((p) => (second = p));
  await realClock.sleep(20);
  assert.equal(second, "pending", "point 2 handed out before the reference made its second write");
  feed.reached(2);
  await realClock.sleep(0);
  assert.deepEqual(second, { index: 1, point: { afterWrite: 2, fault: "kill" } });
  feed.finish(2);
  assert.equal(await feed.next(), undefined);
  assert.equal(feed.planned, 2);
});

test("given points wait for the reference's write too, and none runs when the reference is unusable", async () => {
  const target = { defaults: { faultKinds: ["kill"] } } as unknown as DrillTarget;
  const given = new PointFeed({ killPoints: [3] }, target);
  const waiting = given.next();
  given.reached(2);
  given.finish("none");
  assert.equal(await waiting, undefined);
  const late = new PointFeed({ killPoints: [3] }, target);
  const point = late.next();
  late.finish(1);
  // The reference made fewer writes than asked: no such point exists, and it is said so instead of being waited on.
  assert.equal(await point, undefined);
  assert.deepEqual(late.unreached, [3]);
});

test("given points past the reference's last write are left out and named; the others keep their order", async () => {
  const target = { defaults: { faultKinds: ["kill", "close-watch"] } } as unknown as DrillTarget;
  const feed = new PointFeed({ killPoints: [2, 9, 3, 7] }, target);
  feed.reached(2);
  assert.deepEqual(await feed.next(), { index: 0, point: { afterWrite: 2, fault: "kill" } });
  assert.deepEqual(await feed.next(), { index: 1, point: { afterWrite: 2, fault: "close-watch" } });
  const blocked = feed.next();
  feed.finish(4);
  const points = [(await blocked)?.point];
  for (let p = await feed.next(); p !== undefined; p = await feed.next()) points.push(p.point);
  assert.deepEqual(points, [
    { afterWrite: 3, fault: "kill" },
    { afterWrite: 3, fault: "close-watch" },
  ]);
  assert.deepEqual(feed.unreached, [9, 7]);
  assert.equal(feed.planned, 4);
});

test("per-resource points follow the plain ones once the reference is done, for each resource it watched; a delay needs two", async () => {
  const target = { defaults: { faultKinds: ["kill", "coalesce", "delay-kind"] } } as unknown as DrillTarget;
  const feed = new PointFeed({ killPoints: [1, 2] }, target);
  feed.reached(2);
  assert.deepEqual(await feed.next(), { index: 0, point: { afterWrite: 1, fault: "kill" } });
  assert.deepEqual(await feed.next(), { index: 1, point: { afterWrite: 2, fault: "kill" } });
  let third: unknown = "pending";
  void feed.next().then((p) => (third = p));
  await realClock.sleep(20);
  assert.equal(third, "pending", "a per-resource point handed out before the watched resources are known");
  feed.finish(2, ["configmaps"]);
  await realClock.sleep(0);
  assert.deepEqual(third, { index: 2, point: { afterWrite: 1, fault: "coalesce", resource: "configmaps" } });
  assert.deepEqual(await feed.next(), { index: 3, point: { afterWrite: 2, fault: "coalesce", resource: "configmaps" } });
  assert.equal(await feed.next(), undefined, "no delay-kind point with one watched resource");
  assert.equal(feed.planned, 4);
  const two = new PointFeed({ killPoints: [1] }, target);
  two.finish(1, ["ensembles", "configmaps"]);
  const points: unknown[] = [];
  for (let p = await two.next(); p !== undefined; p = await two.next()) points.push(p.point);
  assert.deepEqual(points, [
    { afterWrite: 1, fault: "kill" },
    { afterWrite: 1, fault: "coalesce", resource: "ensembles" },
    { afterWrite: 1, fault: "coalesce", resource: "configmaps" },
    { afterWrite: 1, fault: "delay-kind", resource: "ensembles" },
    { afterWrite: 1, fault: "delay-kind", resource: "configmaps" },
  ]);
});

test("given points (a replay) are handed out as given, repeats included, each once the reference reached its write", async () => {
  const target = { defaults: { faultKinds: ["kill"] } } as unknown as DrillTarget;
  const point = { afterWrite: 2, fault: "hide-recreate" as const, resource: "configmaps" };
  const feed = new PointFeed({ points: [point, point] }, target);
  let first: unknown = "pending";
  void feed.next().then((p) => (first = p));
  feed.reached(1);
  await realClock.sleep(20);
  assert.equal(first, "pending");
  feed.reached(2);
  await realClock.sleep(0);
  assert.deepEqual(first, { index: 0, point });
  assert.deepEqual(await feed.next(), { index: 1, point });
  feed.finish(3, ["configmaps"]);
  assert.equal(await feed.next(), undefined);
  assert.equal(feed.planned, 2);
  assert.equal(feed.restartsOnly, false);
});

/** Waits for a condition of events delivered by the proxy; a bounded wait, so a test that is wrong fails, not hangs. */
async function waitFor(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 400 && !condition(); i++) await realClock.sleep(5);
  assert.ok(condition(), "the events never came");
}

/** Opens a watch through the proxy, asking for protobuf first as client-go's typed clients do; collects its events. */
function watchEvents(url: string, events: string[]): Promise<() => void> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: { accept: "application/vnd.kubernetes.protobuf, application/json" } }, (res) => {
      assert.match(res.headers["content-type"] ?? "", /json/, "a shaped watch is served as JSON");
      let partial = "";
      res.on("data", (chunk: Buffer) => {
        const lines = (partial + chunk.toString("utf8")).split("\n");
        partial = lines.pop()!;
        for (const line of lines) {
          const event = JSON.parse(line) as { type: string; object: { kind: string; metadata: { name: string } } };
          events.push(`${event.type} ${event.object.kind} ${event.object.metadata.name}`);
        }
      });
      resolve(() => req.destroy());
    });
    req.on("error", (error) => (error.message.includes("socket hang up") ? undefined : reject(error)));
    req.end();
  });
}

/** A GET with its path sent as given (a URL string would be parsed, and its dot segments resolved, first). */
function get(base: string, path: string): Promise<number> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const req = request({ host: hostname, port, path, method: "GET" }, (res) => {
      resolve(res.statusCode ?? 0);
      res.resume();
    });
    req.on("error", reject);
    req.end();
  });
}

test("the proxy records a request's path as sent, dot segments unresolved, and knows every spelling of watch=true the server does", async () => {
  const store = createStore({ now: () => realClock.now() });
  const server = await startServer({ store, token, log: () => {} });
  const proxy = await startProxy(server.url, () => realClock.now());
  try {
    const base = `/api/v1/namespaces/default/configmaps`;
    assert.equal(await get(proxy.url, `/token/${token}${base}/x/..?limit=1`), 404);
    assert.deepEqual(proxy.requests.map((r) => [r.path, r.query, r.watch]), [[`${base}/x/..`, "?limit=1", false]]);
    // Go's strconv.ParseBool reads `t` as true: the server opens a watch, and the proxy must not count it in flight.
    const watched = get(proxy.url, `/token/${token}${base}?watch=t&timeoutSeconds=5`);
    const seen = await Promise.race([proxy.waitForWatch().then(() => true), realClock.sleep(3000).then(() => false)]);
    assert.ok(seen, "the proxy did not see the watch open");
    assert.equal(proxy.watchesOpen, 1);
    assert.equal(proxy.requestsInFlight, 0);
    assert.equal(proxy.closeWatches(), 1);
    await watched.catch(() => 0);
  } finally {
    proxy.closeWatches();
    await proxy.close();
    await server.close();
  }
});

test("through the proxy, delay-kind holds one resource's watch events until another's is delivered and the controller writes", async () => {
  const store = createStore({ now: () => realClock.now() });
  const server = await startServer({ store, token, log: () => {} });
  const proxy = await startProxy(server.url, () => realClock.now());
  const holding: boolean[] = [];
  const shaper = new WatchShaper({ fault: "delay-kind", resource: "configmaps", onHolding: (h) => holding.push(h) });
  proxy.setWatchShaper(shaper);
  const base = `${proxy.url}/token/${token}/api/v1/namespaces/default`;
  const events: string[] = [];
  const stops: Array<() => void> = [];
  try {
    stops.push(await watchEvents(`${base}/configmaps?watch=true`, events));
    stops.push(await watchEvents(`${base}/secrets?watch=true`, events));
    assert.equal(await post(`${base}/configmaps`, configMap("before")), 201);
    await waitFor(() => events.length >= 1);
    shaper.arm();
    assert.equal(await post(`${base}/configmaps`, configMap("held")), 201);
    await realClock.sleep(100);
    assert.deepEqual(events, ["ADDED ConfigMap before"], "the configmap event was delivered while held");
    assert.equal(await post(`${base}/secrets`, { apiVersion: "v1", kind: "Secret", metadata: { name: "other", namespace: "default" } }), 201);
    await waitFor(() => events.length >= 2);
    await realClock.sleep(100);
    // The secret came through; the held configmap waits for the controller's next write (the secret's POST was sent
    // before the secret's event, so it does not count).
    assert.deepEqual(events, ["ADDED ConfigMap before", "ADDED Secret other"]);
    assert.equal(await post(`${base}/configmaps`, configMap("after")), 201);
    await waitFor(() => events.length >= 4);
    assert.deepEqual(events, ["ADDED ConfigMap before", "ADDED Secret other", "ADDED ConfigMap held", "ADDED ConfigMap after"]);
    assert.deepEqual(holding, [true, false]);
  } finally {
    for (const stop of stops) stop();
    shaper.stop();
    await proxy.close();
    await server.close();
  }
});
