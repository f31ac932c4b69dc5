// Connections that are not being answered are closed, as kube-apiserver closes them: one that sends nothing or does
// not finish its request's headers within the header timeout, and a keep-alive one idle past the idle timeout; a
// watch that streams longer than both is not cut. The timeouts are options, small here; each wait below is bounded by
// a guard many times longer than the timeout it waits for, so a connection left open fails the test rather than
// hanging it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { connect } from "node:net";
import type { Socket } from "node:net";
import { connect as connectTls } from "node:tls";
import { request, testServer, configMap } from "./helpers.ts";
import type { TestServer } from "./helpers.ts";

const timeouts = { headerTimeoutMs: 150, idleTimeoutMs: 150, bodyTimeoutMs: 150 };
/** How long a test waits for a close the server owes before it calls the connection left open. */
const guardMs = 5000;

/** Resolves with what the server sent once it closes `socket`; rejects if it is still open after `guardMs`. */
function closedBy(socket: Socket): Promise<string> {
  const chunks: Buffer[] = [];
  socket.on("data", (chunk: Buffer) => chunks.push(chunk));
  return new Promise((resolve, reject) => {
    const guard = setTimeout(() => {
      socket.destroy();
      reject(new Error("the server left the connection open"));
    }, guardMs);
    socket.once("close", () => {
      clearTimeout(guard);
      resolve(Buffer.concat(chunks).toString());
    });
    socket.on("error", () => undefined);
  });
}

function plain(t: TestServer): Promise<Socket> {
  return new Promise((resolve) => {
    const socket = connect(t.server.port, "127.0.0.1", () => resolve(socket));
  });
}

test("a connection that sends nothing, or half a request's headers, is closed without an answer", async () => {
  const t = await testServer(timeouts);
  try {
    const silent = await plain(t);
    assert.equal(await closedBy(silent), "", "nothing sent, nothing answered");
    const half = await plain(t);
    const closed = closedBy(half);
    half.write(`GET /api HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${t.server.token}\r\n`);
    assert.equal(await closed, "");
    const tls = connectTls({ port: t.server.port, host: "127.0.0.1", rejectUnauthorized: false });
    await new Promise((resolve) => tls.once("secureConnect", resolve));
    assert.equal(await closedBy(tls as unknown as Socket), "", "over TLS too, after the handshake");
    // The server still answers.
    assert.equal((await request(t.server, "GET", "/healthz")).status, 200);
  } finally {
    await t.close();
  }
});

test("a keep-alive connection is closed once idle after its answer, over plain HTTP and TLS", async () => {
  const t = await testServer(timeouts);
  try {
    const socket = await plain(t);
    const closed = closedBy(socket);
    socket.write("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    assert.match(await closed, /^HTTP\/1\.1 200 OK\r\n/, "answered, then closed when idle");
    const tls = connectTls({ port: t.server.port, host: "127.0.0.1", rejectUnauthorized: false });
    await new Promise((resolve) => tls.once("secureConnect", resolve));
    const tlsClosed = closedBy(tls as unknown as Socket);
    tls.write("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    assert.match(await tlsClosed, /^HTTP\/1\.1 200 OK\r\n/);
  } finally {
    await t.close();
  }
});

test("a watch streaming for longer than both timeouts is not cut by them", async () => {
  const t = await testServer(timeouts);
  try {
    const socket = await plain(t);
    const chunks: string[] = [];
    socket.on("data", (chunk: Buffer) => chunks.push(chunk.toString()));
    let closed = false;
    socket.once("close", () => (closed = true));
    socket.write(`GET /api/v1/namespaces/default/configmaps?watch=true HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${t.server.token}\r\n\r\n`);
    // Each event comes after more than both timeouts have passed since the last bytes on the connection.
    for (const name of ["a", "b", "c"]) {
      await new Promise((resolve) => setTimeout(resolve, 3 * timeouts.idleTimeoutMs));
      assert.equal((await request(t.server, "POST", "/api/v1/namespaces/default/configmaps", { body: configMap(name) })).status, 201);
      for (let i = 0; i < 100 && !chunks.join("").includes(`"name":"${name}"`); i++) await new Promise((resolve) => setTimeout(resolve, 20));
      assert.ok(chunks.join("").includes(`"name":"${name}"`), `the watch saw ${name}`);
    }
    assert.equal(closed, false);
    socket.destroy();
  } finally {
    await t.close();
  }
});

test("a request whose body stops coming is answered 504 Timeout and its connection closed", async () => {
  const t = await testServer(timeouts);
  try {
    const socket = await plain(t);
    const closed = closedBy(socket);
    socket.write(`POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${t.server.token}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"metadata":`);
    const answer = await closed;
    assert.match(answer, /^HTTP\/1\.1 504 Gateway Timeout\r\n/);
    assert.match(answer, /Connection: close/i);
    const status = JSON.parse(answer.slice(answer.indexOf("{")));
    assert.deepEqual([status.reason, status.code, status.message], ["Timeout", 504, "Timeout: request did not complete within requested timeout - context deadline exceeded"]);
    assert.equal((await request(t.server, "GET", "/api/v1/namespaces/default/configmaps")).json.items.length, 0);
  } finally {
    await t.close();
  }
});

test("the timeouts default to kube-apiserver's and must be positive", async () => {
  const { startServer } = await import("../../src/server/index.ts");
  await assert.rejects(startServer({ headerTimeoutMs: 0, log: () => {} }), /headerTimeoutMs/);
  await assert.rejects(startServer({ idleTimeoutMs: -1, log: () => {} }), /idleTimeoutMs/);
  await assert.rejects(startServer({ bodyTimeoutMs: 2 ** 31, log: () => {} }), /bodyTimeoutMs/);
  const { bodyTimeoutMsDefault, headerTimeoutMsDefault, idleTimeoutMsDefault } = await import("../../src/server/connections.ts");
  assert.deepEqual([headerTimeoutMsDefault, idleTimeoutMsDefault, bodyTimeoutMsDefault], [32_000, 90_000, 60_000]);
});

test("close() ends connections that sent nothing or are idle at once, without waiting for their deadlines", async () => {
  const t = await testServer();
  const silent = await plain(t);
  const silentClosed = closedBy(silent);
  const idle = connectTls({ port: t.server.port, host: "127.0.0.1", rejectUnauthorized: false });
  await new Promise((resolve) => idle.once("secureConnect", resolve));
  const idleClosed = closedBy(idle as unknown as Socket);
  idle.write("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
  await new Promise((resolve) => idle.once("data", resolve));
  let guard: NodeJS.Timeout | undefined;
  const closed = await Promise.race([t.close().then(() => "closed"), new Promise((resolve) => (guard = setTimeout(() => resolve("still closing"), guardMs)))]);
  clearTimeout(guard);
  assert.equal(closed, "closed", "the default deadlines (32 s, 90 s) were not waited for");
  assert.equal(await silentClosed, "");
  assert.match(await idleClosed, /^HTTP\/1\.1 200 OK/);
});
