// Command-line parsing on node's `parseArgs`, with errors that name the option and what was expected.
import { parseArgs, type ParseArgsConfig } from "node:util";

export class UsageError extends Error {
  override name = "UsageError";
}

export type Options = NonNullable<ParseArgsConfig["options"]>;

export function parse(argv: string[], options: Options): { values: Record<string, string | boolean | string[] | undefined>; positionals: string[] } {
  try {
    const { values, positionals } = parseArgs({ args: joinNegativeValues(argv, options), options, allowPositionals: true, strict: true });
    return { values: values as Record<string, string | boolean | string[] | undefined>, positionals };
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message.replace(/\. To specify a positional.*$/s, "") : String(error));
  }
}

/**
 * `--runs -5` as `--runs=-5`: node's parser takes a value that starts with a dash for an option and calls the
 * option's value "ambiguous"; a negative number after an option that takes a value is that value, which the
 * option's own check then refuses with its clean message. Nothing after `--` is touched.
 */
function joinNegativeValues(argv: readonly string[], options: Options): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--") return [...out, ...argv.slice(i)];
    const name = arg.startsWith("--") ? arg.slice(2) : undefined;
    const next = argv[i + 1];
    if (name !== undefined && options[name]?.type === "string" && next !== undefined && /^-\d/.test(next)) {
      out.push(`${arg}=${next}`);
      i++;
    } else out.push(arg);
  }
  return out;
}

export function intOption(values: Record<string, unknown>, name: string, fallback: number, min: number): number {
  const text = values[name];
  if (text === undefined) return fallback;
  const n = Number(text);
  if (typeof text !== "string" || !/^-?\d+$/.test(text) || !Number.isSafeInteger(n) || n < min) {
    throw new UsageError(`--${name} expects an integer >= ${min}, got "${String(text)}"`);
  }
  return n;
}

/** `--shard i/n`: 0-based `i < n`, as Kubernetes' `$JOB_COMPLETION_INDEX`. */
export function shardOption(text: unknown): { index: number; count: number } | undefined {
  if (text === undefined) return undefined;
  const match = typeof text === "string" ? /^(\d+)\/(\d+)$/.exec(text) : null;
  const index = Number(match?.[1]);
  const count = Number(match?.[2]);
  if (match === null || count < 1 || index >= count) throw new UsageError(`--shard expects i/n with 0 <= i < n, got "${String(text)}"`);
  return { index, count };
}

/** `--param k=v`, repeatable. */
export function paramOptions(list: unknown): Record<string, string> {
  const params: Record<string, string> = {};
  for (const item of (list as string[] | undefined) ?? []) {
    const eq = item.indexOf("=");
    if (eq <= 0) throw new UsageError(`--param expects key=value, got "${item}"`);
    params[item.slice(0, eq)] = item.slice(eq + 1);
  }
  return params;
}
