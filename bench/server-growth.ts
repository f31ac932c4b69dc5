// Server costs that must grow linearly (issue 32): request time and the worst concurrent `/healthz` wait for
// server-side apply bodies from 10 KB to each shape's limit (flat keys, deep nesting, a long list, many annotations;
// as YAML and as JSON), namespace deletion at 1k/4k/10k objects, and heap and RSS after rounds of 500 KB writes.
// Each figure carries its growth ratio: time per KB (or per object) relative to the smallest size of its row, so
// linear work reads about 1x all along. The client shares the server's process, so a `/healthz` answer waits exactly
// as long as a request blocks the event loop. After the rows, one per shape: its worst `/healthz` wait in ms and as a
// multiple of the JSON parse+stringify floor of the body it waited behind (measured in the same run), the figure of
// issue 32's "/healthz never waits behind one request for more than ~100 ms". Run alone with
// `node --conditions=settle-source --import tsx bench/server.ts --growth`, or within `npm run bench -- server`.
import { Agent, request } from "node:http";
import { loadavg } from "node:os";
import { performance } from "node:perf_hooks";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { parse, stringify } from "yaml";
import { createServerStore, startServer } from "../src/server/index.ts";
import type { SettleServer } from "../src/server/index.ts";
import type { KubeObject } from "../src/api/object.ts";
import { realClock } from "../src/api/clock.ts";

type Figures = Record<string, string | number>;

interface Reply {
  status: number;
  ms: number;
}

function send(server: SettleServer, agent: Agent, method: string, path: string, body?: string, contentType?: string): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { authorization: `Bearer ${server.token}` };
    if (body !== undefined) {
      headers["content-type"] = contentType ?? "application/json";
      headers["content-length"] = String(Buffer.byteLength(body));
    }
    const start = performance.now();
    const req = request(`${server.url}${path}`, { method, headers, agent }, (res) => {
      res.resume();
      res.on("end", () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - start }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

/** Runs `work` while another connection asks `/healthz` back to back; returns its reply and the longest wait. */
async function withHealthz(server: SettleServer, work: () => Promise<Reply>): Promise<{ reply: Reply; healthzMsMax: number }> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  let done = false;
  let healthzMsMax = 0;
  const poll = (async () => {
    while (!done) healthzMsMax = Math.max(healthzMsMax, (await send(server, agent, "GET", "/healthz")).ms);
  })();
  await send(server, agent, "GET", "/healthz");
  const reply = await work();
  done = true;
  await poll;
  agent.destroy();
  return { reply, healthzMsMax };
}

/**
 * The floor a request's time is read against on a loaded machine: the fastest of three `JSON.parse` and
 * `JSON.stringify` round trips of the same body text (for YAML, of its JSON form), in the same run.
 */
function parseStringifyMs(body: string): number {
  let text = body;
  try {
    JSON.parse(body);
  } catch {
    text = JSON.stringify(parse(body));
  }
  let best = Number.POSITIVE_INFINITY;
  for (let i = 0; i < 3; i++) {
    const start = performance.now();
    JSON.stringify(JSON.parse(text));
    best = Math.min(best, performance.now() - start);
  }
  return best;
}

/** One shape of applied object: its path and the object for about `bytes` of JSON (`round` changes its values). */
interface Shape {
  name: string;
  path: string;
  limitKb: number;
  object(bytes: number, round: number): Record<string, unknown>;
}

const pad = (text: string, width: number) => text.padEnd(width, "x");

/** Issue 32's bound on the longest `/healthz` wait behind one request, on this machine when idle. */
const healthzTargetMs = 100;

const shapes: Shape[] = [
  {
    name: "flat keys",
    path: "/api/v1/namespaces/default/configmaps/flat",
    limitKb: 1000,
    object: (bytes, round) => ({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "flat" }, data: Object.fromEntries(Array.from({ length: Math.ceil(bytes / 50) }, (_, i) => [`key-${i}`, pad(`${round}-${i}`, 36)])) }),
  },
  {
    name: "deep nesting",
    path: "/apis/bench.settle.dev/v1/namespaces/default/trees/tree",
    limitKb: 1400,
    object: (bytes, round) => {
      // Chains 32 levels deep, as many as the size asks for (each about 260 bytes of JSON).
      const chain = (j: number) => {
        let node: Record<string, unknown> = { leaf: `${round}-${j}` };
        for (let d = 0; d < 32; d++) node = { [`n${d}`]: node };
        return node;
      };
      const spec = Object.fromEntries(Array.from({ length: Math.ceil(bytes / 260) }, (_, j) => [`c${j}`, chain(j)]));
      return { apiVersion: "bench.settle.dev/v1", kind: "Tree", metadata: { name: "tree" }, spec };
    },
  },
  {
    name: "long list",
    path: "/apis/apps/v1/namespaces/default/deployments/list",
    limitKb: 1400,
    object: (bytes, round) => {
      const env = Array.from({ length: Math.ceil(bytes / 45) }, (_, i) => ({ name: `E${i}`, value: pad(`${round}`, 16) }));
      const template = { metadata: { labels: { app: "list" } }, spec: { containers: [{ name: "c", image: "busybox", env }] } };
      return { apiVersion: "apps/v1", kind: "Deployment", metadata: { name: "list" }, spec: { selector: { matchLabels: { app: "list" } }, template } };
    },
  },
  {
    name: "many annotations",
    path: "/api/v1/namespaces/default/configmaps/notes",
    limitKb: 250,
    object: (bytes, round) => ({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "notes", annotations: Object.fromEntries(Array.from({ length: Math.ceil(bytes / 50) }, (_, i) => [`a${i}.bench.settle.dev/k`, pad(`${round}`, 20)])) } }),
  },
];

const treeCrd = {
  apiVersion: "apiextensions.k8s.io/v1",
  kind: "CustomResourceDefinition",
  metadata: { name: "trees.bench.settle.dev" },
  spec: {
    group: "bench.settle.dev",
    scope: "Namespaced",
    names: { plural: "trees", singular: "tree", kind: "Tree" },
    versions: [{ name: "v1", served: true, storage: true, schema: { openAPIV3Schema: { type: "object", properties: { spec: { type: "object", "x-kubernetes-preserve-unknown-fields": true } } } } }],
  },
};

/** Server-side applies of each shape as YAML and JSON at 10 KB .. the limit: create, then a changed re-apply. */
async function applyGrowth(server: SettleServer): Promise<Figures> {
  const figures: Figures = { "load average (1, 5 min) at the start of the apply rows": loadavg().slice(0, 2).map((l) => l.toFixed(2)).join(", ") };
  const summary: Figures = {};
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  server.store.create(treeCrd as unknown as KubeObject);
  for (const shape of shapes) {
    // The longest `/healthz` wait of the shape over every size and format, and the floor of the body it waited on.
    let worst = { healthzMs: 0, floorMs: 1, row: "" };
    for (const format of ["yaml", "json"] as const) {
      let floorMsPerKb = 0;
      for (const kb of [10, 40, 160, shape.limitKb].filter((k, i, all) => k <= shape.limitKb && all.indexOf(k) === i)) {
        await send(server, agent, "DELETE", shape.path);
        const text = (round: number) => (format === "json" ? JSON.stringify(shape.object(kb * 1024, round)) : stringify(shape.object(kb * 1024, round)));
        const bodies = [text(1), text(2)];
        const runs = [];
        for (const body of bodies) runs.push(await withHealthz(server, () => send(server, agent, "PATCH", `${shape.path}?fieldManager=bench&force=true`, body, "application/apply-patch+yaml")));
        const ms = Math.max(...runs.map((r) => r.reply.ms));
        const floorMs = parseStringifyMs(bodies[1]!);
        const bodyKb = Buffer.byteLength(bodies[0]!) / 1024;
        const statuses = runs.map((r) => r.reply.status).join("/");
        if (floorMsPerKb === 0) floorMsPerKb = ms / bodyKb;
        const ratio = statuses.startsWith("2") ? `x${(ms / bodyKb / floorMsPerKb).toFixed(2)} per KB` : "refused";
        const healthzMs = Math.max(...runs.map((r) => r.healthzMsMax));
        figures[`apply ${shape.name} ${format} ${Math.round(bodyKb)} KB: ms, per-KB ratio to 10 KB, worst /healthz, both over a JSON parse+stringify of the body`] =
          `${statuses} ${Math.round(ms)} ms, ${ratio}, /healthz ${Math.round(healthzMs)} ms, apply x${(ms / floorMs).toFixed(0)} /healthz x${(healthzMs / floorMs).toFixed(0)} floor`;
        if (healthzMs > worst.healthzMs) worst = { healthzMs, floorMs, row: `${format} ${Math.round(bodyKb)} KB` };
      }
    }
    summary[`worst /healthz during an apply of ${shape.name} (10 KB to ${shape.limitKb} KB, YAML and JSON): ms (target ~${healthzTargetMs} on an idle machine), and over the parse+stringify floor of that body`] =
      `${Math.round(worst.healthzMs)} ms, x${(worst.healthzMs / worst.floorMs).toFixed(1)} (${worst.row}, floor ${worst.floorMs.toFixed(1)} ms)`;
  }
  Object.assign(figures, summary);
  agent.destroy();
  return figures;
}

/** `DELETE` of a namespace of `objects` ConfigMaps until it is gone (the GC loop empties it). */
async function namespaceDeletion(server: SettleServer): Promise<Figures> {
  const figures: Figures = {};
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  let floor = 0;
  for (const objects of [1000, 4000, 10000]) {
    const name = `bench-ns-${objects}`;
    server.store.create({ apiVersion: "v1", kind: "Namespace", metadata: { name } });
    for (let i = 0; i < objects; i++) server.store.create({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: `c-${i}`, namespace: name }, data: { i: String(i) } });
    const start = performance.now();
    await send(server, agent, "DELETE", `/api/v1/namespaces/${name}`);
    while ((await send(server, agent, "GET", `/api/v1/namespaces/${name}`)).status !== 404) await realClock.sleep(5);
    const ms = performance.now() - start;
    if (floor === 0) floor = ms / objects;
    figures[`namespace deletion, ${objects} objects: ms, per-object ratio to 1k`] = `${Math.round(ms)} ms, x${(ms / objects / floor).toFixed(2)}`;
  }
  agent.destroy();
  return figures;
}

/** A full garbage collection, so that the heap figure is what is still reachable. */
function collectGarbage(): void {
  setFlagsFromString("--expose-gc");
  (runInNewContext("gc") as () => void)();
}

/**
 * Heap and RSS growth over rounds of 500 KB merge patches, each round ending with the object deleted: the history
 * keeps at most 64 MiB of them, so the second round adds nothing to what the first left.
 */
export async function writeMemory(): Promise<Figures> {
  const server = await startServer({ log: () => {}, store: createServerStore({ now: () => realClock.now() }) });
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const figures: Figures = {};
  const mib = (bytes: number) => Math.round(bytes / 1048576);
  const path = "/api/v1/namespaces/default/configmaps/big";
  collectGarbage();
  const start = process.memoryUsage();
  let writes = 0;
  for (const round of [1, 2]) {
    await send(server, agent, "POST", "/api/v1/namespaces/default/configmaps", JSON.stringify({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "big" } }));
    for (let i = 0; i < 200; i++, writes++) {
      const reply = await send(server, agent, "PATCH", path, JSON.stringify({ data: { blob: String(i % 10).repeat(500_000) } }), "application/merge-patch+json");
      if (reply.status !== 200) throw new Error(`patch: status ${reply.status}`);
    }
    await send(server, agent, "DELETE", path);
    collectGarbage();
    const memory = process.memoryUsage();
    figures[`after ${writes} x 500 KB writes (round ${round}): heap, RSS growth since start (history bound 64 MiB)`] =
      `+${mib(memory.heapUsed - start.heapUsed)} MiB, +${mib(memory.rss - start.rss)} MiB`;
  }
  agent.destroy();
  await server.close();
  return figures;
}

export async function benchServerGrowth(): Promise<Figures> {
  const server = await startServer({ log: () => {} });
  let figures: Figures;
  try {
    figures = { ...(await applyGrowth(server)), ...(await namespaceDeletion(server)) };
  } finally {
    await server.close();
  }
  return { ...figures, ...(await writeMemory()) };
}
