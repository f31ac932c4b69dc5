import { test } from "node:test";
import assert from "node:assert/strict";
import {
  annotationsTotalBytesMax,
  isQualifiedName,
  isValidLabelValue,
  validateAnnotations,
  validateGenerateName,
  validateLabels,
  validateName,
} from "../../src/api/validation.ts";

type Rule = "dns1123-subdomain" | "dns1123-label" | "path-segment";

const nameCases: Array<{ name: string; rule: Rule; ok: boolean; why?: string }> = [
  { name: "a", rule: "dns1123-subdomain", ok: true },
  { name: "my-app.example.com", rule: "dns1123-subdomain", ok: true },
  { name: "0abc", rule: "dns1123-subdomain", ok: true },
  { name: "a".repeat(253), rule: "dns1123-subdomain", ok: true },
  { name: "a".repeat(254), rule: "dns1123-subdomain", ok: false, why: "no more than 253" },
  { name: "My-App", rule: "dns1123-subdomain", ok: false, why: "lowercase RFC 1123 subdomain" },
  { name: "-app", rule: "dns1123-subdomain", ok: false, why: "start and end" },
  { name: "app-", rule: "dns1123-subdomain", ok: false, why: "start and end" },
  { name: "app..x", rule: "dns1123-subdomain", ok: false, why: "subdomain" },
  { name: ".app", rule: "dns1123-subdomain", ok: false, why: "subdomain" },
  { name: "a_b", rule: "dns1123-subdomain", ok: false, why: "subdomain" },
  { name: "a b", rule: "dns1123-subdomain", ok: false, why: "subdomain" },
  { name: "kube-system", rule: "dns1123-label", ok: true },
  { name: "a".repeat(63), rule: "dns1123-label", ok: true },
  { name: "a".repeat(64), rule: "dns1123-label", ok: false, why: "no more than 63" },
  { name: "a.b", rule: "dns1123-label", ok: false, why: "lowercase RFC 1123 label" },
  { name: "Ab", rule: "dns1123-label", ok: false, why: "label" },
  { name: "anything:Goes_Here", rule: "path-segment", ok: true },
  { name: "...", rule: "path-segment", ok: true },
  { name: ".", rule: "path-segment", ok: false, why: "may not be '.'" },
  { name: "..", rule: "path-segment", ok: false, why: "may not be '..'" },
  { name: "a/b", rule: "path-segment", ok: false, why: "may not contain '/'" },
  { name: "a%2F", rule: "path-segment", ok: false, why: "may not contain '%'" },
];

for (const c of nameCases) {
  test(`the name ${JSON.stringify(c.name.length > 20 ? `${c.name.slice(0, 8)}...(${c.name.length})` : c.name)} is ${c.ok ? "valid" : "invalid"} as a ${c.rule}`, () => {
    const errors = validateName(c.name, c.rule);
    if (c.ok) {
      assert.deepEqual(errors, []);
      return;
    }
    assert.ok(errors.length > 0);
    for (const e of errors) {
      assert.equal(e.field, "metadata.name");
      assert.equal(e.type, "FieldValueInvalid");
      assert.ok(e.message.startsWith(`Invalid value: ${JSON.stringify(c.name)}: `), e.message);
    }
    assert.ok(errors.some((e) => e.message.includes(c.why!)), JSON.stringify(errors));
  });
}

test("a name that is both too long and malformed reports both problems", () => {
  const errors = validateName(`${"A".repeat(254)}`, "dns1123-subdomain");
  assert.equal(errors.length, 2);
});

test("an empty name is a required-value error on the given field", () => {
  for (const rule of ["dns1123-subdomain", "dns1123-label", "path-segment"] as const) {
    assert.deepEqual(validateName("", rule, "spec.name"), [
      { field: "spec.name", type: "FieldValueRequired", message: "Required value: name or generateName is required" },
    ]);
  }
});

test("a generateName prefix may end with a dash but must otherwise follow the name rule", () => {
  assert.deepEqual(validateGenerateName("web-", "dns1123-subdomain"), []);
  assert.deepEqual(validateGenerateName("web-", "dns1123-label"), []);
  assert.deepEqual(validateGenerateName("", "dns1123-label"), []);
  assert.deepEqual(validateGenerateName("..", "path-segment"), []);
  const bad = validateGenerateName("Web-", "dns1123-subdomain");
  assert.equal(bad.length, 1);
  assert.equal(bad[0]!.field, "metadata.generateName");
  assert.equal(validateGenerateName("a/", "path-segment").length, 1);
});

const keyCases: Array<{ key: string; ok: boolean; why?: string }> = [
  { key: "app", ok: true },
  { key: "App.Name_x-1", ok: true },
  { key: "example.com/app", ok: true },
  { key: "app.kubernetes.io/name", ok: true },
  { key: "a".repeat(63), ok: true },
  { key: `${"a".repeat(253)}/${"b".repeat(63)}`, ok: true },
  { key: "", ok: false, why: "name part must be non-empty" },
  { key: "example.com/", ok: false, why: "name part must be non-empty" },
  { key: "/app", ok: false, why: "prefix part must be non-empty" },
  { key: "a/b/c", ok: false, why: "qualified name" },
  { key: "a".repeat(64), ok: false, why: "name part must be no more than 63 characters" },
  { key: "Example.com/app", ok: false, why: "prefix part a lowercase RFC 1123 subdomain" },
  { key: `${"a".repeat(254)}/b`, ok: false, why: "prefix part must be no more than 253" },
  { key: "-app", ok: false, why: "name part must consist" },
  { key: "app_", ok: false, why: "name part must consist" },
  { key: "a b", ok: false, why: "name part must consist" },
];

for (const c of keyCases) {
  test(`the label key ${JSON.stringify(c.key.length > 20 ? `${c.key.slice(0, 8)}...(${c.key.length})` : c.key)} is ${c.ok ? "valid" : "invalid"}`, () => {
    const problems = isQualifiedName(c.key);
    if (c.ok) assert.deepEqual(problems, []);
    else assert.ok(problems.some((p) => p.includes(c.why!)), JSON.stringify(problems));
    const errors = validateLabels({ [c.key]: "v" });
    assert.equal(errors.length, problems.length);
    for (const e of errors) {
      assert.equal(e.field, "metadata.labels");
      assert.equal(e.type, "FieldValueInvalid");
    }
  });
}

const valueCases: Array<{ value: string; ok: boolean }> = [
  { value: "", ok: true },
  { value: "v", ok: true },
  { value: "1.2.3", ok: true },
  { value: "My_Value-2", ok: true },
  { value: "a".repeat(63), ok: true },
  { value: "a".repeat(64), ok: false },
  { value: "-v", ok: false },
  { value: "v.", ok: false },
  { value: "a/b", ok: false },
  { value: "a b", ok: false },
  { value: "é", ok: false },
];

for (const c of valueCases) {
  test(`the label value ${JSON.stringify(c.value.length > 20 ? `${c.value.slice(0, 8)}...(${c.value.length})` : c.value)} is ${c.ok ? "valid" : "invalid"}`, () => {
    assert.equal(isValidLabelValue(c.value).length === 0, c.ok);
    const errors = validateLabels({ app: c.value }, "spec.selector.matchLabels");
    assert.equal(errors.length === 0, c.ok);
    for (const e of errors) {
      assert.equal(e.field, "spec.selector.matchLabels");
      assert.ok(e.message.startsWith(`Invalid value: ${JSON.stringify(c.value)}: `));
    }
  });
}

test("a label value that is not a string is a type error on its key", () => {
  const errors = validateLabels({ app: 5 });
  assert.deepEqual(errors, [{ field: "metadata.labels[app]", type: "FieldValueTypeInvalid", message: "Invalid value: must be a string" }]);
});

test("labels or annotations that are not a map are one type error", () => {
  for (const bad of ["app=web", ["app"], 5]) {
    assert.deepEqual(validateLabels(bad as never), [
      { field: "metadata.labels", type: "FieldValueTypeInvalid", message: "Invalid value: must be a map of string keys to string values" },
    ]);
    assert.equal(validateAnnotations(bad as never)[0]!.type, "FieldValueTypeInvalid");
  }
});

test("missing labels and annotations are valid", () => {
  assert.deepEqual(validateLabels(undefined), []);
  assert.deepEqual(validateAnnotations(undefined), []);
  assert.deepEqual(validateLabels({}), []);
});

test("label errors come in key order whatever the insertion order", () => {
  const a = validateLabels({ "b b": "x", "a a": "y" });
  const b = validateLabels({ "a a": "y", "b b": "x" });
  assert.deepEqual(a, b);
  assert.ok(a[0]!.message.includes('"a a"'));
});

test("annotation keys are qualified names in which case does not matter", () => {
  assert.deepEqual(validateAnnotations({ "Example.COM/Note": "anything at all, even spaces / slashes" }), []);
  const errors = validateAnnotations({ "a/b/c": "x", "": "y" });
  assert.equal(errors.length, 2);
  for (const e of errors) {
    assert.equal(e.field, "metadata.annotations");
    assert.equal(e.type, "FieldValueInvalid");
  }
});

test("annotations may total exactly 256 KiB of keys and values but not one byte more", () => {
  const key = "note";
  const atLimit = { [key]: "x".repeat(annotationsTotalBytesMax - key.length) };
  assert.deepEqual(validateAnnotations(atLimit), []);
  const overLimit = { [key]: "x".repeat(annotationsTotalBytesMax - key.length + 1) };
  const errors = validateAnnotations(overLimit);
  assert.equal(errors.length, 1);
  assert.equal(errors[0]!.type, "FieldValueTooLong");
  assert.equal(errors[0]!.field, "metadata.annotations");
  assert.ok(errors[0]!.message.includes("262144"));
});

test("annotation size counts UTF-8 bytes, not characters", () => {
  const key = "kk";
  // "é" is two bytes in UTF-8: this value fills the limit in bytes exactly with half as many characters.
  const value = "é".repeat((annotationsTotalBytesMax - key.length) / 2);
  assert.deepEqual(validateAnnotations({ [key]: value }), []);
  assert.equal(validateAnnotations({ [key]: `${value}é` }).length, 1);
});
