import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { ApiError } from "../../src/api/errors.ts";
import {
  applyJsonPatch,
  applyJsonPatchSharing,
  applyMergePatch,
  cloneJsonChecked,
  createMergePatch,
  jsonPatchRejectedMessage,
  jsonPatchShareable,
} from "../../src/api/patch.ts";
import { deepFreeze, jsonEqual } from "../../src/api/json.ts";

function expectStatus(fn: () => unknown, reason: string, code: number, messageIncludes?: string): ApiError {
  try {
    fn();
  } catch (error) {
    assert.ok(error instanceof ApiError, `expected an ApiError, got ${String(error)}`);
    assert.equal(error.reason, reason);
    assert.equal(error.code, code);
    if (messageIncludes !== undefined) assert.ok(error.message.includes(messageIncludes), error.message);
    return error;
  }
  assert.fail(`expected ${reason} (${code}), got no error`);
}

// RFC 7386 appendix A, the cases whose patch is an object (the API server rejects the others, see below).
const mergeCases: Array<[target: unknown, patch: Record<string, unknown>, result: unknown]> = [
  [{ a: "b" }, { a: "c" }, { a: "c" }],
  [{ a: "b" }, { b: "c" }, { a: "b", b: "c" }],
  [{ a: "b" }, { a: null }, {}],
  [{ a: "b", b: "c" }, { a: null }, { b: "c" }],
  [{ a: ["b"] }, { a: "c" }, { a: "c" }],
  [{ a: "c" }, { a: ["b"] }, { a: ["b"] }],
  [{ a: { b: "c" } }, { a: { b: "d", c: null } }, { a: { b: "d" } }],
  [{ a: [{ b: "c" }] }, { a: [1] }, { a: [1] }],
  [{ e: null }, { a: 1 }, { e: null, a: 1 }],
  [[1, 2], { a: "b", c: null }, { a: "b" }],
  [{}, { a: { bb: { ccc: null } } }, { a: { bb: {} } }],
  // Beyond the RFC's table: nulls inside a replacing array are data, and a scalar target becomes an object.
  [{ a: 1 }, { a: [null, { b: null }] }, { a: [null, { b: null }] }],
  ["text", { a: 1 }, { a: 1 }],
  [{ metadata: { labels: { app: "x", tier: "web" } } }, { metadata: { labels: { tier: null, env: "prod" } } }, { metadata: { labels: { app: "x", env: "prod" } } }],
];

for (const [target, patch, result] of mergeCases) {
  test(`merge patch ${JSON.stringify(patch)} on ${JSON.stringify(target)} gives ${JSON.stringify(result)}`, () => {
    const before = structuredClone(target);
    assert.deepEqual(applyMergePatch(target, patch), result);
    assert.deepEqual(target, before);
  });
}

test("a merge patch body that is not a JSON object is a 400 BadRequest, as the API server answers", () => {
  for (const patch of [null, "bar", 5, true, ["c"]]) {
    expectStatus(() => applyMergePatch({ a: "foo" }, patch), "BadRequest", 400, "must be a JSON object");
  }
});

test("a merge patch holding data JSON cannot carry is a 400 BadRequest", () => {
  const cyclic: Record<string, unknown> = {};
  cyclic["self"] = cyclic;
  for (const patch of [{ a: undefined }, { a: Number.NaN }, { a: () => 1 }, { a: new Date(0) }, { a: 1n }, cyclic]) {
    expectStatus(() => applyMergePatch({}, patch), "BadRequest", 400, "not valid JSON");
  }
});

test("a merge patch key named __proto__ is data, not a prototype", () => {
  const result = applyMergePatch({}, JSON.parse('{"__proto__": {"polluted": true}}')) as Record<string, unknown>;
  assert.equal(Object.getPrototypeOf(result), Object.prototype);
  assert.deepEqual(Object.keys(result), ["__proto__"]);
  assert.equal(({} as Record<string, unknown>)["polluted"], undefined);
});

test("the result of a merge patch shares nothing with the target or the patch", () => {
  const target = { keep: { deep: [1] }, change: { x: 1 } };
  const patch = { change: { y: [2] }, add: { z: 3 } };
  const result = applyMergePatch(target, patch) as { keep: { deep: number[] }; change: { y: number[] }; add: { z: number } };
  result.keep.deep.push(9);
  result.change.y.push(9);
  result.add.z = 9;
  assert.deepEqual(target, { keep: { deep: [1] }, change: { x: 1 } });
  assert.deepEqual(patch, { change: { y: [2] }, add: { z: 3 } });
});

// RFC 6902 appendix A (the successful examples), plus the root path.
const jsonPatchCases: Array<[name: string, target: unknown, ops: unknown[], result: unknown]> = [
  ["adding an object member", { foo: "bar" }, [{ op: "add", path: "/baz", value: "qux" }], { foo: "bar", baz: "qux" }],
  ["adding an array element", { foo: ["bar", "baz"] }, [{ op: "add", path: "/foo/1", value: "qux" }], { foo: ["bar", "qux", "baz"] }],
  ["removing an object member", { baz: "qux", foo: "bar" }, [{ op: "remove", path: "/baz" }], { foo: "bar" }],
  ["removing an array element", { foo: ["bar", "qux", "baz"] }, [{ op: "remove", path: "/foo/1" }], { foo: ["bar", "baz"] }],
  ["replacing a value", { baz: "qux", foo: "bar" }, [{ op: "replace", path: "/baz", value: "boo" }], { baz: "boo", foo: "bar" }],
  [
    "moving a value",
    { foo: { bar: "baz", waldo: "fred" }, qux: { corge: "grault" } },
    [{ op: "move", from: "/foo/waldo", path: "/qux/thud" }],
    { foo: { bar: "baz" }, qux: { corge: "grault", thud: "fred" } },
  ],
  ["moving an array element", { foo: ["all", "grass", "cows", "eat"] }, [{ op: "move", from: "/foo/1", path: "/foo/3" }], { foo: ["all", "cows", "eat", "grass"] }],
  ["testing a value with success", { baz: "qux", foo: ["a", 2, "c"] }, [{ op: "test", path: "/baz", value: "qux" }, { op: "test", path: "/foo/1", value: 2 }], { baz: "qux", foo: ["a", 2, "c"] }],
  ["adding a nested member object", { foo: "bar" }, [{ op: "add", path: "/child", value: { grandchild: {} } }], { foo: "bar", child: { grandchild: {} } }],
  ["adding to a nonexistent target with escaped keys", { "a/b": {} }, [{ op: "add", path: "/a~1b/c~0d", value: 1 }], { "a/b": { "c~d": 1 } }],
  ["adding an array value", { foo: ["bar"] }, [{ op: "add", path: "/foo/-", value: ["abc", "def"] }], { foo: ["bar", ["abc", "def"]] }],
  ["copying a value", { a: { b: 1 } }, [{ op: "copy", from: "/a", path: "/c" }], { a: { b: 1 }, c: { b: 1 } }],
  ["replacing the whole document", { a: 1 }, [{ op: "replace", path: "", value: { b: 2 } }], { b: 2 }],
  ["testing a label before removing it", { metadata: { labels: { a: "1" } } }, [{ op: "test", path: "/metadata/labels/a", value: "1" }, { op: "remove", path: "/metadata/labels/a" }], { metadata: { labels: {} } }],
  ["applying no operations", { a: [1] }, [], { a: [1] }],
];

for (const [name, target, ops, result] of jsonPatchCases) {
  test(`JSON patch: ${name}`, () => {
    const before = structuredClone(target);
    const opsBefore = structuredClone(ops);
    assert.deepEqual(applyJsonPatch(target, ops), result);
    assert.deepEqual(target, before);
    assert.deepEqual(ops, opsBefore);
  });
}

// Operations that are well-formed JSON but cannot apply: kube-apiserver answers all of them with the same 422.
const rejectedCases: Array<[name: string, ops: unknown[]]> = [
  ["a failed test", [{ op: "test", path: "/foo", value: "other" }]],
  ["a test of a missing member", [{ op: "test", path: "/missing", value: 1 }]],
  ["removing a missing member", [{ op: "remove", path: "/missing" }]],
  ["replacing a missing member", [{ op: "replace", path: "/missing", value: 1 }]],
  ["adding under a missing parent", [{ op: "add", path: "/missing/child", value: 1 }]],
  ["adding beyond the end of an array", [{ op: "add", path: "/list/5", value: 1 }]],
  ["a non-numeric array index", [{ op: "replace", path: "/list/x", value: 1 }]],
  ["adding into a string", [{ op: "add", path: "/foo/x", value: 1 }]],
  ["moving from a missing member", [{ op: "move", from: "/missing", path: "/x" }]],
  ["moving a member into its own child", [{ op: "move", from: "/obj", path: "/obj/inner" }]],
  ["an unknown op", [{ op: "frobnicate", path: "/foo" }]],
  ["fast-json-patch's private _get op", [{ op: "_get", path: "/foo" }]],
  ["a missing op", [{ path: "/foo" }]],
  ["a missing path", [{ op: "remove" }]],
  ["a path without a leading slash", [{ op: "remove", path: "foo" }]],
  ["an add without a value", [{ op: "add", path: "/x" }]],
  ["a copy without from", [{ op: "copy", path: "/x" }]],
  ["a member reached only through the prototype", [{ op: "remove", path: "/constructor" }]],
  ["a __proto__ path", [{ op: "add", path: "/__proto__/polluted", value: true }]],
  ["a later operation failing after earlier ones applied", [{ op: "add", path: "/new", value: 1 }, { op: "test", path: "/new", value: 2 }]],
];

for (const [name, ops] of rejectedCases) {
  test(`JSON patch with ${name} is 422 Invalid and changes nothing`, () => {
    const target = { foo: "bar", list: [1, 2], obj: { a: 1 } };
    const error = expectStatus(() => applyJsonPatch(target, ops), "Invalid", 422);
    assert.equal(error.message, jsonPatchRejectedMessage);
    assert.deepEqual(error.status.details, {});
    assert.equal(typeof error.cause, "string");
    assert.deepEqual(target, { foo: "bar", list: [1, 2], obj: { a: 1 } });
    assert.equal(({} as Record<string, unknown>)["polluted"], undefined);
  });
}

test("a JSON patch body that is not an array of objects is a 400 BadRequest", () => {
  for (const ops of [{ op: "add" }, null, "[]", 5]) {
    expectStatus(() => applyJsonPatch({}, ops), "BadRequest", 400, "array of operations");
  }
  for (const ops of [[1], [null], [[{ op: "add", path: "/a", value: 1 }]]]) {
    expectStatus(() => applyJsonPatch({}, ops), "BadRequest", 400, "operation 0 is not a JSON object");
  }
  expectStatus(() => applyJsonPatch({}, [{ op: "add", path: "/a", value: Number.POSITIVE_INFINITY }]), "BadRequest", 400, "not valid JSON");
});

test("a JSON patch of more than 10,000 operations is 413, and of exactly 10,000 applies", () => {
  const op = { op: "test", path: "/a", value: 1 };
  assert.deepEqual(applyJsonPatch({ a: 1 }, new Array(10_000).fill(op)), { a: 1 });
  expectStatus(() => applyJsonPatch({ a: 1 }, new Array(10_001).fill(op)), "RequestEntityTooLarge", 413, "10000, got 10001");
});

test("the result of a JSON patch shares nothing with the target or the operations", () => {
  const value = { inner: [1] };
  const target = { a: { b: [1] } };
  const result = applyJsonPatch(target, [
    { op: "add", path: "/v", value },
    { op: "copy", from: "/a", path: "/c" },
  ]) as { a: { b: number[] }; v: { inner: number[] }; c: { b: number[] } };
  result.v.inner.push(2);
  result.a.b.push(2);
  result.c.b.push(3);
  assert.deepEqual(value, { inner: [1] });
  assert.deepEqual(target, { a: { b: [1] } });
  assert.deepEqual(result.a.b, [1, 2]);
  assert.equal(Object.getPrototypeOf(result), Object.prototype);
  assert.equal(Object.getPrototypeOf(result.a), Object.prototype);
});

test("documents nested 1,000 deep clone, and nesting past 1,000 is a 400", () => {
  let deep: unknown = 1;
  for (let i = 0; i < 1_000; i++) deep = { d: deep };
  assert.ok(jsonEqual(cloneJsonChecked(deep), deep));
  expectStatus(() => cloneJsonChecked([deep], "doc"), "BadRequest", 400, "doc is not valid JSON: nested deeper than 1000");
  expectStatus(() => applyMergePatch({}, { deep }), "BadRequest", 400, "nested deeper than 1000");
});

test("createMergePatch sends removed keys as null and changed values whole", () => {
  const from = { a: 1, b: { c: [1, 2], d: "x" }, gone: true };
  const to = { a: 1, b: { c: [1, 3], d: "x" }, added: { e: 1 } };
  assert.deepEqual(createMergePatch(from, to), { b: { c: [1, 3] }, gone: null, added: { e: 1 } });
  assert.deepEqual(createMergePatch(to, to), {});
});

// Property tests. Keys come from a small pool so that generated targets and patches overlap.
const key = fc.constantFrom("a", "b", "c", "metadata", "__proto__", "constructor");
const scalar = fc.oneof(fc.boolean(), fc.integer({ min: -5, max: 5 }), fc.string({ maxLength: 3 }));
const { withNull, withoutNull } = fc.letrec((tie) => ({
  withNull: fc.oneof(
    { depthSize: "small" },
    fc.constant(null),
    scalar,
    fc.array(tie("withNull"), { maxLength: 3 }),
    fc.dictionary(key, tie("withNull"), { maxKeys: 4, noNullPrototype: true }),
  ),
  withoutNull: fc.oneof(
    { depthSize: "small" },
    scalar,
    fc.array(tie("withoutNull"), { maxLength: 3 }),
    fc.dictionary(key, tie("withoutNull"), { maxKeys: 4, noNullPrototype: true }),
  ),
}));
const objectWithNull = fc.dictionary(key, withNull, { maxKeys: 4, noNullPrototype: true });
const objectWithoutNull = fc.dictionary(key, withoutNull, { maxKeys: 4, noNullPrototype: true });
const runs = { seed: 42, numRuns: 500 };

test("property: a merge patch of {} is the identity on objects", () => {
  fc.assert(
    fc.property(objectWithNull, (target) => {
      assert.ok(jsonEqual(applyMergePatch(target, {}), target));
    }),
    runs,
  );
});

test("property: applying a merge patch twice equals applying it once", () => {
  fc.assert(
    fc.property(objectWithNull, objectWithNull, (target, patch) => {
      const once = applyMergePatch(target, patch);
      assert.ok(jsonEqual(applyMergePatch(once, patch), once));
    }),
    runs,
  );
});

test("property: a merge patch never leaves a null member of a patched object", () => {
  fc.assert(
    fc.property(objectWithoutNull, objectWithNull, (target, patch) => {
      const result = applyMergePatch(target, patch);
      const objectsOnly = (value: unknown): boolean =>
        typeof value !== "object" || value === null || Array.isArray(value)
          ? true
          : Object.values(value).every((v) => v !== null && objectsOnly(v));
      assert.ok(objectsOnly(result));
    }),
    runs,
  );
});

test("property: the merge patch from a to b turns a into b and leaves a unchanged", () => {
  fc.assert(
    fc.property(objectWithNull, objectWithoutNull, (from, to) => {
      const before = cloneJsonChecked(from);
      assert.ok(jsonEqual(applyMergePatch(from, createMergePatch(from, to)), to));
      assert.ok(jsonEqual(from, before));
    }),
    runs,
  );
});

test("property: a JSON patch that adds a new member and removes it again is the identity", () => {
  fc.assert(
    fc.property(objectWithNull, withNull, (target, value) => {
      const ops = [
        { op: "add", path: "/fresh~1key", value },
        { op: "test", path: "/fresh~1key", value },
        { op: "remove", path: "/fresh~1key" },
      ];
      assert.ok(jsonEqual(applyJsonPatch(target, ops), target));
    }),
    runs,
  );
});

test("property: a JSON patch replacing each top-level member gives what the merge patch of the same values gives", () => {
  fc.assert(
    fc.property(objectWithNull, objectWithoutNull, (target, values) => {
      const ops = Object.keys(values).map((k) => ({ op: "add", path: `/${k}`, value: values[k] }));
      // Merge patch merges objects where JSON patch replaces them, so compare only on non-object values.
      // JSON patch refuses `__proto__` paths (see patch.ts), so leave that key out.
      const flat = Object.fromEntries(
        Object.entries(values).filter(([k, v]) => k !== "__proto__" && (typeof v !== "object" || Array.isArray(v))),
      );
      const flatOps = ops.filter((op) => Object.hasOwn(flat, op.path.slice(1)));
      assert.ok(jsonEqual(applyJsonPatch(target, flatOps), applyMergePatch(target, flat)));
    }),
    runs,
  );
});

// The store applies a JSON patch of add, remove, replace and test operations over the stored (frozen) object,
// sharing what the operations do not reach. Whatever the copying form answers, the sharing form must answer too:
// the same document (key order included, so compared as text) or the same error.

/** What a JSON patch answers, as text: the document, or the error's reason, code, message and cause. */
function outcome(apply: () => unknown): string {
  try {
    return `ok ${JSON.stringify(apply())}`;
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    return `error ${error.reason} ${error.code} ${error.message} ${String(error.cause)}`;
  }
}

function sharedOutcome(target: unknown, ops: unknown): string {
  const frozen = deepFreeze(structuredClone(target)) as Record<string, unknown>;
  const text = JSON.stringify(frozen);
  const answer = outcome(() => applyJsonPatchSharing(frozen, ops));
  assert.equal(JSON.stringify(frozen), text, "the stored document is unchanged");
  return answer;
}

test("a shared JSON patch answers as the copying one in every example above it takes", () => {
  let compared = 0;
  const rejectTarget = { foo: "bar", list: [1, 2], obj: { a: 1 } };
  const cases: Array<[unknown, unknown[]]> = [
    ...jsonPatchCases.map(([, target, ops]) => [target, ops] as [unknown, unknown[]]),
    ...rejectedCases.map(([, ops]) => [rejectTarget, ops] as [unknown, unknown[]]),
  ];
  for (const [target, ops] of cases) {
    if (!jsonPatchShareable(ops) || !isPlainTarget(target)) continue;
    assert.equal(sharedOutcome(target, ops), outcome(() => applyJsonPatch(target, ops)), JSON.stringify(ops));
    compared++;
  }
  assert.ok(compared >= 20, `compared ${compared} cases`);
});

function isPlainTarget(target: unknown): target is Record<string, unknown> {
  return typeof target === "object" && target !== null && !Array.isArray(target);
}

test("a shared JSON patch copies only what its operations reach, as plain objects, and leaves the rest shared", () => {
  const stored = deepFreeze({ metadata: { name: "a", labels: { x: "1" } }, spec: { list: [{ v: 1 }, { v: 2 }], other: { deep: { z: 1 } } } });
  const result = applyJsonPatchSharing(stored, [
    { op: "replace", path: "/spec/list/1/v", value: 3 },
    { op: "add", path: "/metadata/labels/y", value: "2" },
  ]) as typeof stored & { metadata: { labels: Record<string, string> } };
  assert.deepEqual(result, { metadata: { name: "a", labels: { x: "1", y: "2" } }, spec: { list: [{ v: 1 }, { v: 3 }], other: { deep: { z: 1 } } } });
  assert.equal(result.spec.other, stored.spec.other);
  assert.equal(result.spec.list[0], stored.spec.list[0]);
  assert.notEqual(result.spec.list, stored.spec.list);
  for (const copy of [result, result.metadata, result.metadata.labels, result.spec, result.spec.list[1]]) {
    assert.equal(Object.getPrototypeOf(copy), Object.prototype);
    assert.equal(Object.isFrozen(copy), false);
  }
  assert.deepEqual(stored.spec.list[1], { v: 2 });
});

test("JSON patches with move or copy are not shared", () => {
  assert.equal(jsonPatchShareable([{ op: "replace", path: "/a", value: 1 }, { op: "test", path: "/a", value: 1 }]), true);
  assert.equal(jsonPatchShareable([{ op: "copy", from: "/a", path: "/b" }]), false);
  assert.equal(jsonPatchShareable([{ op: "add", path: "/a", value: 1 }, { op: "move", from: "/a", path: "/b" }]), false);
  assert.equal(jsonPatchShareable({ op: "add" }), false);
});

/** Every JSON pointer into `value` (containers and leaves), and one step past each container. */
function pointersOf(value: unknown, prefix = ""): string[] {
  const pointers = [prefix];
  if (value === null || typeof value !== "object") return pointers;
  const keys = Array.isArray(value) ? value.map((_, i) => String(i)).concat(["-", "9"]) : Object.keys(value).concat(["absent"]);
  for (const key of keys) {
    const inner = (value as Record<string, unknown>)[key];
    pointers.push(...pointersOf(Array.isArray(value) || key !== "absent" ? inner : undefined, `${prefix}/${key.replace(/~/g, "~0").replace(/\//g, "~1")}`));
  }
  return pointers;
}

test("property: a shared JSON patch of a frozen document answers as the copying JSON patch", () => {
  const document = fc.dictionary(key, withNull, { maxKeys: 4, noNullPrototype: true }).filter((d) => !Object.hasOwn(d, "__proto__"));
  const patched = document.chain((target) => {
    const op = fc.record({
      op: fc.constantFrom("add", "remove", "replace", "test"),
      path: fc.constantFrom(...pointersOf(target)),
      value: withNull,
    });
    return fc.tuple(fc.constant(target), fc.array(op, { maxLength: 4 }));
  });
  fc.assert(
    fc.property(patched, ([target, ops]) => {
      assert.equal(sharedOutcome(target, ops), outcome(() => applyJsonPatch(target, ops)));
    }),
    runs,
  );
});
