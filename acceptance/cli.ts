// The command line as a user types it, for the acceptance sweeps: `settle ...` run in a fresh working
// directory (removed after the file's tests), with its exit code and both streams.
import { after } from "node:test";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export const repo = fileURLToPath(new URL("../", import.meta.url));
const bin = join(repo, "bin", "settle.js");

export interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** A fresh working directory and a `settle(args)` that runs there. */
export function settleIn(prefix: string): { root: string; settle(args: string[]): Promise<Ran> } {
  const root = mkdtempSync(join(tmpdir(), prefix));
  after(() => rmSync(root, { recursive: true, force: true }));
  const settle = (args: string[]) =>
    new Promise<Ran>((resolve, reject) => {
      const child = spawn(process.execPath, [bin, ...args], { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
      let stdout = "";
      let stderr = "";
      child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
      child.on("error", reject);
      child.on("close", (code) => resolve({ code, stdout, stderr }));
    });
  return { root, settle };
}
