// A Go program's life in the simulator: virtual time and timers, the seed as its randomness, a fresh instance per
// incarnation, os.Exit and panics as process exits, and the findings for what settle does not control (a dial or
// lookup of anything but the API server, a program waiting on nothing). The fixture uses the standard library only
// (test/go/fixtures/basics), so its build is quick; seeds are pinned.
import assert from "node:assert/strict";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { createSimulation, fifoStrategy, type PlannedFault, type RunResult } from "../../src/sim/index.ts";
import { goActor } from "../../src/go/actor.ts";
import { moduleActor } from "../../src/module/actor.ts";
import { setModuleOutput } from "../../src/module/output.ts";
import { API_TOKEN } from "../../src/module/wire.ts";

const here = dirname(fileURLToPath(import.meta.url));
const basics = join(here, "fixtures", "basics");
const epoch = Date.UTC(2026, 0, 1);

interface Run {
  result: RunResult;
  stdout: string[];
}

async function runBasics(mode: string, options: { seed?: number; faults?: PlannedFault[]; untilMs?: number; replicas?: number } = {}): Promise<Run> {
  const stdout: string[] = [];
  const previous = setModuleOutput((fd, chunk) => {
    if (fd === 1) stdout.push(...chunk.toString("utf8").split("\n").filter((line) => line !== ""));
  });
  try {
    const sim = createSimulation({ seed: options.seed ?? 1, requestLatencyMs: [1, 20] });
    const replicas = options.replicas === undefined ? {} : { replicas: options.replicas };
    for (const actor of goActor({ name: "b", dir: basics, args: [`--mode=${mode}`], env: { SETTLE_TOKEN: API_TOKEN }, ...replicas })) sim.addActor(actor);
    const result = await sim.run({ strategy: fifoStrategy(), maxSteps: 200, untilMs: epoch + (options.untilMs ?? 30_000), faults: options.faults ?? [] });
    return { result, stdout };
  } finally {
    setModuleOutput(previous);
  }
}

test("a Go program's requests and responses are steps, its clock and timers the simulation's", async () => {
  const { result, stdout } = await runBasics("counter");
  assert.equal(result.status, "until", result.message);
  const steps = result.trace.filter((r) => r.actor === "b").map((r) => `${r.timeMs - epoch} ${r.kind} ${r.label} => ${r.result}`);
  assert.deepEqual(steps, [
    "0 start start b => started",
    "0 request create ConfigMap default/counter-1 => sent",
    "16 response create ConfigMap default/counter-1 => 201",
    // time.Sleep(10 s) after the answer: timers of the simulation, fired at virtual 10 s and 20 s after it.
    "10016 timer go timer 10000ms => fired",
    "20016 timer go timer 10000ms => fired",
  ]);
  assert.equal(stdout[0], "start counter=1 host=b now=2026-01-01T00:00:00Z");
  assert.deepEqual(stdout.slice(-2), ["tick 2026-01-01T00:00:10.016Z", "tick 2026-01-01T00:00:20.016Z"]);
});

test("the Go runtime's randomness (math/rand, crypto/rand, map order, select) comes from the run's seed", async () => {
  const randomLine = (run: Run) => run.stdout.find((line) => line.startsWith("random "));
  const first = await runBasics("counter", { seed: 7 });
  const again = await runBasics("counter", { seed: 7 });
  const other = await runBasics("counter", { seed: 8 });
  assert.ok(randomLine(first) !== undefined, "the program printed its random draws");
  assert.equal(randomLine(again), randomLine(first));
  assert.notEqual(randomLine(other), randomLine(first));
  assert.equal(again.result.traceHash, first.result.traceHash);
});

test("a crash drops the instance: a package-level counter starts at 0 again in the restarted incarnation", async () => {
  const { result, stdout } = await runBasics("counter", { faults: [{ atStep: 3, kind: "crash", target: "b" }] });
  assert.equal(result.status, "until", result.message);
  const starts = stdout.filter((line) => line.startsWith("start "));
  assert.deepEqual(starts, ["start counter=1 host=b now=2026-01-01T00:00:00Z", "start counter=1 host=b now=2026-01-01T00:00:01.016Z"]);
  // The first incarnation's write stays; the second finds it.
  assert.ok(stdout.includes("created 201 true") && stdout.includes("created 409 true"), stdout.join("\n"));
});

test("os.Exit and a panic end the incarnation as a process exit; the actor restarts", async () => {
  const exited = await runBasics("exit", { untilMs: 5_000 });
  const exits = exited.result.trace.filter((r) => r.label.startsWith("exit b"));
  assert.ok(exits.length >= 2, "the program exits and restarts more than once");
  assert.equal(exits[0]!.label, "exit b: exit(3)");
  assert.equal(exits[0]!.result, "exit code 3, restart in 1000ms");
  assert.equal(exited.result.status, "until", exited.result.message);
  const panicked = await runBasics("panic", { untilMs: 5_000 });
  const panics = panicked.result.trace.filter((r) => r.label.startsWith("exit b"));
  assert.equal(panics[0]!.label, "exit b: panic: boom (exit 2)");
  assert.equal(panicked.result.status, "until", panicked.result.message);
});

test("a dial of another address, or a lookup of another name, is a finding that names it", async () => {
  const dialed = await runBasics("dial");
  assert.equal(dialed.result.status, "actor-error");
  assert.match(dialed.result.message ?? "", /go program b dialed 192\.0\.2\.7:8080; in the simulator only the API server/);
  const looked = await runBasics("lookup");
  assert.equal(looked.result.status, "actor-error");
  assert.match(looked.result.message ?? "", /go program b looked up the host name example\.com/);
});

test("a program that waits on nothing of the simulation's ends the run with a finding, never a hang", async () => {
  const { result } = await runBasics("block");
  assert.equal(result.status, "outside-await");
  assert.match(result.message ?? "", /go program b made no request to the API server and waits on nothing of the simulation's/);
});

test("replicas: each instance is an actor of its own, with its own host name and its own crashes", async () => {
  const { result, stdout } = await runBasics("counter", { replicas: 2, faults: [{ atStep: 4, kind: "crash", target: "b-1" }] });
  assert.equal(result.status, "until", result.message);
  const starts = stdout.filter((line) => line.startsWith("start ")).map((line) => line.replace(/ now=.*$/, ""));
  assert.deepEqual(starts.sort(), ["start counter=1 host=b-0", "start counter=1 host=b-1", "start counter=1 host=b-1"]);
  const actors = new Set(result.trace.filter((r) => r.kind === "start").map((r) => r.actor));
  assert.deepEqual([...actors].sort(), ["b-0", "b-1"]);
  const restarts = result.trace.filter((r) => r.kind === "start" && r.label.startsWith("restart "));
  assert.deepEqual(restarts.map((r) => r.actor), ["b-1"], "only the crashed replica restarted");
});

test("a program that reaches for a JavaScript API settle does not provide (a real timer) is a finding naming it", async () => {
  const { result } = await runBasics("jsglobal");
  assert.equal(result.status, "actor-error");
  assert.match(result.message ?? "", /go program b reached for the JavaScript global setInterval \(through syscall\/js\), which settle's host does not provide/);
});

test("a Go program and a Node module in one simulation share its in-process API server", async () => {
  const sim = createSimulation({ seed: 1, requestLatencyMs: [1, 20] });
  for (const actor of goActor({ name: "b", dir: basics, args: ["--mode=counter"], env: { SETTLE_TOKEN: API_TOKEN } })) sim.addActor(actor);
  sim.addActor(moduleActor({ name: "op", module: join(here, "../module/fixtures/client-node-operator.mjs"), args: ["--mode=level"] }));
  const result = await sim.run({ strategy: fifoStrategy(), maxSteps: 500, untilMs: epoch + 15_000 });
  assert.equal(result.status, "until", result.message);
  const answered = (actor: string) => result.trace.filter((r) => r.actor === actor && r.kind === "response").length;
  // Both are answered (a second server for the same simulation would have ended the first one's connections) and the
  // module's watch is open.
  assert.ok(answered("b") >= 1 && answered("op") >= 2, "both reached the server");
  assert.ok(result.trace.some((r) => r.actor === "op" && r.kind === "response" && r.result === "200 watching"));
  assert.ok(sim.store.list({ apiVersion: "v1", kind: "ConfigMap", namespace: "default" }).items.some((o) => o.metadata.name === "counter-1"));
});
