// A controller module, unmodified, in the simulator: the real wire, virtual time, fresh incarnations, wire faults,
// determinism across processes, and bad input. Seeds are pinned; the fixture operator is written on
// @kubernetes/client-node 1.x (test/module/fixtures/client-node-operator.mjs).
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { createSimulation, defineActor, fifoStrategy, randomStrategy, type PlannedFault, type RunResult } from "../../src/sim/index.ts";
import { moduleActor, checkModule } from "../../src/module/actor.ts";
import { ModuleLoadError } from "../../src/module/loader.ts";

const here = dirname(fileURLToPath(import.meta.url));
const repo = join(here, "../..");
const fixtures = join(here, "fixtures");
const operator = join(fixtures, "client-node-operator.mjs");
const epoch = Date.UTC(2026, 0, 1);

interface Run {
  result: RunResult;
  names: string[];
  logs: string[];
}

async function runOperator(options: { mode: "delta" | "level"; seed?: number; faults?: PlannedFault[]; random?: boolean; module?: string; untilMs?: number }): Promise<Run> {
  const sim = createSimulation({ seed: options.seed ?? 1, requestLatencyMs: [1, 20] });
  sim.addActor(moduleActor({ name: "op", module: options.module ?? operator, args: [`--mode=${options.mode}`] }));
  sim.addActor(
    defineActor({
      name: "user",
      faultable: false,
      crashable: false,
      async start(ctx) {
        for (const name of ["p1", "p2"]) {
          await ctx.clock.sleep(2000);
          await ctx.client.create({ object: { apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace: "default", labels: { role: "parent" } }, data: { from: name } } });
        }
      },
    }),
  );
  const result = await sim.run({ strategy: options.random === true ? randomStrategy() : fifoStrategy(), maxSteps: 2000, untilMs: epoch + (options.untilMs ?? 60_000), faults: options.faults ?? [] });
  const names = sim.store.list({ apiVersion: "v1", kind: "ConfigMap", namespace: "default" }).items.map((o) => o.metadata.name!).sort();
  const logs = result.trace.filter((r) => r.kind === "log").map((r) => `${r.actor}: ${r.label}`);
  return { result, names, logs };
}

/** The step of the operator's first create request in a fault-free run. */
function firstCreateStep(run: Run): number {
  const record = run.result.trace.find((r) => r.actor === "op" && r.kind === "request" && r.label.startsWith("create ConfigMap"));
  assert.ok(record !== undefined, "the operator creates a child");
  return record.step;
}

test("a client-node operator runs over the real wire: requests, responses and watch events are steps, timers virtual", async () => {
  const run = await runOperator({ mode: "level" });
  assert.equal(run.result.status, "until", run.result.message);
  assert.deepEqual(run.names, ["p1", "p1-child", "p2", "p2-child"]);
  const kinds = new Set(run.result.trace.filter((r) => r.actor === "op").map((r) => r.kind));
  for (const kind of ["start", "request", "response", "watch", "timer"]) assert.ok(kinds.has(kind as never), `a ${kind} step of the module`);
  const watchEvent = run.result.trace.find((r) => r.actor === "op" && r.kind === "watch");
  assert.match(watchEvent!.result, /^ADDED ConfigMap default\/p1@\d+$/);
  // The store write happens in the request step: its record moves the revision.
  const create = run.result.trace.find((r) => r.actor === "op" && r.kind === "request" && r.label.startsWith("create"))!;
  assert.equal(create.revisionAfter, create.revisionBefore + 1);
  // setInterval(30 s) fires on the simulation clock: at 30 s and 60 s of virtual time, not of real time.
  const resyncs = run.result.trace.filter((r) => r.actor === "op" && r.kind === "timer" && r.label === "setInterval 30000ms").map((r) => r.timeMs - epoch);
  assert.deepEqual(resyncs, [30_000, 60_000]);
});

test("a 500 injected on the module's create reaches it as a 500 Status, without touching the store", async () => {
  const clean = await runOperator({ mode: "delta" });
  assert.deepEqual(clean.names, ["p1", "p1-child", "p2", "p2-child"]);
  const atStep = firstCreateStep(clean);
  const faulted = await runOperator({ mode: "delta", faults: [{ atStep, kind: "fail-request", target: "op", code: 500 }] });
  const create = faulted.result.trace.find((r) => r.step === atStep && r.kind === "request")!;
  assert.equal(create.result, "500 InternalError (injected)");
  assert.equal(create.revisionAfter, create.revisionBefore);
  assert.ok(faulted.logs.includes("op: handler failed: 500"), faulted.logs.join("\n"));
  // The delta-style handler gives up: the finding the simulator must surface.
  assert.deepEqual(faulted.names, ["p1", "p2", "p2-child"]);
  // The level-style operator retries and converges under the same fault.
  const level = await runOperator({ mode: "level" });
  const levelFaulted = await runOperator({ mode: "level", faults: [{ atStep: firstCreateStep(level), kind: "fail-request", target: "op", code: 500 }] });
  assert.deepEqual(levelFaulted.names, ["p1", "p1-child", "p2", "p2-child"]);
});

test("a lost response: the create is applied, the module sees its connection reset", async () => {
  const clean = await runOperator({ mode: "delta" });
  const atStep = firstCreateStep(clean);
  const run = await runOperator({ mode: "delta", faults: [{ atStep, kind: "lost-response", target: "op" }] });
  const create = run.result.trace.find((r) => r.step === atStep && r.kind === "request")!;
  assert.equal(create.revisionAfter, create.revisionBefore + 1, "applied");
  assert.ok(run.result.trace.some((r) => r.actor === "op" && r.result === "connection reset (response lost)"));
  assert.ok(run.logs.some((line) => /^op: handler failed: .*(ECONNRESET|socket hang up)/i.test(line)), run.logs.join("\n"));
  assert.ok(run.names.includes("p1-child"));
});

test("a crash drops the incarnation whole: the restart loads the module fresh (its module-level counter starts again)", async () => {
  const clean = await runOperator({ mode: "level" });
  const atStep = firstCreateStep(clean) + 2;
  const run = await runOperator({ mode: "level", faults: [{ atStep, kind: "crash", target: "op" }] });
  assert.equal(run.result.status, "until", run.result.message);
  assert.deepEqual(run.logs.filter((line) => line.startsWith("op: loaded")), ["op: loaded 1", "op: loaded 1"]);
  assert.ok(run.result.trace.some((r) => r.actor === "op" && r.kind === "start" && r.label === "restart op"));
  // The new incarnation lists and watches again, and the world converges.
  assert.ok(run.result.trace.some((r) => r.kind === "request" && r.label.startsWith("watch op/1/")));
  assert.deepEqual(run.names, ["p1", "p1-child", "p2", "p2-child"]);
});

test("a closed watch ends the module's chunked response; client-node's informer lists and watches again", async () => {
  const clean = await runOperator({ mode: "level" });
  const opened = clean.result.trace.find((r) => r.kind === "response" && r.label.startsWith("watch op/0/w0"))!;
  const run = await runOperator({ mode: "level", faults: [{ atStep: opened.step + 1, kind: "close-watch", target: "op/0/w0" }] });
  assert.ok(run.result.trace.some((r) => r.kind === "watch" && r.result === "END"));
  assert.ok(run.result.trace.some((r) => r.kind === "request" && r.label.startsWith("watch op/0/w1")), "watched again");
  assert.deepEqual(run.names, ["p1", "p1-child", "p2", "p2-child"]);
});

test("fetch (Node's undici) goes over the same wire: a list, a watch and its events are steps", async () => {
  const run = await runOperator({ mode: "level", module: join(fixtures, "fetch-operator.mjs") });
  assert.equal(run.result.status, "idle", run.result.message);
  assert.ok(run.logs.includes("op: listed 0 at 4"), run.logs.join("\n"));
  assert.ok(run.result.trace.some((r) => r.actor === "op" && r.kind === "watch" && /^ADDED ConfigMap default\/p1@\d+$/.test(r.result)));
  assert.ok(run.logs.some((line) => line.startsWith('op: event {"type":"ADDED"')), run.logs.join("\n"));
});

test("process.exit ends the incarnation with its exit code; the actor restarts after its delay", async () => {
  const run = await runOperator({ mode: "level", module: join(fixtures, "exits.mjs"), untilMs: 3000 });
  const exits = run.result.trace.filter((r) => r.actor === "op" && r.kind === "log" && r.label === "exit op: process.exit(3)");
  assert.ok(exits.length >= 2, run.logs.join("\n"));
  assert.equal(exits[0]!.result, "exit code 3, restart in 1000ms");
  assert.ok(run.result.trace.some((r) => r.actor === "op" && r.label === "restart op"));
});

test("a stale read: the module's resourceVersion=0 list is served revisions back", async () => {
  const module = join(fixtures, "stale-list.mjs");
  const clean = await runOperator({ mode: "level", module });
  assert.ok(clean.logs.some((line) => /^op: listed p1 at \d+$/.test(line)), clean.logs.join("\n"));
  const list = clean.result.trace.find((r) => r.actor === "op" && r.kind === "request" && r.label === "list ConfigMap default rv=0")!;
  assert.equal(list.cached, true);
  const run = await runOperator({ mode: "level", module, faults: [{ atStep: list.step, kind: "stale-read", target: "op", lagRevisions: 1 }] });
  assert.ok(run.logs.some((line) => /^op: listed nothing at \d+$/.test(line)), run.logs.join("\n"));
});

test("a delayed watch event arrives that much later, still in order", async () => {
  const clean = await runOperator({ mode: "level" });
  const opened = clean.result.trace.find((r) => r.kind === "response" && r.label.startsWith("watch op/0/w0"))!;
  const run = await runOperator({ mode: "level", faults: [{ atStep: opened.step + 1, kind: "delay-watch", target: "op/0/w0", delayMs: 5000 }] });
  const created = run.result.trace.find((r) => r.actor === "user" && r.kind === "request" && r.label.endsWith("/p1"))!;
  const delivered = run.result.trace.find((r) => r.actor === "op" && r.kind === "watch" && r.result.startsWith("ADDED ConfigMap default/p1@"))!;
  assert.ok(delivered.timeMs - epoch >= 5000 && delivered.timeMs > created.timeMs, `delivered at ${delivered.timeMs - epoch} ms`);
  assert.deepEqual(run.names, ["p1", "p1-child", "p2", "p2-child"]);
});

test("finished simulations are freed: no incarnation, connection or HTTP parser keeps them reachable", async () => {
  setFlagsFromString("--expose_gc");
  const gc = runInNewContext("gc") as () => void;
  let collected = 0;
  const registry = new FinalizationRegistry(() => void collected++);
  const runs = 12;
  for (let seed = 1; seed <= runs; seed++) {
    const sim = createSimulation({ seed, traceMode: "hash-only" });
    registry.register(sim, seed);
    sim.addActor(moduleActor({ name: "op", module: operator, args: ["--mode=level"] }));
    await sim.run({ maxSteps: 40 });
  }
  for (let i = 0; i < 3 && collected < runs - 1; i++) {
    gc();
    await new Promise((resolve) => setImmediate(resolve));
  }
  // The last one is still live (its connections go when the next simulation starts a module).
  assert.ok(collected >= runs - 2, `${collected} of ${runs} simulations collected`);
});

const hashScript = `
import { createSimulation, defineActor, randomStrategy } from ${JSON.stringify(join(repo, "src/sim/index.ts"))};
import { moduleActor } from ${JSON.stringify(join(repo, "src/module/actor.ts"))};
const sim = createSimulation({ seed: 20261204, requestLatencyMs: [1, 20], traceMode: "hash-only" });
sim.addActor(moduleActor({ name: "op", module: ${JSON.stringify(operator)}, args: ["--mode=level"] }));
sim.addActor(defineActor({ name: "user", faultable: false, crashable: false, async start(ctx) {
  for (const name of ["p1", "p2"]) { await ctx.clock.sleep(2000); await ctx.client.create({ object: { apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace: "default", labels: { role: "parent" } } } }); }
}}));
const faultBudget = { chance: [1, 10], counts: { crash: 1, "fail-request": 2, "lost-response": 1, "close-watch": 1, "delay-watch": 2, "stale-read": 2, pause: 1 } };
const result = await sim.run({ strategy: randomStrategy(), maxSteps: 2000, untilMs: Date.UTC(2026, 0, 1) + 60_000, faultBudget });
console.log(result.traceHash, result.steps, result.faults.length);
`;

test("determinism: the same seed gives the same trace hash in two processes (random schedule and faults)", () => {
  const runs = [0, 1].map(() => spawnSync(process.execPath, ["--conditions=settle-source", "--import", "tsx", "--input-type=module", "-e", hashScript], { cwd: repo, encoding: "utf8" }));
  for (const run of runs) assert.equal(run.status, 0, run.stderr);
  const [first, second] = runs.map((run) => run.stdout.trim());
  assert.match(first!, /^[0-9a-f]{64} \d+ \d+$/);
  assert.equal(first, second);
  // Faults were drawn and steps taken: the hash covers a real run.
  const [, steps, faults] = first!.split(" ").map(Number);
  assert.ok(steps! > 30 && faults! > 0, first);
});

test("a module that never opens a watch is reported as such; a connection elsewhere is a finding naming it", async () => {
  const never = await runOperator({ mode: "level", module: join(fixtures, "never-watches.mjs") });
  assert.equal(never.result.status, "outside-await");
  assert.match(never.result.message!, /never opened a watch/);
  const outside = await runOperator({ mode: "level", module: join(fixtures, "outside.mjs") });
  assert.equal(outside.result.status, "actor-error");
  assert.match(outside.result.message!, /opened a connection to example\.com:80/);
});

test("bad modules: missing, missing export, throws while loading", async () => {
  assert.throws(() => checkModule({ module: join(fixtures, "nope.mjs") }), (error: unknown) => error instanceof ModuleLoadError && /nope\.mjs: no such file/.test(error.message));
  assert.throws(() => checkModule({ module: operator, export: "main" }), /does not export "main" \(it has no exports\)/);
  const run = await runOperator({ mode: "level", module: join(fixtures, "throws-while-loading.mjs") });
  assert.equal(run.result.status, "actor-error");
  assert.match(run.result.message!, /throws-while-loading\.mjs: threw while loading: no configuration found/);
});

const cli = (args: string[], cwd = repo) => spawnSync(process.execPath, ["--conditions=settle-source", "--import", import.meta.resolve("tsx"), join(here, "cli-entry.ts"), ...args], { cwd, encoding: "utf8" });

test("settle explore on a scenario.yaml: bad modules and command-only variants exit 2 with the reason, no stack", () => {
  const yaml = (name: string) => join("test/module/fixtures/yaml", name);
  const commandOnly = cli(["explore", yaml("command-only.yaml")]);
  assert.equal(commandOnly.status, 2, commandOnly.stderr);
  assert.match(commandOnly.stderr, /no variant gives a module: .*use settle drill test\/module\/fixtures\/yaml\/command-only\.yaml --variant main/);
  const missing = cli(["explore", yaml("bad-module.yaml")]);
  assert.equal(missing.status, 2, missing.stderr);
  assert.match(missing.stderr, /bad-module\.yaml:4:13: variants\.missing\.module: \.\.\/does-not-exist\.mjs: no such file/);
  const throws = cli(["explore", yaml("throws.yaml")]);
  assert.equal(throws.status, 2, throws.stderr);
  assert.match(throws.stderr, /throws-while-loading\.mjs: threw while loading: no configuration found/);
  for (const run of [commandOnly, missing, throws]) assert.doesNotMatch(run.stderr, /\n\s+at /, "no stack");
});

test("settle explore finds the delta variant's bug and leaves the level variant clean (pinned seed)", () => {
  const yaml = join(fixtures, "yaml/scenario.yaml");
  // Findings are written under the working directory: a temporary one.
  const cwd = mkdtempSync(join(tmpdir(), "settle-module-test-"));
  try {
    const delta = cli(["explore", yaml, "--variant", "delta", "--runs", "40", "--seed", "7", "--workers", "1"], cwd);
    // Exit 1: findings (the variant expects one; the report says so).
    assert.equal(delta.status, 1, delta.stderr);
    assert.match(delta.stdout, /40 runs, 1 finding/);
    const level = cli(["explore", yaml, "--variant", "level", "--runs", "40", "--seed", "7", "--workers", "1"], cwd);
    assert.equal(level.status, 0, level.stdout + level.stderr);
    assert.match(level.stdout, /40 runs, no finding/);
  } finally {
    rmSync(cwd, { recursive: true, force: true });
  }
});

test("a waitFor that times out is not the scenario's error: the workload stops there and the properties judge the world", () => {
  const cwd = mkdtempSync(join(tmpdir(), "settle-module-test-"));
  try {
    const ran = cli(["explore", join(fixtures, "yaml/wait-times-out.yaml"), "--runs", "3", "--seed", "7", "--workers", "1"], cwd);
    assert.equal(ran.status, 0, ran.stdout + ran.stderr);
    assert.match(ran.stdout, /3 runs, no finding/);
    assert.doesNotMatch(ran.stdout + ran.stderr, /SCENARIO ERROR|scenario error/);
  } finally {
    rmSync(cwd, { recursive: true, force: true });
  }
});
