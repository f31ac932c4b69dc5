// The kernel behind an actor's context, for actors built on the kernel itself rather than on the `Client`: a
// module's in-process wire (src/module/) makes its own request, response, watch and timer steps. Kept under a
// symbol, not in the public `ActorContext`: scenario code has no business with the kernel.
import type { ActorState, Kernel } from "./kernel.ts";
import type { ActorContext } from "./types.ts";
import type { Rng } from "./rng.ts";

export const kernelAccessKey: unique symbol = Symbol("settle.kernelAccess");

export interface KernelAccess {
  readonly kernel: Kernel;
  readonly state: ActorState;
  readonly incarnation: number;
  /** A stream of its own: `<label>/<actor>/<incarnation>`, independent of every other. */
  rng(label: string): Rng;
}

/** The kernel behind a context the simulator made; throws for any other context. */
export function kernelAccess(context: ActorContext): KernelAccess {
  const access = (context as unknown as Record<symbol, KernelAccess | undefined>)[kernelAccessKey];
  if (access === undefined) throw new Error("settle: this actor needs the simulator's own context");
  return access;
}

/**
 * Work some actors need done before any step runs, once per process (a module actor's warm-up of Node's bundled
 * fetch, whose first use compiles its parser asynchronously): `Simulation.run` awaits it first, so no step ever
 * waits on it and every run sees the same process.
 */
const preparations = new Set<Promise<void>>();

export function prepareBeforeRuns(work: Promise<void>): void {
  preparations.add(work);
  void work.finally(() => preparations.delete(work));
}

/** Undefined when nothing is pending (no await then: a run's timing stays as it was). */
export function pendingPreparations(): Promise<void> | undefined {
  if (preparations.size === 0) return undefined;
  return Promise.all([...preparations]).then(() => undefined);
}
