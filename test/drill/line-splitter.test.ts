// The drill's output lines are split at newlines, not where the controller's writes split (an unbuffered Python
// process writes `level` and ` starting` as two writes of one line).
import { test } from "node:test";
import assert from "node:assert/strict";
import { LineSplitter, partialLineBytesMax, startProcess } from "../../src/drill/process.ts";

test("a line written in pieces is one line; the last line without a newline comes at the end", () => {
  const lines: string[] = [];
  const splitter = new LineSplitter((line) => lines.push(line));
  for (const piece of ["INFO:kopf level", " starting\nsecond ", "line\r\nthird"]) splitter.push(Buffer.from(piece));
  assert.deepEqual(lines, ["INFO:kopf level starting", "second line"]);
  splitter.end();
  assert.deepEqual(lines, ["INFO:kopf level starting", "second line", "third"]);
});

test("a character split across chunks is joined, and a line without a newline is passed on in bounded pieces", () => {
  const lines: string[] = [];
  const splitter = new LineSplitter((line) => lines.push(line));
  const bytes = Buffer.from("é\n");
  splitter.push(bytes.subarray(0, 1));
  splitter.push(bytes.subarray(1));
  assert.deepEqual(lines, ["é"]);
  splitter.push(Buffer.from("x".repeat(partialLineBytesMax + 10)));
  assert.deepEqual(lines.slice(1).map((l) => l.length), [partialLineBytesMax]);
});

test("a process that writes one line in two flushed writes shows one prefixed line", async () => {
  const lines: string[] = [];
  const script = "process.stdout.write('[0] level'); setTimeout(() => process.stdout.write(' starting\\n'), 50);";
  const p = startProcess([process.execPath, "-e", script], process.env, { linePrefix: "| ", onLine: (line) => lines.push(line) });
  await p.exited;
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(lines, ["| [0] level starting"]);
});
