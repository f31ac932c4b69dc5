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

export function startProcess(command: readonly string[], env: NodeJS.ProcessEnv): ControllerProcess {
  const [file, ...args] = command;
  if (file === undefined) throw new Error("drill: no controller command given after --");
  const child: ChildProcess = spawn(file, args, { detached: true, env, stdio: ["ignore", "pipe", "pipe"] });
  const output: string[] = [];
  const collect = (chunk: Buffer) => {
    for (const line of chunk.toString("utf8").split("\n")) {
      if (line.length === 0) continue;
      output.push(line);
      if (output.length > outputLinesMax) output.shift();
    }
  };
  child.stdout?.on("data", collect);
  child.stderr?.on("data", collect);
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
      await exited;
    },
  };
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
