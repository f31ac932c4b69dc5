// The drill's window on the controller: an HTTP proxy between the controller process and the API server.
// It sees every request the process makes (the process knows only the proxy's address), counts its writes,
// notices when a watch is open, and can hold a write's response while the process group is killed, so the
// write is applied but the process never learns it was.
import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

const writeMethods = new Set(["POST", "PUT", "PATCH", "DELETE"]);

export interface WriteSeen {
  /** 1-based, counting writes the server applied (2xx answers). */
  index: number;
  method: string;
  path: string;
  status: number;
}

export interface ProxyHooks {
  /**
   * Called when the server has answered an applied write, before the answer goes to the process. While the
   * returned promise is pending the answer is held; resolve `"drop"` to never deliver it.
   */
  onWrite?(write: WriteSeen): Promise<"deliver" | "drop"> | "deliver" | "drop";
}

export interface DrillProxy {
  /** `http://127.0.0.1:PORT`. */
  readonly url: string;
  /** Applied writes seen so far. */
  readonly writes: WriteSeen[];
  /** Watches the process has open now. */
  readonly watchesOpen: number;
  /** Watches opened so far, ever. */
  readonly watchOpens: number;
  /** Resolves once more than `after` watches have ever been opened (default 0: the first one). */
  waitForWatch(after?: number): Promise<void>;
  setHooks(hooks: ProxyHooks): void;
  /** Ends every connection of the process (after a kill, nothing of it may linger). */
  dropConnections(): void;
  close(): Promise<void>;
}

function isWatch(req: IncomingMessage): boolean {
  const url = new URL(req.url ?? "/", "http://proxy.invalid");
  return req.method === "GET" && (url.searchParams.get("watch") === "true" || url.searchParams.get("watch") === "1" || url.pathname.includes("/watch/"));
}

export async function startProxy(upstream: string): Promise<DrillProxy> {
  const target = new URL(upstream);
  const writes: WriteSeen[] = [];
  let hooks: ProxyHooks = {};
  let watchesOpen = 0;
  let watchOpens = 0;
  let watchWaiters: Array<{ after: number; wake: () => void }> = [];
  const sockets = new Set<import("node:net").Socket>();

  const forward = (req: IncomingMessage, res: ServerResponse): void => {
    const watch = isWatch(req);
    const upstreamReq = httpRequest(
      { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: { ...req.headers, host: target.host } },
      (upstreamRes) => void answer(req, res, upstreamRes, watch),
    );
    upstreamReq.on("error", () => res.destroy());
    req.pipe(upstreamReq);
  };

  const answer = async (req: IncomingMessage, res: ServerResponse, upstreamRes: IncomingMessage, watch: boolean): Promise<void> => {
    const status = upstreamRes.statusCode ?? 0;
    if (writeMethods.has(req.method ?? "") && status >= 200 && status < 300) {
      const body = await readAll(upstreamRes);
      const seen: WriteSeen = { index: writes.length + 1, method: req.method!, path: req.url ?? "", status };
      writes.push(seen);
      const decision = (await hooks.onWrite?.(seen)) ?? "deliver";
      if (decision === "drop") return void res.destroy();
      res.writeHead(status, upstreamRes.headers);
      return void res.end(body);
    }
    res.writeHead(status, upstreamRes.headers);
    if (watch && status === 200) {
      watchesOpen++;
      watchOpens++;
      for (const waiter of watchWaiters) if (watchOpens > waiter.after) waiter.wake();
      watchWaiters = watchWaiters.filter((waiter) => watchOpens <= waiter.after);
      const done = () => {
        watchesOpen--;
        upstreamRes.destroy();
      };
      res.once("close", done);
    }
    upstreamRes.pipe(res);
  };

  const server: Server = createServer(forward);
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    writes,
    get watchesOpen() {
      return watchesOpen;
    },
    get watchOpens() {
      return watchOpens;
    },
    waitForWatch: (after = 0) => (watchOpens > after ? Promise.resolve() : new Promise<void>((wake) => watchWaiters.push({ after, wake }))),
    setHooks: (next) => void (hooks = next),
    dropConnections: () => {
      for (const socket of sockets) socket.destroy();
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

function readAll(stream: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    stream.on("data", (c: Buffer) => chunks.push(c));
    stream.on("end", () => resolve(Buffer.concat(chunks)));
    stream.on("error", reject);
  });
}
