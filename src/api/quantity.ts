// Kubernetes resource quantities (`resource.Quantity`): parsing and the canonical string kube-apiserver stores.
//
// A real server decodes every Quantity field of a built-in kind into Go's Quantity and writes back what its
// `String()` returns, so `0.5` comes back as `500m` and `1.5Gi` as `1536Mi`. The facts this module follows are from
// kubernetes/apimachinery `pkg/api/resource` (quantity.go: `parseQuantityString`, `ParseQuantity`,
// `CanonicalizeBytes`, `UnmarshalJSON`; suffix.go: `interpret`, `constructBytes`; amount.go: `AsCanonicalBytes`,
// `AsCanonicalBase1024Bytes`; math.go: `maxAllowed`, `removeInt64Factors`) and the expectations of quantity_test.go.
// The arithmetic is exact: a value is a sign, a string of decimal digits and a power of ten, with BigInt where a
// binary suffix multiplies by a power of two or a number is held against int64's limits. No float holds a quantity.

import { assert } from "./assert.ts";

/** The three ways a quantity is written; a parsed quantity keeps the way its suffix was written. */
export type QuantityFormat = "DecimalSI" | "BinarySI" | "DecimalExponent";

/** Why a string is not a quantity, one variant per error the real parser returns. */
export type QuantityError = "format" | "numeric" | "suffix";

/** The regular expression the real parser's format error names (it does not match with it: it scans). */
export const quantityPattern = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$";

/** The real parser's error messages, word for word: clients and tests match on them. */
export const quantityErrorMessages: Readonly<Record<QuantityError, string>> = {
  format: `quantities must match the regular expression '${quantityPattern}'`,
  numeric: "unable to parse numeric part of quantity",
  suffix: "unable to parse quantity's suffix",
};

/** A parsed quantity: `(negative ? -1 : 1) * digits * 10^exponent`, in a format, perhaps with its text kept. */
export interface Quantity {
  negative: boolean;
  /** Decimal digits without leading zeros; "0" for zero. */
  digits: string;
  exponent: number;
  format: QuantityFormat;
  /**
   * The text as written, when the real parser keeps it (it does so when the text already looks canonical to its
   * quick check): `String()` then returns it unchanged, even where it is not quite canonical (`+1`, `1.500k`).
   */
  kept?: string;
}

export type QuantityParse = { ok: true; quantity: Quantity } | { ok: false; error: QuantityError };

/** The largest int64: the real parser caps binary quantities there. */
const int64Max = (1n << 63n) - 1n;

/** Digits a quantity's number may have for the real parser's int64 fast path (math.go `maxInt64Factors`). */
const int64DigitsMax = 18;

/** The smallest power of ten a quantity keeps: anything finer is rounded up to nano units. */
const nanoExponent = -9;

const decimalSuffixes: Readonly<Record<string, number>> = { n: -9, u: -6, m: -3, "": 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };
const binarySuffixes: Readonly<Record<string, number>> = { Ki: 10, Mi: 20, Gi: 30, Ti: 40, Pi: 50, Ei: 60 };
/** Decimal SI suffixes by power of ten; a power outside the table prints no suffix at all, as the real code does. */
const decimalSuffixOf = new Map(Object.entries(decimalSuffixes).map(([suffix, exponent]) => [exponent, suffix]));
const binarySuffixOf = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];

const suffixLetters = "eEinumkKMGTP";

function isDigit(char: string | undefined): boolean {
  return char !== undefined && char >= "0" && char <= "9";
}

/** Go's int32 conversion: the real parser keeps exponents in int32 and wraps them silently. */
function int32(value: number): number {
  return value | 0;
}

interface Scanned {
  positive: boolean;
  /** The sign and number as written, the text the slow path reads as a decimal. */
  value: string;
  /** The integer digits without leading zeros ("0" when there are none). */
  whole: string;
  fraction: string;
  suffix: string;
}

/**
 * Splits a quantity into sign, number and suffix the way the real scanner does, with its leniencies: no digits at
 * all reads as zero (`.`, `-`, `k`), a trailing point is allowed (`1.G`), and a suffix is any run of suffix letters
 * followed by an optional signed integer, judged later.
 */
function scan(text: string): Scanned | undefined {
  let pos = 0;
  const end = text.length;
  const positive = text[0] !== "-";
  if (text[0] === "-" || text[0] === "+") pos++;
  while (pos < end && text[pos] === "0") pos++;
  if (pos >= end) return { positive, value: "0", whole: "0", fraction: "", suffix: "" };
  const wholeStart = pos;
  while (pos < end && isDigit(text[pos])) pos++;
  const whole = pos === wholeStart ? "0" : text.slice(wholeStart, pos);
  if (pos >= end) return { positive, value: text, whole, fraction: "", suffix: "" };
  let fraction = "";
  if (text[pos] === ".") {
    const fractionStart = ++pos;
    while (pos < end && isDigit(text[pos])) pos++;
    fraction = text.slice(fractionStart, pos);
    if (pos >= end) return { positive, value: text, whole, fraction, suffix: "" };
  }
  const value = text.slice(0, pos);
  const suffixStart = pos;
  while (pos < end && suffixLetters.includes(text[pos]!)) pos++;
  if (text[pos] === "-" || text[pos] === "+") pos++;
  while (pos < end && isDigit(text[pos])) pos++;
  if (pos < end) return undefined;
  return { positive, value, whole, fraction, suffix: text.slice(suffixStart) };
}

interface Suffix {
  base: 2 | 10;
  exponent: number;
  format: QuantityFormat;
}

/** What a suffix means; an `e`/`E` exponent is any int64 (wrapped to int32, as the real code does). */
function interpret(suffix: string): Suffix | undefined {
  const decimal = decimalSuffixes[suffix];
  if (decimal !== undefined) return { base: 10, exponent: decimal, format: "DecimalSI" };
  const binary = binarySuffixes[suffix];
  if (binary !== undefined) return { base: 2, exponent: binary, format: "BinarySI" };
  if (suffix.length < 2 || (suffix[0] !== "e" && suffix[0] !== "E")) return undefined;
  // Go's ParseInt: an optional sign, then at least one digit, and the value must fit in an int64.
  if (!/^[+-]?[0-9]+$/.test(suffix.slice(1))) return undefined;
  const parsed = BigInt(suffix.slice(1));
  if (parsed > int64Max || parsed < -int64Max - 1n) return undefined;
  return { base: 10, exponent: Number(BigInt.asIntN(32, parsed)), format: "DecimalExponent" };
}

function stripLeadingZeros(digits: string): string {
  let start = 0;
  while (start < digits.length - 1 && digits[start] === "0") start++;
  return digits.slice(start);
}

/** Parses a quantity exactly as `resource.ParseQuantity` does (no whitespace: `UnmarshalJSON` trims it first). */
export function parseQuantity(text: string): QuantityParse {
  if (text.length === 0) return { ok: false, error: "format" };
  if (text === "0") return { ok: true, quantity: { negative: false, digits: "0", exponent: 0, format: "DecimalSI", kept: "0" } };
  const scanned = scan(text);
  if (scanned === undefined) return { ok: false, error: "format" };
  const suffix = interpret(scanned.suffix);
  if (suffix === undefined) return { ok: false, error: "suffix" };
  const fast = parseFast(text, scanned, suffix);
  if (fast !== undefined) return { ok: true, quantity: fast };
  return parseExact(scanned, suffix);
}

/**
 * The real parser's int64 path, taken for up to 18 digits at a scale of nano or coarser; it decides whether the
 * text is kept as written. Returns undefined where the real code falls through to its arbitrary-precision path.
 */
function parseFast(text: string, scanned: Scanned, suffix: Suffix): Quantity | undefined {
  const { whole, fraction } = scanned;
  let precision: number;
  let scale = 0;
  if (suffix.base === 10) {
    scale = suffix.exponent;
    precision = int64DigitsMax - (whole.length + fraction.length);
  } else if (fraction.length === 0) {
    // A binary suffix multiplies by 2^exponent, which has about exponent*3/10 decimal digits.
    precision = 15 - whole.length - Math.trunc((suffix.exponent * 3) / 10) - 1;
  } else {
    precision = -1;
  }
  if (precision < 0) return undefined;
  scale = int32(scale - fraction.length);
  if (scale < nanoExponent) return undefined;
  const shifted = whole + fraction;
  assert(shifted.length <= int64DigitsMax, "parseFast: the int64 path reads at most 18 digits");
  const value = BigInt(shifted);
  const result = suffix.base === 2 ? value << BigInt(suffix.exponent) : value;
  if (result > int64Max) return undefined;
  const negative = !scanned.positive && result !== 0n;
  const quantity: Quantity =
    suffix.base === 2
      ? { negative, digits: result.toString(), exponent: 0, format: suffix.format }
      : { negative, digits: stripLeadingZeros(shifted), exponent: scale, format: suffix.format };
  // The quick test of "already canonical" that decides whether the text is kept verbatim.
  const keep =
    suffix.base === 2
      ? (value & 7n) !== 0n
      : scale % 3 === 0 && !shifted.endsWith("000") && shifted[0] !== "0";
  if (keep) quantity.kept = text;
  return quantity;
}

/** The real parser's arbitrary-precision path: exact value, rounded up to nano, binary capped at int64. */
function parseExact(scanned: Scanned, suffix: Suffix): QuantityParse {
  const { whole, fraction } = scanned;
  // This path reads the number as a decimal, which needs a digit (`Pi` or `.e-10` alone has none).
  if (!/[0-9]/.test(scanned.value)) return { ok: false, error: "numeric" };
  const digits = stripLeadingZeros(whole + fraction);
  if (digits === "0") return { ok: true, quantity: { negative: false, digits, exponent: 0, format: suffix.format } };
  const negative = !scanned.positive;
  if (suffix.base === 2) return { ok: true, quantity: { negative, ...binaryMagnitude(digits, whole.length, fraction.length, suffix.exponent) } };
  const [rounded, exponent] = roundUpToNano(digits, -int32(fraction.length + int32(-suffix.exponent)));
  return { ok: true, quantity: { negative, digits: rounded, exponent, format: suffix.format } };
}

/**
 * The magnitude of `digits * 10^-fractionLength * 2^power`, rounded up to nano and capped at the largest int64;
 * below one it is no longer binary.
 */
function binaryMagnitude(digits: string, wholeLength: number, fractionLength: number, power: number): Omit<Quantity, "negative"> {
  const cap = int64Max.toString();
  // Twenty whole digits are past the cap whatever the suffix: no need to multiply them out.
  if (wholeLength > 19) return { digits: cap, exponent: 0, format: "BinarySI" };
  let [rounded, exponent] = roundUpToNano((BigInt(digits) << BigInt(power)).toString(), -fractionLength);
  if (compareMagnitude(rounded, exponent, cap, 0) > 0) [rounded, exponent] = [cap, 0];
  const format = compareMagnitude(rounded, exponent, "1", 0) < 0 ? "DecimalSI" : "BinarySI";
  return { digits: rounded, exponent, format };
}

/** Rounds a non-zero magnitude up (away from zero) to a multiple of 10^-9: asking for some gets some. */
function roundUpToNano(digits: string, exponent: number): [string, number] {
  if (exponent >= nanoExponent) return [digits, exponent];
  const dropped = nanoExponent - exponent;
  if (dropped >= digits.length) return ["1", nanoExponent];
  const head = digits.slice(0, digits.length - dropped);
  const tail = digits.slice(digits.length - dropped);
  return [/[1-9]/.test(tail) ? incremented(head) : head, nanoExponent];
}

/** A decimal digit string plus one, by hand: a BigInt round trip of a long string costs far more. */
function incremented(digits: string): string {
  let end = digits.length;
  while (end > 0 && digits[end - 1] === "9") end--;
  const carried = "0".repeat(digits.length - end);
  if (end === 0) return `1${carried}`;
  return `${digits.slice(0, end - 1)}${String.fromCharCode(digits.charCodeAt(end - 1) + 1)}${carried}`;
}

/** Compares two magnitudes `digits * 10^exponent` (no leading zeros) exactly. */
function compareMagnitude(aDigits: string, aExponent: number, bDigits: string, bExponent: number): number {
  if (aDigits === "0" || bDigits === "0") return aDigits === bDigits ? 0 : aDigits === "0" ? -1 : 1;
  const aLength = aDigits.length + aExponent;
  const bLength = bDigits.length + bExponent;
  if (aLength !== bLength) return aLength < bLength ? -1 : 1;
  const width = Math.max(aDigits.length, bDigits.length);
  const a = aDigits.padEnd(width, "0");
  const b = bDigits.padEnd(width, "0");
  return a === b ? 0 : a < b ? -1 : 1;
}

/** Moves trailing zeros of the digits into the exponent. */
function stripTrailingZeros(digits: string, exponent: number): [string, number] {
  let end = digits.length;
  while (end > 1 && digits[end - 1] === "0") end--;
  return [digits.slice(0, end), exponent + (digits.length - end)];
}

/**
 * The string `Quantity.String()` returns: the kept text if any; otherwise the largest exponent that is a multiple
 * of three with no fractional digits, in the quantity's format. A binary quantity prints as decimal when it is
 * under 1024 in magnitude or not a whole number.
 */
export function formatQuantity(quantity: Quantity): string {
  assert(quantity.digits.length > 0, "formatQuantity: a quantity has digits");
  assert(Number.isInteger(quantity.exponent), "formatQuantity: a quantity's exponent is an integer");
  if (quantity.digits === "0") return "0";
  if (quantity.kept !== undefined) return quantity.kept;
  const sign = quantity.negative ? "-" : "";
  if (quantity.format === "BinarySI") {
    const whole = wholeValue(quantity.digits, quantity.exponent);
    if (whole !== undefined && whole >= 1024n) {
      let amount = whole;
      let power = 0;
      while (amount % 1024n === 0n) {
        amount /= 1024n;
        power++;
      }
      return `${sign}${amount}${binarySuffixOf[power] ?? ""}`;
    }
  }
  let [digits, exponent] = stripTrailingZeros(quantity.digits, quantity.exponent);
  const over = ((exponent % 3) + 3) % 3;
  if (over > 0) {
    digits += "0".repeat(over);
    exponent -= over;
  }
  // The real code prints a decimal SI power it has no suffix for (beyond E, 10^18) with no suffix at all.
  const suffix = quantity.format === "DecimalExponent" ? (exponent === 0 ? "" : `e${exponent}`) : (decimalSuffixOf.get(exponent) ?? "");
  return `${sign}${digits}${suffix}`;
}

/** The magnitude as a whole number, or undefined when it has a fractional part. */
function wholeValue(digits: string, exponent: number): bigint | undefined {
  if (exponent >= 0) return BigInt(digits) * 10n ** BigInt(exponent);
  const cut = digits.length + exponent;
  if (cut <= 0 || /[1-9]/.test(digits.slice(cut))) return undefined;
  return BigInt(digits.slice(0, cut));
}

/** Go's `strings.TrimSpace`: Unicode white space at either end (JavaScript's `trim` also strips U+FEFF, Go's not). */
const goSpaceAtEnds = /^[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+|[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+$/g;

export type CanonicalQuantity = { ok: true; value: string } | { ok: false; error: QuantityError };

/**
 * What a real server stores for a JSON value sent in a Quantity field (`UnmarshalJSON`, then `String()`): a string
 * is trimmed and parsed; a number is parsed from its text; anything else is refused with the format error. The
 * store sees a number after JSON parsing, so its text is JavaScript's shortest form for it, which is also the text
 * Go's encoder writes for a float64 (what kubectl sends for an unquoted YAML number).
 */
export function canonicalQuantity(value: unknown): CanonicalQuantity {
  if (typeof value === "string") {
    const known = recent.get(value);
    if (known !== undefined) return known;
    const result = Object.freeze(canonicalText(value.replace(goSpaceAtEnds, "")));
    // A workload writes the same few quantities again and again ("100m", "128Mi"): remember them, within bounds.
    if (value.length > recentLengthMax) return result;
    if (recent.size >= recentMax) recent.clear();
    recent.set(value, result);
    return result;
  }
  if (typeof value === "number" && Number.isFinite(value)) return canonicalText(String(value));
  return { ok: false, error: "format" };
}

function canonicalText(text: string): CanonicalQuantity {
  const parsed = parseQuantity(text);
  if (!parsed.ok) return parsed;
  return { ok: true, value: formatQuantity(parsed.quantity) };
}

/** Strings seen lately and what they canonicalize to; results are frozen because they are shared. */
const recent = new Map<string, CanonicalQuantity>();
const recentMax = 1024;
const recentLengthMax = 64;

/**
 * A quantity's value in nano units, exactly (finer values round up, as the parser rounds), for sums and comparisons
 * (quota usage, limit ranges); undefined when the value is not a quantity. A number is read from its text.
 */
export function quantityNanos(value: unknown): bigint | undefined {
  if (typeof value !== "string" && typeof value !== "number") return undefined;
  const parsed = parseQuantity(String(value).trim());
  if (!parsed.ok) return undefined;
  const { negative, digits, exponent } = parsed.quantity;
  const shift = exponent + 9;
  const magnitude = shift >= 0 ? BigInt(digits) * 10n ** BigInt(shift) : (BigInt(digits) + 10n ** BigInt(-shift) - 1n) / 10n ** BigInt(-shift);
  return negative ? -magnitude : magnitude;
}

/** A nano-unit amount (`quantityNanos`) as the canonical quantity string, in the given form. */
export function formatNanos(value: bigint, format: QuantityFormat): string {
  const negative = value < 0n;
  return formatQuantity({ negative, digits: (negative ? -value : value).toString(), exponent: -9, format });
}

/** The form a quantity is written in (its suffix's kind); decimal SI for anything that is not a quantity string. */
export function quantityFormat(value: unknown): QuantityFormat {
  const parsed = typeof value === "string" ? parseQuantity(value.trim()) : undefined;
  return parsed?.ok === true ? parsed.quantity.format : "DecimalSI";
}
