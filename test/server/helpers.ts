// Shared helpers of the server tests: a server per test on a free loopback port, raw HTTP requests, and the
// real kubectl binary run against a kubeconfig the server wrote (with its own discovery cache directory).
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startServer } from "../../src/server/index.ts";
import type { ServerOptions, SettleServer } from "../../src/server/index.ts";

export const kubectlPath = new URL("../../node_modules/.cache/settle-tools/v35/kubectl/kubectl", import.meta.url).pathname;
export const kubectl133Path = new URL("../../node_modules/.cache/settle-tools/v33/kubectl/kubectl", import.meta.url).pathname;

export interface TestServer {
  server: SettleServer;
  dir: string;
  kubeconfig: string;
  close(): Promise<void>;
}

export async function testServer(options: ServerOptions = {}): Promise<TestServer> {
  const server = await startServer({ log: () => {}, ...options });
  const dir = mkdtempSync(join(tmpdir(), "settle-server-test-"));
  const kubeconfig = join(dir, "kubeconfig");
  server.writeKubeconfig(kubeconfig);
  return {
    server,
    dir,
    kubeconfig,
    close: async () => {
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface Reply {
  status: number;
  headers: Headers;
  text: string;
  json: any;
}

export interface RequestOptions {
  body?: unknown;
  /** Sent as is (a string or bytes) instead of JSON. */
  raw?: string | Uint8Array;
  contentType?: string;
  headers?: Record<string, string>;
  /** Default true: send the bearer token. */
  auth?: boolean;
}

export async function request(server: SettleServer, method: string, path: string, options: RequestOptions = {}): Promise<Reply> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.auth !== false) headers.authorization = `Bearer ${server.token}`;
  let body: string | Uint8Array | undefined = options.raw;
  if (body === undefined && options.body !== undefined) body = JSON.stringify(options.body);
  if (body !== undefined) headers["content-type"] = options.contentType ?? "application/json";
  const response = await fetch(`${server.url}${path}`, { method, headers, body });
  const text = await response.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, headers: response.headers, text, json };
}

export interface KubectlResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs kubectl with the test's kubeconfig and cache directory; never throws on a non-zero exit. */
export function kubectl(t: TestServer, args: string[], options: { binary?: string; timeoutMs?: number; input?: string } = {}): Promise<KubectlResult> {
  return new Promise((resolve) => {
    const env = { PATH: process.env.PATH ?? "", HOME: t.dir, KUBECONFIG: t.kubeconfig, KUBECACHEDIR: join(t.dir, "cache") };
    const child = execFile(options.binary ?? kubectlPath, args, { env, timeout: options.timeoutMs ?? 20_000 }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof (error as { code?: unknown }).code === "number" ? ((error as { code: number }).code) : 1;
      resolve({ code, stdout, stderr });
    });
    if (options.input !== undefined) child.stdin?.end(options.input);
  });
}

/** Reads NDJSON watch events from a streaming response until `until` says stop or the stream ends. */
export async function readEvents(response: Response, until: (events: any[]) => boolean): Promise<any[]> {
  const events: any[] = [];
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let buffered = "";
  for (;;) {
    if (until(events)) break;
    const { done, value } = await reader.read();
    if (done) break;
    buffered += decoder.decode(value, { stream: true });
    let newline: number;
    while ((newline = buffered.indexOf("\n")) >= 0) {
      events.push(JSON.parse(buffered.slice(0, newline)));
      buffered = buffered.slice(newline + 1);
    }
  }
  await reader.cancel().catch(() => {});
  return events;
}

export function watchRequest(server: SettleServer, path: string, signal?: AbortSignal): Promise<Response> {
  return fetch(`${server.url}${path}`, { headers: { authorization: `Bearer ${server.token}` }, signal });
}

export const configMap = (name: string, data: Record<string, string> = {}, labels?: Record<string, string>) => ({
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: { name, ...(labels === undefined ? {} : { labels }) },
  data,
});

export const widgetCrd = {
  apiVersion: "apiextensions.k8s.io/v1",
  kind: "CustomResourceDefinition",
  metadata: { name: "widgets.example.com" },
  spec: {
    group: "example.com",
    scope: "Namespaced",
    names: { plural: "widgets", singular: "widget", kind: "Widget", shortNames: ["wd"] },
    versions: [
      {
        name: "v1",
        served: true,
        storage: true,
        subresources: { status: {} },
        schema: {
          openAPIV3Schema: {
            type: "object",
            properties: {
              spec: { type: "object", properties: { size: { type: "integer" } } },
              status: { type: "object", "x-kubernetes-preserve-unknown-fields": true },
            },
          },
        },
      },
    ],
  },
};

// A minimal protobuf writer for the tests: varints, length-delimited fields, and the k8s envelope.
export function varint(n: number | bigint): number[] {
  let v = BigInt.asUintN(64, BigInt(n));
  const out: number[] = [];
  do {
    const byte = Number(v & 0x7fn);
    v >>= 7n;
    out.push(v > 0n ? byte | 0x80 : byte);
  } while (v > 0n);
  return out;
}
export const bytesField = (n: number, b: Uint8Array | number[]) => [...varint((n << 3) | 2), ...varint(b.length), ...b];
export const str = (n: number, s: string) => bytesField(n, [...Buffer.from(s)]);
export const int = (n: number, v: number) => [...varint(n << 3), ...varint(v)];
export const entry = (n: number, k: string, v: string | number[]) => bytesField(n, [...str(1, k), ...(typeof v === "string" ? str(2, v) : bytesField(2, v))]);
export function envelope(apiVersion: string, kind: string, raw: number[]): Uint8Array {
  return new Uint8Array([0x6b, 0x38, 0x73, 0x00, ...bytesField(1, [...str(1, apiVersion), ...str(2, kind)]), ...bytesField(2, raw), ...str(3, ""), ...str(4, "")]);
}
