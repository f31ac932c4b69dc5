// Request costs that must grow with the request, not faster: YAML bodies (the duplicate-key check), server-side
// apply of long lists and many fields, and the history a server keeps for the bytes written. Work is counted
// (calls of the functions the quadratic paths repeated), never timed; speed is in `npm run bench -- server`.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { realClock } from "../../src/api/clock.ts";
import { createServerStore, serverHistoryBytesMax } from "../../src/server/index.ts";
import { parseYaml } from "../../src/server/http.ts";
import { yamlBodyParseOptions } from "../../src/server/yaml-keys.ts";
import { ElementTables } from "../../src/server/apply/fields.ts";
import { configMap, readEvents, request, testServer, watchRequest } from "./helpers.ts";

const bin = new URL("../../bin/settle.js", import.meta.url).pathname;
const base = "/api/v1/namespaces/default/configmaps";
const applyType = "application/apply-patch+yaml";

/** Runs `run` with `owner[name]` wrapped to add `count(this, args)` to a total; returns the total. */
function counting<T extends object, K extends keyof T>(owner: T, name: K, count: (self: unknown, args: unknown[]) => number, run: () => void): number {
  const original = owner[name] as unknown as (...args: unknown[]) => unknown;
  let total = 0;
  (owner as Record<K, unknown>)[name] = function (this: unknown, ...args: unknown[]) {
    total += count(this, args);
    return original.apply(this, args);
  };
  try {
    run();
  } finally {
    (owner as Record<K, unknown>)[name] = original;
  }
  return total;
}

function flatYaml(keys: number): Buffer {
  let text = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: flat\ndata:\n";
  for (let i = 0; i < keys; i++) text += `  key-${i}: value-${i}\n`;
  return Buffer.from(text);
}

test("a YAML body's mapping keys are checked for duplicates in linear work, and duplicates are still refused", () => {
  assert.equal(yamlBodyParseOptions.uniqueKeys, false, "the yaml package's own (quadratic) check is off");
  // The package's check searched the keys before each new key with `Array.prototype.some`: count the elements
  // such searches could visit.
  const visits = (keys: number) => counting(Array.prototype, "some", (self) => (Array.isArray(self) ? self.length : 0), () => void parseYaml(flatYaml(keys), "body"));
  const small = visits(1000);
  const large = visits(4000);
  assert.ok(large <= 4 * small + 1000, `searched elements: ${small} for 1,000 keys, ${large} for 4,000`);
  const refused = (text: string) => assert.throws(() => parseYaml(Buffer.from(text), "the applied configuration"), (error: any) => error.code === 400 && /is not valid YAML: Map keys must be unique at line \d+, column \d+/.test(error.message));
  refused("a: 1\nb:\n  c: 1\n  c: 2\n");
  refused("{x: 1, x: 2}");
  refused("- a: 1\n  a: 2\n");
  refused("1: a\n0x1: b\n");
  refused("null: 1\n~: 2\n");
  assert.throws(() => parseYaml(Buffer.from("a: 1\nb:\n  c: 1\n  c: 2\n"), "body"), /line 4, column 3/);
  // Equal text is not enough: `1` and `'1'` are different keys, as are keys of different mappings.
  assert.deepEqual(parseYaml(Buffer.from("x: {a: 1}\ny: {a: 2}\n"), "body"), { x: { a: 1 }, y: { a: 2 } });
  assert.doesNotThrow(() => parseYaml(Buffer.from("1: a\n'1': b\n"), "body"));
});

test("a YAML apply body with a duplicate key is a 400 that names the line, and changes nothing", async () => {
  const t = await testServer();
  try {
    const body = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dup\ndata:\n  a: x\n  a: y\n";
    const reply = await request(t.server, "PATCH", `${base}/dup?fieldManager=test`, { raw: body, contentType: applyType });
    assert.equal(reply.status, 400);
    assert.match(reply.json.message, /Map keys must be unique at line 7, column 3/);
    assert.equal((await request(t.server, "GET", `${base}/dup`)).status, 404);
  } finally {
    await t.close();
  }
});

function deployment(env: number, value: string): string {
  const entries = Array.from({ length: env }, (_, i) => ({ name: `E${i}`, value }));
  const containers = [{ name: "c", image: "busybox", env: entries }];
  return JSON.stringify({ apiVersion: "apps/v1", kind: "Deployment", metadata: { name: "d" }, spec: { selector: { matchLabels: { a: "b" } }, template: { metadata: { labels: { a: "b" } }, spec: { containers } } } });
}

/** `JSON.stringify` calls (what keying each list element costs) over a round of applies with `env` entries. */
async function applyRoundStringifies(env: number): Promise<number> {
  const t = await testServer();
  try {
    const path = "/apis/apps/v1/namespaces/default/deployments/d";
    const apply = (manager: string, body: string) => request(t.server, "PATCH", `${path}?fieldManager=${manager}${manager === "b" ? "&force=true" : ""}`, { raw: body, contentType: applyType });
    assert.equal((await apply("a", deployment(env, "1"))).status, 201);
    const original = JSON.stringify;
    let calls = 0;
    JSON.stringify = function (...args: Parameters<typeof JSON.stringify>) {
      calls++;
      return original.apply(JSON, args);
    } as typeof JSON.stringify;
    try {
      // Another manager takes every value, the first changes them back (conflicts, forced), then drops them all.
      assert.equal((await apply("b", deployment(env, "2"))).status, 200);
      assert.equal((await apply("a", deployment(env, "3"))).status, 409);
      assert.equal((await apply("a", deployment(0, "3"))).status, 200);
    } finally {
      JSON.stringify = original;
    }
    const live = (await request(t.server, "GET", path)).json;
    // The values stay: manager b still owns them.
    assert.equal(live.spec.template.spec.containers[0].env.length, env);
    return calls;
  } finally {
    await t.close();
  }
}

test("server-side apply of a long associative list keys each element once per apply, not once per field", async () => {
  const small = await applyRoundStringifies(200);
  const large = await applyRoundStringifies(800);
  // Linear work is 4x for 4x the entries; a search of the list per field made it about 16x.
  assert.ok(large / small < 6, `JSON.stringify calls: ${small} for 200 entries, ${large} for 800 (ratio ${(large / small).toFixed(1)})`);
});

function service(ports: readonly number[]): string {
  return JSON.stringify({ apiVersion: "v1", kind: "Service", metadata: { name: "s" }, spec: { selector: { a: "b" }, ports: ports.map((port) => ({ name: `p${port}`, port, protocol: "TCP" })) } });
}

const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i);

test("server-side apply that drops elements of a list removes exactly those, and keeps what others own", async () => {
  const t = await testServer();
  try {
    const path = "/api/v1/namespaces/default/services/s";
    const apply = (manager: string, body: string) => request(t.server, "PATCH", `${path}?fieldManager=${manager}`, { raw: body, contentType: applyType });
    const ports = async () => ((await request(t.server, "GET", path)).json.spec.ports as Array<{ port: number }>).map((p) => p.port);
    assert.equal((await apply("a", service(range(1000, 1040)))).status, 201);
    // Manager b owns 1000..1009 too (same values: shared, no conflict).
    assert.equal((await apply("b", service(range(1000, 1010)))).status, 200);
    // Manager a drops every port from 1020 on, and 1005: those from 1020 go; 1005 stays, as b owns it.
    assert.equal((await apply("a", service([...range(1000, 1005), ...range(1006, 1020)]))).status, 200);
    assert.deepEqual(await ports(), range(1000, 1020));
    // Now a applies none: b's ten stay.
    assert.equal((await apply("a", service([]))).status, 200);
    assert.deepEqual(await ports(), range(1000, 1010));
  } finally {
    await t.close();
  }
});

test("a server whose history is bounded by bytes answers 410 to a watch and a list from before its compaction", async () => {
  const t = await testServer({ store: createServerStore({ now: () => realClock.now(), historyBytesMax: 200 * 1024 }) });
  try {
    const first = await request(t.server, "POST", base, { body: configMap("big", { blob: "a".repeat(50 * 1024) }) });
    const rv = first.json.metadata.resourceVersion as string;
    for (let i = 0; i < 8; i++) {
      const reply = await request(t.server, "PATCH", `${base}/big`, { body: { data: { blob: String(i).repeat(50 * 1024) } }, contentType: "application/merge-patch+json" });
      assert.equal(reply.status, 200);
    }
    assert.ok(t.server.store.compactedRevision > Number(rv));
    const response = await watchRequest(t.server, `${base}?watch=true&resourceVersion=${rv}`);
    const events = await readEvents(response, () => false);
    assert.deepEqual(events.map((e) => [e.type, e.object.code]), [["ERROR", 410]]);
    const list = await request(t.server, "GET", `${base}?resourceVersion=${rv}&resourceVersionMatch=Exact`);
    assert.equal(list.status, 410);
    // From the compaction point on, a watch replays what is kept.
    const kept = await watchRequest(t.server, `${base}?watch=true&resourceVersion=${t.server.store.compactedRevision}`);
    const replayed = await readEvents(kept, (e) => e.length >= 1);
    assert.equal(replayed[0].type, "MODIFIED");
  } finally {
    await t.close();
  }
});

test("settle serve takes --history-bytes (64 MiB by default) and refuses a value that is not a positive integer", () => {
  assert.equal(serverHistoryBytesMax, 64 * 1024 * 1024);
  const help = spawnSync(process.execPath, [bin, "serve", "--help"], { encoding: "utf8" });
  assert.match(help.stdout + help.stderr, /--history-bytes N/);
  for (const bad of ["0", "-5", "lots"]) {
    const run = spawnSync(process.execPath, [bin, "serve", `--history-bytes=${bad}`], { encoding: "utf8", timeout: 20_000 });
    assert.equal(run.status, 2, `--history-bytes ${bad}: ${run.stderr}`);
    assert.match(run.stderr, /--history-bytes expects an integer >= 1/);
  }
});

test("a re-apply looks up each owned list element once, not once per field below it", async () => {
  const t = await testServer();
  try {
    const path = "/apis/apps/v1/namespaces/default/deployments/d";
    const apply = (body: string) => request(t.server, "PATCH", `${path}?fieldManager=a`, { raw: body, contentType: applyType });
    const env = 600;
    assert.equal((await apply(deployment(env, "1"))).status, 201);
    // Element lookups of the re-apply (the owned fields checked against the live object): each env entry owns three
    // fields (itself, name, value) below two list elements (the container, the entry); a lookup from the root per
    // field made about six per entry.
    const lookups = await countingAsync(ElementTables.prototype, "withKey", () => apply(deployment(env, "2")));
    assert.equal(lookups.result.status, 200);
    assert.ok(lookups.calls <= 2 * env, `${lookups.calls} element lookups for ${env} env entries`);
    assert.equal((await request(t.server, "GET", path)).json.spec.template.spec.containers[0].env[env - 1].value, "2");
  } finally {
    await t.close();
  }
});

/** `counting` for an asynchronous `run`: the calls made until it settles. */
async function countingAsync<T extends object, K extends keyof T, R>(owner: T, name: K, run: () => Promise<R>): Promise<{ calls: number; result: R }> {
  const original = owner[name] as unknown as (...args: unknown[]) => unknown;
  let calls = 0;
  (owner as Record<K, unknown>)[name] = function (this: unknown, ...args: unknown[]) {
    calls++;
    return original.apply(this, args);
  };
  try {
    const result = await run();
    return { calls, result };
  } finally {
    (owner as Record<K, unknown>)[name] = original;
  }
}

test("settle serve pauses a server-side apply between its phases, and computes it again after a write that came in meanwhile", async () => {
  let pauses = 0;
  let onPause: (n: number) => void = () => {};
  const t = await testServer({
    phasePause: () => {
      onPause(++pauses);
      return new Promise((resolve) => setImmediate(resolve));
    },
  });
  try {
    const path = `${base}/race`;
    t.server.store.create({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "race", namespace: "default" }, data: { kept: "1" } });
    // During the apply's second pause (while it computes the merge), another client writes the object.
    onPause = (n) => {
      if (n !== 2) return;
      const current = t.server.store.get({ apiVersion: "v1", kind: "ConfigMap", namespace: "default", name: "race" });
      t.server.store.update({ ...current, data: { ...(current.data as Record<string, string>), meanwhile: "x" } });
    };
    const body = JSON.stringify({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "race" }, data: { applied: "y" } });
    const reply = await request(t.server, "PATCH", `${path}?fieldManager=a`, { raw: body, contentType: applyType });
    assert.equal(reply.status, 200);
    // Nothing the other write set is lost: the apply merged into the object as it was after that write.
    assert.deepEqual(reply.json.data, { kept: "1", meanwhile: "x", applied: "y" });
    assert.deepEqual((await request(t.server, "GET", path)).json.data, { kept: "1", meanwhile: "x", applied: "y" });
    // Decoding, two steps of the merge and the check before the write, then all of that again after the other write.
    assert.ok(pauses >= 7, `${pauses} pauses`);
    const managers = reply.json.metadata.managedFields.map((e: { manager: string; operation: string }) => `${e.manager}/${e.operation}`);
    assert.deepEqual(managers, ["a/Apply"]);
    // A write during the last pause (after the apply's write, before its answer): the answer is the apply's object.
    pauses = 0;
    let lastPause = 0;
    onPause = (n) => {
      const current = t.server.store.get({ apiVersion: "v1", kind: "ConfigMap", namespace: "default", name: "race" });
      if ((current.data as Record<string, string>).applied !== "w" || lastPause > 0) return;
      lastPause = n;
      t.server.store.update({ ...current, data: { later: "z" } });
    };
    const second = await request(t.server, "PATCH", `${path}?fieldManager=a`, { raw: body.replace('"y"', '"w"'), contentType: applyType });
    // The pause after the write was the last one: the write did not make the apply compute again.
    assert.ok(lastPause >= 5 && pauses === lastPause, `write at pause ${lastPause} of ${pauses}`);
    assert.deepEqual(second.json.data, { kept: "1", meanwhile: "x", applied: "w" });
    assert.deepEqual(second.json.metadata.managedFields.map((e: { manager: string }) => e.manager), ["a"]);
    assert.deepEqual((await request(t.server, "GET", path)).json.data, { later: "z" });
  } finally {
    await t.close();
  }
});

test("settle serve pauses within the walks of a big apply body: a long list's fields and its merge are taken a part at a time", async () => {
  let pauses = 0;
  const t = await testServer({
    phasePause: () => {
      pauses++;
      return new Promise((resolve) => setImmediate(resolve));
    },
  });
  try {
    const path = "/apis/apps/v1/namespaces/default/deployments/long";
    const body = (round: number) => {
      const env = Array.from({ length: 12_000 }, (_, i) => ({ name: `E${i}`, value: `${round}-${i}` }));
      const template = { metadata: { labels: { app: "long" } }, spec: { containers: [{ name: "c", image: "busybox", env }] } };
      return JSON.stringify({ apiVersion: "apps/v1", kind: "Deployment", metadata: { name: "long" }, spec: { selector: { matchLabels: { app: "long" } }, template } });
    };
    for (const round of [1, 2]) {
      pauses = 0;
      const reply = await request(t.server, "PATCH", `${path}?fieldManager=bench`, { raw: body(round), contentType: applyType });
      assert.equal(reply.status, round === 1 ? 201 : 200);
      const env = reply.json.spec.template.spec.containers[0].env;
      assert.equal(env.length, 12_000);
      assert.deepEqual(env[11_999], { name: "E11999", value: `${round}-11999` });
      const entry = reply.json.metadata.managedFields[0];
      assert.equal(entry.manager, "bench");
      assert.deepEqual(entry.fieldsV1["f:spec"]["f:template"]["f:spec"]["f:containers"]['k:{"name":"c"}']["f:env"]['k:{"name":"E5"}'], { ".": {}, "f:name": {}, "f:value": {} });
      // Between its phases an apply pauses about seven times; its walks of 36,000 fields pause several times more.
      assert.ok(pauses >= 15, `round ${round}: ${pauses} pauses`);
    }
  } finally {
    await t.close();
  }
});
