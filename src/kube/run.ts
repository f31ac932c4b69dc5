// Running a settle controller as a real process: a client from the kubeconfig, real time, JSON logs on
// stderr, and a graceful stop on SIGTERM or SIGINT (in-flight reconciles finish, the Lease is released).
// A lost leader-election lease ends the process with exit code 1, as client-go and controller-runtime
// processes do, so the supervisor (the kubelet, systemd) restarts it and it campaigns again from scratch.
import { realClock } from "../api/clock.ts";
import { ProcessExit } from "../api/exit.ts";
import { runController as runInProcess, type Controller, type ControllerHandle, type RunOptions, type StopReason } from "../runtime/controller.ts";
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
  /** Ends the process on a `ProcessExit` (a lost lease). Default `process.exit`; tests replace it. */
  exit?: (code: number) => void;
}

/** The options of a controller whose reconcilers use `ctx.context`: the clients of the outside systems. */
export type KubeRunOptionsWith<X> = KubeRunOptions & Pick<RunOptions<X>, "context">;

/** A JSON-lines logger: `{"time":...,"msg":...,...fields}` per line on stderr. */
export function jsonLog(component: string): Log {
  return (msg, fields) => {
    process.stderr.write(`${JSON.stringify({ time: new Date(realClock.now()).toISOString(), component, msg, ...fields })}\n`);
  };
}

/**
 * Runs `controller` against the API server of a kubeconfig until a signal stops it (resolves "stopped"). When
 * it loses its leader-election lease, the process exits with the `ProcessExit`'s code (1) once the reconciles
 * in flight have finished.
 */
export async function runControllerProcess<T extends KubeObject, X = undefined>(
  controller: Controller<T, X>,
  ...[options = {} as KubeRunOptionsWith<X>]: undefined extends X ? [options?: KubeRunOptionsWith<X>] : [options: KubeRunOptionsWith<X>]
): Promise<StopReason> {
  const log = options.log ?? jsonLog(controller.name);
  const runOptions = {
    client: createKubeClient(options),
    clock: realClock,
    log,
    ...(options.leaderElection === undefined ? {} : { leaderElection: options.leaderElection }),
    ...(options.context === undefined ? {} : { context: options.context }),
  } as RunOptions<X>;
  const handle: ControllerHandle = runInProcess(controller, runOptions);
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
  } catch (error) {
    if (!(error instanceof ProcessExit)) throw error;
    log("exiting", { reason: error.message, exitCode: error.exitCode });
    (options.exit ?? process.exit)(error.exitCode);
    // Only a replaced `exit` returns: the caller still learns that the run did not end normally.
    throw error;
  } finally {
    for (const signal of signals) process.off(signal, stop);
  }
}
