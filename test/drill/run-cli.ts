// Runs the built command line (bin/settle.js, so `npm run build` first) and collects what it printed.
import { spawn } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const repo = fileURLToPath(new URL("../..", import.meta.url));

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `settle ...args` in `cwd`; resolves once it exits, with its exit code and everything it wrote. */
export function runCli(args: readonly string[], cwd: string): Promise<CliResult> {
  const child = spawn(process.execPath, [join(repo, "bin/settle.js"), ...args], { cwd, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
  child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
  return new Promise((resolve) => child.on("exit", (code) => resolve({ code, stdout, stderr })));
}
