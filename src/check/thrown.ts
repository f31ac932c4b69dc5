// Exceptions thrown by a scenario's own code (a property, a workload, a setup) or an actor, described for
// reports: the message, the first stack frame in the user's code and the stack without settle's frames.
import { isAbsolute, relative } from "node:path";
import { fileURLToPath } from "node:url";
import type { ThrownError } from "./verdict.ts";

/** Frames kept of a stack: enough to follow a helper call or two, short enough for a report. */
export const stackFramesMax = 8;

/** settle's own source and compiled folders: frames in them are the harness, not the user's code. */
const ownRoots = [fileURLToPath(new URL("../", import.meta.url))];

/** Describes `error`, thrown by `source` (`property "x"`, `workload "main"`, `actor op`). */
export function describeThrown(source: string, error: unknown, cwd: string = process.cwd()): ThrownError {
  const message = error instanceof Error ? `${error.name === "Error" ? "" : `${error.name}: `}${error.message}` : `non-error thrown: ${String(error)}`;
  const frames = error instanceof Error && typeof error.stack === "string" ? userFrames(error.stack, cwd) : [];
  const thrown: ThrownError = { source, message, stack: frames.slice(0, stackFramesMax).map((f) => f.text) };
  const location = frames.find((f) => f.location !== undefined)?.location;
  if (location !== undefined) thrown.location = location;
  return thrown;
}

/** One line: `property "x" threw: boom (at scenario.ts:12:9)`. */
export function thrownLine(thrown: ThrownError): string {
  return `${thrown.source} threw: ${thrown.message}${thrown.location === undefined ? "" : ` (at ${thrown.location})`}`;
}

interface Frame {
  text: string;
  location?: string;
}

/** The stack's frames outside settle, node and node_modules, each with its `file:line:column` when it has one. */
function userFrames(stack: string, cwd: string): Frame[] {
  const frames: Frame[] = [];
  for (const line of stack.split("\n")) {
    const match = /^\s+at (?:(.*?) \()?(.+?):(\d+):(\d+)\)?$/.exec(line);
    if (match === null) continue;
    const file = fileOf(match[2]!);
    if (file === undefined || ownRoots.some((root) => file.startsWith(root)) || file.includes("/node_modules/")) continue;
    const shown = isAbsolute(file) && file.startsWith(cwd) ? relative(cwd, file) : file;
    const location = `${shown}:${match[3]}:${match[4]}`;
    frames.push({ text: match[1] === undefined ? location : `${match[1]} (${location})`, location });
  }
  return frames;
}

/** The file of a stack frame's location; undefined for node's own modules. A loader's `?query` is dropped. */
function fileOf(where: string): string | undefined {
  if (where.startsWith("node:") || where === "native" || where.startsWith("<anonymous>")) return undefined;
  const bare = where.replace(/\?.*$/, "");
  if (bare.startsWith("file://")) {
    try {
      return fileURLToPath(bare);
    } catch {
      return undefined;
    }
  }
  return isAbsolute(bare) ? bare : undefined;
}
