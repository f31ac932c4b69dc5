// esbuild's bundle of a module, made synchronously: `moduleActor` loads its module when it is called, and esbuild
// runs plugins (the per-file rewrite of rewrite.ts) only in its asynchronous API. So the build runs on a worker
// thread of its own while this thread waits on a shared word; the worker posts the outcome on a message port and
// wakes it. A bundling happens once per module version per process (and not again in an exploration's workers).
import { MessageChannel, receiveMessageOnPort, Worker } from "node:worker_threads";
import type { Message } from "esbuild";
import { assert } from "../api/assert.ts";

/** What the worker hands back: esbuild's output, or its errors. */
export interface BundleOutcome {
  readonly text?: string;
  readonly inputs?: number;
  readonly exports?: readonly string[];
  /** esbuild's errors: a failed build (a form settle cannot run among them, rewrite.ts). */
  readonly errors: readonly Message[];
  /** A failure that is not esbuild's (the worker itself). */
  readonly failure?: string;
}

/** The request the worker gets. */
export interface BundleRequest {
  readonly absolute: string;
  readonly esbuild: string;
  readonly signal: Int32Array;
}

/**
 * A build that takes longer than this is taken as hung. esbuild bundles client-node's 918 files in about 1 s on an idle
 * machine, but tests run many processes at once on two cores (a load of 17 made it take minutes), and the waiting
 * thread cannot tell a slow build from a dead thread: the bound is only there so that a dead thread ends the wait.
 */
const BUNDLE_WAIT_MS_MAX = 15 * 60_000;

function workerEntry(): URL {
  return import.meta.url.endsWith(".ts") ? new URL("./bundle-worker-entry.mjs", import.meta.url) : new URL("./bundle-worker.js", import.meta.url);
}

/** Bundles `absolute` (an existing file) on a worker thread, waiting for it. */
export function bundleSync(absolute: string, esbuild: string): BundleOutcome {
  const signal = new Int32Array(new SharedArrayBuffer(4));
  const { port1, port2 } = new MessageChannel();
  const request: BundleRequest = { absolute, esbuild, signal };
  // No execArgv of this process: under `node -e SCRIPT` the worker would run SCRIPT again instead of its file.
  const worker = new Worker(workerEntry(), { workerData: { request, port: port2 }, transferList: [port2], execArgv: [], stdout: false, stderr: false });
  try {
    const woke = Atomics.wait(signal, 0, 0, BUNDLE_WAIT_MS_MAX);
    const message = receiveMessageOnPort(port1);
    if (message === undefined) return { errors: [], failure: woke === "timed-out" ? `esbuild did not finish within ${BUNDLE_WAIT_MS_MAX / 60_000} minutes` : "the bundling thread ended without an answer" };
    const outcome = message.message as BundleOutcome;
    assert(outcome.text !== undefined || outcome.errors.length > 0 || outcome.failure !== undefined, "a bundle or a reason");
    return outcome;
  } finally {
    port1.close();
    void worker.terminate();
  }
}
