// One workload interpreter for both ways of running a scenario.yaml (src/scenario-yaml/workload.ts): the same
// workload is run by the simulator's workload actor (settle explore) and by the drill's real-time workload against
// settle serve, and both must make the same writes, in the same order, to the same places, and stop at the same wait.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { realClock } from "../../src/api/clock.ts";
import type { Client } from "../../src/api/client.ts";
import { yamlDrillTarget } from "../../src/drill/yaml-target.ts";
import { WORKLOAD_ACTOR, runScenario } from "../../src/explore/run.ts";
import { loadYamlExplore } from "../../src/explore/yaml.ts";
import { createKubeClient } from "../../src/kube/client.ts";
import { createWorld, loadYamlScenario } from "../../src/scenario-yaml/index.ts";
import { runWorkload, type WorkloadHost } from "../../src/scenario-yaml/workload.ts";
import { startServer } from "../../src/server/server.ts";
import { fifoStrategy } from "../../src/sim/strategy.ts";
import type { WorldView } from "../../src/sim/types.ts";
import type { Store } from "../../src/store/types.ts";

const fixture = fileURLToPath(new URL("fixtures/workload/scenario.yaml", import.meta.url));
const yaml = loadYamlScenario(fixture);

test("the simulator and the drill run one workload the same way: the same writes, the same places, the same stop", async () => {
  // The simulator: the workload actor of the explorable scenario, FIFO, no faults.
  const scenario = await loadYamlExplore(yaml);
  const outcome = await runScenario(scenario, { variant: "idle", workload: "steps", params: {}, seed: 1, strategy: fifoStrategy(), traceMode: "full" });
  const simulated = outcome.trace
    .filter((r) => r.actor === WORKLOAD_ACTOR && r.kind === "response" && r.access === "write")
    .map((r) => `${r.verb} ${r.object?.kind} ${r.object?.namespace ?? "-"}/${r.object?.name}`);
  const simulatedNote = outcome.trace.find((r) => r.actor === WORKLOAD_ACTOR && r.kind === "log")?.label;

  // The drill: its target's workload, against settle serve, with a real client.
  const server = await startServer({ port: 0 });
  const dir = mkdtempSync(join(tmpdir(), "settle-workload-"));
  try {
    createWorld(server.store, yaml.world);
    server.writeKubeconfig(join(dir, "admin.kubeconfig"));
    const client = createKubeClient({ kubeconfig: join(dir, "admin.kubeconfig") });
    const recorded: string[] = [];
    const logging = recordingClient(client, recorded);
    const notes: string[] = [];
    const view = storeView(server.store);
    await yamlDrillTarget(yaml, "idle").runWorkload(logging, view, { nextChange: () => new Promise((wake) => realClock.setTimer(50, wake)), note: (line) => notes.push(line) });

    assert.deepEqual(recorded, simulated, "the drill's writes are the simulator's");
    assert.deepEqual(recorded, ["create ConfigMap default/made", "create Namespace -/team-a", "create ConfigMap default/made", "patch ConfigMap default/made", "patch ConfigMap default/made", "delete ConfigMap default/old"]);
    assert.equal(notes.length, 1);
    assert.ok(simulatedNote?.includes(notes[0]!), `${simulatedNote} holds ${notes[0]}`);
    assert.match(notes[0]!, /waitFor "get\(\\"ConfigMap\\", \\"default\\", \\"never-made\\"\) != null" not true within 1500 ms: later steps not run/);
    assert.equal(server.store.get({ apiVersion: "v1", kind: "ConfigMap", namespace: "default", name: "made" }).metadata.labels?.seen, "yes");
    assert.throws(() => server.store.get({ apiVersion: "v1", kind: "ConfigMap", namespace: "default", name: "after-the-wait" }), /not found/);
    assert.equal(outcome.verdict.kind, "ok");
  } finally {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a timed-out wait ends the workload with its note, and a failing step names its file and line", async () => {
  const notes: string[] = [];
  let now = 0;
  const host: WorkloadHost = {
    client: { create: async () => ({}) } as unknown as Client,
    now: () => now,
    sleep: async (ms) => void (now += ms),
    view: storeView(undefined),
    nextCheck: async (leftMs) => void (now += leftMs),
    note: (line) => notes.push(line),
  };
  const waits = yaml.workload.filter((s) => s.kind === "waitFor");
  const outcome = await runWorkload({ ...yaml, workload: [waits[1]!] }, host);
  assert.equal(outcome.ended, "wait-timed-out");
  assert.equal(now, 1500, "it looked until its timeout and no longer");
  assert.equal(notes.length, 1);
  const failing: Client = { create: async () => Promise.reject(new Error("refused")) } as unknown as Client;
  const apply = yaml.workload[0]!;
  await assert.rejects(runWorkload({ ...yaml, workload: [apply] }, { ...host, client: failing }), (error: Error) => {
    assert.equal(error.message, `${apply.at}: workload apply: refused`);
    assert.match(apply.at, /scenario\.yaml:\d+:\d+$/);
    return true;
  });
});

/** Wraps a client so that every write it makes is recorded as `verb kind namespace/name`. */
function recordingClient(client: Client, recorded: string[]): Client {
  const where = (o: { kind: string; namespace?: string | undefined; name?: string | undefined }) => `${o.kind} ${o.namespace ?? "-"}/${o.name}`;
  return {
    ...client,
    get: (ref) => client.get(ref),
    list: (options) => client.list(options),
    create: async (options) => {
      recorded.push(`create ${where({ kind: options.object.kind, namespace: options.object.metadata.namespace, name: options.object.metadata.name })}`);
      return client.create(options);
    },
    patch: async (options) => {
      recorded.push(`patch ${where(options)}`);
      return client.patch(options);
    },
    patchStatus: async (options) => {
      recorded.push(`patchStatus ${where(options)}`);
      return client.patchStatus(options);
    },
    delete: async (options) => {
      recorded.push(`delete ${where(options)}`);
      return client.delete(options);
    },
  } as Client;
}

function storeView(store: Store | undefined): WorldView {
  return {
    get revision() {
      return store?.revision ?? 0;
    },
    now: () => 0,
    get: (ref) => {
      try {
        return store?.get(ref);
      } catch {
        return undefined;
      }
    },
    list: (options) => store?.list(options).items ?? [],
    external: () => undefined as never,
  };
}

