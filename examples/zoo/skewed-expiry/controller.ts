// A report generator run as two replicas, of which one at a time may run: the one that holds a lock, a ConfigMap
// whose annotations name the holder and say until when the lock is held. The holder extends the lock every two
// seconds; the other replica takes it over once it has lapsed. Every write of the lock carries the
// resourceVersion it was read at, so two replicas never both win one race.
//
// - buggy: the holder writes its expiry as a wall time (its clock's now plus the lock's time to live), and the other
//   replica judges it against its own wall clock. Two machines' clocks differ by seconds (NTP keeps them close, not
//   equal): with the holder's clock behind the other's by more than the time to live minus the renewal period, the
//   other replica finds a lock that is renewed every two seconds already expired, and takes it from a live holder.
// - fixed: the expiry is only a hint for people. The other replica measures the lock's age on its own monotonic
//   clock, from when it last saw the lock change (its resourceVersion), as client-go's leader election does: times
//   written by another machine are never compared with the local clock.
import { isApiError, monotonicNow, type KubeObject } from "settle";
import type { ActorContext } from "settle/sim";
import { configMapKind, namespace } from "../common.ts";

export const lockName = "report-generator-lock";
export const holderKey = "lock.zoo.settle.dev/holder";
export const expiresKey = "lock.zoo.settle.dev/expires-at";
/** How long a lock holds without renewal. */
export const lockTtlMs = 10_000;
/** How often every replica looks at the lock (the holder renews it then). */
export const renewPeriodMs = 2000;

const lockRef = { ...configMapKind, namespace, name: lockName };

/** What the fixed form remembers of the lock: the version it last saw and when (monotonic) it first saw it. */
interface Observed {
  resourceVersion: string | undefined;
  atMs: number;
}

function lockObject(holder: string, expiresAtMs: number, from?: KubeObject): KubeObject {
  const annotations = { ...from?.metadata.annotations, [holderKey]: holder, [expiresKey]: new Date(expiresAtMs).toISOString() };
  return { ...configMapKind, ...from, metadata: { ...from?.metadata, namespace, name: lockName, annotations } };
}

export async function runReplica(ctx: ActorContext, variant: string): Promise<void> {
  const me = ctx.name;
  let observed: Observed | undefined;
  /** Whether the lock, held by someone else, has lapsed: the one place the two forms differ. */
  const lapsed = (lock: KubeObject): boolean => {
    if (variant === "buggy") {
      // The bug: another machine's wall time against this machine's wall clock.
      const expiresAt = Date.parse(lock.metadata.annotations?.[expiresKey] ?? "");
      return !Number.isFinite(expiresAt) || expiresAt <= ctx.clock.now();
    }
    const now = monotonicNow(ctx.clock);
    const seen = observed !== undefined && observed.resourceVersion === lock.metadata.resourceVersion ? observed : { resourceVersion: lock.metadata.resourceVersion, atMs: now };
    observed = seen;
    return now - seen.atMs >= lockTtlMs;
  };
  for (;;) {
    try {
      let lock: KubeObject | undefined;
      try {
        lock = await ctx.client.get<KubeObject>(lockRef);
      } catch (error) {
        if (!isApiError(error) || error.code !== 404) throw error;
      }
      if (lock === undefined) {
        await ctx.client.create({ object: lockObject(me, ctx.clock.now() + lockTtlMs) });
        ctx.log("lock created", { holder: me });
      } else if (lock.metadata.annotations?.[holderKey] === me) {
        await ctx.client.update({ object: lockObject(me, ctx.clock.now() + lockTtlMs, lock) });
      } else if (lapsed(lock)) {
        await ctx.client.update({ object: lockObject(me, ctx.clock.now() + lockTtlMs, lock) });
        ctx.log("lock taken over", { from: lock.metadata.annotations?.[holderKey] ?? "", to: me });
      }
    } catch (error) {
      // A lost race (409), an existing lock (409), throttling or a server error: look again next period.
      if (!isApiError(error)) throw error;
    }
    await ctx.clock.sleep(renewPeriodMs);
  }
}
