// What the wire says of the traffic for people and for the kernel: a request's verb, object and label, a create's
// name, an event line's summary, a response's result; and the bytes of an answer the server never gave (an injected
// failure). Pure functions of the bytes and the store's kinds.
import type { Kernel } from "../sim/kernel.ts";
import type { Verb } from "../sim/trace.ts";
import { parseRoute, requestTarget } from "../server/routes.ts";
import { isChunked, protobufObject, type Head } from "./framing.ts";

export interface Described {
  verb: Verb;
  ref: string;
  write: boolean;
  cached: boolean;
  object?: { kind: string; namespace?: string; name?: string };
}

/** What a request is, for its step's label and facts: the verb, the object or collection, a cached read. */
export function describeRequest(kernel: Kernel, method: string, target: string): Described {
  let pathname: string;
  let query: URLSearchParams;
  try {
    ({ pathname, query } = requestTarget(target));
    // A client that sends the token as the path prefix the server accepts for plain HTTP (client-go: src/go/).
    if (pathname.startsWith("/token/")) pathname = pathname.replace(/^\/token\/[^/]+/, "");
  } catch {
    return { verb: method === "GET" ? "get" : "write", ref: `${method} ${target}`, write: method !== "GET", cached: false };
  }
  const write = method !== "GET" && method !== "HEAD";
  let route;
  try {
    route = parseRoute(pathname);
  } catch {
    return { verb: write ? "write" : "read", ref: `${method} ${pathname}`, write, cached: false };
  }
  if (route.type !== "resource") return { verb: write ? "write" : "read", ref: `${method} ${pathname}`, write, cached: false };
  const kind = kernel.store.resourceForPlural(route.group, route.version, route.plural)?.kind ?? route.plural;
  const object: { kind: string; namespace?: string; name?: string } = { kind };
  if (route.namespace !== undefined) object.namespace = route.namespace;
  if (route.name !== undefined) object.name = route.name;
  const watch = route.watchPath || /^(1|t|true)$/i.test(query.get("watch") ?? "");
  const status = route.subresource === "status";
  const verb: Verb = watch
    ? "watch"
    : method === "POST"
      ? "create"
      : method === "PUT"
        ? status ? "updateStatus" : "update"
        : method === "PATCH"
          ? status ? "patchStatus" : "patch"
          : method === "DELETE"
            ? "delete"
            : route.name === undefined ? "list" : "get";
  const cached = (verb === "list" || verb === "watch") && query.get("resourceVersion") === "0";
  const where = route.namespace === undefined ? (route.name === undefined ? "*" : route.name) : route.name === undefined ? route.namespace : `${route.namespace}/${route.name}`;
  const ref = `${kind} ${where}${cached ? " rv=0" : ""}${route.subresource !== undefined && !status ? ` /${route.subresource}` : ""}`;
  return { verb, ref, write, cached, object };
}

/** The name (or generateName) in a create's JSON or protobuf body, for its label: chunked and other bodies go unnamed. */
export function createdName(head: Head, bytes: Buffer): string | undefined {
  if (!isChunked(head) && /protobuf/i.test(head.headers.get("content-type") ?? "")) {
    const object = protobufObject(bytes.subarray(head.length));
    return object?.name || object?.generateName || undefined;
  }
  if (isChunked(head) || !/json/i.test(head.headers.get("content-type") ?? "")) return undefined;
  try {
    const body = JSON.parse(bytes.subarray(head.length).toString("utf8")) as { metadata?: { name?: unknown; generateName?: unknown } };
    const name = body.metadata?.name ?? body.metadata?.generateName;
    return typeof name === "string" ? name : undefined;
  } catch {
    return undefined;
  }
}

/** An answer the server never gave: an injected failure, as a real server words it. */
export function statusResponse(code: number, status: unknown): Buffer {
  const body = Buffer.from(JSON.stringify(status));
  const reasons: Record<number, string> = { 409: "Conflict", 429: "Too Many Requests", 500: "Internal Server Error", 504: "Gateway Timeout" };
  const retry = code === 429 ? "Retry-After: 1\r\n" : "";
  return Buffer.concat([Buffer.from(`HTTP/1.1 ${code} ${reasons[code] ?? "Error"}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n${retry}\r\n`, "latin1"), body]);
}

export function responseResult(status: number, bytes: Buffer, bodyLength: number): string {
  if (status >= 200 && status < 300) return `${status}`;
  // The Status's reason, when the body is one.
  try {
    const text = bytes.subarray(bytes.length - bodyLength).toString("utf8");
    const reason = (JSON.parse(text) as { reason?: string }).reason;
    return reason === undefined ? `${status}` : `${status} ${reason}`;
  } catch {
    return `${status}`;
  }
}

export function splitLines(data: Buffer): Buffer[] {
  const lines: Buffer[] = [];
  let start = 0;
  for (let at = data.indexOf(10); at >= 0; at = data.indexOf(10, start)) {
    lines.push(data.subarray(start, at + 1));
    start = at + 1;
  }
  if (start < data.length) lines.push(data.subarray(start));
  return lines;
}

/** The length-prefixed frames of a protobuf watch chunk (a partial frame at its end stays whole, as received). */
export function splitFrames(data: Buffer): Buffer[] {
  const frames: Buffer[] = [];
  let start = 0;
  while (start + 4 <= data.length) {
    const end = start + 4 + data.readUInt32BE(start);
    if (end > data.length) break;
    frames.push(data.subarray(start, end));
    start = end;
  }
  if (start < data.length) frames.push(data.subarray(start));
  return frames;
}

/** `ADDED ConfigMap ns/a@12` for a JSON event line; the frame's size otherwise. */
export function describeEvent(line: Buffer): string {
  try {
    const event = JSON.parse(line.toString("utf8")) as { type: string; object?: { kind?: string; metadata?: { namespace?: string; name?: string; resourceVersion?: string } } };
    const m = event.object?.metadata;
    const name = m?.namespace === undefined ? (m?.name ?? "") : `${m.namespace}/${m.name ?? ""}`;
    return `${event.type} ${event.object?.kind ?? ""} ${name}@${m?.resourceVersion ?? ""}`;
  } catch {
    return `${line.length} bytes`;
  }
}
