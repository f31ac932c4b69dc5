import { test } from "node:test";
import assert from "node:assert/strict";
import type { KubeObject } from "../../src/api/object.ts";
import { isApiError } from "../../src/api/errors.ts";
import { createSimulation, defineActor, defineFaultKind, fifoStrategy, type ReadyStep, type TraceRecord } from "../../src/sim/index.ts";
import { counter, counterRef, smallWorld, writer } from "./world.ts";

function sim(seed = 1) {
  const s = createSimulation({ seed });
  s.store.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: "ns" } });
  s.store.create(counter(0));
  return s;
}

const firstIndex = (trace: readonly TraceRecord[], pred: (r: TraceRecord) => boolean) => trace.findIndex(pred);

test("a crash drops the actor's pending work but keeps its applied writes, and the actor restarts fresh", async () => {
  const s = sim();
  const starts: number[] = [];
  s.addActor(
    defineActor({
      name: "w",
      restartDelayMs: 500,
      async start(ctx) {
        starts.push(ctx.incarnation);
        const current = await ctx.client.get<KubeObject>(counterRef);
        current.data = { value: "1" };
        await ctx.client.update({ object: current });
        await ctx.clock.sleep(60_000);
        await ctx.client.create({ object: { apiVersion: "v1", kind: "ConfigMap", metadata: { namespace: "ns", name: `after-${ctx.incarnation}` } } });
      },
    }),
  );
  // Steps under FIFO: 0 start, 1 get, 2 get response, 3 update (applied), then the crash before its response.
  const run = await s.run({ strategy: fifoStrategy(), faults: [{ atStep: 4, kind: "crash", target: "w" }], untilMs: s.clock.now() + 10_000 });
  assert.equal(run.status, "until");
  const crash = firstIndex(run.trace, (r) => r.kind === "fault");
  assert.equal(run.trace[crash]!.result, "crashed, restart in 500ms");
  // The update was applied before the crash and stays.
  assert.equal((s.view().get(counterRef)!.data as { value: string }).value, "1");
  // Its response and the 60 s sleep vanished: no update response, no create from incarnation 0.
  const after = run.trace.slice(crash + 1);
  assert.ok(!after.some((r) => r.kind === "response" && r.label.startsWith("update") && r.timeMs === run.trace[crash]!.timeMs));
  assert.deepEqual(starts, [0, 1]);
  const restart = after.find((r) => r.kind === "start")!;
  assert.equal(restart.timeMs - run.trace[crash]!.timeMs, 500);
  assert.equal(s.view().get({ ...counterRef, name: "after-0" }), undefined);
});

test("a crash withdraws only its own actor's ready steps: another actor's request in the same ready list still runs", async () => {
  const s = sim();
  for (const name of ["a", "b"]) {
    s.addActor(
      defineActor({
        name,
        async start(ctx) {
          await ctx.client.create({ object: { apiVersion: "v1", kind: "ConfigMap", metadata: { namespace: "ns", name } } });
          await ctx.clock.sleep(60_000);
        },
      }),
    );
  }
  // Steps under FIFO: 0 start a, 1 start b; before step 2 both create requests are ready, and a crashes.
  const run = await s.run({ strategy: fifoStrategy(), faults: [{ atStep: 2, kind: "crash", target: "a" }], untilMs: s.clock.now() + 500 });
  assert.equal(run.status, "until", run.message);
  const crash = firstIndex(run.trace, (r) => r.kind === "fault");
  assert.deepEqual(
    run.trace.slice(crash + 1, crash + 3).map((r) => [r.actor, r.kind, r.label]),
    [
      ["b", "request", "create ConfigMap ns/b"],
      ["b", "response", "create ConfigMap ns/b"],
    ],
  );
  assert.notEqual(s.view().get({ ...counterRef, name: "b" }), undefined, "b's create was applied");
  assert.equal(s.view().get({ ...counterRef, name: "a" }), undefined, "a's create was withdrawn");
});

test("a fault armed for an actor's next request fails its watch request: a failure code, or a lost response", async () => {
  const watchOpened = async (fault: Record<string, string | number> | undefined) => {
    const s = sim();
    let seen = "no event";
    s.addActor(
      defineActor({
        name: "w",
        async start(ctx) {
          try {
            for await (const event of ctx.client.watch({ apiVersion: "v1", kind: "ConfigMap", namespace: "ns" })) {
              seen = `${event.type} ${event.object.metadata.name}`;
              break;
            }
          } catch (error) {
            seen = isApiError(error) ? `${error.code} ${error.reason}` : String(error);
          }
        },
      }),
    );
    // Step 0 starts w, which asks for the watch; the fault is armed before step 1, the watch request.
    const faults = fault === undefined ? [] : [{ atStep: 1, target: "w", kind: "fail-request", ...fault }];
    const run = await s.run({ strategy: fifoStrategy(), faults });
    assert.equal(run.status, "idle", run.message);
    const request = run.trace.find((r) => r.kind === "request" && r.verb === "watch")!;
    return { seen, result: request.result };
  };
  assert.deepEqual(await watchOpened(undefined), { seen: "ADDED counter", result: "ok" });
  const failed = await watchOpened({ code: 429 });
  assert.equal(failed.seen, "429 TooManyRequests");
  assert.match(failed.result, /^429 .*\(injected\)$/);
  const lost = await watchOpened({ kind: "lost-response" });
  assert.equal(lost.seen, "504 Timeout");
  assert.match(lost.result, /^504 .*\(injected\)$/);
});

test("a crash hook changes external state, which survives the crash", async () => {
  const s = sim();
  s.defineExternal("host", { booted: "v1", staged: "v2" });
  s.addActor(
    defineActor({
      name: "daemon",
      async start(ctx) {
        const host = await ctx.external<{ booted: string }>("host").read();
        ctx.log("booted", { image: host.booted });
        await ctx.clock.sleep(1000);
      },
      onCrash(ctx) {
        const host = ctx.external<{ booted: string; staged: string }>("host");
        host.set({ booted: host.get().staged, staged: "" });
      },
    }),
  );
  const run = await s.run({ strategy: fifoStrategy(), faults: [{ atStep: 2, kind: "crash", target: "daemon" }] });
  assert.equal(run.status, "idle");
  const logs = run.trace.filter((r) => r.kind === "log").map((r) => r.fields?.image);
  assert.deepEqual(logs, ["v1", "v2"]);
  assert.deepEqual(s.view().external("host"), { booted: "v2", staged: "" });
});

test("a lost response leaves the write applied while the client sees a timeout", async () => {
  const s = sim();
  let seen: unknown;
  s.addActor(
    defineActor({
      name: "w",
      async start(ctx) {
        try {
          await ctx.client.create({ object: { apiVersion: "v1", kind: "ConfigMap", metadata: { namespace: "ns", name: "x" } } });
        } catch (error) {
          seen = isApiError(error) ? `${error.code} ${error.reason}` : error;
        }
      },
    }),
  );
  const run = await s.run({ strategy: fifoStrategy(), faults: [{ atStep: 1, kind: "lost-response", target: "w" }] });
  assert.equal(run.status, "idle");
  assert.equal(seen, "504 Timeout");
  assert.notEqual(s.view().get({ ...counterRef, name: "x" }), undefined);
  const request = run.trace.find((r) => r.kind === "request")!;
  assert.equal(request.result, "ok (response lost)");
  assert.equal(request.write, true);
  assert.equal(request.revisionAfter, request.revisionBefore + 1);
});

test("a failed request is not applied", async () => {
  const s = sim();
  let seen = "";
  s.addActor(
    defineActor({
      name: "w",
      async start(ctx) {
        await ctx.client.create({ object: { apiVersion: "v1", kind: "ConfigMap", metadata: { namespace: "ns", name: "x" } } }).catch((e) => (seen = `${e.code}`));
      },
    }),
  );
  await s.run({ strategy: fifoStrategy(), faults: [{ atStep: 1, kind: "fail-request", target: "w", code: 429 }] });
  assert.equal(seen, "429");
  assert.equal(s.view().get({ ...counterRef, name: "x" }), undefined);
});

test("a stale read serves a resourceVersion=0 list at an older revision, and a plain list stays current", async () => {
  const s = sim();
  for (let i = 1; i <= 3; i++) s.store.update({ ...counter(i), metadata: { namespace: "ns", name: "counter" } });
  const revisions: string[] = [];
  s.addActor(
    defineActor({
      name: "reader",
      async start(ctx) {
        const kind = { apiVersion: "v1", kind: "ConfigMap", namespace: "ns" };
        const stale = await ctx.client.list({ ...kind, resourceVersion: "0" });
        revisions.push(stale.metadata.resourceVersion, (stale.items[0]!.data as { value: string }).value);
        const current = await ctx.client.list(kind);
        revisions.push(current.metadata.resourceVersion, (current.items[0]!.data as { value: string }).value);
        const cachedAgain = await ctx.client.list({ ...kind, resourceVersion: "0" });
        revisions.push(cachedAgain.metadata.resourceVersion);
      },
    }),
  );
  const latest = s.store.revision;
  await s.run({ strategy: fifoStrategy(), faults: [{ atStep: 1, kind: "stale-read", target: "reader", lagRevisions: 2 }] });
  assert.deepEqual(revisions, [String(latest - 2), "1", String(latest), "3", String(latest)]);
});

test("a closed watch ends normally and the client resumes from its last revision without missing an event", async () => {
  const world = smallWorld({ seed: 4 });
  const reference = await world.run({ strategy: fifoStrategy() });
  const watchStep = reference.trace.find((r) => r.kind === "watch")!.step;
  const s = smallWorld({ seed: 4 });
  const run = await s.run({ strategy: fifoStrategy(), faults: [{ atStep: watchStep, kind: "close-watch", target: "carol/0/w0" }] });
  assert.equal(run.status, "idle");
  assert.equal(run.trace.find((r) => r.kind === "fault")!.result, "closed");
  assert.ok(run.trace.some((r) => r.kind === "watch" && r.result === "END"));
  assert.ok(run.trace.some((r) => r.label.startsWith("watch carol/0/w1")), "the client watched again");
  assert.equal(s.view().external("last-seen"), "6");
});

test("a delayed watch event arrives after the delay, still in order", async () => {
  const s = smallWorld({ seed: 4 });
  const reference = await smallWorld({ seed: 4 }).run({ strategy: fifoStrategy() });
  const firstEvent = reference.trace.find((r) => r.kind === "watch")!;
  const run = await s.run({ strategy: fifoStrategy(), faults: [{ atStep: firstEvent.step, kind: "delay-watch", target: "carol/0/w0", delayMs: 2500 }] });
  const delivered = run.trace.filter((r) => r.kind === "watch");
  assert.equal(delivered[0]!.timeMs - firstEvent.timeMs, 2500);
  const order = delivered.map((r) => Number(r.result.split("@")[1]));
  assert.deepEqual(order, [...order].sort((a, b) => a - b));
  assert.equal(s.view().external("last-seen"), "6");
});

test("a paused actor's steps wait while virtual time passes", async () => {
  const s = smallWorld({ seed: 2 });
  const run = await s.run({ strategy: fifoStrategy(), faults: [{ atStep: 3, kind: "pause", target: "alice", durationMs: 7000 }] });
  const fault = run.trace.find((r) => r.kind === "fault")!;
  const nextAlice = run.trace.find((r) => r.actor === "alice" && r.kind !== "fault" && r.kind !== "log" && r.step >= fault.step)!;
  assert.equal(nextAlice.timeMs - fault.timeMs, 7000);
  assert.equal(run.status, "idle");
});

test("faults whose target is gone are skipped, never an error", async () => {
  const s = smallWorld({ seed: 2 });
  const run = await s.run({
    faults: [
      { atStep: 0, kind: "crash", target: "alice" },
      { atStep: 1, kind: "crash", target: "nobody" },
      { atStep: 2, kind: "close-watch", target: "carol/0/w9" },
    ],
  });
  const results = run.trace.filter((r) => r.kind === "fault").map((r) => r.result);
  assert.deepEqual(results, ["skipped: waiting", "skipped: no actor nobody", "skipped: no open watch"]);
  assert.equal(run.status, "idle");
});

test("a scenario fault kind is drawn from the budget, recorded, and replays", async () => {
  const make = (seed: number) => {
    const s = smallWorld({ seed });
    s.defineFaultKind(
      defineFaultKind({
        name: "corrupt-last-seen",
        targets: () => ["last-seen"],
        params: (rng) => ({ value: String(100 + rng.int(10)) }),
        apply: (target, fault) => {
          target.external<string>(fault.target).set(String(fault.value));
          return "corrupted";
        },
      }),
    );
    return s;
  };
  const run = await make(8).run({ faultBudget: { chance: [1, 2], counts: { "corrupt-last-seen": 2 } } });
  assert.equal(run.faults.length, 2);
  assert.ok(run.faults.every((f) => f.kind === "corrupt-last-seen" && /^10\d$/.test(String(f.value))));
  const replay = await make(8).run({ choices: run.choices, faults: run.faults });
  assert.equal(replay.traceHash, run.traceHash);
});

test("no faults are injected after stopFaults", async () => {
  const s = smallWorld({ seed: 3 });
  const run = await s.run({
    faultBudget: { chance: [1, 1], counts: { "fail-request": 100 } },
    onStep: (record) => {
      if (record.step >= 10) s.stopFaults();
    },
  });
  assert.ok(run.faults.length > 0);
  assert.ok(run.faults.every((f) => f.atStep <= 10));
  assert.equal(run.status, "idle");
});

test("a watch resumed from a compacted revision fails with 410 and the client relists", async () => {
  const s = createSimulation({ seed: 1, historyRevisionsMax: 2 });
  s.store.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: "ns" } });
  s.store.create(counter(0));
  s.defineExternal("last-seen", "0");
  s.addActor(
    defineActor({
      name: "bumper",
      async start(ctx) {
        await ctx.clock.sleep(100);
        for (let i = 1; i <= 5; i++) await ctx.client.update({ object: counter(i) });
      },
    }),
  );
  const { watcher } = await import("./world.ts");
  s.addActor(watcher("carol", 5));
  // Close carol's watch before the bumper wakes up; by the time carol watches again the history is gone.
  const run = await s.run({
    strategy: fifoStrategy(),
    faults: [
      { atStep: 5, kind: "close-watch", target: "carol/0/w0" },
      { atStep: 5, kind: "pause", target: "carol", durationMs: 1000 },
    ],
  });
  assert.equal(run.status, "idle", run.message);
  const results = run.trace.filter((r) => r.actor === "carol" && (r.kind === "watch" || r.kind === "request")).map((r) => r.result);
  assert.ok(results.includes("410 Expired"), results.join(", "));
  assert.equal(run.trace.filter((r) => r.actor === "carol" && r.label.startsWith("list")).length, 4, "listed twice (request and response each)");
  assert.equal(s.view().external("last-seen"), "5");
});

test("a watch without a resourceVersion starts with the current objects as ADDED", async () => {
  const s = sim();
  const events: string[] = [];
  s.addActor(
    defineActor({
      name: "w",
      async start(ctx) {
        for await (const event of ctx.client.watch({ apiVersion: "v1", kind: "ConfigMap", namespace: "ns" })) {
          events.push(`${event.type} ${event.object.metadata.name} ${(event.object.data as { value: string }).value}`);
          (event.object.data as { value: string }).value = "mutated copy";
          break;
        }
      },
    }),
  );
  await s.run({ strategy: fifoStrategy() });
  assert.deepEqual(events, ["ADDED counter 0"]);
  assert.equal((s.view().get(counterRef)!.data as { value: string }).value, "0");
});

test("a later run may plan a fault at the step where the previous run stopped", async () => {
  const s = smallWorld({ seed: 6 });
  const first = await s.run({ untilMs: s.clock.now() + 10 });
  assert.equal(first.status, "until");
  const second = await s.run({ faults: [{ atStep: s.steps, kind: "crash", target: "carol" }] });
  const crash = second.trace.find((r) => r.kind === "fault")!;
  assert.equal(crash.step, first.steps);
  assert.match(crash.result, /^crashed/);
});

test("a per-kind time travel serves only that kind's first cached read at the old revision after the restart; the other kinds and later reads are fresh", async () => {
  const revisionsOf = async (fault: Record<string, string | number>) => {
    const s = sim();
    s.store.create({ apiVersion: "v1", kind: "Secret", metadata: { namespace: "ns", name: "s" }, data: {} });
    const before = s.store.revision;
    s.store.update({ ...counter(1), metadata: { namespace: "ns", name: "counter" } });
    s.store.update({ apiVersion: "v1", kind: "Secret", metadata: { namespace: "ns", name: "s" }, data: { k: "dg==" } });
    const seen: string[] = [];
    s.addActor(
      defineActor({
        name: "reader",
        async start(ctx) {
          if (ctx.incarnation === 0) {
            await ctx.clock.sleep(10);
            return;
          }
          // The restarted incarnation reads Secrets first, then ConfigMaps twice, from the watch cache.
          for (const kind of ["Secret", "ConfigMap", "ConfigMap"]) {
            const list = await ctx.client.list({ apiVersion: "v1", kind, namespace: "ns", resourceVersion: "0" });
            seen.push(`${kind}@${list.metadata.resourceVersion}`);
          }
        },
      }),
    );
    const run = await s.run({ strategy: fifoStrategy(), faults: [{ atStep: 1, kind: "crash", target: "reader", relistAtRevision: before, ...fault }] });
    return { seen, before, latest: s.store.revision, result: run.trace.find((r) => r.kind === "fault")!.result };
  };
  const perKind = await revisionsOf({ relistKind: "ConfigMap" });
  assert.deepEqual(perKind.seen, [`Secret@${perKind.latest}`, `ConfigMap@${perKind.before}`, `ConfigMap@${perKind.latest}`]);
  assert.equal(perKind.result, `crashed, restart in 1000ms, first cached read of ConfigMap at revision ${perKind.before}`);
  // Without a kind, the first cached read of any kind travels (the Secret list here): the time travel of every run
  // planned before per-kind time travel existed, unchanged.
  const anyKind = await revisionsOf({});
  assert.deepEqual(anyKind.seen, [`Secret@${anyKind.before}`, `ConfigMap@${anyKind.latest}`, `ConfigMap@${anyKind.latest}`]);
  assert.equal(anyKind.result, `crashed, restart in 1000ms, first cached read at revision ${anyKind.before}`);
});

test("after a per-kind stale list, the watch from its revision is held for relistCatchUpMs: the same lagging cache serves it", async () => {
  const firstEventAfterMs = async (catchUpMs: number) => {
    const s = sim();
    const before = s.store.revision;
    s.store.update({ ...counter(1), metadata: { namespace: "ns", name: "counter" } });
    let waitedMs = -1;
    s.addActor(
      defineActor({
        name: "reader",
        async start(ctx) {
          if (ctx.incarnation === 0) return ctx.clock.sleep(10);
          const kind = { apiVersion: "v1", kind: "ConfigMap", namespace: "ns" };
          const list = await ctx.client.list({ ...kind, resourceVersion: "0" });
          const listedMs = ctx.clock.now();
          for await (const _event of ctx.client.watch({ ...kind, resourceVersion: list.metadata.resourceVersion })) {
            waitedMs = ctx.clock.now() - listedMs;
            break;
          }
        },
      }),
    );
    await s.run({ strategy: fifoStrategy(), faults: [{ atStep: 1, kind: "crash", target: "reader", relistAtRevision: before, relistKind: "ConfigMap", relistCatchUpMs: catchUpMs }] });
    return waitedMs;
  };
  assert.ok((await firstEventAfterMs(0)) < 100, "without a catch-up time the watch replays the hidden write at once");
  const held = await firstEventAfterMs(3000);
  assert.ok(held >= 3000 && held < 3100, `${held} ms`);
});

test("a watch closed with relistAtRevision fails, and only its kind's next cached relist travels: the other kinds and later reads are fresh", async () => {
  const run = async (fault: { atStep: number; relistAtRevision?: number } | undefined) => {
    const s = sim();
    s.store.create({ apiVersion: "v1", kind: "Secret", metadata: { namespace: "ns", name: "s" }, data: {} });
    const before = s.store.revision;
    s.store.update({ apiVersion: "v1", kind: "Secret", metadata: { namespace: "ns", name: "s" }, data: { k: "dg==" } });
    const seen: string[] = [];
    s.addActor(
      defineActor({
        name: "reader",
        async start(ctx) {
          const kind = { apiVersion: "v1", kind: "ConfigMap", namespace: "ns" };
          const list = await ctx.client.list({ ...kind, resourceVersion: "0" });
          try {
            for await (const event of ctx.client.watch({ ...kind, resourceVersion: list.metadata.resourceVersion })) seen.push(`event@${event.object.metadata.resourceVersion}`);
          } catch (error) {
            seen.push(isApiError(error) ? `failed ${error.code}` : "failed");
          }
          // Relist as an informer does after a failed watch: Secrets first, then ConfigMaps twice, from the watch cache.
          for (const k of ["Secret", "ConfigMap", "ConfigMap"]) {
            const relist = await ctx.client.list({ apiVersion: "v1", kind: k, namespace: "ns", resourceVersion: "0" });
            seen.push(`${k}@${relist.metadata.resourceVersion}`);
          }
        },
      }),
    );
    s.addActor(writer("writer", 1));
    const faults = fault === undefined ? [] : [{ kind: "close-watch", target: "reader/0/w0", relistAtRevision: before, ...fault }];
    const { trace } = await s.run({ strategy: fifoStrategy(), faults });
    return { seen, before, latest: s.store.revision, trace };
  };
  // The step that delivers the watch's first event: the fault comes just before it.
  const reference = await run(undefined);
  const atStep = reference.trace.find((r) => r.kind === "watch")!.step;
  const stale = await run({ atStep });
  const latest = stale.latest;
  // The event queued before the failure still arrives; the relist of its kind then goes back before it.
  assert.deepEqual(stale.seen, [`event@${latest}`, "failed 500", `Secret@${latest}`, `ConfigMap@${stale.before}`, `ConfigMap@${latest}`]);
  assert.match(stale.trace.find((r) => r.kind === "fault")!.result, /^failed with 500, next cached read of ConfigMap at revision \d+$/);
  // Without relistAtRevision the watch ends normally (its undelivered event dropped), and every relist is fresh.
  const ended = await run({ atStep, relistAtRevision: 0 });
  assert.deepEqual(ended.seen, [`Secret@${ended.latest}`, `ConfigMap@${ended.latest}`, `ConfigMap@${ended.latest}`]);
});

test("a drawn close-watch sometimes expires its watch (410), from a stream of its own: other seeds draw what they drew before", async () => {
  const budget = { chance: [1, 3] as const, counts: { "close-watch": 2, "fail-request": 2 } };
  const never = { ...budget, closeWatchExpired: [0, 1] as const };
  let expiredSeeds = 0;
  let plainSeeds = 0;
  for (let seed = 1; seed <= 24; seed++) {
    const run = await smallWorld({ seed }).run({ faultBudget: budget });
    const closes = run.faults.filter((f) => f.kind === "close-watch");
    const expired = closes.filter((f) => f.expired === 1);
    assert.ok(closes.every((f) => f.expired === undefined || f.expired === 1), JSON.stringify(closes));
    // The run's fault list (what a replay file records) carries the parameter, and replaying it reproduces the run.
    const replay = await smallWorld({ seed }).run({ choices: run.choices, faults: run.faults });
    assert.equal(replay.traceHash, run.traceHash, `seed ${seed}`);
    const without = await smallWorld({ seed }).run({ faultBudget: never });
    if (expired.length === 0) {
      // Nothing expired: the run is the one a budget that never expires a watch gives, byte for byte.
      assert.equal(run.traceHash, without.traceHash, `seed ${seed}`);
      if (closes.length > 0) plainSeeds++;
      continue;
    }
    expiredSeeds++;
    const results = run.trace.filter((r) => r.kind === "fault" && r.label.includes("expired=1")).map((r) => r.result);
    assert.ok(results.includes("failed with 410 Expired"), `seed ${seed}: ${results.join(", ")}`);
    // carol relists after the 410, as an informer must.
    assert.ok(run.trace.some((r) => r.kind === "log" && r.actor === "carol" && r.fields?.code === 410), `seed ${seed}`);
    // Up to the first expired watch, the faults drawn are those of the never-expiring budget: the choice moved no draw.
    const first = run.faults.indexOf(expired[0]!);
    const { expired: _, ...plain } = expired[0]!;
    assert.deepEqual(without.faults.slice(0, first + 1), [...run.faults.slice(0, first), plain], `seed ${seed}`);
  }
  assert.ok(expiredSeeds > 0, "some seed draws an expired watch");
  assert.ok(plainSeeds > 0, "some seed draws a plain close");
});

// kernel.ts lines 521-720 (mutation survivors)
test("the catch-up hold after a per-kind stale list is taken only by a watch of that kind from that revision", async () => {
  const s = sim();
  const before = s.store.revision;
  s.store.update({ ...counter(1), metadata: { namespace: "ns", name: "counter" } });
  const afterOne = s.store.revision;
  s.store.update({ ...counter(2), metadata: { namespace: "ns", name: "counter" } });
  s.store.create({ apiVersion: "v1", kind: "Secret", metadata: { namespace: "ns", name: "s" }, data: {} });
  const waited: Record<string, number> = {};
  s.addActor(
    defineActor({
      name: "reader",
      async start(ctx) {
        if (ctx.incarnation === 0) return ctx.clock.sleep(10);
        const configMaps = { apiVersion: "v1", kind: "ConfigMap", namespace: "ns" };
        const list = await ctx.client.list({ ...configMaps, resourceVersion: "0" });
        assert.equal(list.metadata.resourceVersion, String(before), "the list is served at the armed revision");
        const firstEvent = async (name: string, options: Parameters<typeof ctx.client.watch>[0]) => {
          const from = ctx.clock.now();
          for await (const _event of ctx.client.watch(options)) {
            waited[name] = ctx.clock.now() - from;
            break;
          }
        };
        await firstEvent("other kind, same revision", { apiVersion: "v1", kind: "Secret", namespace: "ns", resourceVersion: String(before) });
        await firstEvent("same kind, later revision", { ...configMaps, resourceVersion: String(afterOne) });
        await firstEvent("same kind, same revision", { ...configMaps, resourceVersion: String(before) });
      },
    }),
  );
  const run = await s.run({ strategy: fifoStrategy(), faults: [{ atStep: 1, kind: "crash", target: "reader", relistAtRevision: before, relistKind: "ConfigMap", relistCatchUpMs: 3000 }] });
  assert.equal(run.status, "idle", run.message);
  const held = Object.fromEntries(Object.entries(waited).map(([name, ms]) => [name, ms >= 3000]));
  assert.deepEqual(held, { "other kind, same revision": false, "same kind, later revision": false, "same kind, same revision": true }, JSON.stringify(waited));
});

// kernel.ts lines 721-940 (mutation survivors)

test("a delayed watch delivery still names the collection its watch follows, like an undelayed one", async () => {
  const s = smallWorld({ seed: 4 });
  const reference = await smallWorld({ seed: 4 }).run({ strategy: fifoStrategy() });
  const firstEvent = reference.trace.find((r) => r.kind === "watch")!;
  const collections: unknown[] = [];
  const strategy = {
    name: "recording",
    next: (ready: readonly ReadyStep[]) => {
      for (const step of ready) if (step.kind === "watch" && step.label.startsWith("watch carol/0/w0")) collections.push(step.collection);
      return 0;
    },
  };
  const run = await s.run({ strategy, faults: [{ atStep: firstEvent.step, kind: "delay-watch", target: "carol/0/w0", delayMs: 2500 }] });
  assert.ok(run.trace.filter((r) => r.kind === "watch")[0]!.timeMs - firstEvent.timeMs === 2500, "the first delivery was delayed");
  assert.ok(collections.length > 1, "the watch's deliveries were seen");
  assert.ok(collections[0] !== undefined, "a delivery names its collection");
  for (const collection of collections) assert.deepEqual(collection, collections[0]);
});

test("a rejection a scenario fault leaves unhandled is blamed on the simulator, not on an actor", async () => {
  const s = createSimulation({ seed: 1 });
  s.addActor(defineActor({ name: "w", start: (ctx) => ctx.clock.sleep(10) }));
  s.defineFaultKind(
    defineFaultKind({
      name: "careless",
      targets: () => ["x"],
      params: () => ({}),
      apply: () => {
        void Promise.reject(new Error("dropped by the fault"));
        return "applied";
      },
    }),
  );
  const run = await s.run({ strategy: fifoStrategy(), faults: [{ atStep: 1, kind: "careless", target: "x" }] });
  assert.equal(run.status, "actor-error");
  assert.equal(run.actor, "sim");
  assert.equal(run.message, "actor sim left a rejection unhandled: dropped by the fault");
});

test("garbage a scenario fault leaves is collected, as garbage a step leaves is", async () => {
  const s = createSimulation({ seed: 1 });
  s.store.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: "ns" } });
  const owner = s.store.create({ apiVersion: "v1", kind: "ConfigMap", metadata: { namespace: "ns", name: "owner" } });
  const ownerReferences = [{ apiVersion: "v1", kind: "ConfigMap", name: "owner", uid: owner.metadata.uid! }];
  s.store.create({ apiVersion: "v1", kind: "ConfigMap", metadata: { namespace: "ns", name: "dependent", ownerReferences } });
  // The actor only reads after the fault: no write of a step would make the collector look.
  s.addActor(defineActor({ name: "w", start: (ctx) => ctx.clock.sleep(10).then(() => ctx.client.get(counterRef)).then(() => {}, () => {}) }));
  s.defineFaultKind(
    defineFaultKind({
      name: "delete-owner",
      targets: () => ["owner"],
      params: () => ({}),
      apply: (target) => {
        target.store.delete({ apiVersion: "v1", kind: "ConfigMap", namespace: "ns", name: "owner" });
        return "deleted";
      },
    }),
  );
  const run = await s.run({ strategy: fifoStrategy(), faults: [{ atStep: 1, kind: "delete-owner", target: "owner" }] });
  assert.equal(run.status, "idle", run.message);
  assert.deepEqual(
    run.trace.filter((r) => r.kind === "gc").map((r) => r.result),
    ["gc: delete ConfigMap ns/dependent (its owners are gone)"],
  );
  assert.equal(s.view().get({ apiVersion: "v1", kind: "ConfigMap", namespace: "ns", name: "dependent" }), undefined);
});
