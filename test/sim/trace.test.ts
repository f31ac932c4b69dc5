// The trace writer hashes canonical lines as they come, in chunks, and answers a hash at any point; these tests hold
// it to the one-shot form (`traceHashOf`) on records whose lines are awkward (escapes, non-ASCII text, lone
// surrogates, numbers that are not safe integers, optional fields), across chunk boundaries and long lines, and
// with hashes asked for mid-trace by writers that take turns.
import assert from "node:assert/strict";
import test from "node:test";
import { TraceWriter, canonicalLine, traceHashOf, type TraceRecord } from "../../src/sim/trace.ts";

function record(step: number, overrides: Partial<TraceRecord> = {}): TraceRecord {
  return { step, timeMs: 1_767_225_600_000 + step * 17, actor: "operator", kind: "request", label: `list ConfigMap ns-${step}`, revisionBefore: step, revisionAfter: step + 1, result: "ok", ...overrides };
}

const awkward: Array<Partial<TraceRecord>> = [
  { label: 'say "hi"\\ back\nslash\ttab\u0001' },
  { actor: "bäcker", result: "ünïcödé ✓ 日本 🚀" },
  { result: "lone \ud800 surrogate and \udfff" },
  { ref: "ConfigMap ns/a", write: true },
  { ref: "", write: false, label: "" },
  { timeMs: -1, revisionBefore: 0, revisionAfter: Number.MAX_SAFE_INTEGER },
  { timeMs: 1.5, step: 2 ** 60 },
  { timeMs: 1_700_000_000_005, revisionBefore: 100_000_001, revisionAfter: 99_999_999, step: 100_000_000 },
  { kind: "log", fields: { b: 1, a: [true, "x\ny"], c: { z: null } } },
  { label: "\u007f\u0080 edge of ASCII" },
  { result: "C:\\dir\\file only backslashes" },
  { label: "only a \"quote" },
];

test("the writer's hash equals the sha256 of the canonical lines, awkward records included", () => {
  const records = awkward.map((overrides, i) => record(i, overrides));
  const writer = new TraceWriter("full");
  for (const r of records) writer.add(r);
  assert.equal(writer.traceHash(), traceHashOf(records));
  assert.equal(writer.length, records.length);
});

test("a hash asked for mid-trace covers the lines so far, and writing goes on after it", () => {
  const writer = new TraceWriter("hash-only");
  const records: TraceRecord[] = [];
  for (let i = 0; i < 5; i++) {
    records.push(record(i));
    writer.add(records[i]!);
  }
  assert.equal(writer.traceHash(), traceHashOf(records));
  records.push(record(5, awkward[1]));
  writer.add(records[5]!);
  assert.equal(writer.traceHash(), traceHashOf(records));
  assert.equal(writer.records.length, 0, "hash-only keeps no records");
});

test("a trace many times longer than the writer's buffer, with a line longer than it, hashes the same", () => {
  const writer = new TraceWriter("hash-only");
  const records: TraceRecord[] = [];
  for (let i = 0; i < 3000; i++) {
    // A long plain string; then one that is escaped (and may empty the buffer) before a long plain one.
    const long = i === 1500 ? { result: "x".repeat(200_000) } : i === 2000 ? { actor: "bä\"cker", label: "y".repeat(100_000) } : undefined;
    const r = record(i, long ?? awkward[i % awkward.length]);
    records.push(r);
    writer.add(r);
    if (i % 997 === 0) assert.equal(writer.traceHash(), traceHashOf(records));
  }
  assert.equal(writer.traceHash(), traceHashOf(records));
});

test("writers that take turns, each asking for hashes between lines, never mix their lines", () => {
  const writers = [new TraceWriter("hash-only"), new TraceWriter("hash-only"), new TraceWriter("hash-only")];
  const written: TraceRecord[][] = [[], [], []];
  for (let i = 0; i < 600; i++) {
    const w = i % 3 === 2 ? 2 : i % 2;
    const r = record(i, awkward[i % awkward.length]);
    writers[w]!.add(r);
    written[w]!.push(r);
    if (i % 7 === 0) assert.equal(writers[w]!.traceHash(), traceHashOf(written[w]!));
  }
  for (let w = 0; w < 3; w++) assert.equal(writers[w]!.traceHash(), traceHashOf(written[w]!));
});

/** The canonical line as `JSON.stringify` writes it: the record's fields in the canonical order, facts left out. */
function stringifiedLine(r: TraceRecord): string {
  const fields = r.fields === undefined ? undefined : Object.fromEntries(Object.keys(r.fields).sort().map((key) => [key, r.fields![key]]));
  const ordered = { step: r.step, timeMs: r.timeMs, actor: r.actor, kind: r.kind, label: r.label, ref: r.ref, write: r.write, revisionBefore: r.revisionBefore, revisionAfter: r.revisionAfter, result: r.result, fields };
  return JSON.stringify(ordered);
}

test("a canonical line is JSON.stringify's, the first time a string is written and every time after", () => {
  // Twice through, and each record between two others: the second pass meets strings and times written before.
  const records = awkward.map((overrides, i) => ({ ...record(i, overrides), verb: "list" as const, requestSeq: i }));
  for (let pass = 0; pass < 2; pass++) {
    for (const r of records) {
      assert.equal(canonicalLine(r), stringifiedLine(r));
      assert.equal(canonicalLine(record(0)), stringifiedLine(record(0)));
    }
  }
});

test("canonical lines stay JSON.stringify's past the memo's bounds: more distinct strings than it keeps, and strings too long to keep", () => {
  for (let i = 0; i < 10_000; i++) {
    const long = i % 97 === 0 ? `${"long \u00e9 \"text\" ".repeat(40)}${i}` : undefined;
    const r = record(i, { label: `label ${i} "quoted"`, result: long ?? (i % 3 === 0 ? "ok" : `result ${i % 50}`), timeMs: 1_767_225_600_000 + (i >> 2) });
    assert.equal(canonicalLine(r), stringifiedLine(r));
  }
});

test("a canonical line writes every virtual time as String does: across the million boundaries, with zeros inside, and off the fast path", () => {
  const times = [0, 5, 999_999, 1_000_000, 1_000_001, 1_767_225_600_000, 1_767_225_600_007, 1_767_225_600_070, 1_767_225_999_999, 1_767_226_000_000, 1_767_226_000_001, 2.5, 1_767_225_600_000.5, -1, -1_767_225_600_000, 2 ** 53 - 1, 2 ** 53, 1e21];
  // Each time twice and after each other one: the remembered last time and its leading digits are both met.
  for (const a of times) {
    for (const b of times) {
      for (const timeMs of [a, b, b]) {
        const r = record(0, { timeMs });
        assert.equal(canonicalLine(r), stringifiedLine(r));
      }
    }
  }
  for (let i = 0; i < 20_000; i++) {
    const r = record(i, { timeMs: 1_767_225_600_000 + i * 7_919 });
    assert.equal(canonicalLine(r), stringifiedLine(r));
  }
});
