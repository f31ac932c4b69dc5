// Leader election on a `coordination.k8s.io/v1` Lease, as client-go's leaderelection package does it:
// a candidate takes the lease when it is free or expired, renews it every `retryPeriodMs`, and counts itself
// lost when it has not renewed for `renewDeadlineMs` or sees another holder. Expiry is judged on the
// candidate's own clock from when it last *observed* the lease change (not from `renewTime`, which another
// machine wrote), so clock skew between candidates does not matter.
import { AssertionError, assert } from "../api/assert.ts";
import type { Client } from "../api/client.ts";
import type { Clock } from "../api/clock.ts";
import { formatMicroTime, monotonicNow } from "../api/clock.ts";
import { isAlreadyExists, isNotFound } from "../api/errors.ts";
import type { KubeObject } from "../api/object.ts";
import { silentLog } from "./log.ts";
import type { Log } from "./log.ts";

export interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
}

export interface Lease extends KubeObject {
  spec?: LeaseSpec;
}

export interface LeaderElectionConfig {
  lease: { namespace: string; name: string };
  /** Unique among candidates, e.g. the pod name. */
  identity: string;
  /** How long a lease holds after its last observed renewal. Default 15,000 ms (client-go's usual). */
  leaseDurationMs?: number;
  /** A leader that has not renewed for this long steps down. Default 10,000 ms. */
  renewDeadlineMs?: number;
  /** Interval between attempts to acquire or renew. Default 2,000 ms. */
  retryPeriodMs?: number;
}

export interface LeaderElectorOptions extends LeaderElectionConfig {
  client: Client;
  clock: Clock;
  log?: Log;
}

export const leaderElectionDefaults = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 } as const;

const leaseKind = { apiVersion: "coordination.k8s.io/v1", kind: "Lease" } as const;

export type HoldResult = "lost" | "stopped";

export class LeaderElector {
  readonly identity: string;
  private readonly options: LeaderElectorOptions;
  private readonly leaseDurationMs: number;
  private readonly renewDeadlineMs: number;
  private readonly retryPeriodMs: number;
  private readonly log: Log;
  private readonly abort = new AbortController();
  private leader = false;
  private stopped = false;
  private lastRenewMs = 0;
  /** The lease as last seen, and when (on our clock) it last changed. */
  private observed: { resourceVersion: string | undefined; atMs: number } | undefined;
  private observedHolder: string | undefined;

  constructor(options: LeaderElectorOptions) {
    this.options = options;
    this.identity = options.identity;
    this.leaseDurationMs = options.leaseDurationMs ?? leaderElectionDefaults.leaseDurationMs;
    this.renewDeadlineMs = options.renewDeadlineMs ?? leaderElectionDefaults.renewDeadlineMs;
    this.retryPeriodMs = options.retryPeriodMs ?? leaderElectionDefaults.retryPeriodMs;
    this.log = options.log ?? silentLog;
    assert(options.identity.length > 0, "leader-identity-given");
    assert(this.leaseDurationMs > this.renewDeadlineMs, "leader-lease-duration-exceeds-renew-deadline");
    assert(this.renewDeadlineMs > this.retryPeriodMs, "leader-renew-deadline-exceeds-retry-period");
    assert(this.retryPeriodMs > 0, "leader-retry-period-positive");
  }

  isLeader(): boolean {
    return this.leader;
  }

  /** Tries every `retryPeriodMs` until it holds the lease (true) or is stopped first (false). */
  async acquire(): Promise<boolean> {
    while (!this.stopped) {
      if (await this.tryAcquireOrRenew()) {
        this.leader = true;
        this.lastRenewMs = monotonicNow(this.options.clock);
        this.log("leader election: acquired", { lease: this.options.lease.name, identity: this.identity });
        return true;
      }
      if (!(await this.pause())) break;
    }
    return false;
  }

  /** Renews until the lease is lost or the elector stopped; `isLeader()` is false afterwards. */
  async hold(): Promise<HoldResult> {
    assert(this.leader, "leader-hold-after-acquire");
    while (!this.stopped) {
      if (!(await this.pause())) break;
      // A candidate that slept through its deadline (a pause, a slow machine) must not renew blindly:
      // another may already have taken the lease.
      if (monotonicNow(this.options.clock) - this.lastRenewMs > this.renewDeadlineMs) return this.lose("renew deadline passed");
      if (await this.tryAcquireOrRenew()) {
        this.lastRenewMs = monotonicNow(this.options.clock);
        continue;
      }
      if (this.observedHolder !== undefined && this.observedHolder !== this.identity) return this.lose("another holder");
      if (monotonicNow(this.options.clock) - this.lastRenewMs >= this.renewDeadlineMs) return this.lose("renew deadline passed");
    }
    this.leader = false;
    return "stopped";
  }

  /** Stops acquiring and renewing. Idempotent. */
  stop(): void {
    this.stopped = true;
    this.abort.abort(new Error("leader elector stopped"));
  }

  /** Best effort: frees the lease so another candidate need not wait for it to expire. */
  async release(): Promise<void> {
    if (!this.leader && this.observedHolder !== this.identity) return;
    this.leader = false;
    try {
      const lease = await this.options.client.get<Lease>({ ...leaseKind, ...this.options.lease });
      if (lease.spec?.holderIdentity !== this.identity) return;
      const spec: LeaseSpec = { ...lease.spec, holderIdentity: "", leaseDurationSeconds: 1 };
      await this.options.client.update({ object: { ...lease, spec } });
    } catch (error) {
      if (error instanceof AssertionError) throw error;
      this.log("leader election: release failed", { error: String(error) });
    }
  }

  private lose(why: string): HoldResult {
    this.leader = false;
    this.log("leader election: lost", { lease: this.options.lease.name, identity: this.identity, why });
    return "lost";
  }

  /** Sleeps one retry period; false when stopped meanwhile. */
  private async pause(): Promise<boolean> {
    try {
      await this.options.clock.sleep(this.retryPeriodMs, { signal: this.abort.signal });
      return !this.stopped;
    } catch {
      return false;
    }
  }

  private observe(lease: Lease): void {
    const resourceVersion = lease.metadata.resourceVersion;
    if (this.observed?.resourceVersion !== resourceVersion) {
      this.observed = { resourceVersion, atMs: monotonicNow(this.options.clock) };
    }
    this.observedHolder = lease.spec?.holderIdentity || undefined;
  }

  private desiredSpec(current: LeaseSpec | undefined): LeaseSpec {
    const nowText = formatMicroTime(this.options.clock.now());
    const ours = current?.holderIdentity === this.identity;
    return {
      holderIdentity: this.identity,
      leaseDurationSeconds: Math.ceil(this.leaseDurationMs / 1000),
      acquireTime: ours && current?.acquireTime !== undefined ? current.acquireTime : nowText,
      renewTime: nowText,
      leaseTransitions: ours ? (current?.leaseTransitions ?? 0) : (current?.leaseTransitions ?? -1) + 1,
    };
  }

  /** One attempt: true when we hold the lease afterwards. Operating errors count as a failed attempt. */
  private async tryAcquireOrRenew(): Promise<boolean> {
    const { client, lease: ref } = this.options;
    try {
      let lease: Lease;
      try {
        lease = await client.get<Lease>({ ...leaseKind, ...ref });
      } catch (error) {
        if (!isNotFound(error)) throw error;
        const created = await client.create<Lease>({
          object: { ...leaseKind, metadata: { namespace: ref.namespace, name: ref.name }, spec: this.desiredSpec(undefined) },
        });
        this.observe(created);
        return true;
      }
      this.observe(lease);
      const holder = lease.spec?.holderIdentity;
      const observedAtMs = (this.observed as { atMs: number }).atMs;
      const expired = observedAtMs + this.leaseDurationMs <= monotonicNow(this.options.clock);
      if (holder && holder !== this.identity && !expired) return false;
      const updated = await client.update<Lease>({ object: { ...lease, spec: this.desiredSpec(lease.spec) } });
      this.observe(updated);
      return true;
    } catch (error) {
      if (error instanceof AssertionError) throw error;
      // Conflict (another candidate won the race), AlreadyExists, NotFound, 5xx, timeouts: try again later.
      if (!isAlreadyExists(error)) this.log("leader election: attempt failed", { error: String(error) });
      return false;
    }
  }
}
