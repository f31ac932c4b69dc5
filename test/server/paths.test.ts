// Request paths act on exactly the object they name. Dot segments, escaped dots and escaped slashes are never
// resolved: a request whose path does not name an object plainly is refused with a 4xx Status and changes nothing.
// The requests are sent raw (node's http client sends a path as it is given; fetch and `new URL` would resolve it).
import { test } from "node:test";
import assert from "node:assert/strict";
import { request as httpRequest } from "node:http";
import fc from "fast-check";
import type { KubeObject } from "../../src/api/object.ts";
import { createServerStore, startServer } from "../../src/server/index.ts";
import type { SettleServer } from "../../src/server/index.ts";
import type { Store } from "../../src/store/index.ts";

interface RawReply {
  status: number;
  json: any;
  text: string;
}

/** One request with its path exactly as given. */
function rawRequest(server: SettleServer, method: string, path: string, body?: unknown): Promise<RawReply> {
  return new Promise((resolve, reject) => {
    const text = body === undefined ? undefined : JSON.stringify(body);
    const headers: Record<string, string> = { authorization: `Bearer ${server.token}` };
    if (text !== undefined) headers["content-type"] = method === "PATCH" ? "application/merge-patch+json" : "application/json";
    const req = httpRequest({ host: server.host, port: server.port, method, path, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => {
        const answer = Buffer.concat(chunks).toString("utf8");
        let json: any;
        try {
          json = JSON.parse(answer);
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode ?? 0, json, text: answer });
      });
    });
    req.on("error", reject);
    req.end(text);
  });
}

const fixture: Array<Record<string, unknown>> = [
  { apiVersion: "v1", kind: "Namespace", metadata: { name: "scratch" } },
  { apiVersion: "v1", kind: "Namespace", metadata: { name: "other" } },
  { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "a", namespace: "scratch" }, data: { k: "v" } },
  { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "b", namespace: "scratch" }, data: { k: "v" } },
  { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "a", namespace: "other" }, data: { k: "v" } },
  { apiVersion: "v1", kind: "Pod", metadata: { name: "a", namespace: "scratch" }, spec: { containers: [{ name: "c", image: "i" }] } },
  { apiVersion: "v1", kind: "Node", metadata: { name: "a" } },
  { apiVersion: "rbac.authorization.k8s.io/v1", kind: "Role", metadata: { name: "a", namespace: "scratch" }, rules: [] },
  { apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRole", metadata: { name: "a" }, rules: [] },
];

async function fixtureServer(): Promise<{ server: SettleServer; store: Store }> {
  const store = createServerStore();
  for (const object of fixture) store.create(structuredClone(object) as unknown as KubeObject);
  const server = await startServer({ store, log: () => {} });
  return { server, store };
}

const configMaps = (store: Store, namespace: string) => store.list({ apiVersion: "v1", kind: "ConfigMap", namespace }).items.map((o) => o.metadata.name);

test("the requests of the report act on nothing: %2e%2e, .., ., %2e and x/.. under a collection", async () => {
  const { server, store } = await fixtureServer();
  try {
    const revision = store.revision;
    const base = "/api/v1/namespaces/scratch/configmaps";
    const deleted = await rawRequest(server, "DELETE", `${base}/%2e%2e`);
    assert.equal(deleted.status, 400, deleted.text);
    assert.equal(deleted.json.kind, "Status");
    assert.equal(deleted.json.reason, "BadRequest");
    assert.equal(deleted.json.message, `Name parameter invalid: "..": may not be '..'`);
    assert.equal(store.get({ apiVersion: "v1", kind: "Namespace", name: "scratch" }).metadata.deletionTimestamp, undefined);

    const read = await rawRequest(server, "GET", `${base}/..`);
    assert.equal(read.status, 400, read.text);
    assert.notEqual(read.json.kind, "Namespace");
    assert.equal(read.json.message, `Name parameter invalid: "..": may not be '..'`);

    for (const path of [`${base}/.`, `${base}/%2e`, `${base}/%2E`]) {
      const reply = await rawRequest(server, "DELETE", path);
      assert.equal(reply.status, 400, `${path}: ${reply.text}`);
      assert.equal(reply.json.message, `Name parameter invalid: ".": may not be '.'`);
    }
    for (const path of [`${base}/x/..`, `${base}/a/%2e%2e`, `${base}/a/.`, `/api/v1/namespaces/scratch/pods/a/..`]) {
      const reply = await rawRequest(server, "DELETE", path);
      assert.equal(reply.status, 404, `${path}: ${reply.text}`);
      assert.equal(reply.json.kind, "Status");
    }
    // Dot segments elsewhere name no namespace, resource, group or version.
    for (const path of ["/api/v1/namespaces/../configmaps", "/api/v1/namespaces/scratch/../configmaps/a", "/api/../api/v1/namespaces/scratch/configmaps/a", "/api/v1/namespaces/scratch/configmaps/a%2f..", "/api/v1/namespaces/scratch/configmaps\\..", "/api/v1/namespaces/scratch/configmaps/%2e%2e%2fb"]) {
      const reply = await rawRequest(server, "DELETE", path);
      assert.ok(reply.status >= 400 && reply.status < 500, `${path}: ${reply.status} ${reply.text}`);
      assert.equal(reply.json.kind, "Status", path);
    }
    // A name that holds `%` cannot be stored: 400, as for `.` and `..`.
    const percent = await rawRequest(server, "GET", `${base}/a%25b`);
    assert.equal(percent.status, 400);
    assert.equal(percent.json.message, `Name parameter invalid: "a%b": may not contain '%'`);
    assert.deepEqual(configMaps(store, "scratch"), ["a", "b"]);
    assert.equal(store.revision, revision);
    // The plain paths still act on what they name.
    assert.equal((await rawRequest(server, "GET", `${base}/a`)).json.metadata.name, "a");
    assert.equal((await rawRequest(server, "GET", `${base}/%61`)).json.metadata.name, "a");
    assert.equal((await rawRequest(server, "GET", `${base}/`)).json.items.length, 2);
    assert.equal((await rawRequest(server, "DELETE", `${base}/b`)).status, 200);
    assert.deepEqual(configMaps(store, "scratch"), ["a"]);
  } finally {
    await server.close();
  }
});

test("an absolute-form target is read by its path, taken literally", async () => {
  const { server, store } = await fixtureServer();
  try {
    const reply = await rawRequest(server, "GET", `http://${server.host}:${server.port}/api/v1/namespaces/scratch/configmaps/a?x=1`);
    assert.equal(reply.json.metadata.name, "a");
    const dots = await rawRequest(server, "DELETE", `http://${server.host}:${server.port}/api/v1/namespaces/scratch/configmaps/..`);
    assert.equal(dots.status, 400);
    assert.deepEqual(configMaps(store, "scratch"), ["a", "b"]);
  } finally {
    await server.close();
  }
});

// ---- the property ----

const kindOfPlural: Record<string, string> = { configmaps: "ConfigMap", pods: "Pod", nodes: "Node", namespaces: "Namespace", roles: "Role", clusterroles: "ClusterRole" };
const namespacedPlurals = new Set(["configmaps", "pods", "roles"]);

/** What a path names when every segment, decoded on its own, is plain; undefined when it names nothing plainly. */
interface Named {
  plural: string;
  namespace: string | undefined;
  name: string | undefined;
  subresource: string | undefined;
}

/** The test's own reading of a raw path, independent of the server's parser. */
function namedBy(path: string): Named | undefined {
  const raw = path.split("/").slice(1);
  if (raw.length > 0 && raw[raw.length - 1] === "") raw.pop();
  const segments: string[] = [];
  for (const segment of raw) {
    let decoded: string;
    try {
      decoded = decodeURIComponent(segment);
    } catch {
      return undefined;
    }
    if (decoded === "" || decoded === "." || decoded === ".." || decoded.includes("/") || decoded.includes("%")) return undefined;
    segments.push(decoded);
  }
  let rest: string[];
  if (segments[0] === "api" && segments[1] === "v1") rest = segments.slice(2);
  else if (segments[0] === "apis" && segments[1] === "rbac.authorization.k8s.io" && segments[2] === "v1") rest = segments.slice(3);
  else return undefined;
  let namespace: string | undefined;
  if (rest[0] === "namespaces" && rest.length >= 3 && !(rest.length === 3 && (rest[2] === "status" || rest[2] === "finalize"))) {
    namespace = rest[1];
    rest = rest.slice(2);
  }
  // `/api/v1/` is the group version's discovery: readable, never written.
  if (rest.length === 0) return { plural: "", namespace: undefined, name: undefined, subresource: undefined };
  if (rest.length > 3 || kindOfPlural[rest[0]!] === undefined) return undefined;
  return { plural: rest[0]!, namespace, name: rest[1], subresource: rest[2] };
}

/** A piece of a path: its text, and which of its characters are percent-encoded (a slash encoded stays in its segment). */
interface Piece {
  text: string;
  encode: number;
}

function encodePiece({ text, encode }: Piece): string {
  let out = "";
  for (let i = 0; i < text.length; i++) {
    const hex = text.charCodeAt(i).toString(16).padStart(2, "0");
    // Both cases of the hex digits: `%2e` and `%2E` are the same escape.
    out += (encode >> i) & 1 ? `%${i % 2 === 0 ? hex : hex.toUpperCase()}` : text[i]!;
  }
  return out;
}

/** Mostly plain text, sometimes with some characters escaped (`%61` for `a`, `%2e` for a dot, `%2F` for a slash). */
const encoding = fc.oneof({ weight: 3, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.nat(63) });
const hostile = [".", "..", "x/..", "../a", "a/..", "", "a/b", "./a", "..."];
/** One of `plain` most of the time, otherwise a dot segment, a slash, or an empty segment. */
const piece = (...plain: string[]) =>
  fc.record({ text: fc.oneof({ weight: 6, arbitrary: fc.constantFrom(...plain) }, { weight: 1, arbitrary: fc.constantFrom(...hostile) }), encode: encoding });
const sometimes = <T>(arbitrary: fc.Arbitrary<T>, weight: number) => fc.oneof({ weight, arbitrary }, { weight: 4 - weight, arbitrary: fc.constant(undefined) });

const pathArb = fc.record({
  resource: fc.constantFrom(["core", "configmaps"], ["core", "pods"], ["core", "nodes"], ["core", "namespaces"], ["rbac", "roles"], ["rbac", "clusterroles"]),
  plural: fc.record({ text: fc.oneof({ weight: 6, arbitrary: fc.constant("") }, { weight: 1, arbitrary: fc.constantFrom(...hostile) }), encode: encoding }),
  namespace: sometimes(piece("scratch", "scratch", "other", "absent"), 3),
  name: sometimes(piece("a", "b", "scratch", "other", "missing", "a%b"), 3),
  subresource: sometimes(piece("status", "status", "finalize", "x"), 1),
  /** Extra pieces put between the others (a stray `..`, a doubled slash). */
  inserts: fc.oneof({ weight: 3, arbitrary: fc.constant([]) }, { weight: 1, arbitrary: fc.array(fc.record({ at: fc.nat(8), piece: fc.record({ text: fc.constantFrom(...hostile), encode: encoding }) }), { minLength: 1, maxLength: 2 }) }),
  trailingSlash: fc.boolean(),
});

function buildPath(p: typeof pathArb extends fc.Arbitrary<infer T> ? T : never): string {
  const [group, plural] = p.resource;
  const pieces: string[] = group === "core" ? ["api", "v1"] : ["apis", "rbac.authorization.k8s.io", "v1"];
  // Cluster-scoped resources mostly without a namespace, namespaced ones mostly with one.
  if (p.namespace !== undefined && (namespacedPlurals.has(plural!) || p.namespace.encode % 4 === 1)) pieces.push("namespaces", encodePiece(p.namespace));
  // The plural itself, or (now and then) a hostile piece in its place.
  pieces.push(encodePiece(p.plural.text === "" ? { text: plural!, encode: p.plural.encode } : p.plural));
  if (p.name !== undefined) pieces.push(encodePiece(p.name));
  if (p.name !== undefined && p.subresource !== undefined) pieces.push(encodePiece(p.subresource));
  for (const { at, piece: extra } of p.inserts) pieces.splice(Math.min(at, pieces.length), 0, encodePiece(extra));
  return `/${pieces.join("/")}${p.trailingSlash ? "/" : ""}`;
}

const requestArb = fc.record({
  method: fc.constantFrom("GET", "POST", "PUT", "PATCH", "DELETE"),
  path: pathArb,
  /** The kind of a POST or PUT body: the path's own, or now and then another. */
  bodyKind: fc.oneof({ weight: 3, arbitrary: fc.constant("") }, { weight: 1, arbitrary: fc.constantFrom("ConfigMap", "Pod", "Node", "Namespace", "Role", "ClusterRole") }),
  bodyName: fc.constantFrom("a", "b", "scratch", "fresh", ".", ".."),
});

function bodyOf(kind: string, name: string): Record<string, unknown> {
  const apiVersion = kind === "Role" || kind === "ClusterRole" ? "rbac.authorization.k8s.io/v1" : "v1";
  const object: Record<string, unknown> = { apiVersion, kind, metadata: { name, labels: { touched: "yes" } } };
  if (kind === "ConfigMap") object.data = { k: "changed" };
  if (kind === "Pod") object.spec = { containers: [{ name: "c", image: "changed" }] };
  if (kind === "Role" || kind === "ClusterRole") object.rules = [];
  return object;
}

/** Whether `object` is one the request may act on: of the named kind, in the named namespace, with the named name. */
function withinNamed(named: Named, object: KubeObject): boolean {
  if (object.kind !== kindOfPlural[named.plural]) return false;
  if (namespacedPlurals.has(named.plural) && named.namespace !== undefined && object.metadata.namespace !== named.namespace) return false;
  return named.name === undefined || object.metadata.name === named.name;
}

test("every path form, verb and scope: the named object is the one read or written, or a 4xx Status leaves the store unchanged", async () => {
  let current = await fixtureServer();
  let acted = 0;
  let refused = 0;
  try {
    await fc.assert(
      fc.asyncProperty(requestArb, async (r) => {
        const { server, store } = current;
        const path = buildPath(r.path);
        const named = namedBy(path);
        const body = r.method === "PATCH" ? { metadata: { labels: { touched: "yes" } } } : r.method === "POST" || r.method === "PUT" ? bodyOf(r.bodyKind === "" ? kindOfPlural[r.path.resource[1]!]! : r.bodyKind, r.bodyName) : undefined;
        const before = store.revision;
        const reply = await rawRequest(server, r.method, path, body);
        const what = `${r.method} ${path} ${JSON.stringify(body)} -> ${reply.status} ${reply.text.slice(0, 300)}`;
        assert.ok(reply.status < 500, what);
        const events = store.history(before);
        if (reply.status >= 400) {
          refused++;
          if (process.env.PATHS_DEBUG) console.log(what);
          assert.equal(reply.json?.kind, "Status", what);
          assert.equal(reply.json.code, reply.status, what);
          assert.equal(store.revision, before, `a refused request changed the store: ${what}`);
          return;
        }
        acted++;
        assert.ok(named !== undefined, `a path that names nothing plainly was carried out: ${what}`);
        if (r.method === "GET") {
          if (named.plural === "") assert.equal(reply.json.kind, "APIResourceList", what);
          else if (named.name === undefined) {
            assert.equal(reply.json.kind, `${kindOfPlural[named.plural]}List`, what);
            for (const item of reply.json.items) assert.ok(withinNamed(named, { ...item, kind: kindOfPlural[named.plural] }), what);
          } else assert.ok(withinNamed(named, reply.json), what);
        }
        // A namespace's deletion goes on to its contents (the GC loop may already have started on them).
        const cascade = r.method === "DELETE" && named.plural === "namespaces" && named.name !== undefined;
        for (const event of events) {
          assert.ok(withinNamed(named, event.object) || (cascade && event.object.metadata.namespace === named.name), `${what}: wrote ${event.type} ${event.object.kind} ${event.object.metadata.namespace}/${event.object.metadata.name}`);
        }
        if (events.length > 0) {
          // The next request starts from the fixture again.
          await server.close();
          current = await fixtureServer();
        }
      }),
      { seed: 32_0105, numRuns: 1500 },
    );
  } finally {
    await current.server.close();
  }
  // The generator reaches both sides: requests carried out and requests refused.
  assert.ok(acted > 100, `acted ${acted}`);
  assert.ok(refused > 300, `refused ${refused}`);
});
