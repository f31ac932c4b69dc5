import { test, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startServer } from "../../src/server/index.ts";
import { createStore } from "../../src/store/index.ts";
import { createKubeClient } from "../../src/kube/index.ts";
import { Action, defineController, runController, isConflict, isNotFound, isGone, realClock, type KubeObject } from "../../src/runtime/index.ts";

const dir = mkdtempSync(join(tmpdir(), "settle-kube-"));
const server = await startServer({ log: () => {} });
const kubeconfig = join(dir, "kubeconfig");
server.writeKubeconfig(kubeconfig);
const client = createKubeClient({ kubeconfig });
after(async () => {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

const cm = (name: string, data: Record<string, string> = {}): KubeObject => ({ apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace: "default" }, data });
const ref = (name: string) => ({ apiVersion: "v1", kind: "ConfigMap", namespace: "default", name });

test("the kubeconfig client creates, reads, updates, patches and deletes through the real HTTP API", async () => {
  const created = await client.create({ object: cm("a", { x: "1" }) });
  assert.equal((await client.get(ref("a"))).metadata.uid, created.metadata.uid);
  const updated = await client.update({ object: { ...created, data: { x: "2" } } });
  assert.notEqual(updated.metadata.resourceVersion, created.metadata.resourceVersion);
  await assert.rejects(client.update({ object: { ...created, data: { x: "3" } } }), isConflict);
  const patched = await client.patch({ ...ref("a"), patchType: "json", patch: [{ op: "replace", path: "/data/x", value: "4" }] });
  assert.deepEqual(patched.data, { x: "4" });
  const listed = await client.list({ apiVersion: "v1", kind: "ConfigMap", namespace: "default", labelSelector: "" });
  assert.ok(listed.items.some((o) => o.metadata.name === "a"));
  await client.delete(ref("a"));
  await assert.rejects(client.get(ref("a")), isNotFound);
});

test("a watch from a revision delivers later events, and a compacted revision fails with 410", async () => {
  const start = await client.create({ object: cm("w") });
  const watch = client.watch({ apiVersion: "v1", kind: "ConfigMap", namespace: "default", resourceVersion: start.metadata.resourceVersion });
  const events = watch[Symbol.asyncIterator]();
  await client.patch({ ...ref("w"), patchType: "merge", patch: { data: { y: "1" } } });
  const first = await events.next();
  assert.equal(first.value?.type, "MODIFIED");
  watch.close();
});

test("a watch from a compacted revision fails with 410 Expired, which informers answer by relisting", async () => {
  const small = await startServer({ store: createStore({ now: () => realClock.now(), historyRevisionsMax: 5 }), log: () => {} });
  const path = join(dir, "small.kubeconfig");
  small.writeKubeconfig(path);
  const smallClient = createKubeClient({ kubeconfig: path });
  try {
    for (let i = 0; i < 10; i++) await smallClient.create({ object: cm(`c${i}`) });
    const stale = smallClient.watch({ apiVersion: "v1", kind: "ConfigMap", namespace: "default", resourceVersion: "2" });
    await assert.rejects(async () => {
      for await (const _ of stale) void _;
    }, (error: unknown) => isGone(error));
  } finally {
    await small.close();
  }
});

test("a settle controller runs unchanged against the server through the kubeconfig client", async () => {
  const controller = defineController({
    name: "mirror",
    for: { apiVersion: "v1", kind: "ConfigMap", namespace: "default", labelSelector: "mirror=yes" },
    async reconcile(source, ctx) {
      const name = `${source.metadata.name}-copy`;
      try {
        await ctx.client.create({ object: cm(name, (source.data as Record<string, string>) ?? {}) });
      } catch (error) {
        if ((error as { reason?: string }).reason !== "AlreadyExists") throw error;
      }
      return Action.awaitChange();
    },
  });
  const handle = runController(controller, { client, clock: realClock });
  await handle.waitForSync();
  await client.create({ object: { ...cm("m", { k: "v" }), metadata: { name: "m", namespace: "default", labels: { mirror: "yes" } } } });
  let copy: KubeObject | undefined;
  for (let i = 0; i < 100 && copy === undefined; i++) {
    copy = await client.get(ref("m-copy")).catch(() => undefined);
    if (copy === undefined) await realClock.sleep(20);
  }
  handle.stop();
  await handle.done;
  assert.deepEqual(copy?.data, { k: "v" });
});

test("runControllerProcess runs a controller as a process from $KUBECONFIG, logs JSON lines and stops cleanly on SIGTERM", async () => {
  const { spawn } = await import("node:child_process");
  const fixture = new URL("../fixtures/kube/mirror-controller.ts", import.meta.url).pathname;
  const child = spawn(process.execPath, ["--import", "tsx", fixture], { env: { ...process.env, KUBECONFIG: kubeconfig }, stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
  await client.create({ object: { ...cm("p", { k: "v" }), metadata: { name: "p", namespace: "default", labels: { mirror: "yes" } } } });
  let copy: KubeObject | undefined;
  for (let i = 0; i < 500 && copy === undefined; i++) {
    copy = await client.get(ref("p-copy")).catch(() => undefined);
    if (copy === undefined) await realClock.sleep(20);
  }
  assert.deepEqual(copy?.data, { k: "v" });
  child.kill("SIGTERM");
  const code = await new Promise<number | null>((resolve) => child.on("exit", resolve));
  assert.equal(code, 0, stderr);
  const lines = stderr.trim().split("\n").map((l) => JSON.parse(l) as { msg: string; component: string });
  assert.ok(lines.some((l) => l.msg === "stopping"));
  assert.ok(lines.every((l) => l.component === "mirror"));
});

test("a name or namespace that is a dot segment is refused before it is sent: fetch would resolve it to another path", async () => {
  await client.create({ object: cm("kept") });
  for (const name of ["..", ".", "a/b", "a%b"]) {
    await assert.rejects(client.delete(ref(name)), (error: unknown) => error instanceof Error && error.message.includes(`invalid resource name ${JSON.stringify(name)}`), name);
  }
  await assert.rejects(client.list({ apiVersion: "v1", kind: "ConfigMap", namespace: ".." }), /invalid namespace "\.\."/);
  assert.equal((await client.get({ apiVersion: "v1", kind: "Namespace", name: "default" })).metadata.deletionTimestamp, undefined);
  assert.equal((await client.get(ref("kept"))).metadata.name, "kept");
});
