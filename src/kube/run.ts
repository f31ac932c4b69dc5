// Running a settle controller as a real process: a client from the kubeconfig, real time, JSON logs on
// stderr, and a graceful stop on SIGTERM or SIGINT (in-flight reconciles finish, the Lease is released).
import { realClock } from "../api/clock.ts";
import { runController as runInProcess, type Controller, type ControllerHandle, type StopReason } from "../runtime/controller.ts";
import type { LeaderElectionConfig } from "../runtime/leader.ts";
import type { Log } from "../runtime/log.ts";
import type { KubeObject } from "../api/object.ts";
import { createKubeClient, type KubeClientOptions } from "./client.ts";

export interface KubeRunOptions extends KubeClientOptions {
  /** Run workers only while this process holds the Lease. */
  leaderElection?: LeaderElectionConfig;
  /** Default: one JSON object per line on stderr. */
  log?: Log;
  /** Stop on these signals. Default SIGTERM and SIGINT. */
  signals?: NodeJS.Signals[];
}

/** A JSON-lines logger: `{"time":...,"msg":...,...fields}` per line on stderr. */
export function jsonLog(component: string): Log {
  return (msg, fields) => {
    process.stderr.write(`${JSON.stringify({ time: new Date(realClock.now()).toISOString(), component, msg, ...fields })}\n`);
  };
}

/** Runs `controller` against the API server of a kubeconfig until a signal (or leadership loss) stops it. */
export async function runControllerProcess<T extends KubeObject>(controller: Controller<T>, options: KubeRunOptions = {}): Promise<StopReason> {
  const log = options.log ?? jsonLog(controller.name);
  const handle: ControllerHandle = runInProcess(controller, {
    client: createKubeClient(options),
    clock: realClock,
    log,
    ...(options.leaderElection === undefined ? {} : { leaderElection: options.leaderElection }),
  });
  const signals = options.signals ?? ["SIGTERM", "SIGINT"];
  const stop = (signal: NodeJS.Signals) => {
    log("stopping", { signal });
    handle.stop();
  };
  for (const signal of signals) process.once(signal, stop);
  try {
    const reason = await handle.done;
    log("stopped", { reason });
    return reason;
  } finally {
    for (const signal of signals) process.off(signal, stop);
  }
}
