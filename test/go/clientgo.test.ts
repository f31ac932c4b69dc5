// client-go, unmodified, in the simulator: its informer, work queue and typed client over the real wire, the wire's
// faults acting on it, and determinism across processes. The fixture is a sample-controller
// (test/go/fixtures/clientgo): every ConfigMap labelled role=parent gets a child. Seeds are pinned. Its first build
// for js/wasm takes minutes (client-go); later runs find it in settle's Go build cache.
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { createSimulation, defineActor, fifoStrategy, type PlannedFault, type RunResult } from "../../src/sim/index.ts";
import { goActor } from "../../src/go/actor.ts";
import { setModuleOutput } from "../../src/module/output.ts";

const here = dirname(fileURLToPath(import.meta.url));
const repo = join(here, "../..");
const fixture = join(here, "fixtures", "clientgo");
const epoch = Date.UTC(2026, 0, 1);

interface Run {
  result: RunResult;
  children: string[];
  stdout: string;
}

async function runController(faults: PlannedFault[] = [], env: Record<string, string> = {}): Promise<Run> {
  let stdout = "";
  const previous = setModuleOutput((fd, chunk) => {
    if (fd === 1) stdout += chunk.toString("utf8");
  });
  try {
    const sim = createSimulation({ seed: 1, requestLatencyMs: [1, 20] });
    for (const actor of goActor({ name: "op", dir: fixture, env })) sim.addActor(actor);
    sim.addActor(
      defineActor({
        name: "user",
        faultable: false,
        crashable: false,
        async start(ctx) {
          for (const name of ["p1", "p2"]) {
            await ctx.clock.sleep(2000);
            await ctx.client.create({ object: { apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace: "default", labels: { role: "parent" } } } });
          }
        },
      }),
    );
    const result = await sim.run({ strategy: fifoStrategy(), maxSteps: 2000, untilMs: epoch + 30_000, faults });
    const children = sim.store.list({ apiVersion: "v1", kind: "ConfigMap", namespace: "default", labelSelector: "child-of" }).items.map((o) => o.metadata.name!).sort();
    return { result, children, stdout };
  } finally {
    setModuleOutput(previous);
  }
}

function opSteps(run: Run): string[] {
  return run.result.trace.filter((r) => r.actor === "op").map((r) => `${r.step} ${r.timeMs - epoch} ${r.kind} ${r.label} => ${r.result}`);
}

function stepOf(run: Run, match: RegExp): number {
  const record = run.result.trace.find((r) => r.actor === "op" && match.test(`${r.kind} ${r.label} => ${r.result}`));
  assert.ok(record !== undefined, `a step matching ${match}:\n${opSteps(run).join("\n")}`);
  return record.step;
}

test("client-go's informer, work queue and client run over the real wire: each request, response and watch event a step", async () => {
  const run = await runController();
  assert.equal(run.result.status, "until", run.result.message);
  assert.deepEqual(run.children, ["p1-child", "p2-child"]);
  const kinds = new Set(run.result.trace.filter((r) => r.actor === "op").map((r) => r.kind));
  for (const kind of ["start", "request", "response", "watch", "timer"]) assert.ok(kinds.has(kind as never), `a ${kind} step of the Go program`);
  // client-go's typed client speaks protobuf: its watch frames are one step each, labelled from the frame, and its
  // create is named from the protobuf body.
  const events = run.result.trace.filter((r) => r.actor === "op" && r.kind === "watch").map((r) => r.result);
  assert.ok(events.some((result) => /^ADDED ConfigMap default\/p1@\d+$/.test(result)), events.join("\n"));
  // The create is written in its request step, after the watch event of the parent reached the informer.
  const create = run.result.trace.find((r) => r.actor === "op" && r.kind === "request" && r.label.startsWith("create ConfigMap"))!;
  assert.equal(create.label, "create ConfigMap default/p1-child");
  assert.equal(create.revisionAfter, create.revisionBefore + 1);
  assert.match(run.stdout, /^synced at \d+\ncreated p1-child 2026-01-01T00:00:02\.\d+Z\ncreated p2-child 2026-01-01T00:00:04\.\d+Z\n$/);
});

test("a 500 on the controller's create reaches client-go as an error; the work queue retries after its backoff, on virtual time", async () => {
  const clean = await runController();
  const atStep = stepOf(clean, /^request create ConfigMap/);
  const run = await runController([{ atStep, kind: "fail-request", target: "op", code: 500 }]);
  assert.deepEqual(run.children, ["p1-child", "p2-child"]);
  assert.match(run.stdout, /sync p1 failed: internal error: create ConfigMap default\/p1-child\n/);
  const creates = run.result.trace.filter((r) => r.actor === "op" && r.kind === "request" && r.label.startsWith("create ConfigMap"));
  assert.equal(creates[0]!.result, "500 InternalError (injected)");
  // The default controller rate limiter's first backoff is 5 ms: the retry's create comes that much later.
  assert.ok(creates[1]!.timeMs - creates[0]!.timeMs >= 5, opSteps(run).join("\n"));
});

test("a lost response (the create applied, the connection reset) reaches client-go as a connection error; the retry finds the child", async () => {
  const clean = await runController();
  const atStep = stepOf(clean, /^request create ConfigMap/);
  const run = await runController([{ atStep, kind: "lost-response", target: "op" }]);
  assert.deepEqual(run.children, ["p1-child", "p2-child"]);
  assert.match(run.stdout, /sync p1 failed: Post "http:\/\/kubernetes\.settle\.sim:6443\/.*": read tcp .*: recvfrom: Connection reset by peer\n/);
  assert.ok(opSteps(run).some((line) => line.includes("connection reset (response lost)")), opSteps(run).join("\n"));
});

test("a watch closed with 410 Expired makes client-go's reflector list and watch again", async () => {
  const clean = await runController();
  const opened = stepOf(clean, /^response watch op\/0\/w0/);
  const run = await runController([{ atStep: opened + 1, kind: "close-watch", target: "op/0/w0", expired: 1 }]);
  assert.deepEqual(run.children, ["p1-child", "p2-child"]);
  const watches = run.result.trace.filter((r) => r.actor === "op" && r.kind === "request" && r.label.startsWith("watch "));
  assert.ok(watches.length >= 2, `the reflector watched again:\n${opSteps(run).join("\n")}`);
});

/** The hash lines of the fixture's scenario.yaml for seeds 1..3, from a child process. */
function hashes(): { child: ChildProcess; done: Promise<{ code: number | null; stdout: string; stderr: string }> } {
  const child = spawn(process.execPath, ["--conditions=settle-source", "--import", "tsx", join(here, "hashes-entry.ts"), join(fixture, "scenario.yaml"), "1", "3"], { cwd: repo });
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (chunk: Buffer) => (stdout += chunk.toString("utf8")));
  child.stderr!.on("data", (chunk: Buffer) => (stderr = (stderr + chunk.toString("utf8")).slice(-4000)));
  const done = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
  return { child, done };
}

test("determinism: the same seeds (random schedule, drawn faults) give the same trace hashes in two processes, one beside a CPU burner", async () => {
  const quiet = await hashes().done;
  assert.equal(quiet.code, 0, quiet.stderr);
  // A busy loop in another process: the second run competes for the CPU, as a loaded CI machine does.
  const burner = spawn(process.execPath, ["-e", "const end = Date.now() + 600000; while (Date.now() < end) {}"]);
  try {
    const loaded = await hashes().done;
    assert.equal(loaded.code, 0, loaded.stderr);
    const lines = quiet.stdout.trim().split("\n");
    // Both variants of the fixture's scenario, three seeds each.
    assert.equal(lines.length, 6, quiet.stdout);
    for (const line of lines) assert.match(line, /^(level|no-retry) \d+ [0-9a-f]{64} \S+$/);
    const level = lines.filter((line) => line.startsWith("level "));
    assert.equal(new Set(level.map((line) => line.split(" ")[2])).size, 3, "three seeds, three different runs");
    assert.deepEqual(loaded.stdout.trim().split("\n"), lines);
  } finally {
    burner.kill();
  }
});

test("a 429 with Retry-After: 1 makes client-go's request code wait one second of virtual time and send again", async () => {
  const clean = await runController();
  const atStep = stepOf(clean, /^request create ConfigMap/);
  const run = await runController([{ atStep, kind: "fail-request", target: "op", code: 429 }]);
  assert.deepEqual(run.children, ["p1-child", "p2-child"]);
  const creates = run.result.trace.filter((r) => r.actor === "op" && r.kind === "request" && r.label.startsWith("create ConfigMap"));
  assert.equal(creates[0]!.result, "429 TooManyRequests (injected)");
  const answered = run.result.trace.find((r) => r.actor === "op" && r.kind === "response" && r.step > creates[0]!.step)!;
  // The retry is client-go's own (no error reached the controller): exactly the Retry-After after the answer.
  assert.equal(creates[1]!.timeMs - answered.timeMs, 1000, opSteps(run).join("\n"));
  assert.doesNotMatch(run.stdout, /failed/);
});

test("client-go's informers list through a consistent watch; with WatchListClient off they list at resourceVersion=0, which a stale read serves behind", async () => {
  const watchList = await runController();
  assert.ok(!opSteps(watchList).some((line) => line.includes("rv=0")), "a watch-list informer makes no cached read");
  const env = { KUBE_FEATURE_WatchListClient: "false" };
  const clean = await runController([], env);
  const list = clean.result.trace.find((r) => r.actor === "op" && r.kind === "request" && r.label === "list ConfigMap default rv=0");
  assert.ok(list !== undefined && list.cached === true, opSteps(clean).join("\n"));
  const revision = Number(/^synced at (\d+)$/m.exec(clean.stdout)?.[1]);
  const stale = await runController([{ atStep: list.step, kind: "stale-read", target: "op", lagRevisions: 2 }], env);
  assert.match(stale.stdout, new RegExp(`^synced at ${revision - 2}$`, "m"));
  assert.deepEqual(stale.children, ["p1-child", "p2-child"]);
});

test("a delayed watch, a watch closed without 410, a pause and a 409 reach client-go as from a real server", async () => {
  const clean = await runController();
  const opened = stepOf(clean, /^response watch op\/0\/w0/);
  const firstCreate = (run: Run) => run.result.trace.find((r) => r.actor === "op" && r.kind === "request" && r.label.startsWith("create ConfigMap"))!;
  // The informer's initial events held 3 s: p1's child, due at 2 s, waits for them.
  const delayed = await runController([{ atStep: opened + 1, kind: "delay-watch", target: "op/0/w0", delayMs: 3000 }]);
  assert.deepEqual(delayed.children, ["p1-child", "p2-child"]);
  assert.ok(firstCreate(delayed).timeMs - epoch >= 3000, opSteps(delayed).join("\n"));
  // A plain close: the reflector watches again and nothing is lost.
  const closed = await runController([{ atStep: opened + 1, kind: "close-watch", target: "op/0/w0" }]);
  assert.deepEqual(closed.children, ["p1-child", "p2-child"]);
  assert.ok(closed.result.trace.some((r) => r.actor === "op" && r.kind === "request" && r.label.startsWith("watch op/0/w1")), opSteps(closed).join("\n"));
  // A pause of 10 s from the start: no step of the program before it ends, then it catches up.
  const paused = await runController([{ atStep: 1, kind: "pause", target: "op", durationMs: 10_000 }]);
  assert.deepEqual(paused.children, ["p1-child", "p2-child"]);
  assert.ok(firstCreate(paused).timeMs - epoch >= 10_000, opSteps(paused).join("\n"));
  // A 409 on the create: an error to the controller, retried by its work queue.
  const conflicted = await runController([{ atStep: firstCreate(clean).step, kind: "fail-request", target: "op", code: 409 }]);
  assert.deepEqual(conflicted.children, ["p1-child", "p2-child"]);
  assert.match(conflicted.stdout, /sync p1 failed: /);
});
