import { test } from "node:test";
import assert from "node:assert/strict";
import { LeaderElector } from "../../src/runtime/leader.ts";
import type { Lease } from "../../src/runtime/leader.ts";
import { Action, defineController, runController } from "../../src/runtime/controller.ts";
import { internalError } from "../../src/api/errors.ts";
import { ProcessExit } from "../../src/api/exit.ts";
import { FakeClient } from "./fake-client.ts";
import { ManualClock, settle } from "./manual-clock.ts";

const lease = { namespace: "kube-system", name: "ctl" };
const timing = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 };

async function holder(client: FakeClient): Promise<string | undefined> {
  const object = await client.get<Lease>({ apiVersion: "coordination.k8s.io/v1", kind: "Lease", ...lease });
  return object.spec?.holderIdentity;
}

test("leader election refuses a renew deadline longer than the lease duration", () => {
  assert.throws(
    () => new LeaderElector({ client: new FakeClient(), clock: new ManualClock(), lease, identity: "a", leaseDurationMs: 5000, renewDeadlineMs: 6000 }),
    /leader-lease-duration-exceeds-renew-deadline/,
  );
});

test("the first candidate creates the lease and the second waits while it is renewed", async () => {
  const client = new FakeClient();
  const clock = new ManualClock();
  const a = new LeaderElector({ client, clock, lease, identity: "a", ...timing });
  const b = new LeaderElector({ client, clock, lease, identity: "b", ...timing });
  assert.equal(await a.acquire(), true);
  const holdA = a.hold();
  let bAcquired = false;
  void b.acquire().then((ok) => (bAcquired = ok));
  await clock.advance(60_000);
  assert.equal(bAcquired, false);
  assert.equal(a.isLeader(), true);
  assert.equal(await holder(client), "a");
  a.stop();
  b.stop();
  assert.equal(await holdA, "stopped");
});

test("leadership hands over on lease expiry when the holder stops renewing", async () => {
  const client = new FakeClient();
  const clock = new ManualClock();
  const a = new LeaderElector({ client, clock, lease, identity: "a", ...timing });
  const b = new LeaderElector({ client, clock, lease, identity: "b", ...timing });
  assert.equal(await a.acquire(), true);
  const start = clock.now();
  a.stop(); // a crashed: it neither renews nor releases
  let acquiredAtMs: number | undefined;
  void b.acquire().then(() => (acquiredAtMs = clock.now() - start));
  await clock.advance(30_000);
  assert.equal(await holder(client), "b");
  assert.ok(acquiredAtMs !== undefined && acquiredAtMs >= timing.leaseDurationMs, `took over at ${acquiredAtMs}`);
  const object = await client.get<Lease>({ apiVersion: "coordination.k8s.io/v1", kind: "Lease", ...lease });
  assert.equal(object.spec?.leaseTransitions, 1);
  b.stop();
});

test("a leader that cannot renew within the renew deadline steps down", async () => {
  const client = new FakeClient();
  const clock = new ManualClock();
  const a = new LeaderElector({ client, clock, lease, identity: "a", ...timing });
  assert.equal(await a.acquire(), true);
  for (let i = 0; i < 20; i++) client.failNext("get", internalError("apiserver down"));
  const held = a.hold();
  await clock.advance(12_000);
  assert.equal(await held, "lost");
  assert.equal(a.isLeader(), false);
});

test("release frees the lease so another candidate takes it without waiting for expiry", async () => {
  const client = new FakeClient();
  const clock = new ManualClock();
  const a = new LeaderElector({ client, clock, lease, identity: "a", ...timing });
  const b = new LeaderElector({ client, clock, lease, identity: "b", ...timing });
  await a.acquire();
  await a.release();
  assert.equal(await b.acquire(), true);
  assert.equal(await holder(client), "b");
});

test("a controller that loses its lease stops its workers and the standby takes over", async () => {
  const client = new FakeClient();
  const clock = new ManualClock();
  await client.create({ object: { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "x", namespace: "ns" } } });
  const reconciledBy: string[] = [];
  const make = (identity: string) =>
    runController(
      defineController({
        name: "elected",
        for: { apiVersion: "v1", kind: "ConfigMap" },
        reconcile: () => (reconciledBy.push(identity), Action.requeueAfter(1000)),
      }),
      { client, clock, leaderElection: { lease, identity, ...timing } },
    );
  const a = make("a");
  await settle();
  const b = make("b");
  await clock.advance(5000);
  assert.ok(reconciledBy.length > 0);
  assert.deepEqual(reconciledBy.filter((id) => id !== "a"), [], "only the leader reconciles");
  // a's renewals fail from now on; it must step down within its renew deadline, then b takes over.
  const original = client.update.bind(client);
  client.update = async (options) => {
    if (options.object.kind === "Lease" && (options.object["spec"] as { holderIdentity?: string }).holderIdentity === "a") {
      throw internalError("a is partitioned");
    }
    return original(options);
  };
  await clock.advance(30_000);
  // Like a real controller process, the one that lost its lease exits (exit code 1) to be restarted.
  await assert.rejects(a.done, (error: unknown) => error instanceof ProcessExit && error.exitCode === 1 && /lost the leader-election lease kube-system\/ctl/.test(error.message));
  assert.equal(a.isLeader(), false);
  assert.equal(b.isLeader(), true);
  const count = reconciledBy.length;
  await clock.advance(5000);
  assert.deepEqual(reconciledBy.slice(count).filter((id) => id !== "b"), []);
  assert.ok(reconciledBy.length > count, "b reconciles after taking over");
  b.stop();
});

test("stopping an elected controller frees its lease for the standby at once", async () => {
  const client = new FakeClient();
  const clock = new ManualClock();
  const make = (identity: string) =>
    runController(
      defineController({ name: "elected", for: { apiVersion: "v1", kind: "ConfigMap" }, reconcile: () => Action.awaitChange() }),
      { client, clock, leaderElection: { lease, identity, ...timing } },
    );
  const a = make("a");
  await settle();
  const b = make("b");
  await clock.advance(3000);
  assert.equal(a.isLeader(), true);
  a.stop();
  assert.equal(await a.done, "stopped");
  assert.equal(await holder(client), "");
  await clock.advance(2500);
  assert.equal(b.isLeader(), true, "b took over within one retry period, not after the lease duration");
  b.stop();
});
