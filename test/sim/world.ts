// A small multi-actor world for the simulator's tests: counters bumped with optimistic concurrency by two
// writers, and a watcher that follows them.
import { isApiError, isConflict, isNotFound } from "../../src/api/errors.ts";
import type { KubeObject } from "../../src/api/object.ts";
import { createSimulation, defineActor, type Simulation } from "../../src/sim/index.ts";
import type { SimulationOptions } from "../../src/sim/types.ts";

export const counterRef = { apiVersion: "v1", kind: "ConfigMap", namespace: "ns", name: "counter" };

export function counter(value: number): KubeObject {
  return { apiVersion: "v1", kind: "ConfigMap", metadata: { namespace: "ns", name: "counter" }, data: { value: String(value) } };
}

/** Bumps the counter `times` times, retrying on conflicts, with a short sleep between bumps. */
export function writer(name: string, times: number) {
  return defineActor({
    name,
    async start(ctx) {
      for (let i = 0; i < times; i++) {
        for (;;) {
          try {
            const current = await ctx.client.get<KubeObject>(counterRef);
            const data = current.data as { value: string };
            current.data = { value: String(Number(data.value) + 1) };
            await ctx.client.update({ object: current });
            break;
          } catch (error) {
            if (!isApiError(error)) throw error;
            ctx.log(isConflict(error) ? "conflict" : "request failed", { attempt: i, code: error.code });
            await ctx.clock.sleep(5);
          }
        }
        await ctx.clock.sleep(10);
      }
    },
  });
}

/** Follows the counter like an informer (list, watch, resume, relist on 410) until it reaches `target`. */
export function watcher(name: string, target: number) {
  return defineActor({
    name,
    async start(ctx) {
      const kind = { apiVersion: "v1", kind: "ConfigMap", namespace: "ns" };
      let revision: string | undefined;
      let value = 0;
      const seen = async (object: KubeObject) => {
        value = Number((object.data as { value: string }).value);
        await ctx.external<string>("last-seen").write(String(value));
      };
      while (value < target) {
        try {
          if (revision === undefined) {
            const list = await ctx.client.list({ ...kind, resourceVersion: "0" });
            for (const item of list.items) await seen(item);
            revision = list.metadata.resourceVersion;
            continue;
          }
          for await (const event of ctx.client.watch({ ...kind, resourceVersion: revision })) {
            revision = event.object.metadata.resourceVersion;
            await seen(event.object);
            if (value >= target) break;
          }
        } catch (error) {
          if (!isApiError(error)) throw error;
          if (error.code === 410) revision = undefined;
          ctx.log("watch failed", { code: error.code });
          await ctx.clock.sleep(5);
        }
      }
    },
  });
}

export function smallWorld(options: SimulationOptions = {}): Simulation {
  const sim = createSimulation(options);
  sim.store.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: "ns" } });
  sim.store.create(counter(0));
  sim.defineExternal("last-seen", "0");
  sim.addActor(writer("alice", 3));
  sim.addActor(writer("bob", 3));
  sim.addActor(watcher("carol", 6));
  return sim;
}

export async function ignoreNotFound<T>(promise: Promise<T>): Promise<T | undefined> {
  try {
    return await promise;
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
}
