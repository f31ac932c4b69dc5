// Go's `time.Duration` text, the JSON form of `metav1.Duration`: `1h2m3.5s`, `300ms`, `0s`.
import { badRequest } from "../api/errors.ts";

const units: ReadonlyArray<[string, bigint]> = [
  ["ns", 1n],
  ["us", 1_000n],
  ["µs", 1_000n],
  ["ms", 1_000_000n],
  ["s", 1_000_000_000n],
  ["m", 60_000_000_000n],
  ["h", 3_600_000_000_000n],
];

function fraction(value: bigint, unit: bigint, suffix: string): string {
  const whole = value / unit;
  const rest = (value % unit).toString().padStart(unit.toString().length - 1, "0").replace(/0+$/, "");
  return `${whole}${rest === "" ? "" : `.${rest}`}${suffix}`;
}

/** Formats nanoseconds as Go's `Duration.String` does. */
export function goDuration(nanos: bigint): string {
  if (nanos === 0n) return "0s";
  const sign = nanos < 0n ? "-" : "";
  const n = nanos < 0n ? -nanos : nanos;
  if (n < 1_000n) return `${sign}${n}ns`;
  if (n < 1_000_000n) return `${sign}${fraction(n, 1_000n, "µs")}`;
  if (n < 1_000_000_000n) return `${sign}${fraction(n, 1_000_000n, "ms")}`;
  const hours = n / 3_600_000_000_000n;
  const minutes = (n / 60_000_000_000n) % 60n;
  const seconds = fraction(n % 60_000_000_000n, 1_000_000_000n, "s");
  if (hours > 0n) return `${sign}${hours}h${minutes}m${seconds}`;
  if (minutes > 0n) return `${sign}${minutes}m${seconds}`;
  return `${sign}${seconds}`;
}

/** Parses Go's duration text to nanoseconds (`time.ParseDuration`); 400 on anything else. */
export function parseGoDuration(text: string): bigint {
  const match = /^([+-]?)((?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|µs|ms|s|m|h))+$/.exec(text);
  if (match === null) {
    if (text === "0" || text === "+0" || text === "-0") return 0n;
    throw badRequest(`time: invalid duration ${JSON.stringify(text)}`);
  }
  let total = 0n;
  for (const part of text.matchAll(/(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)/g)) {
    const unit = units.find(([name]) => name === part[2])![1];
    const [whole, frac = ""] = part[1]!.split(".");
    const digits = frac.slice(0, 18);
    total += BigInt(whole === "" ? "0" : whole!) * unit + (digits === "" ? 0n : (BigInt(digits) * unit) / 10n ** BigInt(digits.length));
  }
  return match[1] === "-" ? -total : total;
}
