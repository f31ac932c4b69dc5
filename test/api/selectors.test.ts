import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { ApiError } from "../../src/api/errors.ts";
import {
  escapeFieldValue,
  formatFieldSelector,
  formatLabelSelector,
  labelSelectorFromSet,
  labelSelectorFromSpec,
  matchesFields,
  matchesLabels,
  parseFieldSelector,
  parseLabelSelector,
  validateLabelSelectorSpec,
} from "../../src/api/selectors.ts";
import type { FieldRequirement, LabelOperator, LabelRequirement, ParsedLabelSelector } from "../../src/api/selectors.ts";

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

const req = (key: string, operator: LabelOperator, ...values: string[]): LabelRequirement => ({ key, operator, values });

// [text, requirements after parsing, canonical text]
const parseCases: Array<[string, LabelRequirement[], string]> = [
  ["", [], ""],
  ["   \t\n", [], ""],
  ["app=web", [req("app", "Equals", "web")], "app=web"],
  ["app==web", [req("app", "Equals", "web")], "app=web"],
  ["app!=web", [req("app", "NotEquals", "web")], "app!=web"],
  ["app", [req("app", "Exists")], "app"],
  ["!app", [req("app", "DoesNotExist")], "!app"],
  ["! app", [req("app", "DoesNotExist")], "!app"],
  ["env in (prod,dev)", [req("env", "In", "dev", "prod")], "env in (dev,prod)"],
  ["env notin (prod)", [req("env", "NotIn", "prod")], "env notin (prod)"],
  ["env in(a,a,b)", [req("env", "In", "a", "b")], "env in (a,b)"],
  ["  a = b ,  c  ", [req("a", "Equals", "b"), req("c", "Exists")], "a=b,c"],
  ["a=", [req("a", "Equals", "")], "a="],
  ["a!=", [req("a", "NotEquals", "")], "a!="],
  ["a=,b", [req("a", "Equals", ""), req("b", "Exists")], "a=,b"],
  ["a in ()", [req("a", "In", "")], "a in ()"],
  ["a in (,x)", [req("a", "In", "", "x")], "a in (,x)"],
  ["a in (x,)", [req("a", "In", "", "x")], "a in (,x)"],
  ["a in (x,,y)", [req("a", "In", "", "x", "y")], "a in (,x,y)"],
  ["a==b,a!=c", [req("a", "Equals", "b"), req("a", "NotEquals", "c")], "a=b,a!=c"],
  ["z=1,a=2,m", [req("a", "Equals", "2"), req("m", "Exists"), req("z", "Equals", "1")], "a=2,m,z=1"],
  ["in in (in,notin)", [req("in", "In", "in", "notin")], "in in (in,notin)"],
  ["notin", [req("notin", "Exists")], "notin"],
  ["x=in", [req("x", "Equals", "in")], "x=in"],
  ["app.kubernetes.io/name=web", [req("app.kubernetes.io/name", "Equals", "web")], "app.kubernetes.io/name=web"],
  ["Key_1.x=Val-1_2.3", [req("Key_1.x", "Equals", "Val-1_2.3")], "Key_1.x=Val-1_2.3"],
  [
    "a=b,c==d,e!=f,g in (h,i),j notin (k),l,!m",
    [req("a", "Equals", "b"), req("c", "Equals", "d"), req("e", "NotEquals", "f"), req("g", "In", "h", "i"), req("j", "NotIn", "k"), req("l", "Exists"), req("m", "DoesNotExist")],
    "a=b,c=d,e!=f,g in (h,i),j notin (k),l,!m",
  ],
];

for (const [text, requirements, canonical] of parseCases) {
  test(`the label selector ${JSON.stringify(text)} parses and prints as ${JSON.stringify(canonical)}`, () => {
    const parsed = parseLabelSelector(text);
    assert.deepEqual(parsed.requirements, requirements);
    assert.equal(formatLabelSelector(parsed), canonical);
    assert.deepEqual(parseLabelSelector(canonical), parsed);
  });
}

// [text, part of the message naming the problem]
const parseErrors: Array<[string, string]> = [
  [",", "found ',', expected: !, identifier, or 'end of string'"],
  ["a,", "expected: identifier after ','"],
  ["a,,b", "found ',', expected: identifier after ','"],
  ["=b", "found '=', expected: !, identifier, or 'end of string'"],
  ["a=b c", "found 'c', expected: ',' or 'end of string'"],
  ["a b", "found 'b', expected: in, notin, =, ==, !="],
  ["!a=b", "found '=', expected: ',' or 'end of string'"],
  ["!", "found '', expected: identifier"],
  ["!!a", "found '!', expected: identifier"],
  ["a !", "found '!', expected: in, notin, =, ==, !="],
  ["a in b", "found 'b', expected: '('"],
  ["a in (b", "expected: ',', ')' or identifier"],
  ["a in (b c)", "found 'c', expected: ',', ')' or identifier"],
  ["a notin", "found '', expected: '('"],
  ["a=(b)", "found '(', expected: identifier"],
  ["a=b=c", "found '=', expected: ',' or 'end of string'"],
  ["a>1", "numeric operator '>' is not supported"],
  ["a<1", "numeric operator '<' is not supported"],
  ["A/b=c", 'invalid label key "A/b": prefix part'],
  ["-a=b", 'invalid label key "-a"'],
  [`${"k".repeat(64)}=v`, "name part must be no more than 63 characters"],
  ["a/b/c", "qualified name"],
  ["a=-b", 'invalid value "-b" for key "a"'],
  [`a=${"v".repeat(64)}`, "must be no more than 63 characters"],
  ["a in (ok,bad!)", "found '!', expected: ',', ')' or identifier"],
  ["a in (ok,b_)", 'invalid value "b_"'],
];

for (const [text, message] of parseErrors) {
  test(`the label selector ${JSON.stringify(text.length > 30 ? `${text.slice(0, 12)}...` : text)} is a 400 BadRequest naming the problem`, () => {
    const error = expectStatus(() => parseLabelSelector(text), "BadRequest", 400, message);
    assert.ok(error.message.startsWith("unable to parse label selector: "), error.message);
  });
}

// [selector, labels, matches]
const matchCases: Array<[string, Record<string, string> | undefined, boolean]> = [
  ["", undefined, true],
  ["", { a: "b" }, true],
  ["a=b", { a: "b" }, true],
  ["a=b", { a: "c" }, false],
  ["a=b", {}, false],
  ["a=", { a: "" }, true],
  ["a=", {}, false],
  ["a!=b", { a: "c" }, true],
  ["a!=b", { a: "b" }, false],
  ["a!=b", {}, true],
  ["a!=b", undefined, true],
  ["a in (b,c)", { a: "c" }, true],
  ["a in (b,c)", { a: "d" }, false],
  ["a in (b,c)", {}, false],
  ["a notin (b,c)", { a: "d" }, true],
  ["a notin (b,c)", { a: "b" }, false],
  ["a notin (b,c)", {}, true],
  ["a", { a: "" }, true],
  ["a", { b: "a" }, false],
  ["!a", { b: "a" }, true],
  ["!a", { a: "" }, false],
  ["a=b,c", { a: "b" }, false],
  ["a=b,c", { a: "b", c: "x" }, true],
  ["a=b,a!=b", { a: "b" }, false],
  ["constructor", {}, false],
  ["!toString", {}, true],
];

for (const [text, labels, expected] of matchCases) {
  test(`the label selector ${JSON.stringify(text)} ${expected ? "selects" : "does not select"} labels ${JSON.stringify(labels)}`, () => {
    assert.equal(matchesLabels(parseLabelSelector(text), labels), expected);
  });
}

test("a LabelSelector spec converts matchLabels and matchExpressions into sorted requirements", () => {
  const parsed = labelSelectorFromSpec({
    matchLabels: { tier: "web", app: "shop" },
    matchExpressions: [
      { key: "env", operator: "In", values: ["prod", "dev", "prod"] },
      { key: "zone", operator: "NotIn", values: ["a"] },
      { key: "gpu", operator: "Exists" },
      { key: "legacy", operator: "DoesNotExist", values: [] },
    ],
  });
  assert.deepEqual(parsed.requirements, [
    req("app", "Equals", "shop"),
    req("env", "In", "dev", "prod"),
    req("gpu", "Exists"),
    req("legacy", "DoesNotExist"),
    req("tier", "Equals", "web"),
    req("zone", "NotIn", "a"),
  ]);
  assert.equal(formatLabelSelector(parsed), "app=shop,env in (dev,prod),gpu,!legacy,tier=web,zone notin (a)");
  assert.ok(matchesLabels(parsed, { app: "shop", tier: "web", env: "dev", gpu: "1" }));
  assert.ok(!matchesLabels(parsed, { app: "shop", tier: "web", env: "dev", gpu: "1", legacy: "" }));
});

test("an empty LabelSelector spec selects everything", () => {
  const parsed = labelSelectorFromSpec({});
  assert.deepEqual(parsed.requirements, []);
  assert.ok(matchesLabels(parsed, undefined));
  assert.deepEqual(labelSelectorFromSpec({ matchLabels: {}, matchExpressions: [] }).requirements, []);
});

// [spec, field of the first cause, cause reason]
const specErrors: Array<[Parameters<typeof labelSelectorFromSpec>[0], string, string]> = [
  [{ matchExpressions: [{ key: "a", operator: "Equals", values: ["b"] }] }, "spec.selector.matchExpressions[0].operator", "FieldValueNotSupported"],
  [{ matchExpressions: [{ key: "a", operator: "in", values: ["b"] }] }, "spec.selector.matchExpressions[0].operator", "FieldValueNotSupported"],
  [{ matchExpressions: [{ key: "a", operator: "In" }] }, "spec.selector.matchExpressions[0].values", "FieldValueRequired"],
  [{ matchExpressions: [{ key: "a", operator: "NotIn", values: [] }] }, "spec.selector.matchExpressions[0].values", "FieldValueRequired"],
  [{ matchExpressions: [{ key: "a", operator: "Exists", values: ["b"] }] }, "spec.selector.matchExpressions[0].values", "FieldValueForbidden"],
  [{ matchExpressions: [{ key: "ok", operator: "Exists" }, { key: "a b", operator: "Exists" }] }, "spec.selector.matchExpressions[1].key", "FieldValueInvalid"],
  [{ matchExpressions: [{ key: "a", operator: "In", values: ["ok", "-bad"] }] }, "spec.selector.matchExpressions[0].values[1]", "FieldValueInvalid"],
  [{ matchLabels: { "a/b/c": "x" } }, "spec.selector.matchLabels", "FieldValueInvalid"],
  [{ matchLabels: { a: "x y" } }, "spec.selector.matchLabels", "FieldValueInvalid"],
  // Shapes a request body can carry although the type forbids them.
  [{ matchExpressions: [{ key: "a", operator: "toString" }] } as never, "spec.selector.matchExpressions[0].operator", "FieldValueNotSupported"],
  [{ matchExpressions: [{ operator: "Exists" }] } as never, "spec.selector.matchExpressions[0].key", "FieldValueTypeInvalid"],
  [{ matchExpressions: [{ key: "a", operator: "In", values: "b" }] } as never, "spec.selector.matchExpressions[0].values", "FieldValueTypeInvalid"],
  [{ matchExpressions: [{ key: "a", operator: "In", values: [1] }] } as never, "spec.selector.matchExpressions[0].values", "FieldValueTypeInvalid"],
  [{ matchExpressions: ["a"] } as never, "spec.selector.matchExpressions[0]", "FieldValueTypeInvalid"],
  [{ matchExpressions: { key: "a" } } as never, "spec.selector.matchExpressions", "FieldValueTypeInvalid"],
  [{ matchLabels: ["a"] } as never, "spec.selector.matchLabels", "FieldValueTypeInvalid"],
  [{ matchLabels: { a: 1 } } as never, "spec.selector.matchLabels[a]", "FieldValueTypeInvalid"],
  ["app=web" as never, "spec.selector", "FieldValueTypeInvalid"],
];

for (const [spec, field, reason] of specErrors) {
  test(`the LabelSelector spec ${JSON.stringify(spec)} is 422 Invalid with a ${reason} cause on ${field}`, () => {
    const error = expectStatus(() => labelSelectorFromSpec(spec), "Invalid", 422);
    const causes = error.status.details?.causes ?? [];
    assert.equal(causes[0]?.field, field);
    assert.equal(causes[0]?.reason, reason);
    assert.deepEqual(
      validateLabelSelectorSpec(spec).map((e) => e.field),
      causes.map((c) => c.field),
    );
  });
}

test("LabelSelector spec errors name the holding object and field when told", () => {
  const error = expectStatus(
    () => labelSelectorFromSpec({ matchExpressions: [{ key: "a", operator: "Bogus" }] }, { kind: "Deployment.apps", name: "web", field: "spec.template.selector" }),
    "Invalid",
    422,
    'Deployment.apps "web" is invalid: spec.template.selector.matchExpressions[0].operator',
  );
  assert.equal(error.status.details?.name, "web");
});

test("a selector from a set of labels selects exactly the objects carrying them", () => {
  const parsed = labelSelectorFromSet({ b: "2", a: "1" });
  assert.equal(formatLabelSelector(parsed), "a=1,b=2");
  assert.ok(matchesLabels(parsed, { a: "1", b: "2", c: "3" }));
  assert.ok(!matchesLabels(parsed, { a: "1" }));
  expectStatus(() => labelSelectorFromSet({ "bad key": "1" }), "BadRequest", 400, "invalid label key");
});

// [text, requirements]
const fieldCases: Array<[string, FieldRequirement[]]> = [
  ["", []],
  ["metadata.name=web", [{ field: "metadata.name", operator: "=", value: "web" }]],
  ["metadata.name==web", [{ field: "metadata.name", operator: "=", value: "web" }]],
  ["spec.nodeName!=n1", [{ field: "spec.nodeName", operator: "!=", value: "n1" }]],
  ["spec.nodeName=", [{ field: "spec.nodeName", operator: "=", value: "" }]],
  [
    "status.phase!=Running,metadata.namespace=default",
    [
      { field: "metadata.namespace", operator: "=", value: "default" },
      { field: "status.phase", operator: "!=", value: "Running" },
    ],
  ],
  [",a=b,,", [{ field: "a", operator: "=", value: "b" }]],
  ["a=x\\,y\\=z\\\\", [{ field: "a", operator: "=", value: "x,y=z\\" }]],
  ["a=b!c", [{ field: "a", operator: "=", value: "b!c" }]],
  [" a = b ", [{ field: " a ", operator: "=", value: " b " }]],
];

for (const [text, requirements] of fieldCases) {
  test(`the field selector ${JSON.stringify(text)} parses to ${requirements.length} requirement(s)`, () => {
    assert.deepEqual(parseFieldSelector(text), requirements);
  });
}

const fieldErrors: Array<[string, string]> = [
  ["metadata.name", "cannot understand"],
  ["a in (b)", "cannot understand"],
  ["a<b", "cannot understand"],
  ["a=b,c", 'cannot understand "c"'],
  ["=b", "has no field name"],
  ["a=b=c", "'=' in a value must be escaped"],
  ["a!==b", "'=' in a value must be escaped"],
  ["a=b\\n", "invalid escape sequence \\n"],
  ["a=b\\", "invalid escape sequence"],
];

for (const [text, message] of fieldErrors) {
  test(`the field selector ${JSON.stringify(text)} is a 400 BadRequest naming the problem`, () => {
    expectStatus(() => parseFieldSelector(text), "BadRequest", 400, message);
  });
}

// [selector, fields, matches]
const fieldMatchCases: Array<[string, Record<string, string>, boolean]> = [
  ["", {}, true],
  ["metadata.name=web", { "metadata.name": "web" }, true],
  ["metadata.name=web", { "metadata.name": "db" }, false],
  ["spec.nodeName=", {}, true],
  ["spec.nodeName!=", {}, false],
  ["spec.nodeName!=", { "spec.nodeName": "n1" }, true],
  ["spec.nodeName!=n1", {}, true],
  ["spec.nodeName=n1", {}, false],
  ["a=1,b=2", { a: "1", b: "2" }, true],
  ["a=1,b=2", { a: "1", b: "3" }, false],
  ["constructor=", {}, true],
];

for (const [text, fields, expected] of fieldMatchCases) {
  test(`the field selector ${JSON.stringify(text)} ${expected ? "selects" : "does not select"} fields ${JSON.stringify(fields)}`, () => {
    assert.equal(matchesFields(parseFieldSelector(text), fields), expected);
  });
}

test("field values with commas, equals signs and backslashes survive escaping", () => {
  assert.equal(escapeFieldValue("a,b=c\\d"), "a\\,b\\=c\\\\d");
  const requirements: FieldRequirement[] = [{ field: "metadata.name", operator: "!=", value: "a,b=c\\d" }];
  assert.deepEqual(parseFieldSelector(formatFieldSelector(requirements)), requirements);
});

// Property tests.
const runs = { seed: 42, numRuns: 1000 };
const keyArb = fc.oneof(
  fc.constantFrom("a", "b", "app", "in", "notin", "example.com/x", "A.b_c-1"),
  fc.stringMatching(/^[a-z0-9]([-a-z0-9_.]{0,8}[a-z0-9])?$/),
);
const valueArb = fc.oneof(fc.constantFrom("", "x", "in", "notin", "1.0"), fc.stringMatching(/^([A-Za-z0-9]([-A-Za-z0-9_.]{0,6}[A-Za-z0-9])?)?$/));
const requirementArb: fc.Arbitrary<LabelRequirement> = fc
  .tuple(keyArb, fc.constantFrom<LabelOperator>("Equals", "NotEquals", "In", "NotIn", "Exists", "DoesNotExist"), fc.uniqueArray(valueArb, { minLength: 1, maxLength: 4 }))
  .map(([key, operator, values]) => {
    if (operator === "Exists" || operator === "DoesNotExist") return { key, operator, values: [] };
    if (operator === "Equals" || operator === "NotEquals") return { key, operator, values: [values[0]!] };
    return { key, operator, values: [...values].sort() };
  });
const selectorArb: fc.Arbitrary<ParsedLabelSelector> = fc
  .array(requirementArb, { maxLength: 5 })
  .map((requirements) => ({ requirements: requirements.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)) }));
const labelsArb = fc.dictionary(keyArb, valueArb, { maxKeys: 5, noNullPrototype: true });

test("property: parsing the printed form of a canonical label selector gives it back", () => {
  fc.assert(
    fc.property(selectorArb, (selector) => {
      assert.deepEqual(parseLabelSelector(formatLabelSelector(selector)), selector);
    }),
    runs,
  );
});

test("property: a printed selector selects the same label sets as the selector it came from", () => {
  fc.assert(
    fc.property(selectorArb, labelsArb, (selector, labels) => {
      assert.equal(matchesLabels(parseLabelSelector(formatLabelSelector(selector)), labels), matchesLabels(selector, labels));
    }),
    runs,
  );
});

const negations: Record<LabelOperator, LabelOperator> = {
  Equals: "NotEquals",
  NotEquals: "Equals",
  In: "NotIn",
  NotIn: "In",
  Exists: "DoesNotExist",
  DoesNotExist: "Exists",
};

test("property: each operator selects exactly the label sets its negation does not", () => {
  fc.assert(
    fc.property(requirementArb, labelsArb, (requirement, labels) => {
      const negated = { ...requirement, operator: negations[requirement.operator] };
      assert.notEqual(matchesLabels({ requirements: [requirement] }, labels), matchesLabels({ requirements: [negated] }, labels));
    }),
    runs,
  );
});

test("property: a selector selects a label set exactly when each of its requirements does", () => {
  fc.assert(
    fc.property(selectorArb, labelsArb, (selector, labels) => {
      const each = selector.requirements.every((r) => matchesLabels({ requirements: [r] }, labels));
      assert.equal(matchesLabels(selector, labels), each);
    }),
    runs,
  );
});

test("property: printed field selectors parse back to the same requirements, whatever the values hold", () => {
  const fieldArb = fc.constantFrom("metadata.name", "metadata.namespace", "spec.nodeName", "status.phase");
  const requirementsArb = fc.array(
    fc.record({ field: fieldArb, operator: fc.constantFrom<"=" | "!=">("=", "!="), value: fc.string({ maxLength: 6, unit: fc.constantFrom("a", ",", "=", "\\", "!", " ") }) }),
    { maxLength: 4 },
  );
  fc.assert(
    fc.property(requirementsArb, (requirements) => {
      const parsed = parseFieldSelector(formatFieldSelector(requirements));
      // The parser orders terms by their text, as the API server does; compare as multisets.
      const key = (r: FieldRequirement): string => JSON.stringify([r.field, r.operator, r.value]);
      assert.deepEqual(parsed.map(key).sort(), requirements.map(key).sort());
    }),
    runs,
  );
});
