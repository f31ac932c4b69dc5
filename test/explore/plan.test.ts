// The planner on its own (src/explore/plan.ts): the systematic fault points it reads off a reference trace, class by
// class and in order, and which run of an exploration is which. The traces here are written by hand, so each rule
// of `faultPointsOf` is checked against a run small enough to work out on paper.
import { test } from "node:test";
import assert from "node:assert/strict";
import { crashableActors, faultableActors, faultPointsOf, planRun, plannedRunCount, pointOfRun, runSeed, type FaultPoint, type PlanContext } from "../../src/explore/plan.ts";
import type { Scenario } from "../../src/explore/scenario.ts";
import { WORKLOAD_ACTOR } from "../../src/explore/run.ts";
import { Rng } from "../../src/sim/rng.ts";
import { pctStrategy } from "../../src/sim/strategy.ts";
import type { TraceRecord } from "../../src/sim/trace.ts";

function record(step: number, actor: string, kind: TraceRecord["kind"], label: string, extra: Partial<TraceRecord> = {}): TraceRecord {
  return { step, timeMs: 1000 + step, actor, kind, label, revisionBefore: 0, revisionAfter: 0, result: "ok", ...extra };
}

const configMap = { kind: "ConfigMap" };

/**
 * An operator `op` creates a ConfigMap (revision 1 to 2), lists and watches ConfigMaps from the cache, sees its
 * create, updates it (2 to 3), writes to an outside registry; the workload creates another (3 to 4), which op's
 * watch delivers; op reads one object directly.
 */
const trace: TraceRecord[] = [
  record(0, "op", "start", "start"),
  record(1, "op", "request", "create ConfigMap d/a", { verb: "create", access: "write", object: configMap, requestSeq: 1, revisionBefore: 1, revisionAfter: 2 }),
  record(2, "op", "response", "create ConfigMap d/a", { requestSeq: 1 }),
  record(3, "op", "request", "list ConfigMap d", { verb: "list", access: "read", object: configMap, cached: true }),
  record(4, "op", "request", "watch ConfigMap d", { verb: "watch", access: "read", object: configMap, watchId: "op/1/w1", cached: true }),
  record(5, "op", "watch", "event", { watchId: "op/1/w1", result: "ADDED ConfigMap d/a@2", revisionBefore: 2, revisionAfter: 2 }),
  record(6, "op", "request", "update ConfigMap d/a", { verb: "update", access: "write", object: configMap, requestSeq: 2, revisionBefore: 2, revisionAfter: 3 }),
  record(7, "op", "external", "write registry", { access: "write", external: "registry" }),
  record(8, "workload", "request", "create ConfigMap d/b", { verb: "create", access: "write", object: configMap, requestSeq: 3, revisionBefore: 3, revisionAfter: 4 }),
  record(9, "op", "watch", "event", { watchId: "op/1/w1", result: "ADDED ConfigMap d/b@4", revisionBefore: 4, revisionAfter: 4 }),
  record(10, "op", "request", "get ConfigMap d/a", { verb: "get", access: "read", object: configMap }),
];

const everyKind = new Set(["crash", "stale-read", "delay-watch", "close-watch", "fail-request", "lost-response", "pause", "clock-skew", "clock-step"]);
const op = new Set(["op"]);
const declared = [{ atStep: 8, kind: "registry-down", target: "registry", label: "op read registry" }];

function lines(points: readonly FaultPoint[]): string[] {
  return points.map((p) => `${p.pointClass} ${JSON.stringify(p.fault)} | ${p.label}`);
}

test("faultPointsOf plans every class from a reference trace, in class order, then trace order, cheapest time travel first", () => {
  const points = faultPointsOf({ workload: "w", trace, crashable: op, faultable: op, kinds: everyKind, declared });
  assert.ok(points.every((p) => p.workload === "w"));
  assert.deepEqual(lines(points), [
    'declared {"atStep":8,"kind":"registry-down","target":"registry"} | registry-down registry after op read registry',
    'crash {"atStep":2,"kind":"crash","target":"op"} | crash op after create ConfigMap d/a (applied, response pending)',
    'crash {"atStep":3,"kind":"crash","target":"op"} | crash op after create ConfigMap d/a (response received)',
    'crash {"atStep":7,"kind":"crash","target":"op"} | crash op after update ConfigMap d/a (applied, response pending)',
    'crash {"atStep":8,"kind":"crash","target":"op"} | crash op after write registry',
    'crash-time-travel {"atStep":2,"kind":"crash","target":"op","relistAtRevision":1} | crash op after create ConfigMap d/a, its restart\'s first list served at revision 1 (time travel)',
    'crash-time-travel {"atStep":7,"kind":"crash","target":"op","relistAtRevision":2} | crash op after update ConfigMap d/a, its restart\'s first list served at revision 2 (time travel)',
    'lost-response {"atStep":1,"kind":"lost-response","target":"op"} | lose the response of op\'s create ConfigMap d/a (applied)',
    'lost-response {"atStep":6,"kind":"lost-response","target":"op"} | lose the response of op\'s update ConfigMap d/a (applied)',
    'fail-write {"atStep":1,"kind":"fail-request","target":"op","code":500} | fail op\'s create ConfigMap d/a with 500',
    'fail-write {"atStep":6,"kind":"fail-request","target":"op","code":500} | fail op\'s update ConfigMap d/a with 500',
    'conflict {"atStep":6,"kind":"fail-request","target":"op","code":409} | fail op\'s update ConfigMap d/a with 409 Conflict',
    'stale-read {"atStep":3,"kind":"stale-read","target":"op","lagRevisions":3} | stale list ConfigMap d (3 revisions behind)',
    'pause {"atStep":2,"kind":"pause","target":"op","durationMs":20000} | pause op for 20000 ms after create ConfigMap d/a',
    'pause {"atStep":7,"kind":"pause","target":"op","durationMs":20000} | pause op for 20000 ms after update ConfigMap d/a',
    'pause {"atStep":8,"kind":"pause","target":"op","durationMs":20000} | pause op for 20000 ms after write registry',
    'close-watch {"atStep":6,"kind":"close-watch","target":"op/1/w1"} | close op/1/w1 after its first event',
    'delay-watch {"atStep":5,"kind":"delay-watch","target":"op/1/w1","delayMs":5000} | delay ADDED ConfigMap d/a@2 on op/1/w1 by 5000 ms',
    'delay-watch {"atStep":9,"kind":"delay-watch","target":"op/1/w1","delayMs":5000} | delay ADDED ConfigMap d/b@4 on op/1/w1 by 5000 ms',
    'fail-read {"atStep":3,"kind":"fail-request","target":"op","code":500} | fail op\'s list ConfigMap d with 500',
    'fail-read {"atStep":4,"kind":"fail-request","target":"op","code":500} | fail op\'s watch ConfigMap d with 500',
    'fail-read {"atStep":10,"kind":"fail-request","target":"op","code":500} | fail op\'s get ConfigMap d/a with 500',
    // op's last write is the update (revision 3 after it); the workload's later create is after it, so not hidden.
    'crash-kind-time-travel {"atStep":7,"kind":"crash","target":"op","relistAtRevision":2,"relistKind":"ConfigMap","relistCatchUpMs":5000} | crash op after update ConfigMap d/a, its restart\'s first ConfigMap list served at revision 2, before its own update ConfigMap d/a (per-kind time travel)',
    'crash-kind-time-travel {"atStep":7,"kind":"crash","target":"op","relistAtRevision":1,"relistKind":"ConfigMap","relistCatchUpMs":5000} | crash op after update ConfigMap d/a, its restart\'s first ConfigMap list served at revision 1, before its own create ConfigMap d/a (per-kind time travel)',
    // The watch's last event (revision 4) comes after all three writes: three points, one to three revisions hidden.
    'watch-kind-time-travel {"atStep":10,"kind":"close-watch","target":"op/1/w1","relistAtRevision":3,"relistCatchUpMs":5000} | fail op/1/w1 after its ADDED ConfigMap d/b@4, op\'s relist of ConfigMap served at revision 3, before workload\'s create ConfigMap d/b (per-kind time travel after a failed watch)',
    'watch-kind-time-travel {"atStep":10,"kind":"close-watch","target":"op/1/w1","relistAtRevision":2,"relistCatchUpMs":5000} | fail op/1/w1 after its ADDED ConfigMap d/b@4, op\'s relist of ConfigMap served at revision 2, before its own update ConfigMap d/a (per-kind time travel after a failed watch)',
    'watch-kind-time-travel {"atStep":10,"kind":"close-watch","target":"op/1/w1","relistAtRevision":1,"relistCatchUpMs":5000} | fail op/1/w1 after its ADDED ConfigMap d/b@4, op\'s relist of ConfigMap served at revision 1, before its own create ConfigMap d/a (per-kind time travel after a failed watch)',
    'expire-watch {"atStep":6,"kind":"close-watch","target":"op/1/w1","expired":1} | expire op/1/w1 after its first event (410 Expired mid-stream: its client must relist)',
    'clock-skew {"atStep":0,"kind":"clock-skew","target":"op","offsetMs":30000} | op\'s clock 30 s ahead from the start',
    'clock-skew {"atStep":0,"kind":"clock-skew","target":"op","offsetMs":-30000} | op\'s clock 30 s behind from the start',
    'clock-step {"atStep":2,"kind":"clock-step","target":"op","deltaMs":30000} | op\'s clock stepped 30 s forward after create ConfigMap d/a',
    'clock-step {"atStep":2,"kind":"clock-step","target":"op","deltaMs":-30000} | op\'s clock stepped 30 s back after create ConfigMap d/a',
  ]);
});

test("faultPointsOf plans only the kinds the budget allows, and only for the actors each fault may hit", () => {
  const classesOf = (kinds: string[], crashable = op, faultable = op) => [...new Set(faultPointsOf({ workload: "w", trace, crashable, faultable, kinds: new Set(kinds) }).map((p) => p.pointClass))];
  assert.deepEqual(classesOf([]), [], "no kind allowed, nothing declared: no point");
  assert.deepEqual(classesOf(["crash"]), ["crash"], "a time travel needs stale-read as well");
  assert.deepEqual(classesOf(["stale-read"]), ["stale-read"]);
  assert.deepEqual(classesOf(["crash", "stale-read"]), ["crash", "crash-time-travel", "stale-read", "crash-kind-time-travel"]);
  assert.deepEqual(classesOf(["close-watch"]), ["close-watch", "expire-watch"]);
  assert.deepEqual(classesOf(["close-watch", "stale-read"]), ["stale-read", "close-watch", "watch-kind-time-travel", "expire-watch"]);
  assert.deepEqual(classesOf(["delay-watch"]), ["delay-watch"]);
  assert.deepEqual(classesOf(["fail-request"]), ["fail-write", "conflict", "fail-read"]);
  assert.deepEqual(classesOf(["lost-response"]), ["lost-response"]);
  assert.deepEqual(classesOf(["pause"]), ["pause"]);
  assert.deepEqual(classesOf(["clock-skew"]), ["clock-skew"]);
  assert.deepEqual(classesOf(["clock-step"]), ["clock-step"]);
  const none = new Set<string>();
  assert.deepEqual(classesOf([...everyKind], none, op), ["lost-response", "fail-write", "conflict", "stale-read", "pause", "close-watch", "delay-watch", "fail-read", "watch-kind-time-travel", "expire-watch", "clock-skew", "clock-step"], "nothing crashable: no crash of any class");
  assert.deepEqual(classesOf([...everyKind], op, none), ["crash", "crash-time-travel", "crash-kind-time-travel"], "nothing faultable: crashes only");
});

test("faultPointsOf plans the time travels only from writes and deliveries inside the fault phase", () => {
  // The phase ends at 1006 ms: op's last write in it is the create (step 1), the watch's last delivery step 5.
  const points = faultPointsOf({ workload: "w", trace, crashable: op, faultable: op, kinds: everyKind, faultPhaseEndMs: 1006 });
  const travel = (cls: string) => points.filter((p) => p.pointClass === cls).map((p) => `${p.fault.atStep}@${p.fault.relistAtRevision}`);
  assert.deepEqual(travel("crash-kind-time-travel"), ["2@1"]);
  assert.deepEqual(travel("watch-kind-time-travel"), ["6@1"]);
  const merged = faultPointsOf({ workload: "w", trace: [...trace, ...trace.slice(1, 2)], crashable: op, faultable: op, kinds: new Set(["lost-response"]) });
  assert.equal(merged.length, 2, "a point identical to one planned already is merged into it");
});

// The runs of an exploration.
const scenario = { workloads: { one: {}, two: {}, three: {} } } as unknown as Scenario;
const points = faultPointsOf({ workload: "two", trace, crashable: op, faultable: op, kinds: new Set(["crash"]) });

function context(strategy: PlanContext["strategy"], workload?: string): PlanContext {
  return { scenario, variant: "v", workload, params: { n: 1 }, seed: 7, strategy, points };
}

test("runSeed spreads consecutive indexes and seeds over 32 bits, the same every time", () => {
  const seeds = Array.from({ length: 1000 }, (_, i) => runSeed(7, i));
  assert.equal(new Set(seeds).size, 1000, "no two runs share a seed");
  assert.ok(seeds.every((s) => Number.isInteger(s) && s >= 0 && s < 2 ** 32));
  assert.ok(seeds.some((s) => s >= 2 ** 31), "the top bit is used");
  assert.notEqual(runSeed(7, 0), runSeed(8, 0));
  assert.notEqual(runSeed(0, 0), runSeed(0, 1));
  // Pinned: which runs an exploration makes (and so what `--seed N --runs M` finds, in every doc and example that
  // quotes one) follows from these numbers.
  assert.deepEqual([runSeed(1, 0), runSeed(1, 1), runSeed(42, 99)], [3484979326, 2306862108, 903539293]);
});

test("the systematic strategy runs each point once; mix gives the even runs to the points until all are covered", () => {
  assert.equal(points.length, 4);
  assert.equal(plannedRunCount(context("systematic"), 100), 4);
  assert.equal(plannedRunCount(context("systematic"), 3), 3);
  assert.equal(plannedRunCount(context("mix"), 100), 100);
  assert.deepEqual(Array.from({ length: 6 }, (_, i) => pointOfRun(context("systematic"), i)), [0, 1, 2, 3, undefined, undefined]);
  assert.deepEqual(Array.from({ length: 10 }, (_, i) => pointOfRun(context("mix"), i)), [0, undefined, 1, undefined, 2, undefined, 3, undefined, undefined, undefined]);
  for (const strategy of ["random", "pct", "bounded"] as const) assert.equal(pointOfRun(context(strategy), 0), undefined, strategy);
});

test("planRun: a point's run replays the reference schedule with that one fault; the others draw their faults", () => {
  const systematic = planRun(context("systematic"), 2);
  assert.equal(systematic.strategy, "systematic");
  assert.equal(systematic.point, 2);
  assert.deepEqual({ ...systematic.spec, strategy: systematic.spec.strategy?.name }, { variant: "v", params: { n: 1 }, seed: runSeed(7, 2), workload: "two", strategy: "fifo", faults: [points[2]!.fault] });
  const strategies = Array.from({ length: 8 }, (_, i) => planRun(context("mix"), i).strategy);
  assert.deepEqual(strategies, ["systematic", "random", "systematic", "pct(3)", "systematic", "random", "systematic", "pct(3)"]);
  assert.deepEqual(Array.from({ length: 4 }, (_, i) => planRun(context("mix"), 8 + i).strategy), ["random", "random", "pct(3)", "pct(3)"], "after the points, mix alternates pairs");
  assert.equal(planRun(context("pct"), 0).strategy, "pct(3)");
  assert.equal(planRun(context("random"), 1).strategy, "random");
  const drawn = planRun(context("random"), 5);
  assert.equal(drawn.point, undefined);
  assert.equal(drawn.spec.drawFaults, true);
  assert.equal(drawn.spec.faults, undefined);
  assert.equal(drawn.spec.seed, runSeed(7, 5));
  const workloads = Array.from({ length: 30 }, (_, i) => planRun(context("random"), i).spec.workload);
  assert.deepEqual(workloads, Array.from({ length: 30 }, (_, i) => ["one", "two", "three"][new Rng(runSeed(7, i)).fork("workload").int(3)]));
  assert.deepEqual(new Set(workloads), new Set(["one", "two", "three"]), "an unfixed workload is drawn per run");
  assert.ok(Array.from({ length: 30 }, (_, i) => planRun(context("random", "three"), i).spec.workload).every((w) => w === "three"), "a fixed workload is every run's");
});

/**
 * A second operator trace for the edges: `obs` may be faulted but not crashed; op's first list is not from the cache;
 * the workload writes a Secret and a ConfigMap before op writes its own Secret; op's later update changes nothing (no
 * new revision); op watches ConfigMaps without listing them from the cache.
 */
const edges: TraceRecord[] = [
  record(0, "obs", "request", "list ConfigMap d", { verb: "list", access: "read", object: configMap, cached: true }),
  record(1, "op", "request", "list ConfigMap d", { verb: "list", access: "read", object: configMap, cached: false }),
  record(2, "workload", "request", "create Secret d/x", { verb: "create", access: "write", object: { kind: "Secret" }, revisionBefore: 1, revisionAfter: 2 }),
  record(3, "workload", "request", "create ConfigMap d/c", { verb: "create", access: "write", object: configMap, revisionBefore: 2, revisionAfter: 3 }),
  record(4, "op", "request", "create Secret d/y", { verb: "create", access: "write", object: { kind: "Secret" }, revisionBefore: 3, revisionAfter: 4 }),
  record(5, "op", "request", "list Secret d", { verb: "list", access: "read", object: { kind: "Secret" }, cached: true }),
  record(6, "op", "request", "update Secret d/y", { verb: "update", access: "write", object: { kind: "Secret" }, revisionBefore: 4, revisionAfter: 4 }),
  record(7, "op", "request", "watch ConfigMap d", { verb: "watch", access: "read", object: configMap, watchId: "op/1/w1" }),
  record(8, "op", "watch", "event", { watchId: "op/1/w1", result: "ADDED ConfigMap d/c@3", revisionBefore: 3, revisionAfter: 3 }),
];

test("faultPointsOf's edges: only cached lists go stale or time-travel, a write with no new revision hides nothing, others' writes are named", () => {
  const both = new Set(["op", "obs"]);
  const of = (kinds: string[], cls: string) => faultPointsOf({ workload: "w", trace: edges, crashable: op, faultable: both, kinds: new Set(kinds) }).filter((p) => p.pointClass === cls).map((p) => `${JSON.stringify(p.fault)} | ${p.label}`);
  assert.deepEqual(of(["stale-read"], "stale-read"), [
    '{"atStep":0,"kind":"stale-read","target":"obs","lagRevisions":3} | stale list ConfigMap d (3 revisions behind)',
    '{"atStep":5,"kind":"stale-read","target":"op","lagRevisions":3} | stale list Secret d (3 revisions behind)',
  ]);
  // op lists only Secrets from the cache; its last write that made a revision is the Secret's create at step 4.
  assert.deepEqual(of(["crash", "stale-read"], "crash-kind-time-travel"), [
    '{"atStep":5,"kind":"crash","target":"op","relistAtRevision":3,"relistKind":"Secret","relistCatchUpMs":5000} | crash op after create Secret d/y, its restart\'s first Secret list served at revision 3, before its own create Secret d/y (per-kind time travel)',
    '{"atStep":5,"kind":"crash","target":"op","relistAtRevision":1,"relistKind":"Secret","relistCatchUpMs":5000} | crash op after create Secret d/y, its restart\'s first Secret list served at revision 1, before workload\'s create Secret d/x (per-kind time travel)',
  ]);
  assert.deepEqual(of(["close-watch", "stale-read"], "watch-kind-time-travel"), [], "op watches ConfigMaps but never lists them from the cache");
  assert.deepEqual(of(["clock-skew"], "clock-skew").map((line) => line.split(" | ")[1]), [
    "obs's clock 30 s ahead from the start",
    "obs's clock 30 s behind from the start",
    "op's clock 30 s ahead from the start",
    "op's clock 30 s behind from the start",
  ], "in actor-name order");
});

test("faultPointsOf: two actors whose watches deliver the same event get their watch time travels in name order", () => {
  const shared: TraceRecord[] = [
    record(0, "zed", "request", "list ConfigMap d", { verb: "list", access: "read", object: configMap, cached: true }),
    record(1, "amy", "request", "list ConfigMap d", { verb: "list", access: "read", object: configMap, cached: true }),
    record(2, "zed", "request", "watch ConfigMap d", { verb: "watch", access: "read", object: configMap, watchId: "zed/1/w1" }),
    record(3, "amy", "request", "watch ConfigMap d", { verb: "watch", access: "read", object: configMap, watchId: "amy/1/w1" }),
    record(4, "workload", "request", "create ConfigMap d/c", { verb: "create", access: "write", object: configMap, revisionBefore: 1, revisionAfter: 2 }),
    // A write that made no revision (an update that changed nothing) hides nothing: no point is planned before it.
    record(5, "workload", "request", "update ConfigMap d/c", { verb: "update", access: "write", object: configMap, revisionBefore: 2, revisionAfter: 2 }),
    record(6, "zed", "watch", "event", { watchId: "zed/1/w1", result: "ADDED ConfigMap d/c@2", revisionBefore: 2, revisionAfter: 2 }),
    record(7, "amy", "watch", "event", { watchId: "amy/1/w1", result: "ADDED ConfigMap d/c@2", revisionBefore: 2, revisionAfter: 2 }),
    record(8, "mia", "request", "list ConfigMap d", { verb: "list", access: "read", object: configMap, cached: true }),
    record(9, "mia", "request", "watch ConfigMap d", { verb: "watch", access: "read", object: configMap, watchId: "mia/1/w1" }),
    record(10, "mia", "watch", "event", { watchId: "mia/1/w1", result: "ADDED ConfigMap d/c@2", revisionBefore: 2, revisionAfter: 2 }),
  ];
  const actors = new Set(["zed", "amy", "mia"]);
  const points = faultPointsOf({ workload: "w", trace: shared, crashable: new Set(), faultable: actors, kinds: new Set(["close-watch", "stale-read"]) });
  assert.deepEqual(
    points.filter((p) => p.pointClass === "watch-kind-time-travel").map((p) => `${p.fault.target}@${p.fault.atStep}:${p.fault.relistAtRevision}`),
    ["amy/1/w1@8:1", "mia/1/w1@11:1", "zed/1/w1@7:1"],
  );
  // A delivery at the very end of the fault phase is outside it.
  const ended = faultPointsOf({ workload: "w", trace: shared, crashable: new Set(), faultable: actors, kinds: new Set(["close-watch", "stale-read"]), faultPhaseEndMs: 1010 });
  assert.deepEqual(ended.filter((p) => p.pointClass === "watch-kind-time-travel").map((p) => p.fault.target), ["amy/1/w1", "zed/1/w1"]);
});

test("faultPointsOf: a response carries its request's facts and plans nothing of its own, nor does an outside read", () => {
  // As the simulator records them: a response has its request's verb, object, access, request number and watch id.
  const write = { verb: "create" as const, access: "write" as const, object: configMap, requestSeq: 1 };
  const watch = { verb: "watch" as const, access: "read" as const, object: configMap, watchId: "op/1/w1", requestSeq: 2 };
  const withResponses: TraceRecord[] = [
    record(0, "op", "request", "create ConfigMap d/a", { ...write, revisionBefore: 1, revisionAfter: 2 }),
    record(1, "op", "response", "create ConfigMap d/a", write),
    record(2, "op", "request", "watch ConfigMap d", watch),
    record(3, "op", "response", "watch ConfigMap d", watch),
    record(4, "op", "external", "read registry", { access: "read", external: "registry" }),
  ];
  const points = faultPointsOf({ workload: "w", trace: withResponses, crashable: op, faultable: op, kinds: everyKind });
  assert.deepEqual(
    points.map((p) => `${p.pointClass}@${p.fault.atStep}`),
    ["crash@1", "crash@2", "crash-time-travel@1", "lost-response@0", "fail-write@0", "pause@1", "fail-read@2", "clock-skew@0", "clock-skew@0", "clock-step@1", "clock-step@1"],
  );
});

test("faultPointsOf: a 409 Conflict is planned for updates and patches, status ones included, and for no other write", () => {
  const verbs = ["create", "update", "updateStatus", "patch", "patchStatus", "delete"] as const;
  const writes = verbs.map((verb, i) => record(i, "op", "request", `${verb} ConfigMap d/a`, { verb, access: "write", object: configMap, revisionBefore: i + 1, revisionAfter: i + 2 }));
  const conflicts = faultPointsOf({ workload: "w", trace: writes, crashable: op, faultable: op, kinds: new Set(["fail-request"]) }).filter((p) => p.pointClass === "conflict");
  assert.deepEqual(conflicts.map((p) => p.label), ["fail op's update ConfigMap d/a with 409 Conflict", "fail op's updateStatus ConfigMap d/a with 409 Conflict", "fail op's patch ConfigMap d/a with 409 Conflict", "fail op's patchStatus ConfigMap d/a with 409 Conflict"]);
});

test("planRun: random runs stay random at every index, and a PCT run's strategy is PCT of depth 3 over a 2,000-step horizon", () => {
  assert.deepEqual(Array.from({ length: 8 }, (_, i) => planRun(context("random"), i).strategy), Array(8).fill("random"));
  const planned = planRun(context("pct"), 0).spec.strategy!;
  const reference = pctStrategy({ depth: 3, stepsHint: 2_000 });
  const ready = ["a", "b", "c"].map((actor) => ({ actor })) as unknown as Parameters<typeof planned.next>[0];
  const choose = (strategy: typeof planned) => {
    const rng = new Rng(11);
    return Array.from({ length: 2_000 }, (_, step) => strategy.next(ready, rng, step)).join("");
  };
  assert.equal(choose(planned), choose(reference));
});

test("faultPointsOf steps each actor's clock after its first API write, not after an outside write or a read", () => {
  const trace: TraceRecord[] = [
    record(0, "op", "external", "write registry", { access: "write", external: "registry" }),
    record(1, "op", "request", "get ConfigMap d/a", { verb: "get", access: "read", object: configMap }),
    record(2, "op", "request", "create ConfigMap d/a", { verb: "create", access: "write", object: configMap, revisionBefore: 1, revisionAfter: 2 }),
  ];
  const steps = faultPointsOf({ workload: "w", trace, crashable: op, faultable: op, kinds: new Set(["clock-step"]) });
  assert.deepEqual(steps.map((p) => `${p.fault.atStep} ${p.fault.deltaMs}`), ["3 30000", "3 -30000"]);
});

test("crashableActors and faultableActors: every actor but the workload and those that opt out", () => {
  const actors = [{ name: "op" }, { name: "fixed", crashable: false }, { name: "shy", faultable: false }, { name: "both", crashable: true, faultable: true }, { name: WORKLOAD_ACTOR }];
  const withActors = { actors: () => actors } as unknown as Scenario;
  const ctx = { variant: "v", workload: "w", params: {} };
  assert.deepEqual([...crashableActors(withActors, ctx)], ["op", "shy", "both"]);
  assert.deepEqual([...faultableActors(withActors, ctx)], ["op", "fixed", "both"]);
});
