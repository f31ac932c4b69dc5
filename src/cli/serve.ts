// `settle serve`: a Kubernetes-compatible API server over a fresh store, until SIGINT or SIGTERM.
//
// Start-up time is part of what a test suite pays per server, so this module imports only what every start needs:
// the YAML scenario loader (CEL, ajv), the fault-file parser and the cluster actors (@kubernetes/client-node, a
// thousand files) are imported when an option asks for them.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { realClock } from "../api/clock.ts";
import { createServerStore, loadSetup, parseFaultSpecs, serverHistoryBytesMax, SetupError, startServer } from "../server/index.ts";
import type { FaultSpec, SettleServer } from "../server/index.ts";
import type { Store } from "../store/types.ts";
import { bodyTimeoutMsDefault, headerTimeoutMsDefault, idleTimeoutMsDefault, timeoutMsMax } from "../server/connections.ts";
import { intOption, parse, UsageError } from "./args.ts";
import type { ClusterMode } from "../kube/cluster-mode.ts";

/** Fake nodes `--cluster` may run: each is a kubelet with its own watches, so the count is bounded. */
const clusterNodesMax = 100;

export const serveUsage = `Usage: settle serve [--port N] [--host ADDR] [--kubeconfig-out FILE] [--setup FILE|DIR...] [--token T] [--faults FILE]
                   [--history-bytes N] [--header-timeout-ms N] [--idle-timeout-ms N] [--cluster [--nodes N]]

Serves a Kubernetes-compatible HTTP API (discovery, OpenAPI v3 stubs, CRUD, merge, JSON and strategic merge patch,
server-side apply, Tables, watches, CRDs, finalizers and garbage collection) over an in-memory store, for kubectl,
helm, client-node and any client.

Options:
  --port N              port to listen on; 0 picks a free one (default 0). Its URLs are printed once listening:
                        https:// (as in the kubeconfig) and plain http://, one port for both.
  --host ADDR           address to listen on (default 127.0.0.1). Anything but loopback is warned about.
  --kubeconfig-out FILE write a kubeconfig for this server (mode 600, atomically through a new file of a random
                        name beside FILE, once listening); it holds the administrator's token
  --setup FILE|DIR      preload manifests (YAML, multi-document, or JSON; a directory's .yaml, .yml and
                        .json files in name order), or a scenario.yaml's world; repeatable, loaded in order
  --token T             the bearer token clients must send (default: random, printed in the kubeconfig)
  --faults FILE         arm faults at start (YAML or JSON: a list, or {faults: [...]}); more can be armed
                        while serving with POST /settle/faults (see src/server/README.md)
  --history-bytes N     bytes of write history kept for watches and reads at older revisions (default
                        ${serverHistoryBytesMax}, 64 MiB; each write counts its object's JSON size). Older revisions
                        are compacted, as etcd compacts: a watch or list from before them gets 410 Gone
  --header-timeout-ms N a connection that has not sent a request's headers this long after its first byte
                        (or that sends nothing) is closed (default 32000, as kube-apiserver)
  --idle-timeout-ms N   a keep-alive connection that sends no next request this long after an answer is
                        closed (default 90000, as kube-apiserver); a watch is never cut by it
  --body-timeout-ms N   a request whose body has not all come this long after its headers is answered 504
                        and its connection closed (default 60000, kube-apiserver's request timeout)
  --cluster             also run a fake cluster in real time: Ready nodes with kubelets that report pods
                        Running and Ready (no containers run), the scheduler, node lifecycle and the
                        Deployment, ReplicaSet, StatefulSet, DaemonSet, Job, CronJob, disruption and HPA
                        controllers, endpoints, and volumes of a default StorageClass, so \`kubectl rollout
                        status\` and \`helm install --wait\` finish
  --nodes N             fake nodes with --cluster, named n1..nN (default 1, at most ${clusterNodesMax})

Stops cleanly on SIGINT or SIGTERM. Exit codes: 0 stopped, 2 usage or setup error.
`;

export async function serveCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv, {
    port: { type: "string" },
    host: { type: "string" },
    "kubeconfig-out": { type: "string" },
    setup: { type: "string", multiple: true },
    token: { type: "string" },
    faults: { type: "string" },
    cluster: { type: "boolean" },
    nodes: { type: "string" },
    "history-bytes": { type: "string" },
    "header-timeout-ms": { type: "string" },
    "idle-timeout-ms": { type: "string" },
    "body-timeout-ms": { type: "string" },
  });
  if (positionals.length > 0) throw new UsageError(`unexpected argument "${positionals[0]}"`);
  const port = intOption(values, "port", 0, 0);
  if (port > 65535) throw new UsageError(`--port expects an integer from 0 to 65535, got "${port}"`);
  const host = typeof values.host === "string" ? values.host : "127.0.0.1";
  const token = typeof values.token === "string" ? values.token : undefined;
  if (token !== undefined && !/^[\x21-\x7e]+$/.test(token)) throw new UsageError("--token must be printable ASCII without spaces");
  if (values.nodes !== undefined && values.cluster !== true) throw new UsageError("--nodes needs --cluster");
  const nodes = intOption(values, "nodes", 1, 1);
  if (nodes > clusterNodesMax) throw new UsageError(`--nodes expects an integer from 1 to ${clusterNodesMax}, got "${nodes}"`);
  const historyBytesMax = intOption(values, "history-bytes", serverHistoryBytesMax, 1);
  const headerTimeoutMs = intOption(values, "header-timeout-ms", headerTimeoutMsDefault, 1);
  const idleTimeoutMs = intOption(values, "idle-timeout-ms", idleTimeoutMsDefault, 1);
  const bodyTimeoutMs = intOption(values, "body-timeout-ms", bodyTimeoutMsDefault, 1);
  for (const [name, ms] of [["header-timeout-ms", headerTimeoutMs], ["idle-timeout-ms", idleTimeoutMs], ["body-timeout-ms", bodyTimeoutMs]] as const) {
    if (ms > timeoutMsMax) throw new UsageError(`--${name} expects an integer from 1 to ${timeoutMsMax}, got "${ms}"`);
  }
  const store = createServerStore({ now: () => realClock.now(), historyBytesMax });
  const setupError = await loadSetupFiles(store, (values.setup as string[] | undefined) ?? []);
  if (setupError !== undefined) {
    process.stderr.write(`settle serve: --setup: ${setupError}\n`);
    return 2;
  }
  let faults: FaultSpec[] = [];
  if (typeof values.faults === "string") {
    try {
      const { parse: parseYaml } = await import("yaml");
      faults = parseFaultSpecs(parseYaml(readFileSync(values.faults, "utf8")));
    } catch (error) {
      process.stderr.write(`settle serve: --faults ${values.faults}: ${error instanceof Error ? error.message : String(error)}\n`);
      return 2;
    }
  }
  let server: Awaited<ReturnType<typeof startServer>>;
  try {
    server = await startServer({ store, host, port, faults, headerTimeoutMs, idleTimeoutMs, bodyTimeoutMs, ...(token === undefined ? {} : { token }) });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== "EADDRINUSE" && code !== "EADDRNOTAVAIL" && code !== "EACCES") throw error;
    const why = code === "EADDRINUSE" ? `port ${port} is in use` : code === "EACCES" ? `port ${port} needs privileges this process lacks` : `${host} is not an address of this machine`;
    process.stderr.write(`settle serve: cannot listen on ${host}:${port}: ${why} (${code}); pick another with --port or --host (--port 0 takes a free port)\n`);
    return 2;
  }
  const cluster = values.cluster === true ? await startCluster(server, nodes) : undefined;
  const kubeconfigOut = values["kubeconfig-out"];
  if (typeof kubeconfigOut === "string") {
    try {
      server.writeKubeconfig(kubeconfigOut);
    } catch (error) {
      process.stderr.write(`settle serve: --kubeconfig-out ${kubeconfigOut}: ${error instanceof Error ? error.message : String(error)}\n`);
      cluster?.stop();
      await server.close();
      return 2;
    }
  }
  // The port speaks TLS (what the kubeconfig names) and plain HTTP (curl, the /token/ path prefix) alike.
  const plain = server.url;
  const secure = plain.replace(/^http:/, "https:");
  process.stdout.write(`settle serve: listening on ${secure}, also plain ${plain}${typeof kubeconfigOut === "string" ? ` (kubeconfig: ${kubeconfigOut})` : ""}${cluster === undefined ? "" : ` with a cluster of ${nodes} node${nodes === 1 ? "" : "s"}`}\n`);
  await new Promise<void>((resolve) => {
    const stop = () => resolve();
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
  });
  process.stdout.write("settle serve: shutting down\n");
  cluster?.stop();
  await server.close();
  return 0;
}

/**
 * Loads the `--setup` files in order: a settle scenario (scenario.yaml) contributes its world, any other file is
 * manifests. Returns the message of the first file that fails, or undefined.
 */
async function loadSetupFiles(store: Store, given: readonly string[]): Promise<string | undefined> {
  let paths: string[];
  try {
    paths = given.flatMap(manifestPaths);
  } catch (error) {
    if (error instanceof SetupError) return error.message;
    throw error;
  }
  for (const path of paths) {
    try {
      if (mayBeScenario(path)) {
        const yaml = await import("../scenario-yaml/index.ts");
        try {
          if (yaml.isYamlScenarioPath(path) && yaml.isScenarioText(readFileSync(path, "utf8"))) {
            yaml.createWorld(store, yaml.loadYamlScenario(path).world);
            continue;
          }
        } catch (error) {
          if (error instanceof yaml.ScenarioYamlError) return error.message;
          throw error;
        }
      }
      loadSetup(store, [path]);
    } catch (error) {
      if (error instanceof SetupError) return error.message;
      throw error;
    }
  }
  return undefined;
}

/**
 * A `--setup` path as the files it names: a file itself; a directory's `.yaml`, `.yml` and `.json` files in name
 * order, not descending into subdirectories (as `kubectl apply -f DIR` without `-R`).
 */
function manifestPaths(path: string): string[] {
  let directory: boolean;
  try {
    directory = statSync(path).isDirectory();
  } catch (error) {
    throw new SetupError(`${path}: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (!directory) return [path];
  const files = readdirSync(path, { withFileTypes: true })
    .filter((entry) => entry.isFile() && /\.(ya?ml|json)$/i.test(entry.name))
    .map((entry) => join(path, entry.name))
    .sort();
  if (files.length === 0) throw new SetupError(`${path}: a directory with no .yaml, .yml or .json file`);
  return files;
}

/**
 * A necessary condition for a scenario file: a YAML file whose text names the two keys every scenario has. Only
 * such a file pays for the scenario loader (and the CEL and ajv it loads), so plain manifests load fast.
 */
function mayBeScenario(path: string): boolean {
  if (!/\.ya?ml$/i.test(path)) return false;
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch {
    return false;
  }
  return text.includes("variants") && text.includes("properties");
}

/** The cluster's actors are clients of this server like any other, so they start once it listens. */
async function startCluster(server: SettleServer, nodes: number): Promise<ClusterMode> {
  const { startClusterMode } = await import("../kube/cluster-mode.ts");
  return startClusterMode({ kubeconfig: server.kubeconfig(), certificate: server.certificate, nodes, clock: realClock, log: (line) => process.stderr.write(`settle serve: ${line}\n`) });
}
