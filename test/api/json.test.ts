// The one JSON module: its rule for `undefined` (a key holding it is an absent key), copies, freezing, isRecord.
import { test } from "node:test";
import assert from "node:assert/strict";
import { cloneJson, deepFreeze, isPlainObject, isRecord, jsonEqual, setKey } from "../../src/api/json.ts";

test("jsonEqual ignores key order and treats a key holding undefined as absent, as JSON.stringify does", () => {
  const table: Array<[unknown, unknown, boolean]> = [
    [{ a: 1, b: [1, { c: "x" }] }, { b: [1, { c: "x" }], a: 1 }, true],
    [{ a: 1, b: undefined }, { a: 1 }, true],
    [{ a: 1 }, { a: 1, b: undefined }, true],
    [{ a: undefined }, {}, true],
    [{ a: { b: undefined } }, { a: {} }, true],
    [{ a: null }, {}, false],
    [{ a: 1 }, { a: 1, b: 2 }, false],
    [{ a: 1, b: 2 }, { a: 1 }, false],
    [[undefined], [null], false],
    [[1, 2], [2, 1], false],
    [[], {}, false],
    [{}, [], false],
    [{ 0: "a" }, ["a"], false],
    [null, {}, false],
    [1, "1", false],
    ["a", "a", true],
    [undefined, undefined, true],
  ];
  for (const [a, b, equal] of table) {
    assert.equal(jsonEqual(a, b), equal, `${JSON.stringify(a)} vs ${JSON.stringify(b)}`);
    assert.equal(jsonEqual(b, a), equal, "symmetric");
  }
  // The rule is JSON's: equal values serialize alike once key order is fixed.
  assert.equal(JSON.stringify({ a: 1, b: undefined }), JSON.stringify({ a: 1 }));
});

test("a key named __proto__ is compared as data, not as the prototype", () => {
  const own = JSON.parse('{"__proto__": {}}') as unknown;
  assert.equal(jsonEqual(own, {}), false);
  assert.equal(jsonEqual(own, JSON.parse('{"__proto__": {}}')), true);
});

// The one setKey serves the merge patch and its copies (ordinary and prototype-less objects), the strategic merge
// patch and server-side apply (which used assignment for every key but `__proto__`), and the protobuf decoder (which
// defined every key): on both kinds of object it must leave what defining every key leaves.
test("setKey makes every key, __proto__ included, an own member in its place, as defining the property would", () => {
  const keys = ["a", "__proto__", "constructor", "toString", "hasOwnProperty", "valueOf", "b"];
  for (const prototype of [Object.prototype, null]) {
    const set = Object.create(prototype) as Record<string, unknown>;
    const defined = Object.create(prototype) as Record<string, unknown>;
    const define = (key: string, value: unknown) => Object.defineProperty(defined, key, { value, writable: true, enumerable: true, configurable: true });
    for (const [i, key] of keys.entries()) {
      setKey(set, key, { i });
      define(key, { i });
    }
    // Setting a key again changes its value and keeps its place.
    setKey(set, "__proto__", "again");
    setKey(set, "a", "again");
    define("__proto__", "again");
    define("a", "again");
    assert.equal(Object.getPrototypeOf(set), prototype, "the prototype is left as it was");
    assert.deepEqual(Object.keys(set), keys);
    for (const key of keys) assert.deepEqual(Object.getOwnPropertyDescriptor(set, key), Object.getOwnPropertyDescriptor(defined, key), key);
    assert.equal(JSON.stringify(set), JSON.stringify(defined));
    assert.match(JSON.stringify(set), /^\{"a":"again","__proto__":"again","constructor":\{"i":2\}/);
  }
  assert.equal(({} as Record<string, unknown>)["i"], undefined, "Object.prototype gained nothing");
});

test("cloneJson copies deeply, shares nothing and keeps the values as they are", () => {
  const original = { a: [1, { b: "x" }], c: null, d: undefined, e: true };
  const copy = cloneJson(original);
  assert.deepEqual(copy, original);
  assert.notEqual(copy.a, original.a);
  assert.notEqual(copy.a[1], original.a[1]);
  assert.ok("d" in copy, "a key holding undefined is copied as such");
  (copy.a[1] as { b: string }).b = "changed";
  assert.equal((original.a[1] as { b: string }).b, "x");
  assert.equal(cloneJson(7), 7);
  assert.equal(cloneJson(null), null);
});

test("deepFreeze freezes every node and skips subtrees already frozen", () => {
  const shared = Object.freeze({ inner: { x: 1 } });
  const value = { list: [{ a: 1 }], shared };
  assert.equal(deepFreeze(value), value);
  assert.ok(Object.isFrozen(value));
  assert.ok(Object.isFrozen(value.list));
  assert.ok(Object.isFrozen(value.list[0]));
  // A frozen subtree is taken as done: its children are left as they are.
  assert.ok(!Object.isFrozen(shared.inner));
});

test("isRecord is any non-null, non-array object; isPlainObject also excludes class instances", () => {
  const table: Array<[string, unknown, boolean, boolean]> = [
    ["{}", {}, true, true],
    ["a null-prototype object", Object.create(null), true, true],
    ["a Date", new Date(0), true, false],
    ["[]", [], false, false],
    ["null", null, false, false],
    ["a string", "s", false, false],
    ["undefined", undefined, false, false],
  ];
  for (const [name, value, record, plain] of table) {
    assert.equal(isRecord(value), record, name);
    assert.equal(isPlainObject(value), plain, name);
  }
});
