// The per-step shortcuts of the cluster library and the API helpers give the answers the plain computations give:
// the canonical text against the implementation it replaced, the structural comparison against comparing texts,
// the cached cron schedule against a fresh parse, and the memoized timestamp against formatting each time.
import { test } from "node:test";
import assert from "node:assert/strict";
import { CronExpressionParser } from "cron-parser";
import { canonicalEqual, canonicalJson } from "../../src/cluster/common.ts";
import { cronTimes } from "../../src/cluster/job.ts";
import { formatTimestamp } from "../../src/api/clock.ts";
import { checkClientOptions } from "../../src/api/client-options.ts";

/** The canonical text as it was first written (entries, filter, sort, map, join): the reference. */
function referenceJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(referenceJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined);
    entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${referenceJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

/** A small seeded generator (mulberry32), so a failure names the case that reproduces it. */
function rng(seed: number): (n: number) => number {
  let state = seed >>> 0;
  return (n) => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return (((t ^ (t >>> 14)) >>> 0) % n);
  };
}

class Box {
  constructor(readonly inside: unknown) {}
}

// Few distinct leaves and keys, so that equal and nearly equal values are frequent.
const leaves: unknown[] = ["a", "b", "", 0, -0, 1, 2.5, true, false, null, undefined, Number.NaN, Infinity, () => 1, new Date(0), new Box(1), "\ud800"];
const keys = ["a", "b", "c", "z", "B", "10", "2", "__proto__x"];

function randomValue(next: (n: number) => number, depth: number): unknown {
  const pick = next(depth > 2 ? 2 : 6);
  if (pick < 2) return leaves[next(leaves.length)];
  if (pick < 4) return Array.from({ length: next(4) }, () => randomValue(next, depth + 1));
  const object: Record<string, unknown> = next(8) === 0 ? Object.create(null) : {};
  for (let i = next(5); i > 0; i--) object[keys[next(keys.length)]!] = randomValue(next, depth + 1);
  return object;
}

/** `value` with its object keys set in another order (reversed), same members. */
function reordered(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(reordered);
  if (value === null || typeof value !== "object" || Object.getPrototypeOf(value) !== Object.prototype) return value;
  return Object.fromEntries(Object.entries(value).reverse().map(([k, v]) => [k, reordered(v)]));
}

test("canonicalJson gives the text the first implementation gave, for plain and odd values alike", () => {
  const next = rng(19);
  for (let i = 0; i < 5000; i++) {
    const value = randomValue(next, 0);
    assert.equal(canonicalJson(value), referenceJson(value), `case ${i}`);
  }
  assert.equal(canonicalJson({ b: 1, a: [undefined, { d: undefined, c: "x" }] }), '{"a":[,{"c":"x"}],"b":1}');
});

test("canonicalEqual answers exactly as comparing the canonical texts does", () => {
  const next = rng(7);
  let equal = 0;
  for (let i = 0; i < 20000; i++) {
    const a = randomValue(next, 0);
    const b = next(3) === 0 ? reordered(a) : randomValue(next, 0);
    const expected = referenceJson(a) === referenceJson(b);
    if (expected) equal++;
    assert.equal(canonicalEqual(a, b), expected, `case ${i}: ${referenceJson(a)} vs ${referenceJson(b)}`);
  }
  assert.ok(equal > 2000, `enough equal pairs to mean something (${equal})`);
  // Pairs the texts call equal although the values differ: the comparison must agree with the texts.
  assert.equal(canonicalEqual([undefined], []), true);
  assert.equal(canonicalEqual({ a: Number.NaN }, { a: null }), true);
  assert.equal(canonicalEqual({ a: 0 }, { a: -0 }), true);
  assert.equal(canonicalEqual({ a: undefined, b: 1 }, { b: 1 }), true);
  assert.equal(canonicalEqual([], {}), false);
  assert.equal(canonicalEqual({ a: "1" }, { a: 1 }), false);
});

test("cron times from the cached schedule are the ones a fresh parse gives, in any order of calls", () => {
  const fresh = (schedule: string, zone: string, afterMs: number, nowMs: number): { latest?: number; next: number } => {
    const expression = CronExpressionParser.parse(schedule, { currentDate: afterMs, tz: zone });
    let latest: number | undefined;
    for (;;) {
      const at = expression.next().getTime();
      if (at > nowMs) return latest === undefined ? { next: at } : { latest, next: at };
      latest = at;
    }
  };
  const t0 = Date.UTC(2026, 2, 28, 23, 0, 0); // the night summer time starts in Europe
  const next = rng(3);
  const schedules = ["*/15 * * * *", "30 1 * * *", "0 2 * * 0", "@hourly"];
  const zones = ["UTC", "Europe/Berlin", "America/New_York"];
  for (let i = 0; i < 600; i++) {
    const schedule = schedules[next(schedules.length)]!;
    const zone = zones[next(zones.length)]!;
    const afterMs = t0 + next(4) * 20 * 60_000;
    const nowMs = afterMs + next(48) * 30 * 60_000;
    assert.deepEqual(cronTimes(schedule, zone, afterMs, nowMs), fresh(schedule, zone, afterMs, nowMs), `case ${i}: ${schedule} ${zone} ${afterMs} ${nowMs}`);
  }
});

test("cron times past the missed-schedule limit jump to now, and a bad schedule stays an error on every call", () => {
  const t0 = Date.UTC(2026, 0, 1);
  const answer = cronTimes("* * * * *", undefined, t0, t0 + 500 * 60_000 + 30_000);
  assert.deepEqual(answer, { latest: t0 + 500 * 60_000, next: t0 + 501 * 60_000 });
  for (let i = 0; i < 2; i++) assert.throws(() => cronTimes("61 * * * *", undefined, t0, t0), /unparseable schedule "61 \* \* \* \*"/);
});

test("formatTimestamp gives whole seconds, the same text for every instant of a second and a new one for the next", () => {
  const t0 = Date.UTC(2026, 10, 29, 20, 9, 24);
  assert.equal(formatTimestamp(t0), "2026-11-29T20:09:24Z");
  assert.equal(formatTimestamp(t0 + 999), "2026-11-29T20:09:24Z");
  assert.equal(formatTimestamp(t0 + 1000), "2026-11-29T20:09:25Z");
  assert.equal(formatTimestamp(t0 - 1), "2026-11-29T20:09:23Z");
  assert.equal(formatTimestamp(-1), "1969-12-31T23:59:59Z");
  assert.throws(() => formatTimestamp(Number.NaN), RangeError);
  assert.equal(formatTimestamp(-1), "1969-12-31T23:59:59Z");
});

test("checkClientOptions' quick path for valid calls lets no broken field through", () => {
  const ref = { apiVersion: "v1", kind: "Pod", namespace: "default", name: "p" };
  const broken: Array<[Parameters<typeof checkClientOptions>[0], Record<string, unknown>, string]> = [
    ["get", { ...ref, apiVersion: "" }, "apiVersion"],
    ["get", { ...ref, kind: 1 }, "kind"],
    ["get", { ...ref, namespace: 7 }, "namespace"],
    ["get", { ...ref, name: "" }, "name"],
    ["delete", { ...ref, name: undefined }, "name"],
    ["list", { ...ref, fieldSelector: ["a"] }, "fieldSelector"],
    ["watch", { ...ref, resourceVersion: 12 }, "resourceVersion"],
    ["list", { ...ref, limit: 1.5 }, "limit"],
    ["create", { object: { apiVersion: "v1", kind: "", metadata: {} } }, "kind"],
    ["update", { object: { apiVersion: "v1", kind: "Pod", metadata: null } }, "metadata"],
  ];
  for (const [method, options, field] of broken) {
    assert.throws(() => checkClientOptions(method, options), { name: "TypeError", message: new RegExp(`^${method}: options\\.(object\\.)?${field} `) }, `${method} ${field}`);
  }
  for (const method of ["get", "delete", "list", "watch", "patch"] as const) {
    assert.doesNotThrow(() => checkClientOptions(method, method === "patch" ? { ...ref, patchType: "json", patch: [] } : { ...ref, limit: 0, labelSelector: "a=b" }));
  }
});
