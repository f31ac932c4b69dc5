// Wall clocks that disagree (issue 47): a lock whose expiry one machine writes as a wall time and another judges
// against its own wall clock. Two replicas of a report generator share one lock (a ConfigMap); nobody acts on them,
// the replicas only hold, renew and take over the lock, so the run is about the lock alone.
import { always, defineActor, eventually, scenario, type StepWrite, type WorldView } from "settle/sim";
import type { KubeObject } from "settle";
import { configMapKind, namespace, namespaceObject, zooTiming } from "../common.ts";
import { holderKey, lockName, lockTtlMs, runReplica } from "./controller.ts";

const replicas = ["replica-a", "replica-b"];

function lock(view: WorldView): KubeObject | undefined {
  return view.get({ ...configMapKind, namespace, name: lockName });
}

function isLockWrite(write: StepWrite): boolean {
  return write.object.kind === "ConfigMap" && write.object.metadata.namespace === namespace && write.object.metadata.name === lockName;
}

/**
 * A lock changes hands only after its holder has left it unrenewed for the time to live, counted on the API
 * server's clock (the simulation's: the times at which the store applied the writes), which no replica's clock
 * fault moves. The predicate follows the lock's writes through the run: the holder and when it last wrote the lock.
 */
function takeoverOnlyWhenLapsed() {
  let holder: string | undefined;
  let writtenAtMs = 0;
  return always("the lock changes hands only after its holder left it unrenewed for its time to live", (view, last) => {
    let held = true;
    for (const write of last.writes) {
      if (!isLockWrite(write)) continue;
      const next = write.type === "deleted" ? undefined : write.object.metadata.annotations?.[holderKey];
      if (holder !== undefined && next !== undefined && next !== holder && view.now() - writtenAtMs < lockTtlMs) held = false;
      holder = next;
      writtenAtMs = view.now();
    }
    return held;
  });
}

export default scenario({
  name: "zoo-skewed-expiry",
  description: "A lock's expiry written as one machine's wall time and judged against another machine's wall clock.",
  variants: {
    buggy: { expect: "finding", description: "the other replica compares the holder's expires-at with its own wall clock" },
    fixed: { expect: "ok", description: "the other replica measures the lock's age on its monotonic clock from when it last saw the lock change" },
  },
  setup: (_ctx, world) => {
    world.create(namespaceObject());
  },
  actors: ({ variant }) => replicas.map((name) => defineActor({ name, start: (ctx) => runReplica(ctx, variant) })),
  workloads: {
    // Nobody acts on the replicas: the clocks of their machines are the whole story.
    "two-replicas": async (ctx) => {
      await ctx.clock.sleep(1000);
    },
  },
  timing: { ...zooTiming, heartbeats: [{ kind: "ConfigMap", namespace, name: lockName }] },
  summary: (view) => `lock held by ${lock(view)?.metadata.annotations?.[holderKey] ?? "nobody"}`,
  properties: () => [takeoverOnlyWhenLapsed(), eventually("the lock has a holder", (view) => lock(view)?.metadata.annotations?.[holderKey] !== undefined)],
});
