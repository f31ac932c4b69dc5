// The controller under drill runs as a real process group: it is started detached (its own group), and a
// kill goes to the whole group, so a wrapper (`tsx`, `npm run`, `go run`) cannot leave an orphan that keeps
// writing. "Dead" means no process of the group is left.
import { spawn, type ChildProcess } from "node:child_process";
import { realClock } from "../api/clock.ts";

export interface ControllerProcess {
  readonly pid: number;
  /** Output lines (stdout and stderr), last `outputLinesMax` kept, for reports. */
  readonly output: string[];
  /** SIGKILL to the whole group; resolves once no process of the group is left. */
  kill(): Promise<void>;
  /** Resolves with the exit code (or signal) when the leader exits. */
  readonly exited: Promise<string>;
}

const outputLinesMax = 200;
const deathPollMs = 10;
const deathWaitMsMax = 10_000;

/**
 * Process groups started and not yet seen dead. If the drill itself ends (its own exit, Ctrl-C, SIGTERM) they are
 * killed synchronously, so a drill never leaves a controller running that keeps writing to a port someone else
 * may reuse.
 */
const liveGroups = new Set<number>();
let exitHooksInstalled = false;

function killLiveGroups(): void {
  for (const pgid of liveGroups) signalGroup(pgid, "SIGKILL");
  liveGroups.clear();
}

function installExitHooks(): void {
  if (exitHooksInstalled) return;
  exitHooksInstalled = true;
  process.on("exit", killLiveGroups);
  for (const [signal, code] of [["SIGINT", 130], ["SIGTERM", 143], ["SIGHUP", 129]] as const) {
    process.on(signal, () => {
      killLiveGroups();
      process.stderr.write(`settle drill: ${signal}: killed the controller's process group(s)\n`);
      process.exit(code);
    });
  }
}

/** The process groups the drill has running now (for tests of the exit hooks). */
export function liveProcessGroups(): number[] {
  return [...liveGroups];
}

export interface StartProcessOptions {
  /** Prefix of every output line, e.g. `[1] ` for the first restart. Default none. */
  linePrefix?: string;
  /** Receives every output line as it arrives (the drill's per-kill-point log). */
  onLine?(line: string): void;
  /** Working directory. Default: this process's. */
  cwd?: string;
}

export function startProcess(command: readonly string[], env: NodeJS.ProcessEnv, options: StartProcessOptions = {}): ControllerProcess {
  const [file, ...args] = command;
  if (file === undefined) throw new Error("drill: no controller command given after --");
  installExitHooks();
  const child: ChildProcess = spawn(file, args, { detached: true, env, stdio: ["ignore", "pipe", "pipe"], ...(options.cwd === undefined ? {} : { cwd: options.cwd }) });
  if (child.pid !== undefined) liveGroups.add(child.pid);
  const output: string[] = [];
  const prefix = options.linePrefix ?? "";
  const keep = (text: string) => {
    if (text.length === 0) return;
    const line = `${prefix}${text}`;
    output.push(line);
    options.onLine?.(line);
    if (output.length > outputLinesMax) output.shift();
  };
  // One splitter per stream: a line the controller wrote in two pieces is one line, and stdout's half-written
  // line never takes a piece of stderr's.
  for (const stream of [child.stdout, child.stderr]) {
    if (stream === null) continue;
    const lines = new LineSplitter(keep);
    stream.on("data", (chunk: Buffer) => lines.push(chunk));
    stream.on("end", () => lines.end());
  }
  const exited = new Promise<string>((resolve) => {
    child.on("exit", (code, signal) => resolve(signal ?? String(code)));
    child.on("error", (error) => resolve(`failed to start: ${error.message}`));
  });
  const pid = child.pid ?? -1;
  return {
    pid,
    output,
    exited,
    async kill() {
      if (pid <= 0) return;
      signalGroup(pid, "SIGKILL");
      const deadline = realClock.now() + deathWaitMsMax;
      while (groupAlive(pid)) {
        if (realClock.now() > deadline) throw new Error(`drill: process group ${pid} survived SIGKILL for ${deathWaitMsMax} ms`);
        await realClock.sleep(deathPollMs);
      }
      liveGroups.delete(pid);
      await exited;
    },
  };
}

/** Bytes of a line kept waiting for its newline; a longer line is passed on in pieces of this size. */
export const partialLineBytesMax = 64 * 1024;

/**
 * Splits a stream's chunks into lines at newlines, wherever the writer's writes split (an unbuffered Python
 * process writes `level` and ` starting` apart). The text after the last newline waits for the next chunk, or
 * the stream's end; UTF-8 characters split across chunks are joined first.
 */
export class LineSplitter {
  private partial = "";
  private readonly decoder = new TextDecoder("utf-8");

  constructor(private readonly onLine: (line: string) => void) {}

  push(chunk: Uint8Array): void {
    const lines = (this.partial + this.decoder.decode(chunk, { stream: true })).split("\n");
    this.partial = lines.pop()!;
    for (const line of lines) this.onLine(line.endsWith("\r") ? line.slice(0, -1) : line);
    while (this.partial.length > partialLineBytesMax) {
      this.onLine(this.partial.slice(0, partialLineBytesMax));
      this.partial = this.partial.slice(partialLineBytesMax);
    }
  }

  /** The stream ended: its last line, if it had no newline. */
  end(): void {
    const rest = this.partial + this.decoder.decode();
    this.partial = "";
    if (rest.length > 0) this.onLine(rest);
  }
}

function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ESRCH") throw error;
  }
}

function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}
