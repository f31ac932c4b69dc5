// The trace: one record per step (plus fault and log records), in a canonical JSON form whose sha256 is
// the run's fingerprint. Same seed, choices and faults must give the same bytes.
import { createHash, type Hash } from "node:crypto";

/** What kind of step a record or a ready step is. */
export type StepKind = "start" | "request" | "response" | "watch" | "timer" | "external" | "fault" | "gc" | "log";

/** What a request, response or external step does. */
export type Verb = "get" | "list" | "watch" | "create" | "update" | "updateStatus" | "patch" | "patchStatus" | "delete" | "read" | "write";

/**
 * Typed facts of a step, for tools (the planner, reports, reduction): nothing parses a label. They are not part
 * of the canonical line, so they add nothing to the trace hash: the hash covers who did what and what came of it.
 */
export interface StepFacts {
  verb?: Verb;
  /** The API object (or, for lists and watches, the collection) concerned. */
  object?: { kind: string; namespace?: string; name?: string };
  /** A read served from the watch cache (`resourceVersion: "0"` list or watch): what a stale-read fault lags. */
  cached?: boolean;
  /** The watch a watch request opens or an event delivery belongs to (`actor/incarnation/wN`). */
  watchId?: string;
  /** The same number on a request and its response: pairs them. */
  requestSeq?: number;
  /** Whether the step reads or writes the store or an external cell (applied or not). */
  access?: "read" | "write";
  /** The external cell an external step reads or writes. */
  external?: string;
  /** The fault a fault record applied or skipped. */
  fault?: FaultFact;
  /** On a start record: true when it restarts an actor whose incarnation crashed or exited, absent at its first start. */
  restart?: boolean;
}

/** What a fault record says of its fault, so that a reader need not parse its label or result. */
export interface FaultFact {
  kind: string;
  target: string;
  /** False when the fault found nothing to hit (an actor down, a closed watch): its result says `skipped: ...`. */
  applied: boolean;
  /** An applied pause's length: the actor's steps wait until the record's time plus this. */
  pauseMs?: number;
  /** An applied clock fault: the target's wall-clock offset from the simulation's after it (ms, ahead when positive). */
  clockOffsetMs?: number;
}

export interface TraceRecord extends StepFacts {
  /** The index of the scheduled step; fault and log records carry the index of the step they precede or occur in. */
  step: number;
  /** Virtual ms since the Unix epoch. */
  timeMs: number;
  /** An actor name, "gc" or "sim". */
  actor: string;
  kind: StepKind;
  label: string;
  /** The object concerned, `Kind ns/name` (or `Kind ns` for lists and watches). */
  ref?: string;
  /** True for API requests that write (create, update, patch, delete), applied or not. */
  write?: boolean;
  revisionBefore: number;
  revisionAfter: number;
  /** Short: "ok", "409 Conflict", "ADDED ConfigMap ns/a@7", "skipped: actor down". */
  result: string;
  /** Structured fields of a log record, keys sorted. */
  fields?: Record<string, unknown>;
}

/**
 * The canonical one-line JSON of a record: fixed key order, absent fields omitted. Built by hand (it is on
 * every step's path); the output equals `JSON.stringify` of the record with its keys in this order. The typed
 * facts (`StepFacts`) are left out: the line, and so the hash, is the same as before they existed.
 */
export function canonicalLine(record: TraceRecord): string {
  let line = '{"step":' + record.step + ',"timeMs":' + timeText(record.timeMs) + ',"actor":' + quote(record.actor) + ',"kind":"' + record.kind + '","label":' + quote(record.label);
  if (record.ref !== undefined) line += ',"ref":' + quote(record.ref);
  if (record.write !== undefined) line += record.write ? ',"write":true' : ',"write":false';
  line += ',"revisionBefore":' + record.revisionBefore + ',"revisionAfter":' + record.revisionAfter + ',"result":' + quote(record.result);
  if (record.fields !== undefined) line += ',"fields":' + JSON.stringify(sortKeys(record.fields));
  return line + "}";
}

/**
 * A character `JSON.stringify` writes as an escape: a quote, a backslash, a control character, or a surrogate (a
 * lone one is escaped; a pair is not, and goes the slow way all the same).
 */
const needsEscape = /["\\\u0000-\u001f\ud800-\udfff]/;

/**
 * `JSON.stringify` of a string. Nearly every string a line holds (actor names, labels, refs, results) has nothing to
 * escape, and one regular-expression test says so for less than a stringify costs. (A map of the strings already
 * quoted cost more than it saved: results such as `MODIFIED Pod ns/a@7` are new on nearly every step, so the map
 * hashed each one, missed, and filled up.)
 */
function quote(text: string): string {
  return needsEscape.test(text) ? JSON.stringify(text) : '"' + text + '"';
}

/** The decimal text of the last virtual time written: consecutive steps mostly share their time. */
let lastTimeMs = Number.NaN;
let lastTimeText = "";
/** The text of `lastTimeMs`'s millions (a virtual time's leading digits, which change every ~17 minutes). */
let lastMillions = Number.NaN;
let lastMillionsText = "";
/** `000` to `999`: three digits of a time's text each. */
const threeDigits = Array.from({ length: 1000 }, (_, n) => String(n).padStart(3, "0"));

/**
 * `String(timeMs)`. A virtual time is a whole number of milliseconds since the epoch, past 2^31, which V8 turns into
 * text the slow way for doubles (about 0.3 us, on most steps, since times move on nearly every step): its leading
 * digits are kept and the last six come from a table. Anything else (fractions, small or huge numbers) goes the
 * ordinary way, so the text is always `String`'s.
 */
function timeText(timeMs: number): string {
  if (timeMs === lastTimeMs) return lastTimeText;
  lastTimeMs = timeMs;
  if (!(timeMs >= 1_000_000 && timeMs <= Number.MAX_SAFE_INTEGER && Number.isInteger(timeMs))) {
    lastTimeText = String(timeMs);
    return lastTimeText;
  }
  const millions = Math.floor(timeMs / 1_000_000);
  if (millions !== lastMillions) {
    lastMillions = millions;
    lastMillionsText = String(millions);
  }
  const rest = timeMs - millions * 1_000_000;
  const thousands = Math.floor(rest / 1000);
  lastTimeText = lastMillionsText + threeDigits[thousands]! + threeDigits[rest - thousands * 1000]!;
  return lastTimeText;
}

function sortKeys(fields: Record<string, unknown>): Record<string, unknown> {
  const sorted: Record<string, unknown> = {};
  for (const key of Object.keys(fields).sort()) sorted[key] = fields[key];
  return sorted;
}

export type TraceMode = "full" | "hash-only";

/** Keeps the records (in "full" mode) and hashes their canonical lines as they come. */
export class TraceWriter {
  readonly mode: TraceMode;
  readonly records: TraceRecord[] = [];
  private readonly hash: Hash = createHash("sha256");
  private digest: string | undefined;
  private count = 0;
  /** Lines not yet hashed: one `update` per ~32 KiB is much cheaper than one per record. */
  private chunk = "";

  constructor(mode: TraceMode = "full") {
    this.mode = mode;
  }

  get length(): number {
    return this.count;
  }

  add(record: TraceRecord): void {
    this.addLine(record, canonicalLine(record));
  }

  /** `add` for a caller that has built the record's canonical line already. */
  addLine(record: TraceRecord, line: string): void {
    this.chunk += line;
    this.chunk += "\n";
    if (this.chunk.length > 32_768) this.flush();
    this.count++;
    this.digest = undefined;
    if (this.mode === "full") this.records.push(record);
  }

  /** The sha256 (hex) of the JSONL of every record so far. */
  traceHash(): string {
    if (this.digest === undefined) {
      this.flush();
      this.digest = this.hash.copy().digest("hex");
    }
    return this.digest;
  }

  private flush(): void {
    if (this.chunk.length > 0) this.hash.update(this.chunk);
    this.chunk = "";
  }
}

/** The JSONL export of a trace: one canonical line per record, each ending with a newline. */
export function toJsonl(records: readonly TraceRecord[]): string {
  let text = "";
  for (const record of records) text += `${canonicalLine(record)}\n`;
  return text;
}

export function traceHashOf(records: readonly TraceRecord[]): string {
  return createHash("sha256").update(toJsonl(records)).digest("hex");
}

export interface Divergence {
  /** Index into the records (not the step number). */
  index: number;
  step: number;
  expected: string | undefined;
  actual: string | undefined;
}

/** What a replay compares: who did what, and what came of it. */
export function recordKey(record: TraceRecord): string {
  return `${record.actor} ${record.kind} ${record.label} -> ${record.result}`;
}

/** The first record whose actor, kind or label differs, or undefined when `actual` follows `expected`. */
export function firstDivergence(expected: readonly TraceRecord[], actual: readonly TraceRecord[]): Divergence | undefined {
  const length = Math.max(expected.length, actual.length);
  for (let i = 0; i < length; i++) {
    const e = expected[i];
    const a = actual[i];
    const eKey = e === undefined ? undefined : recordKey(e);
    const aKey = a === undefined ? undefined : recordKey(a);
    if (eKey !== aKey) return { index: i, step: (a ?? e)!.step, expected: eKey, actual: aKey };
  }
  return undefined;
}
