// Quantities as kube-apiserver stores them. The expectations come from kubernetes/apimachinery
// pkg/api/resource/quantity_test.go (TestQuantityParse's values and formats printed by String(), TestQuantityString's
// canonical and alternate forms, TestQuantityParseEmit, TestParseQuantity's int64 limits, TestJSONWhitespace and the
// invalid list), plus cases read off quantity.go where the tests are silent (marked so).
import { test } from "node:test";
import assert from "node:assert/strict";
import { canonicalQuantity, parseQuantity, quantityErrorMessages } from "../../src/api/quantity.ts";
import { canonicalizeQuantities, quantityMessageOf } from "../../src/api/quantities.ts";

/** [as sent, as stored]. */
const canonical: Array<[string, string]> = [
  // Decimal SI suffixes, and zero in every suffix.
  ["0", "0"],
  ["0n", "0"],
  ["0m", "0"],
  ["0Ki", "0"],
  ["0Gi", "0"],
  ["0T", "0"],
  ["00", "0"],
  ["5n", "5n"],
  ["4u", "4u"],
  ["3m", "3m"],
  ["50k", "50k"],
  ["300T", "300T"],
  ["1E", "1E"],
  ["12E", "12E"],
  ["1000m", "1"],
  ["5000m", "5"],
  ["1000", "1k"],
  ["1000M", "1G"],
  ["0.001T", "1G"],
  ["1000u", "1m"],
  ["1080000000n", "1080m"],
  // Things that look like floating point.
  ["0.5", "500m"],
  ["0.001", "1m"],
  [".001", "1m"],
  ["0.0005k", "500m"],
  ["0.50000", "500m"],
  ["1.08", "1080m"],
  ["9.01", "9010m"],
  ["8.1k", "8100"],
  ["40.1T", "40100G"],
  ["2.5P", "2500T"],
  ["1.01E", "1010P"],
  // Binary suffixes: kept when whole, else the largest power of 1024; small or fractional values become decimal.
  ["1Ki", "1Ki"],
  ["3Ei", "3Ei"],
  ["100Ti", "100Ti"],
  ["1024Mi", "1Gi"],
  ["307200Ki", "300Mi"],
  ["1025024Mi", "1001Gi"],
  ["1.5Gi", "1536Mi"],
  ["0.5Mi", "512Ki"],
  ["100.035Ki", "102435840m"],
  ["0.05Gi", "53687091200m"],
  [".001Ki", "1024m"],
  [".000001Ki", "1024u"],
  [".000000001Ki", "1024n"],
  // Decimal exponents keep their form, with an exponent that is a multiple of three.
  ["1e3", "1e3"],
  ["1e4", "10e3"],
  ["1e13", "10e12"],
  ["1e14", "100e12"],
  ["0.5e0", "500e-3"],
  ["0.5e-2", "5e-3"],
  ["1.2e3", "1200"],
  ["1.3E+6", "1300e3"],
  ["1.40e9", "1400e6"],
  [".001e12", "1e9"],
  ["0.001e0", "1e-3"],
  ["1000e-12", "1e-9"],
  // Rounding up to nano precision ("if you want some resources, you should get some").
  ["0.0000000001", "1n"],
  ["0.0000000005", "1n"],
  ["3.001n", "4n"],
  ["0.9n", "1n"],
  ["0.00000012345", "124n"],
  ["1.1E-9", "2e-9"],
  ["0.5e-9", "1e-9"],
  [".000000000001Ki", "2n"],
  // Negative values.
  ["-1", "-1"],
  ["-0.5", "-500m"],
  ["-1.5Gi", "-1536Mi"],
  ["-.000000000001Ki", "-2n"],
  ["-1000000000000000000.0", "-1E"],
  ["-9223372036854775809", "-9223372036854775809"],
  // Huge values: exact beyond int64 in decimal, binary capped at the largest int64.
  ["999999999999999999.1", "999999999999999999100m"],
  ["1000000000000000000", "1E"],
  ["10000000000000000000", "10E"],
  ["9999999999999999999000m", "9999999999999999999"],
  ["9223372036854775808.1", "9223372036854775808100m"],
  ["1.0000000000000000001E", "1000000000000000000100m"],
  ["9Ei", "9223372036854775807"],
  ["9223372036854775807Ki", "9223372036854775807"],
  // Read off quantity.go: text its quick check finds canonical is kept exactly as written.
  ["+1", "+1"],
  ["1.", "1."],
  ["1.G", "1.G"],
  ["100.035k", "100.035k"],
  ["1E-3", "1E-3"],
  ["-1Ki", "-1Ki"],
  // Read off quantity.go: a decimal SI power beyond E has no suffix, so the real code prints none (10^21 -> "1").
  ["1000E", "1"],
  // Read off quantity.go: an exponent is parsed as an int64 and kept as an int32, wrapping silently.
  ["1e1000000000", "10e999999999"],
  ["1e4294967296", "1e4294967296"],
  // No digits at all read as zero, as the real scanner does.
  [".", "0"],
  ["-", "0"],
  ["k", "0"],
];

test("quantities are stored in the canonical form of apimachinery's Quantity.String()", () => {
  assert.ok(canonical.length >= 40);
  for (const [sent, stored] of canonical) {
    assert.deepEqual(canonicalQuantity(sent), { ok: true, value: stored }, `${sent} is stored as ${stored}`);
  }
});

test("a canonical quantity stays as it is when parsed again", () => {
  for (const [, stored] of canonical) {
    assert.deepEqual(canonicalQuantity(stored), { ok: true, value: stored }, stored);
  }
});

test("strings that are not quantities are refused with the real parser's error for each cause", () => {
  const refused: Array<[string, keyof typeof quantityErrorMessages]> = [
    ["", "format"],
    ["abc", "format"],
    ["aoeu", "format"],
    ["1.1.M", "format"],
    ["1+1.0M", "format"],
    ["0.1am", "format"],
    ["1 Gi", "format"],
    ["0.1mi", "suffix"],
    [".5i", "suffix"],
    ["1i", "suffix"],
    ["-3.01i", "suffix"],
    ["-3.01e-", "suffix"],
    ["32MMi", "suffix"],
    ["1e9223372036854775808", "suffix"],
    // Read off quantity.go: the arbitrary-precision path needs a digit, which these do not have.
    ["Pi", "numeric"],
    ["e-10", "numeric"],
  ];
  for (const [sent, error] of refused) {
    assert.deepEqual(canonicalQuantity(sent), { ok: false, error }, JSON.stringify(sent));
  }
  assert.equal(quantityErrorMessages.format, "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'");
});

test("white space is the JSON decoder's to trim, not the parser's", () => {
  assert.deepEqual(parseQuantity(" 1"), { ok: false, error: "format" });
  assert.deepEqual(parseQuantity("1 "), { ok: false, error: "format" });
  assert.deepEqual(canonicalQuantity(" 1"), { ok: true, value: "1" });
  assert.deepEqual(canonicalQuantity("\t0.5\n"), { ok: true, value: "500m" });
  // Go's TrimSpace does not count a byte-order mark as space.
  assert.deepEqual(canonicalQuantity("\ufeff1"), { ok: false, error: "format" });
});

test("a JSON number is a quantity written as that number, and other JSON values are not quantities", () => {
  assert.deepEqual(canonicalQuantity(10), { ok: true, value: "10" });
  assert.deepEqual(canonicalQuantity(-1), { ok: true, value: "-1" });
  assert.deepEqual(canonicalQuantity(0.5), { ok: true, value: "500m" });
  assert.deepEqual(canonicalQuantity(1000), { ok: true, value: "1k" });
  for (const value of [true, {}, ["1"]]) assert.deepEqual(canonicalQuantity(value), { ok: false, error: "format" });
});

test("the walker rewrites quantity fields directly, in maps and in lists, and reports what is not a quantity", () => {
  const message = quantityMessageOf("", "v1", "Pod");
  assert.ok(message !== undefined);
  const pod = {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: "p", annotations: { cpu: "0.5" } },
    spec: {
      containers: [
        { name: "a", image: "x", resources: { requests: { cpu: "0.5", memory: "1.5Gi" }, limits: { cpu: 2, memory: null } } },
        { name: "b", image: "x", resources: { limits: { cpu: "abc" } } },
      ],
      volumes: [{ name: "scratch", emptyDir: { sizeLimit: "1000Mi" } }],
      overhead: { cpu: "1000m" },
    },
  };
  const problems = canonicalizeQuantities(pod, message);
  assert.deepEqual(problems, [{ path: "spec.containers[1].resources.limits[cpu]", value: "abc", message: quantityErrorMessages.format }]);
  assert.deepEqual(pod.spec.containers[0]!.resources, { requests: { cpu: "500m", memory: "1536Mi" }, limits: { cpu: "2", memory: "0" } });
  assert.equal(pod.spec.volumes[0]!.emptyDir.sizeLimit, "1000Mi");
  assert.deepEqual(pod.spec.overhead, { cpu: "1" });
  assert.equal(pod.metadata.annotations.cpu, "0.5", "strings outside Quantity fields are left alone");
});

test("the walker does not enter frozen parts, which are the store's own stored data", () => {
  const message = quantityMessageOf("", "v1", "ResourceQuota");
  assert.ok(message !== undefined);
  const frozen = Object.freeze({ hard: Object.freeze({ pods: "1000" }) });
  const quota = { spec: frozen, status: { used: { pods: "1000" } } };
  assert.deepEqual(canonicalizeQuantities(quota, message), []);
  assert.equal(quota.spec.hard.pods, "1000");
  assert.equal(quota.status.used.pods, "1k");
});

test("kinds from which no Quantity is reachable, and kinds outside the wire table, have nothing to walk", () => {
  assert.equal(quantityMessageOf("", "v1", "ConfigMap"), undefined);
  assert.equal(quantityMessageOf("coordination.k8s.io", "v1", "Lease"), undefined);
  assert.equal(quantityMessageOf("example.com", "v1", "Widget"), undefined);
  for (const [group, kind] of [["", "Pod"], ["", "Node"], ["", "PersistentVolumeClaim"], ["", "LimitRange"], ["apps", "Deployment"], ["batch", "CronJob"], ["autoscaling", "HorizontalPodAutoscaler"]]) {
    const version = kind === "HorizontalPodAutoscaler" ? "v2" : "v1";
    assert.notEqual(quantityMessageOf(group!, version, kind!), undefined, `${group}/${kind}`);
  }
});
