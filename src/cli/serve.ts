// `settle serve`: a Kubernetes-compatible API server over a fresh store, until SIGINT or SIGTERM.
import { realClock } from "../api/clock.ts";
import { createStore } from "../store/index.ts";
import { loadSetup, SetupError, startServer } from "../server/index.ts";
import { intOption, parse, UsageError } from "./args.ts";

export const serveUsage = `Usage: settle serve [--port N] [--host ADDR] [--kubeconfig-out FILE] [--setup FILE...] [--token T]

Serves a Kubernetes-compatible HTTP API (discovery, OpenAPI v3 stubs, CRUD, merge and JSON patch, watches,
CRDs, finalizers and garbage collection) over an in-memory store, for kubectl, helm, client-node and any client.

Options:
  --port N              port to listen on; 0 picks a free one (default 0). The URL is printed once listening.
  --host ADDR           address to listen on (default 127.0.0.1). Anything but loopback is warned about.
  --kubeconfig-out FILE write a kubeconfig for this server (mode 600, atomically, once listening)
  --setup FILE          preload manifests (YAML, multi-document, or JSON); repeatable, loaded in order
  --token T             the bearer token clients must send (default: random, printed in the kubeconfig)

Stops cleanly on SIGINT or SIGTERM. Exit codes: 0 stopped, 2 usage or setup error.
`;

export async function serveCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv, {
    port: { type: "string" },
    host: { type: "string" },
    "kubeconfig-out": { type: "string" },
    setup: { type: "string", multiple: true },
    token: { type: "string" },
  });
  if (positionals.length > 0) throw new UsageError(`unexpected argument "${positionals[0]}"`);
  const port = intOption(values, "port", 0, 0);
  if (port > 65535) throw new UsageError(`--port expects an integer from 0 to 65535, got "${port}"`);
  const host = typeof values.host === "string" ? values.host : "127.0.0.1";
  const token = typeof values.token === "string" ? values.token : undefined;
  if (token !== undefined && !/^[\x21-\x7e]+$/.test(token)) throw new UsageError("--token must be printable ASCII without spaces");
  const store = createStore({ now: () => realClock.now() });
  try {
    loadSetup(store, (values.setup as string[] | undefined) ?? []);
  } catch (error) {
    if (!(error instanceof SetupError)) throw error;
    process.stderr.write(`settle serve: --setup: ${error.message}\n`);
    return 2;
  }
  const server = await startServer({ store, host, port, ...(token === undefined ? {} : { token }) });
  const kubeconfigOut = values["kubeconfig-out"];
  if (typeof kubeconfigOut === "string") server.writeKubeconfig(kubeconfigOut);
  process.stdout.write(`settle serve: listening on ${server.url}${typeof kubeconfigOut === "string" ? ` (kubeconfig: ${kubeconfigOut})` : ""}\n`);
  await new Promise<void>((resolve) => {
    const stop = () => resolve();
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
  });
  process.stdout.write("settle serve: shutting down\n");
  await server.close();
  return 0;
}
