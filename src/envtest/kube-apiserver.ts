// The assets' `kube-apiserver`: settle serve, started with the command line envtest gives kube-apiserver. It serves
// HTTPS on `--bind-address:--secure-port` with the certificate envtest wrote into `--cert-dir` (apiserver.crt and
// apiserver.key) and authenticates envtest's users by client certificate against `--client-ca-file`: the common
// name is the user, the organizations its groups, so `AddUser` in `system:masters` may do anything and any other user
// only what RBAC grants. `SETTLE_FAULTS=FILE` (the `settle serve --faults` format) arms faults for the whole run.
import { createWriteStream, existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { realClock } from "../api/clock.ts";
import { Auditor, createServerStore, parseAuditPolicy, parseFaultSpecs, startServer } from "../server/index.ts";
import type { AuditPolicy, FaultSpec, SettleServer } from "../server/index.ts";
import { apiServerFlags, FlagError, flagsHelp, parseFlags } from "./flags.ts";

/**
 * How long a stop waits for connections to end. A client may hold a connection that never carried a request (Go's
 * transport dials ahead), which the server cannot tell from one whose request is under way; past this the process
 * exits with them open, as kube-apiserver ends its connections when it stops.
 */
const stopGraceMs = 1000;

/**
 * How often watch faults from SETTLE_FAULTS look for a watch to hit. `settle serve` applies `close-watch` and
 * `delay-watch` to the watches open when they are armed, and at start none is: here they wait for the suite's.
 */
const watchFaultPollMs = 250;

/** Authorizers settle has: RBAC, and Node, which only kubelets use (none runs here), taken without effect. */
const authorizationModes = new Set(["RBAC", "Node"]);

export interface ApiServerConfig {
  host: string;
  port: number;
  cert: string;
  key: string;
  clientCa: string | undefined;
  faults: FaultSpec[];
  /** Audit events to write (`--audit-log-path`, `-` for standard output) under `--audit-policy-file`'s policy. */
  audit: { path: string; policy: AuditPolicy } | undefined;
  /** What the start says about the flags given (an audit log path without a policy records nothing). */
  notes: string[];
}

/** The server the command line (and `SETTLE_FAULTS`) asks for, or a FlagError naming what cannot be honoured. */
export async function apiServerConfig(flags: Map<string, string>, env: NodeJS.ProcessEnv): Promise<ApiServerConfig> {
  const portText = flags.get("secure-port") ?? "6443";
  const port = Number(portText);
  if (!/^\d+$/.test(portText) || port < 1 || port > 65535) throw new FlagError(`kube-apiserver: --secure-port: expected a port from 1 to 65535, got "${portText}"`);
  const modes = (flags.get("authorization-mode") ?? "RBAC").split(",").map((mode) => mode.trim()).filter((mode) => mode !== "");
  for (const mode of modes) {
    if (!authorizationModes.has(mode)) throw new FlagError(`kube-apiserver: --authorization-mode: settle cannot honour "${mode}" (it authorizes with RBAC; system:masters may do anything)`);
  }
  const certDir = flags.get("cert-dir");
  const certFile = flags.get("tls-cert-file") ?? (certDir === undefined ? undefined : join(certDir, "apiserver.crt"));
  const keyFile = flags.get("tls-private-key-file") ?? (certDir === undefined ? undefined : join(certDir, "apiserver.key"));
  if (certFile === undefined || keyFile === undefined) throw new FlagError("kube-apiserver: needs --cert-dir holding apiserver.crt and apiserver.key, or --tls-cert-file and --tls-private-key-file");
  const clientCaFile = flags.get("client-ca-file");
  return {
    host: flags.get("bind-address") ?? "127.0.0.1",
    port,
    cert: readFlagFile(certDir !== undefined && flags.get("tls-cert-file") === undefined ? "cert-dir" : "tls-cert-file", certFile),
    key: readFlagFile(certDir !== undefined && flags.get("tls-private-key-file") === undefined ? "cert-dir" : "tls-private-key-file", keyFile),
    clientCa: clientCaFile === undefined ? undefined : readFlagFile("client-ca-file", clientCaFile),
    faults: await faultsFrom(env),
    ...(await auditFrom(flags)),
  };
}

/**
 * The audit flags as kube-apiserver reads them: events are written only with both a log path and a policy (without
 * `--audit-policy-file` kube-apiserver records nothing, and the start says so here).
 */
async function auditFrom(flags: Map<string, string>): Promise<Pick<ApiServerConfig, "audit" | "notes">> {
  const path = flags.get("audit-log-path") ?? "";
  const policyFile = flags.get("audit-policy-file") ?? "";
  let policy: AuditPolicy | undefined;
  if (policyFile !== "") {
    const text = readFlagFile("audit-policy-file", policyFile);
    try {
      const { parse } = await import("yaml");
      policy = parseAuditPolicy(parse(text));
    } catch (error) {
      throw new FlagError(`kube-apiserver: --audit-policy-file: ${policyFile}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  if (path === "") return { audit: undefined, notes: [] };
  if (policy === undefined) return { audit: undefined, notes: ["--audit-log-path without --audit-policy-file: no audit events are recorded, as kube-apiserver records none without a policy"] };
  return { audit: { path, policy }, notes: [] };
}

function readFlagFile(flag: string, path: string): string {
  if (!existsSync(path)) throw new FlagError(`kube-apiserver: --${flag}: ${path} does not exist`);
  return readFileSync(path, "utf8");
}

async function faultsFrom(env: NodeJS.ProcessEnv): Promise<FaultSpec[]> {
  const file = env.SETTLE_FAULTS;
  if (file === undefined || file === "") return [];
  try {
    const { parse } = await import("yaml");
    return parseFaultSpecs(parse(readFileSync(file, "utf8")));
  } catch (error) {
    throw new FlagError(`kube-apiserver: SETTLE_FAULTS=${file}: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** Runs the API server for `argv`; resolves with the exit code once stopped by SIGTERM or SIGINT. */
export async function apiServerMain(argv: readonly string[], env: NodeJS.ProcessEnv, out: NodeJS.WritableStream, err: NodeJS.WritableStream): Promise<number> {
  let config: ApiServerConfig;
  try {
    const flags = parseFlags("kube-apiserver", apiServerFlags, argv);
    if (flags === "help") {
      out.write(flagsHelp("kube-apiserver", apiServerFlags));
      return 0;
    }
    config = await apiServerConfig(flags, env);
  } catch (error) {
    if (!(error instanceof FlagError)) throw error;
    err.write(`Error: ${error.message}\n`);
    return 1;
  }
  let server: SettleServer;
  const auditLog = config.audit === undefined ? undefined : config.audit.path === "-" ? process.stdout : createWriteStream(config.audit.path, { flags: "a" });
  auditLog?.on("error", (error: Error) => err.write(`kube-apiserver (settle): --audit-log-path: ${error.message}\n`));
  try {
    const store = createServerStore({ now: () => realClock.now() });
    server = await startServer({
      ...(config.audit === undefined || auditLog === undefined ? {} : { audit: new Auditor(config.audit.policy, (line) => void auditLog.write(line), realClock) }),
      store,
      host: config.host,
      port: config.port,
      faults: config.faults.filter((fault) => !isWatchFault(fault)),
      tls: { cert: config.cert, key: config.key, ...(config.clientCa === undefined ? {} : { clientCa: config.clientCa }) },
      log: (line) => void (/ hit 0 watch\(es\)$/.test(line) ? undefined : err.write(`${line}\n`)),
    });
  } catch (error) {
    err.write(`Error: kube-apiserver: cannot serve on ${config.host}:${config.port}: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
  err.write(`kube-apiserver (settle): serving https://${config.host}:${config.port}${config.faults.length === 0 ? "" : ` with ${config.faults.length} fault(s) armed from SETTLE_FAULTS`}\n`);
  for (const note of config.notes) err.write(`kube-apiserver (settle): ${note}\n`);
  if (config.audit !== undefined) err.write(`kube-apiserver (settle): writing audit events to ${config.audit.path}\n`);
  const watchFaults = new WatchFaults(server, config.faults.filter(isWatchFault));
  await new Promise<void>((resolve) => {
    process.once("SIGTERM", resolve);
    process.once("SIGINT", resolve);
  });
  watchFaults.stop();
  if (config.faults.length > 0) err.write(`${faultsSummary([...server.faults, ...watchFaults.pending()])}\n`);
  // Time only through the injected clock (the real one here): the stop waits at most the grace for open connections.
  let timer: { cancel(): void } | undefined;
  await Promise.race([server.close(), new Promise<void>((resolve) => (timer = realClock.setTimer(stopGraceMs, resolve)))]);
  timer?.cancel();
  // The events of requests answered during the stop are in the stream: end it (standard output stays open).
  if (auditLog !== undefined && auditLog !== process.stdout) await new Promise<void>((resolve) => (auditLog as NodeJS.WritableStream).end(resolve));
  return 0;
}

function isWatchFault(fault: FaultSpec): boolean {
  return fault.kind === "close-watch" || fault.kind === "delay-watch";
}

/** What the suite's run did to the faults of SETTLE_FAULTS, so a suite that passed knows whether they hit it. */
function faultsSummary(unspent: readonly FaultSpec[]): string {
  if (unspent.length === 0) return "kube-apiserver (settle): every fault from SETTLE_FAULTS was spent";
  const named = unspent.map((fault) => JSON.stringify(Object.fromEntries(Object.entries(fault).filter(([key]) => key !== "id" && key !== "hits"))));
  return `kube-apiserver (settle): ${unspent.length} fault(s) from SETTLE_FAULTS were not spent (no request or watch they match came): ${named.join(", ")}`;
}

/**
 * Applies each watch fault to the suite's watches as they open: every `watchFaultPollMs` a fault not yet spent is
 * armed for the remaining count (without a count: once, on every matching watch open then).
 */
class WatchFaults {
  readonly #pending: { fault: FaultSpec; left: number | undefined }[];
  readonly #timer: NodeJS.Timeout | undefined;

  constructor(server: SettleServer, faults: readonly FaultSpec[]) {
    this.#pending = faults.map((fault) => ({ fault, left: fault.count }));
    this.#timer = faults.length === 0 ? undefined : setInterval(() => this.#tick(server), watchFaultPollMs);
  }

  #tick(server: SettleServer): void {
    if (server.watches === 0) return;
    for (const entry of this.#pending) {
      if (entry.left === 0) continue;
      const [armed] = server.injectFaults([{ ...entry.fault, ...(entry.left === undefined ? {} : { count: entry.left }) }]);
      const hits = armed?.hits ?? 0;
      if (hits > 0) entry.left = entry.left === undefined ? 0 : Math.max(0, entry.left - hits);
    }
    if (this.pending().length === 0) clearInterval(this.#timer);
  }

  /** Watch faults not yet spent. */
  pending(): FaultSpec[] {
    return this.#pending.filter((entry) => entry.left !== 0).map((entry) => entry.fault);
  }

  stop(): void {
    clearInterval(this.#timer);
  }
}
