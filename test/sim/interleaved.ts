// Two actors whose steps interleave (timers, requests, failed requests): for tests that compare the traces of the same
// run made in different ways, here and in a child process.
import { defineActor, type Simulation } from "../../src/sim/index.ts";

const missing = { apiVersion: "v1", kind: "ConfigMap", namespace: "ns", name: "missing" };

export function interleaved(s: Simulation): void {
  s.addActor(
    defineActor({
      name: "sleeper",
      async start(ctx) {
        for (let i = 0; i < 100; i++) await ctx.clock.sleep(1);
      },
    }),
  );
  s.addActor(
    defineActor({
      name: "getter",
      async start(ctx) {
        for (let i = 0; i < 30; i++) await ctx.client.get(missing).catch(() => ctx.clock.sleep(3));
      },
    }),
  );
}
