// Field sets: the one-walk comparison server writes record field ownership with must say what a lookup from the root
// per field says, including for lists that hold a key twice and for sets.
import { test } from "node:test";
import assert from "node:assert/strict";
import { jsonEqual } from "../../src/api/json.ts";
import { elementKey, ElementTables, fieldChanges, fieldsOf, fieldsV1Text, PathCursor, toFieldsV1, valueAt } from "../../src/server/apply/fields.ts";
import { schemaOf } from "../../src/server/schema.ts";
import type { ListNode } from "../../src/server/schema.ts";

/** The definition: every field of `after`, changed when `valueAt` differs between the two objects. */
function reference(before: any, after: any, schema: ReturnType<typeof schemaOf>, include: (f: string) => boolean) {
  const now = fieldsOf(after, schema, include);
  const changed = new Set<string>();
  for (const p of now) {
    const path = JSON.parse(p) as string[];
    if (before === undefined || !jsonEqual(valueAt(before, path, schema), valueAt(after, path, schema))) changed.add(p);
  }
  return { now, changed };
}

/** A small deterministic generator (xorshift), so that a failure names the case that made it. */
function rng(seed: number): (n: number) => number {
  let x = seed || 1;
  return (n) => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) % n;
  };
}

function deployment(pick: (n: number) => number): any {
  const names = ["web", "side", "web"];
  const containers = Array.from({ length: 1 + pick(3) }, (_, i) => ({
    name: names[(i + pick(2)) % names.length],
    image: `nginx:1.${pick(3)}`,
    ...(pick(2) === 0 ? { ports: [{ containerPort: 80 + pick(2), protocol: "TCP" }] } : {}),
    ...(pick(2) === 0 ? { env: [{ name: "A", value: String(pick(3)) }] } : {}),
    ...(pick(3) === 0 ? { args: ["-v", String(pick(2))] } : {}),
  }));
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: "d", namespace: "default", labels: pick(2) === 0 ? { app: "d" } : { app: "d", tier: String(pick(2)) }, finalizers: pick(2) === 0 ? ["a", "b"] : ["a"], uid: "u" },
    spec: {
      replicas: pick(4),
      selector: { matchLabels: { app: "d" } },
      template: { metadata: { labels: { app: "d" } }, spec: { containers, ...(pick(2) === 0 ? { nodeSelector: {} } : {}) } },
    },
    status: pick(2) === 0 ? { replicas: pick(3), conditions: [{ type: "Available", status: pick(2) === 0 ? "True" : "False" }] } : {},
  };
}

test("fieldChanges says what a valueAt lookup per field says, on deployments with repeated keys, sets and empty maps", () => {
  const schema = schemaOf({ group: "apps", version: "v1", kind: "Deployment" });
  const includes: Array<(f: string) => boolean> = [(f) => f !== "status", (f) => f === "status", () => true];
  let differing = 0;
  for (let seed = 1; seed <= 300; seed++) {
    const pick = rng(seed);
    const before = pick(5) === 0 ? undefined : deployment(pick);
    const after = deployment(pick);
    const include = includes[seed % includes.length]!;
    const expected = reference(before, after, schema, include);
    const got = fieldChanges(before, after, schema, include);
    assert.deepEqual([...got.now].sort(), [...expected.now].sort(), `fields of seed ${seed}`);
    assert.deepEqual([...got.changed].sort(), [...expected.changed].sort(), `changed fields of seed ${seed}`);
    if (expected.changed.size > 0 && expected.changed.size < expected.now.size) differing++;
  }
  // The cases must exercise partial changes, not only "all changed" or "nothing changed".
  assert.ok(differing > 100, `only ${differing} seeds changed some fields but not all`);
});

test("fieldsV1Text writes what serializing the toFieldsV1 tree writes, for deployments' fields and for sets of awkward elements", () => {
  const schema = schemaOf({ group: "apps", version: "v1", kind: "Deployment" });
  for (let seed = 1; seed <= 100; seed++) {
    const fields = fieldsOf(deployment(rng(seed)), schema, () => true);
    assert.equal(fieldsV1Text(fields), JSON.stringify(toFieldsV1(fields)), `fields of deployment seed ${seed}`);
  }
  // Elements that sort around a path's brackets and commas: prefixes of each other, characters below `"` and `,`,
  // escaped quotes in keys, and `.` as a field name (a path element always has its prefix: a bare `.` is none).
  const elements = ["f:a", "f:a-b", "f:a!", "f:b", 'k:{"name":"x"}', 'k:{"name":"x\\"y"}', "v:1", "f:\u0001", "f:."];
  const pick = rng(7);
  for (let round = 0; round < 3000; round++) {
    const fields = new Set<string>();
    for (let n = pick(8); n >= 0; n--) fields.add(JSON.stringify(Array.from({ length: 1 + pick(4) }, () => elements[pick(elements.length)])));
    assert.equal(fieldsV1Text(fields), JSON.stringify(toFieldsV1(fields)), `fields ${JSON.stringify([...fields])}`);
  }
});

test("PathCursor answers what valueAt answers, for paths in walk order, shuffled, repeated, and of awkward elements", () => {
  const schema = schemaOf({ group: "apps", version: "v1", kind: "Deployment" });
  for (let seed = 1; seed <= 200; seed++) {
    const pick = rng(seed);
    const object = deployment(pick);
    const other = deployment(pick);
    // Paths of another object too: some lead nowhere in this one, at any element.
    const paths = [...fieldsOf(other, schema, () => true), ...fieldsOf(object, schema, () => true)];
    for (let i = paths.length - 1; i > 0 && seed % 2 === 0; i--) {
      const j = pick(i + 1);
      [paths[i], paths[j]] = [paths[j]!, paths[i]!];
    }
    paths.push(...paths.slice(0, 5));
    const cursor = new PathCursor(object, schema, new ElementTables());
    for (const p of paths) assert.deepEqual(cursor.valueAt(p), valueAt(object, JSON.parse(p) as string[], schema), `seed ${seed}, path ${p}`);
  }
  // Set elements end a lookup; escaped quotes and backslashes in keys; a value that is null; elements after a miss.
  const object = { spec: { a: ["x", { "q\"b\\": 1 }], n: null, m: { "k\"": { z: 2 } } } };
  const any = schemaOf({ group: "", version: "v1", kind: "ConfigMap" });
  const texts = [["f:spec", "f:a", 'v:"x"', "f:whatever"], ["f:spec", "f:n"], ["f:spec", "f:n", "f:x"], ["f:spec", "f:m", 'f:k"', "f:z"], ["f:spec", "f:m", 'f:k"'], ["f:spec", "f:a", 'v:{"q\\"b\\\\":1}'], ["f:spec", "f:b", "f:c"], ["f:spec", "f:m"]].map((p) => JSON.stringify(p));
  const cursor = new PathCursor(object, any, new ElementTables());
  for (const p of [...texts, ...texts.reverse()]) assert.deepEqual(cursor.valueAt(p), valueAt(object, JSON.parse(p) as string[], any), p);
});

test("elementKey writes the JSON of the key fields' object, defaults and odd names included", () => {
  const reference = (item: Record<string, unknown>, list: ListNode) => {
    const key: Record<string, unknown> = {};
    for (const k of list.keys ?? []) {
      const value = item[k] ?? list.keyDefaults?.[k];
      if (value !== undefined && value !== null) Object.defineProperty(key, k, { value, enumerable: true });
    }
    return `k:${JSON.stringify(key)}`;
  };
  const lists: ListNode[] = [
    { t: "list", item: { t: "any" }, listType: "map", keys: ["containerPort", "protocol"], keyDefaults: { protocol: "TCP" } },
    { t: "list", item: { t: "any" }, listType: "map", keys: ["name"] },
    { t: "list", item: { t: "any" }, listType: "map", keys: ["b", "1", "a\"q", "__proto__"] },
  ] as unknown as ListNode[];
  const items = [{}, { containerPort: 80 }, { containerPort: 80, protocol: "UDP" }, { protocol: null, name: "x\u2028\"" }, { b: 1, 1: "one", 'a"q': { z: [1] }, ["__proto__"]: 2 }, { b: null, 1: 0 }];
  for (const list of lists) for (const item of items) assert.equal(elementKey(item, list), reference(item, list), `${JSON.stringify(list.keys)} ${JSON.stringify(item)}`);
});
