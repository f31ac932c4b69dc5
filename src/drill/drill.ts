// `settle drill`: the black-box version of exploration, for a controller process in any language. The
// scenario's world is served by `settle serve` semantics in this process; the controller runs as a real
// process group whose every request goes through a proxy; the drill applies the scenario's workload, kills
// the group right after its k-th applied write (holding that write's response until the group is dead),
// restarts it, waits for a quiet window and checks the scenario's properties against the server's store.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { realClock } from "../api/clock.ts";
import { isNotFound } from "../api/errors.ts";
import type { KubeObject } from "../api/object.ts";
import { PropertyMonitor } from "../check/properties.ts";
import { workloadContext, type Scenario, type ScenarioContext } from "../explore/scenario.ts";
import { createKubeClient } from "../kube/client.ts";
import { kubeconfigText, startServer } from "../server/index.ts";
import { Rng } from "../sim/rng.ts";
import type { ActorContext, WorldView } from "../sim/types.ts";
import { createStore } from "../store/index.ts";
import type { Store } from "../store/types.ts";
import { startProxy, type WriteSeen } from "./proxy.ts";
import { startProcess, type ControllerProcess } from "./process.ts";

export interface DrillOptions {
  scenario: Scenario;
  ctx: ScenarioContext;
  /** The controller's command line. */
  command: readonly string[];
  /** No store change for this long counts as quiet. Default 2000. */
  quietMs?: number;
  /** A run that is not quiet by then is reported as `no-quiet`. Default 60_000. */
  timeoutMs?: number;
  /** Kill after these writes (1-based). Default: every write of the reference run. */
  killPoints?: readonly number[];
  onProgress?(line: string): void;
}

export interface DrillRun {
  /** The write the process was killed after, or undefined for the reference run. */
  killAfterWrite?: number;
  write?: WriteSeen;
  verdict: "ok" | "violated" | "no-quiet" | "controller-failed";
  /** Properties that were false (always: at any poll; eventually: once quiet). */
  failed: string[];
  writes: number;
  detail: string;
  /** The scenario's one-line summary of the world once quiet, if it has one. */
  world?: string;
}

export interface DrillResult {
  reference: DrillRun;
  runs: DrillRun[];
}

const pollMs = 25;

export async function drill(options: DrillOptions): Promise<DrillResult> {
  const progress = options.onProgress ?? (() => {});
  const reference = await drillOnce(options, undefined);
  progress(`reference run: ${reference.writes} writes by the controller, ${reference.verdict}${reference.world ? `; ${reference.world}` : ""}`);
  const points = options.killPoints ?? Array.from({ length: reference.writes }, (_, i) => i + 1);
  const runs: DrillRun[] = [];
  for (const k of points) {
    const run = await drillOnce(options, k);
    runs.push(run);
    progress(`kill after write ${k}${run.write ? ` (${run.write.method} ${shortPath(run.write.path)})` : ""}: ${run.verdict}${run.world ? `; ${run.world}` : ""}`);
  }
  return { reference, runs };
}

function shortPath(path: string): string {
  return path.replace(/^\/token\/[^/]+/, "").split("?")[0]!;
}

function viewOf(store: Store, externals: Record<string, unknown>): WorldView {
  return {
    get revision() {
      return store.revision;
    },
    now: () => realClock.now(),
    get: (ref) => {
      try {
        return store.get(ref);
      } catch (error) {
        if (isNotFound(error)) return undefined;
        throw error;
      }
    },
    list: (o) => store.list(o).items,
    external: <T>(name: string) => {
      if (!(name in externals)) throw new Error(`drill: no external state "${name}" (a drill sees only the API server)`);
      return externals[name] as T;
    },
  };
}

function setupStore(scenario: Scenario, ctx: ScenarioContext): Store {
  const store = createStore({ now: () => realClock.now() });
  const world = {
    create: <T extends KubeObject>(o: T) => structuredClone(store.create(structuredClone(o))) as T,
    updateStatus: <T extends KubeObject>(o: T) => structuredClone(store.updateStatus(structuredClone(o))) as T,
  };
  for (const object of scenario.setup?.(ctx, world) ?? []) world.create(object);
  return store;
}

async function drillOnce(options: DrillOptions, killAfterWrite: number | undefined): Promise<DrillRun> {
  const { scenario, ctx } = options;
  const quietMs = options.quietMs ?? 2000;
  const timeoutMs = options.timeoutMs ?? 60_000;
  const dir = mkdtempSync(join(tmpdir(), "settle-drill-"));
  const token = randomBytes(16).toString("hex");
  const store = setupStore(scenario, ctx);
  const server = await startServer({ store, token, log: () => {} });
  const proxy = await startProxy(server.url);
  const controllerConfig = join(dir, "controller.kubeconfig");
  writeFileSync(controllerConfig, kubeconfigText(`${proxy.url}/token/${token}`, token), { mode: 0o600 });
  const adminConfig = join(dir, "admin.kubeconfig");
  server.writeKubeconfig(adminConfig);
  const env = { ...process.env, KUBECONFIG: controllerConfig };
  const processes: ControllerProcess[] = [];
  const start = () => {
    const p = startProcess(options.command, env);
    processes.push(p);
    return p;
  };
  const monitor = new PropertyMonitor(scenario.properties(ctx));
  const view = viewOf(store, scenario.externals?.(ctx) ?? {});
  const failedAlways = new Set<string>();
  let killed: WriteSeen | undefined;
  let restartedWatchingAt: number | undefined;
  try {
    let current = start();
    const started = await Promise.race([proxy.waitForWatch().then(() => "watching" as const), current.exited.then((code) => `exited ${code}`)]);
    if (started !== "watching") {
      return { verdict: "controller-failed", failed: [], writes: 0, detail: `the controller ${started} before opening a watch:\n${current.output.slice(-10).join("\n")}`, ...(killAfterWrite === undefined ? {} : { killAfterWrite }) };
    }
    proxy.setHooks({
      onWrite: async (write) => {
        if (write.index !== killAfterWrite) return "deliver";
        killed = write;
        await current.kill();
        proxy.dropConnections();
        const opensBefore = proxy.watchOpens;
        current = start();
        // Quiet is measured from the moment the restarted process watches again, not from the killed write.
        void proxy.waitForWatch(opensBefore).then(() => (restartedWatchingAt = realClock.now()));
        return "drop";
      },
    });
    const workload = runWorkload(options, createKubeClient({ kubeconfig: adminConfig }));
    let workloadDone = false;
    void workload.finally(() => (workloadDone = true));
    let lastRevision = store.revision;
    let lastChange = realClock.now();
    const deadline = realClock.now() + timeoutMs;
    while (true) {
      await realClock.sleep(pollMs);
      const safety = monitor.checkSafety(view);
      if (safety !== undefined) failedAlways.add(safety.name);
      if (store.revision !== lastRevision) {
        lastRevision = store.revision;
        lastChange = realClock.now();
      }
      const killDone = killAfterWrite === undefined || restartedWatchingAt !== undefined;
      const quietSince = Math.max(lastChange, restartedWatchingAt ?? 0);
      if (workloadDone && killDone && realClock.now() - quietSince >= quietMs) break;
      if (realClock.now() > deadline) {
        const why = killAfterWrite !== undefined && killed === undefined ? `the controller made fewer than ${killAfterWrite} writes` : `no quiet window of ${quietMs} ms`;
        return { verdict: "no-quiet", failed: [...failedAlways], writes: proxy.writes.length, detail: `${why} within ${timeoutMs} ms`, ...(killAfterWrite === undefined ? {} : { killAfterWrite }) };
      }
    }
    await workload;
    const failed = [...failedAlways];
    const liveness = monitor.properties.filter((p) => p.kind === "eventually").filter((p) => monitor.checkLiveness(view, (q) => q === p) !== undefined);
    failed.push(...liveness.map((p) => p.name));
    const run: DrillRun = {
      verdict: failed.length === 0 ? "ok" : "violated",
      failed,
      writes: proxy.writes.length,
      detail: failed.length === 0 ? "every property held once quiet" : `quiet for ${quietMs} ms with ${failed.length} property(ies) false`,
    };
    if (killAfterWrite !== undefined) run.killAfterWrite = killAfterWrite;
    if (killed !== undefined) run.write = killed;
    if (scenario.summary !== undefined) run.world = scenario.summary(view);
    return run;
  } finally {
    for (const p of processes) await p.kill().catch(() => {});
    await proxy.close();
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function runWorkload(options: DrillOptions, client: ReturnType<typeof createKubeClient>): Promise<void> {
  const fn = options.scenario.workloads[options.ctx.workload];
  if (fn === undefined) throw new Error(`drill: unknown workload "${options.ctx.workload}"`);
  const actx: ActorContext = {
    name: "user",
    incarnation: 0,
    client,
    clock: realClock,
    rng: new Rng(1),
    log: () => {},
    external: () => {
      throw new Error("drill: workloads cannot use external state (a drill sees only the API server)");
    },
  };
  // A drill has no deadlines counted from marks (it judges after a quiet window), so a mark is only accepted.
  await fn(workloadContext(actx, options.scenario.timing, realClock.now(), () => {}), options.ctx);
}
