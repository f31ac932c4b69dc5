import { test } from "node:test";
import assert from "node:assert/strict";
import { always, checkMarkName, eventually, lastStepOf, PropertyMonitor, type WorldView } from "../../src/check/properties.ts";
import { createStore } from "../../src/store/index.ts";
import type { TraceRecord } from "../../src/sim/trace.ts";
import { findingKey, isFinding, type Verdict } from "../../src/check/verdict.ts";
import { AssertionError } from "../../src/api/assert.ts";

// Predicates here never read the world, so an empty view is enough.
const world: WorldView = {
  revision: 1,
  now: () => 0,
  get: () => undefined,
  list: () => [],
  external: () => {
    throw new Error("no externals");
  },
};

test("the monitor counts evaluations and failures per property and remembers whether each ever held", () => {
  let answer = false;
  const monitor = new PropertyMonitor([
    always("flips", () => answer),
    always("never", () => false),
    eventually("always true", () => true),
  ]);
  assert.equal(monitor.checkSafety(world)?.name, "flips");
  answer = true;
  assert.equal(monitor.checkSafety(world)?.name, "never");
  assert.equal(monitor.checkSafety(world)?.name, "never");
  assert.equal(monitor.checkLiveness(world), undefined);
  assert.deepEqual(monitor.snapshot(), [
    { name: "flips", kind: "always", evaluations: 3, failures: 1, everHeld: true },
    { name: "never", kind: "always", evaluations: 3, failures: 3, everHeld: false },
    { name: "always true", kind: "eventually", evaluations: 1, failures: 0, everHeld: true },
  ]);
});

test("checkSafety reports the first failing property but still evaluates every always property", () => {
  const monitor = new PropertyMonitor([always("a", () => false), always("b", () => false), eventually("c", () => false)]);
  assert.equal(monitor.checkSafety(world)?.name, "a");
  const [a, b, c] = monitor.snapshot();
  assert.equal(a!.failures, 1);
  assert.equal(b!.failures, 1);
  assert.equal(c!.evaluations, 0, "safety checks leave eventually properties alone");
});

test("checkLiveness evaluates only the eventually properties its filter picks", () => {
  const late = eventually("late", () => false, { withinMs: 1000 });
  const monitor = new PropertyMonitor([eventually("early", () => false), late, always("safe", () => true)]);
  assert.equal(monitor.checkLiveness(world, (p) => p === late)?.name, "late");
  assert.deepEqual(
    monitor.snapshot().map((c) => [c.name, c.evaluations]),
    [["early", 0], ["late", 1], ["safe", 0]],
  );
  assert.equal(monitor.checkLiveness(world)?.name, "early");
});

test("a predicate that throws counts as false, never as an error of the run", () => {
  const monitor = new PropertyMonitor([
    always("throws", () => {
      throw new Error("boom");
    }),
    eventually("reads a missing external", (view) => view.external<boolean>("nope")),
  ]);
  assert.equal(monitor.checkSafety(world)?.name, "throws");
  assert.equal(monitor.checkLiveness(world)?.name, "reads a missing external");
  for (const counter of monitor.snapshot()) {
    assert.equal(counter.failures, 1, counter.name);
    assert.equal(counter.everHeld, false, counter.name);
  }
});

test("a predicate that returns a truthy non-boolean does not count as holding", () => {
  const monitor = new PropertyMonitor([always("returns 1", () => 1 as unknown as boolean)]);
  assert.equal(monitor.checkSafety(world)?.name, "returns 1");
});

test("the monitor rejects two properties with the same name", () => {
  assert.throws(() => new PropertyMonitor([always("same", () => true), eventually("same", () => true)]), AssertionError);
  assert.throws(() => new PropertyMonitor([always("same", () => true), always("same", () => false)]), /unique/);
});

test("the monitor's snapshot is a copy the caller cannot use to change its counters", () => {
  const monitor = new PropertyMonitor([always("x", () => false)]);
  monitor.checkSafety(world);
  monitor.snapshot()[0]!.failures = 99;
  assert.equal(monitor.snapshot()[0]!.failures, 1);
});

test("always and eventually reject empty, multi-line, space-led and over-long names", () => {
  const bad = ["", " leading space", "two\nlines", "tab\there", "x".repeat(121)];
  for (const name of bad) {
    assert.throws(() => always(name, () => true), TypeError, JSON.stringify(name));
    assert.throws(() => eventually(name, () => true), TypeError, JSON.stringify(name));
  }
  assert.equal(always("x".repeat(120), () => true).name.length, 120);
  assert.equal(eventually("children == spec.voices", () => true).name, "children == spec.voices");
});

test("always and eventually reject a predicate that is not a function", () => {
  assert.throws(() => always("p", "yes" as unknown as () => boolean), /predicate must be a function/);
  assert.throws(() => eventually("p", undefined as unknown as () => boolean), /predicate must be a function/);
});

test("eventually rejects a withinMs that is not a positive integer of milliseconds", () => {
  for (const withinMs of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, "100" as unknown as number]) {
    assert.throws(() => eventually("p", () => true, { withinMs }), /withinMs must be a positive integer/, String(withinMs));
  }
  assert.deepEqual(Object.keys(eventually("p", () => true)).sort(), ["kind", "name", "predicate"]);
  assert.equal(eventually("p", () => true, { withinMs: 1 }).withinMs, 1);
});

test("findings are keyed by verdict and property, and only ok is not a finding", () => {
  const base: Verdict = { kind: "ok", step: 3, elapsedMs: 10, detail: "" };
  assert.equal(isFinding(base), false);
  assert.equal(isFinding({ ...base, kind: "silent-divergence", property: "p" }), true);
  assert.equal(findingKey({ ...base, kind: "silent-divergence", property: "p" }), "silent-divergence:p");
  assert.equal(findingKey({ ...base, kind: "actor-error", actor: "operator" }), "actor-error:operator");
  assert.equal(findingKey({ ...base, kind: "no-convergence" }), "no-convergence:");
});

test("eventually with from needs withinMs and a valid mark name", () => {
  assert.throws(() => eventually("p", () => true, { from: "labelled" }), /needs withinMs/);
  assert.throws(() => eventually("p", () => true, { withinMs: 10, from: "" }), /mark name/);
  assert.deepEqual(eventually("p", () => true, { withinMs: 10, from: "labelled" }).from, "labelled");
});

test("a deadline counted from a mark is judged on the world as it was at the deadline, not after the step that passed it", () => {
  let childExists = false;
  const monitor = new PropertyMonitor([eventually("child exists", () => childExists, { withinMs: 1000, from: "labelled" })]);
  assert.equal(monitor.checkMarkedDeadlines(world, 0), undefined, "nothing is armed before the mark");
  monitor.mark("labelled", 500);
  assert.equal(monitor.checkMarkedDeadlines(world, 500), undefined);
  assert.equal(monitor.checkMarkedDeadlines(world, 1500), undefined, "at the deadline itself the step still counts");
  // The next step happens after the deadline and creates the child: too late, the deadline is missed.
  childExists = true;
  const missed = monitor.checkMarkedDeadlines(world, 1501);
  assert.equal(missed?.property.name, "child exists");
  assert.equal(missed?.atMs, 1500);
  assert.equal(monitor.checkMarkedDeadlines(world, 1600), undefined, "a deadline is judged once");
});

test("a deadline met before it passes does not fire, and one the run never reached is judged when the run closes", () => {
  let held = false;
  const monitor = new PropertyMonitor([
    eventually("met", () => true, { withinMs: 100, from: "a" }),
    eventually("idle miss", () => held, { withinMs: 5000, from: "a" }),
    eventually("past horizon", () => false, { withinMs: 90_000, from: "a" }),
  ]);
  monitor.mark("a", 0);
  assert.equal(monitor.checkMarkedDeadlines(world, 10), undefined);
  assert.equal(monitor.checkMarkedDeadlines(world, 200), undefined, "met was true at its deadline");
  // The world goes idle at 200 ms: no step passes the 5 s deadline, the run ends at a 60 s horizon.
  assert.equal(monitor.closeMarkedDeadlines(world, 1000), undefined, "the 5 s deadline is still ahead at 1 s");
  assert.equal(monitor.closeMarkedDeadlines(world, 60_000)?.property.name, "idle miss");
  held = true;
  assert.equal(monitor.closeMarkedDeadlines(world, 60_000), undefined, "a deadline beyond the end is not judged");
});

test("a mark is made once, and deadlines from marks never made stay unarmed", () => {
  const monitor = new PropertyMonitor([eventually("p", () => false, { withinMs: 10, from: "never" })]);
  monitor.mark("other", 0);
  assert.throws(() => monitor.mark("other", 5), /already made/);
  assert.equal(monitor.markedAt("other"), 0);
  assert.equal(monitor.checkMarkedDeadlines(world, 1_000_000), undefined);
  assert.equal(monitor.closeMarkedDeadlines(world, 2_000_000), undefined);
});

test("properties see the writes of the last step, read from the store's history between the step's revisions", () => {
  const store = createStore({ now: () => 0 });
  const ns = "default";
  const owner = store.create({ apiVersion: "v1", kind: "ConfigMap", metadata: { namespace: ns, name: "owner" } });
  const child = { apiVersion: "v1", kind: "Secret", metadata: { namespace: ns, name: "child", ownerReferences: [{ apiVersion: "v1", kind: "ConfigMap", name: "owner", uid: owner.metadata.uid as string }] } };
  store.create(child);
  const before = store.revision;
  store.patch({ apiVersion: "v1", kind: "Secret", namespace: ns, name: "child", patchType: "merge", patch: { metadata: { labels: { a: "b" } } } });
  store.delete({ apiVersion: "v1", kind: "Secret", namespace: ns, name: "child" });
  const record: TraceRecord = { step: 7, timeMs: 0, actor: "operator", kind: "request", label: "delete", revisionBefore: before, revisionAfter: store.revision, result: "ok" };
  // "Never delete a child whose owner exists": needs the deletion itself, which the world after it cannot show.
  const view: WorldView = { ...world, get: (ref) => (ref.name === "owner" ? owner : undefined) };
  const monitor = new PropertyMonitor([
    always("no child deleted while its owner exists", (w, last) =>
      last.writes.every((write) => write.type !== "deleted" || (write.object.metadata.ownerReferences ?? []).every((o) => w.get({ apiVersion: o.apiVersion, kind: o.kind, namespace: ns, name: o.name }) === undefined)),
    ),
  ]);
  const last = lastStepOf(store, record);
  assert.equal(monitor.checkSafety(view, last)?.name, "no child deleted while its owner exists");
  assert.equal(last.actor, "operator");
  assert.deepEqual(last.writes.map((w) => [w.type, w.object.kind, w.revision]), [["updated", "Secret", before + 1], ["deleted", "Secret", before + 2]]);
  const quiet = lastStepOf(store, { ...record, revisionBefore: store.revision, revisionAfter: store.revision });
  assert.deepEqual(quiet.writes, []);
  assert.equal(monitor.checkSafety(view, quiet), undefined, "a step without writes deletes nothing");
});

test("in a simulation a predicate runs again only after a write to what it read, and one that reads the time runs at every check", async () => {
  const { createSimulation, defineActor } = await import("../../src/sim/simulation.ts");
  const sim = createSimulation({ seed: 7, createStore });
  sim.store.create({ apiVersion: "v1", kind: "ConfigMap", metadata: { namespace: "default", name: "a" }, data: { n: "0" } });
  sim.defineExternal("host", { booted: "v0" });
  const aRef = { apiVersion: "v1", kind: "ConfigMap", namespace: "default", name: "a" };
  const monitor = new PropertyMonitor([
    always("reads ConfigMap a", (view) => view.get(aRef) !== undefined),
    always("lists Secrets", (view) => view.list({ apiVersion: "v1", kind: "Secret" }).length === 0),
    always("reads the host", (view) => view.external<{ booted: string }>("host").booted !== "bad"),
    always("reads the time", (view) => view.now() > 0),
  ]);
  sim.addActor(
    defineActor({
      name: "writer",
      async start(ctx) {
        for (let i = 1; i <= 3; i++) {
          const a = await ctx.client.get(aRef);
          await ctx.client.update({ object: { ...a, data: { n: String(i) } } });
        }
        await ctx.external<{ booted: string }>("host").write({ booted: "v1" });
      },
    }),
  );
  let checks = 0;
  const result = await sim.run({
    onStep: (record, view) => {
      checks++;
      assert.equal(monitor.checkSafety(view, lastStepOf(sim.store, record)), undefined);
    },
  });
  assert.equal(result.status, "idle");
  const counts = Object.fromEntries(monitor.snapshot().map((c) => [c.name, c.evaluations]));
  // The first check evaluates everything; then a: once per update (3), the host: once for its write.
  assert.deepEqual(counts, { "reads ConfigMap a": 4, "lists Secrets": 1, "reads the host": 2, "reads the time": checks });
  assert.ok(checks > 10, "the run had many more steps than writes");
});

test("a predicate may take the view's methods apart and is still tracked; revision and the step's fields read as volatile", async () => {
  const { createSimulation, defineActor } = await import("../../src/sim/simulation.ts");
  const sim = createSimulation({ seed: 3, createStore });
  sim.store.create({ apiVersion: "v1", kind: "ConfigMap", metadata: { namespace: "default", name: "a" }, data: { n: "0" } });
  const aRef = { apiVersion: "v1", kind: "ConfigMap", namespace: "default", name: "a" };
  const simView = sim.view();
  const { get: simGet, list: simList, now: simNow } = simView;
  let lastRevision = -1;
  const monitor = new PropertyMonitor([
    always("detached get and list", (view) => {
      const { get, list } = view;
      return get(aRef) !== undefined && list({ apiVersion: "v1", kind: "Secret" }).length === 0;
    }),
    always("reads the revision", (view) => (lastRevision = view.revision) >= 0),
    always("reads the step", (_view, last) => last.step >= -1 && typeof last.actor === "string" && Array.isArray(last.writes)),
  ]);
  sim.addActor(
    defineActor({
      name: "writer",
      async start(ctx) {
        const a = await ctx.client.get(aRef);
        await ctx.client.update({ object: { ...a, data: { n: "1" } } });
      },
    }),
  );
  let checks = 0;
  await sim.run({
    onStep: (record, view) => {
      checks++;
      assert.equal(monitor.checkSafety(view, lastStepOf(sim.store, record)), undefined);
    },
  });
  const counts = Object.fromEntries(monitor.snapshot().map((c) => [c.name, c.evaluations]));
  // The first check evaluates everything, then the update of a; the other two run at every check.
  assert.deepEqual(counts, { "detached get and list": 2, "reads the revision": checks, "reads the step": checks });
  assert.equal(lastRevision, sim.store.revision);
  // The simulation's own view keeps its methods as properties too.
  assert.equal((simGet(aRef) as unknown as { data: { n: string } }).data.n, "1");
  assert.deepEqual(simList({ apiVersion: "v1", kind: "Secret" }), []);
  assert.equal(simNow(), sim.clock.now());
  assert.equal(simView.revision, sim.store.revision);
});

test("a predicate that read nothing, or threw, runs at every check, and a view without a change feed evaluates all", () => {
  let calls = 0;
  const monitor = new PropertyMonitor([
    always("reads nothing", () => ++calls > 0),
    always("throws", () => {
      throw new Error("boom");
    }),
  ]);
  monitor.checkSafety(world);
  monitor.checkSafety(world);
  monitor.checkSafety(world);
  assert.equal(calls, 3);
  assert.deepEqual(
    monitor.snapshot().map((c) => [c.name, c.evaluations, c.failures]),
    [
      ["reads nothing", 3, 0],
      ["throws", 3, 3],
    ],
  );
});

test("before any step a property sees the unknown step: index -1, no actor, no writes", () => {
  const seen: unknown[] = [];
  const monitor = new PropertyMonitor([always("looks at the step", (_view, last) => seen.push([last.step, last.actor, last.writes.length]) > 0)]);
  monitor.checkSafety(world);
  assert.deepEqual(seen, [[-1, "", 0]]);
});

test("a step's writes stop at its own last revision, even read after the store moved on", () => {
  const store = createStore({ now: () => 0 });
  const before = store.revision;
  store.create({ apiVersion: "v1", kind: "ConfigMap", metadata: { namespace: "default", name: "a" } });
  const record: TraceRecord = { step: 1, timeMs: 0, actor: "op", kind: "request", label: "create", revisionBefore: before, revisionAfter: store.revision, result: "ok" };
  const last = lastStepOf(store, record);
  store.create({ apiVersion: "v1", kind: "ConfigMap", metadata: { namespace: "default", name: "b" } });
  assert.deepEqual(last.writes.map((w) => [w.type, w.object.metadata.name]), [["created", "a"]]);
});

test("names are refused with a message saying what a name must be, and a mark name must be a string", () => {
  assert.throws(() => always(" x", () => true), { name: "TypeError", message: 'property name " x": one line of 1-120 characters, not starting with a space' });
  assert.throws(() => checkMarkName(42 as unknown as string), { name: "TypeError", message: "mark name 42: one line of 1-120 characters, not starting with a space" });
  assert.doesNotThrow(() => checkMarkName("labelled"));
});

test("of two deadlines missed at once, the earliest is reported, and at the same time the first by name", () => {
  const monitor = new PropertyMonitor([
    eventually("late", () => false, { withinMs: 300, from: "a" }),
    eventually("z at 200", () => false, { withinMs: 200, from: "a" }),
    eventually("a at 200", () => false, { withinMs: 100, from: "b" }),
  ]);
  monitor.mark("a", 0);
  monitor.mark("b", 100);
  assert.deepEqual(monitor.closeMarkedDeadlines(world, 10_000), { property: monitor.properties[2], atMs: 200 }, "both at 200: by name, though armed second");
  const later = new PropertyMonitor([eventually("z", () => false, { withinMs: 500, from: "a" }), eventually("y", () => false, { withinMs: 100, from: "a" })]);
  later.mark("a", 0);
  assert.equal(later.checkMarkedDeadlines(world, 1000)?.property.name, "y", "the earliest deadline, though armed second");
});

test("a deadline exactly at the close stays pending, and one never evaluated before the close is judged on the world then", () => {
  let held = false;
  const monitor = new PropertyMonitor([eventually("p", () => held, { withinMs: 100, from: "a" })]);
  monitor.mark("a", 0);
  assert.equal(monitor.closeMarkedDeadlines(world, 100), undefined, "a deadline at the close is not judged yet");
  held = true;
  assert.equal(monitor.closeMarkedDeadlines(world, 101), undefined, "held at the deadline: met");
  const missed = new PropertyMonitor([eventually("q", () => false, { withinMs: 100, from: "a" })]);
  missed.mark("a", 0);
  assert.equal(missed.closeMarkedDeadlines(world, 100), undefined);
  assert.equal(missed.closeMarkedDeadlines(world, 101)?.atMs, 100, "still pending after the first close");
});

test("the first predicate that throws is kept with its property's name; later ones do not replace it", () => {
  const first = new Error("first");
  const monitor = new PropertyMonitor([
    always("fine", () => true),
    always("throws first", () => {
      throw first;
    }),
    always("throws second", () => {
      throw new Error("second");
    }),
  ]);
  assert.equal(monitor.thrown, undefined);
  monitor.checkSafety(world);
  monitor.checkSafety(world);
  assert.deepEqual(monitor.thrown, { property: "throws first", error: first });
});

test("in a simulation, reading the time, the revision or the step, or throwing, makes a predicate run at every check whatever else it read", async () => {
  const { createSimulation, defineActor } = await import("../../src/sim/simulation.ts");
  const sim = createSimulation({ seed: 7, createStore });
  sim.store.create({ apiVersion: "v1", kind: "ConfigMap", metadata: { namespace: "default", name: "a" }, data: { n: "0" } });
  const aRef = { apiVersion: "v1", kind: "ConfigMap", namespace: "default", name: "a" };
  const secretRef = { apiVersion: "v1", kind: "Secret", namespace: "default", name: "s" };
  let firstCall = true;
  const monitor = new PropertyMonitor([
    always("lists ConfigMaps", (view) => view.list({ apiVersion: "v1", kind: "ConfigMap" }).length === 1),
    always("reads nothing", () => true),
    always("reads the time and a Secret", (view) => view.now() > 0 && view.get(secretRef) === undefined),
    always("reads the revision and a Secret", (view) => view.revision > 0 && view.get(secretRef) === undefined),
    always("reads the step and a Secret", (view, last) => last.step >= 0 && view.get(secretRef) === undefined),
    // Reads the time once only: from its second evaluation on it depends on ConfigMap a alone.
    always("read the time once", (view) => {
      if (firstCall) view.now();
      firstCall = false;
      return view.get(aRef) !== undefined;
    }),
  ]);
  const throwing = new PropertyMonitor([
    always("reads a Secret, then throws", (view) => {
      view.get(secretRef);
      throw new Error("boom");
    }),
  ]);
  sim.addActor(
    defineActor({
      name: "writer",
      async start(ctx) {
        for (let i = 1; i <= 3; i++) {
          const a = await ctx.client.get(aRef);
          await ctx.client.update({ object: { ...a, data: { n: String(i) } } });
        }
      },
    }),
  );
  let checks = 0;
  await sim.run({
    onStep: (record, view) => {
      checks++;
      const last = lastStepOf(sim.store, record);
      assert.equal(monitor.checkSafety(view, last), undefined);
      throwing.checkSafety(view, last);
    },
  });
  const counts = Object.fromEntries([...monitor.snapshot(), ...throwing.snapshot()].map((c) => [c.name, c.evaluations]));
  assert.ok(checks > 10, "the run had many more steps than writes");
  // The first check evaluates everything, and the time read at it makes the second check run "read the time once"
  // again; then ConfigMaps change once per update (3).
  assert.deepEqual(counts, {
    "lists ConfigMaps": 4,
    "reads nothing": checks,
    "reads the time and a Secret": checks,
    "reads the revision and a Secret": checks,
    "reads the step and a Secret": checks,
    "read the time once": 5,
    "reads a Secret, then throws": checks,
  });
});
