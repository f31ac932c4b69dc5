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
