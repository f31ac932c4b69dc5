// A controller process that loses its leader-election lease exits (code 1) to be restarted, as client-go and
// controller-runtime processes do. Runs `runControllerProcess` against a real `settle serve` on loopback.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startServer } from "../../src/server/index.ts";
import { createKubeClient, runControllerProcess } from "../../src/kube/index.ts";
import { Action, ProcessExit, defineController, realClock, type Lease } from "../../src/runtime/index.ts";

const dir = mkdtempSync(join(tmpdir(), "settle-exit-"));
const server = await startServer({ log: () => {} });
const kubeconfig = join(dir, "kubeconfig");
server.writeKubeconfig(kubeconfig);
after(async () => {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

test("runControllerProcess exits with code 1 when another holder takes its lease", async () => {
  const client = createKubeClient({ kubeconfig });
  const leaseRef = { apiVersion: "coordination.k8s.io/v1", kind: "Lease", namespace: "default", name: "exiting" };
  const controller = defineController({ name: "exiting", for: { apiVersion: "v1", kind: "ConfigMap", namespace: "default" }, reconcile: () => Action.awaitChange() });
  const exits: number[] = [];
  const logged: string[] = [];
  const run = runControllerProcess(controller, {
    kubeconfig,
    leaderElection: { lease: { namespace: "default", name: "exiting" }, identity: "me", leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 50 },
    log: (msg) => logged.push(msg),
    exit: (code) => exits.push(code),
    signals: [],
  });
  let lease: Lease | undefined;
  for (let i = 0; i < 200 && lease?.spec?.holderIdentity !== "me"; i++) {
    lease = await client.get<Lease>(leaseRef).catch(() => undefined);
    if (lease?.spec?.holderIdentity !== "me") await realClock.sleep(20);
  }
  assert.equal(lease?.spec?.holderIdentity, "me", "the process took the lease");
  // Another candidate takes over (as after a partition): the next renewal sees it and the process must exit.
  await client.update({ object: { ...(lease as Lease), spec: { ...lease?.spec, holderIdentity: "usurper" } } });
  await assert.rejects(run, (error: unknown) => error instanceof ProcessExit);
  assert.deepEqual(exits, [1]);
  assert.ok(logged.includes("exiting"), logged.join(", "));
});
