// The assets' `etcd`: settle keeps its store in memory, so nothing here stores anything. envtest still starts an
// etcd before the API server and polls `<listen-client-url>/health` until it answers 200, then passes that URL to
// kube-apiserver as `--etcd-servers`; this process answers that probe, and stops on SIGTERM or SIGINT.
import { createServer } from "node:http";
import type { Server } from "node:http";
import { etcdFlags, FlagError, flagsHelp, parseFlags } from "./flags.ts";

/** The address the health probe is served on: the first `http://host:port` of `--listen-client-urls`. */
export function clientListenAddress(urls: string): { host: string; port: number } {
  for (const text of urls.split(",")) {
    let url: URL;
    try {
      url = new URL(text.trim());
    } catch {
      throw new FlagError(`etcd: --listen-client-urls: "${text}" is not a URL`);
    }
    if (url.protocol !== "http:") continue;
    const host = url.hostname.replace(/^\[(.*)\]$/, "$1");
    return { host: host === "localhost" ? "127.0.0.1" : host, port: url.port === "" ? 2379 : Number(url.port) };
  }
  throw new FlagError(`etcd: --listen-client-urls "${urls}" names no http:// URL (settle's etcd serves no TLS)`);
}

/** Runs the etcd stand-in for `argv`; resolves with the exit code once stopped. */
export async function etcdMain(argv: readonly string[], out: NodeJS.WritableStream, err: NodeJS.WritableStream): Promise<number> {
  let flags: Map<string, string> | "help";
  let address: { host: string; port: number };
  try {
    flags = parseFlags("etcd", etcdFlags, argv);
    if (flags === "help") {
      out.write(flagsHelp("etcd", etcdFlags));
      return 0;
    }
    address = clientListenAddress(flags.get("listen-client-urls") ?? "http://127.0.0.1:2379");
  } catch (error) {
    if (!(error instanceof FlagError)) throw error;
    err.write(`${error.message}\n`);
    return 1;
  }
  const server = createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    if (path === "/health" || path === "/livez" || path === "/readyz") {
      res.writeHead(200, { "Content-Type": "application/json" });
      res.end('{"health":"true","reason":""}');
      return;
    }
    res.writeHead(404, { "Content-Type": "text/plain" });
    res.end("settle's etcd stores nothing: the API server keeps its objects in memory\n");
  });
  try {
    await listen(server, address.host, address.port);
  } catch (error) {
    err.write(`etcd: cannot listen on ${address.host}:${address.port}: ${(error as Error).message}\n`);
    return 1;
  }
  err.write(`etcd (settle): answering health probes on http://${address.host}:${address.port}\n`);
  await new Promise<void>((resolve) => {
    process.once("SIGTERM", resolve);
    process.once("SIGINT", resolve);
  });
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return 0;
}

function listen(server: Server, host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
}
