// The field tree an apply holds its own fields in (field-tree.ts) must answer as the set of path texts `fieldsOf`
// makes: the same texts in the same order, byte-identical `fieldsV1`, and the same answers to the questions an apply
// asks of two sets (an unchanged set, the fields one drops, the fields a live object still has).
import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { ElementTables, fieldsOf, fieldsV1Text, mergeApplied, mergeAppliedSteps, PathCursor, stepBudget, toFieldsV1 } from "../../src/server/apply/fields.ts";
import { FieldTree, fieldTreeMinus, fieldTreeOf, fieldTreeSteps, fieldTreeV1, fieldTreeV1Text, hasEveryField, sameFieldTrees } from "../../src/server/apply/field-tree.ts";
import { schemaOf } from "../../src/server/schema.ts";

const deploymentSchema = schemaOf({ group: "apps", version: "v1", kind: "Deployment" });
/** A kind without a schema: every field below the top is free JSON. */
const freeSchema = schemaOf({ group: "bench.settle.dev", version: "v1", kind: "Tree" });

// Names that sort around a path's brackets, commas and quotes, need escapes, or look like indices or elements.
const name = fc.constantFrom("a", "b", "web", "a-b", "a!", 'x"y', "q\\", "é", ".", "0", "1", "\u0001", "k:x", "__proto__");
const scalar = fc.oneof(fc.constantFrom("v", "", "1"), fc.integer({ min: 0, max: 3 }), fc.boolean(), fc.constant(null));
const free = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof({ depthSize: "small", withCrossShrink: true }, scalar, fc.array(tie("value"), { maxLength: 3 }), fc.dictionary(name, tie("value"), { maxKeys: 3 })),
})).value;

/** `depth` maps nested in one another around a value: past the walk's depth bound of 64 when deep enough. */
const chain = fc.tuple(fc.integer({ min: 0, max: 70 }), free).map(([depth, inner]) => {
  let node: unknown = inner;
  for (let d = 0; d < depth; d++) node = { [`n${d % 3}`]: node };
  return node;
});

// A null name makes an element keyed by nothing, with no fields of its own below it.
const env = fc.record({ name: fc.constantFrom("A", "B", 'C"', null), value: scalar }, { requiredKeys: ["name"] });
const port = fc.record({ containerPort: fc.constantFrom(80, 81), protocol: fc.constantFrom("TCP", "UDP") }, { requiredKeys: ["containerPort"] });
// Container names repeat: a list holding one key twice is where a tree gives way to the set of texts.
const container = fc.record(
  { name: fc.constantFrom("web", "side", "x\\"), image: scalar, env: fc.array(env, { maxLength: 3 }), ports: fc.array(port, { maxLength: 3 }), args: fc.array(name, { maxLength: 2 }), extra: free },
  { requiredKeys: ["name"] },
);

const deployment = fc.record(
  {
    apiVersion: fc.constant("apps/v1"),
    kind: fc.constant("Deployment"),
    metadata: fc.record(
      { name: fc.constant("d"), uid: fc.constant("u"), labels: fc.dictionary(name, fc.constantFrom("x", "y")), finalizers: fc.array(fc.constantFrom("a", "b", "a"), { maxLength: 3 }), annotations: fc.dictionary(name, scalar, { maxKeys: 2 }) },
      { requiredKeys: ["name"] },
    ),
    spec: fc.record(
      {
        replicas: scalar,
        selector: fc.record({ matchLabels: fc.dictionary(name, fc.constant("d"), { maxKeys: 2 }) }),
        template: fc.record({ spec: fc.record({ containers: fc.array(container, { maxLength: 3 }), nodeSelector: fc.dictionary(name, scalar, { maxKeys: 2 }) }) }),
        extra: chain,
      },
      { requiredKeys: [] },
    ),
    status: free,
  },
  { requiredKeys: ["apiVersion", "kind", "metadata"] },
);

const tree = fc.record({ apiVersion: fc.constant("bench.settle.dev/v1"), kind: fc.constant("Tree"), metadata: fc.record({ name: fc.constant("t"), labels: fc.dictionary(name, fc.constant("x")) }), spec: chain, data: free });

/** A pair of objects of one kind, drawn from the same small vocabulary so that their fields overlap. */
const pairs = fc.oneof(
  fc.tuple(deployment, deployment).map(([a, b]) => ({ schema: deploymentSchema, a, b })),
  fc.tuple(tree, tree).map(([a, b]) => ({ schema: freeSchema, a, b })),
  deployment.map((a) => ({ schema: deploymentSchema, a, b: a })),
);

const includes: Array<(field: string) => boolean> = [() => true, (f) => f !== "status", (f) => f === "status"];

test("a field tree holds fieldsOf's texts in fieldsOf's order and writes byte-identical fieldsV1", () => {
  let trees = 0;
  let fallbacks = 0;
  fc.assert(
    fc.property(pairs, fc.integer({ min: 0, max: 2 }), ({ schema, a }, which) => {
      const include = includes[which]!;
      const texts = fieldsOf(a as never, schema, include);
      const fields = fieldTreeOf(a as never, schema, include);
      if (fields instanceof FieldTree) trees++;
      else fallbacks++;
      assert.equal(fields.size, texts.size);
      assert.deepEqual([...fields], [...texts]);
      for (const p of texts) assert.ok(fields.has(p));
      if (fields instanceof FieldTree) {
        const expected = fieldsV1Text(texts);
        assert.equal(fieldTreeV1Text(fields), expected);
        assert.equal(JSON.stringify(fieldTreeV1(fields)), expected);
        assert.equal(JSON.stringify(toFieldsV1(texts)), expected);
      }
    }),
    { seed: 32_0301, numRuns: 600 },
  );
  // Both ways must be exercised: trees, and lists holding a key twice.
  assert.ok(trees > 300 && fallbacks > 20, `${trees} trees, ${fallbacks} fallbacks`);
});

test("two field trees answer an apply's questions as their sets of texts do: same fields, fields dropped, fields still set", () => {
  let same = 0;
  let dropping = 0;
  let missing = 0;
  fc.assert(
    fc.property(pairs, ({ schema, a, b }) => {
      const include = () => true;
      const ta = fieldTreeOf(a as never, schema, include);
      const tb = fieldTreeOf(b as never, schema, include);
      fc.pre(ta instanceof FieldTree && tb instanceof FieldTree);
      const sa = [...fieldsOf(a as never, schema, include)];
      const sb = fieldsOf(b as never, schema, include);
      const expectSame = sa.length === sb.size && sa.every((p, i) => p === [...sb][i]);
      assert.equal(sameFieldTrees(ta as FieldTree, tb as FieldTree), expectSame);
      if (expectSame) same++;
      const dropped = sa.filter((p) => !sb.has(p));
      assert.deepEqual(fieldTreeMinus(ta as FieldTree, tb as FieldTree), dropped);
      if (dropped.length > 0 && dropped.length < sa.length) dropping++;
      // Does `b` still have every field of `a`? As the cursor over `a`'s texts says.
      const cursor = new PathCursor(b, schema, new ElementTables());
      const expected = sa.every((p) => cursor.valueAt(p) !== undefined);
      assert.equal(hasEveryField(ta as FieldTree, b, schema, new ElementTables()), expected);
      if (!expected) missing++;
    }),
    { seed: 32_0302, numRuns: 600 },
  );
  assert.ok(same > 50 && dropping > 50 && missing > 50, `same ${same}, dropping ${dropping}, missing ${missing}`);
});

test("a field tree of thousands of fields (a long list, wide and deep maps) answers as fieldsOf's texts", () => {
  const env = Array.from({ length: 3000 }, (_, i) => ({ name: `E${i}`, value: i % 7 === 0 ? null : String(i) }));
  const deployment = { apiVersion: "apps/v1", kind: "Deployment", metadata: { name: "d" }, spec: { template: { spec: { containers: [{ name: "c", env }] } } } };
  const chain = (j: number) => {
    let node: Record<string, unknown> = { leaf: j };
    for (let d = 0; d < 40; d++) node = { [`n${d}`]: node };
    return node;
  };
  const tree = { apiVersion: "bench.settle.dev/v1", kind: "Tree", metadata: { name: "t" }, spec: Object.fromEntries(Array.from({ length: 300 }, (_, j) => [`c${j}`, chain(j)])) };
  for (const [object, schema] of [[deployment, deploymentSchema], [tree, freeSchema]] as const) {
    const texts = fieldsOf(object as never, schema, () => true);
    const fields = fieldTreeOf(object as never, schema, () => true);
    assert.ok(fields instanceof FieldTree && texts.size >= 300);
    assert.deepEqual([...fields], [...texts]);
    assert.equal(fieldTreeV1Text(fields), fieldsV1Text(texts));
    assert.ok(hasEveryField(fields, object, schema, new ElementTables()));
    assert.ok(sameFieldTrees(fields, fieldTreeOf(structuredClone(object) as never, schema, () => true) as FieldTree));
  }
});

/** Runs a walk in steps to its end; its result and how many times it paused. */
function finish<T>(steps: Generator<void, T, void>): { value: T; pauses: number } {
  let pauses = 0;
  for (;;) {
    const step = steps.next();
    if (step.done === true) return { value: step.value, pauses };
    pauses++;
  }
}

test("the walks in steps (the body's fields, the merge) give what the whole walks give, pausing along the way", () => {
  let paused = 0;
  fc.assert(
    fc.property(pairs, fc.integer({ min: 1, max: 9 }), ({ schema, a, b }, units) => {
      const include = () => true;
      const fields = finish(fieldTreeSteps(a as never, schema, include, stepBudget(units)));
      assert.deepEqual([...fields.value], [...fieldsOf(a as never, schema, include)]);
      // The live object is a stored one: frozen, and left as it was.
      const live = JSON.parse(JSON.stringify(b));
      const merge = finish(mergeAppliedSteps(Object.freeze(live), a, schema, stepBudget(units)));
      // As JSON: a cloned `__proto__` member becomes a prototype (cloneJson's way), a different object each time.
      assert.equal(JSON.stringify(merge.value), JSON.stringify(mergeApplied(b, a, schema)));
      assert.equal(JSON.stringify(live), JSON.stringify(b));
      if (fields.pauses > 0 && merge.pauses > 0) paused++;
    }),
    { seed: 32_0303, numRuns: 400 },
  );
  assert.ok(paused > 200, `only ${paused} runs paused in both walks`);
  // A long list and a wide map near the top are taken a part at a time.
  const env = Array.from({ length: 5000 }, (_, i) => ({ name: `E${i}`, value: String(i) }));
  const big = { apiVersion: "apps/v1", kind: "Deployment", metadata: { name: "d" }, spec: { template: { spec: { containers: [{ name: "c", env }] } } } };
  assert.ok(finish(fieldTreeSteps(big as never, deploymentSchema, () => true, stepBudget(1000))).pauses >= 10);
  assert.ok(finish(mergeAppliedSteps(structuredClone(big), big, deploymentSchema, stepBudget(1000))).pauses >= 5);
});
