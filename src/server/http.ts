// HTTP plumbing of the server: reading bounded bodies, decoding them by media type, negotiating the response
// type, and writing objects and `Status` errors the way kube-apiserver does.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Clock } from "../api/clock.ts";
import { ApiError, badRequest, internalError, isApiError, tooLarge } from "../api/errors.ts";
import { jsonDepthMax } from "../api/patch.ts";
import { jsonNestedDeeper, yamlTooMuch } from "./nesting.ts";
import { decodeProtobuf, encodeProtobuf, protobufContentType } from "./encoding/protobuf.ts";
import { duplicateKeyMessage, yaml, yamlBodyParseOptions } from "./yaml-keys.ts";

export const jsonContentType = "application/json";

/** Writes a JSON body. Objects from the store are frozen and shared: they are only serialized here. */
export function sendJson(res: ServerResponse, code: number, body: unknown, contentType = jsonContentType): void {
  sendJsonText(res, code, JSON.stringify(body), contentType);
}

/** Writes JSON already serialized. */
export function sendJsonText(res: ServerResponse, code: number, text: string, contentType = jsonContentType): void {
  res.writeHead(code, { "Content-Type": contentType, "Content-Length": Buffer.byteLength(text), "Cache-Control": "no-cache, private" });
  res.end(text);
}

/** Any thrown value as the `Status` a client can read: ApiErrors as they are, anything else as a 500. */
export function statusOf(error: unknown): ApiError {
  if (isApiError(error)) return error;
  if (error instanceof RangeError) return badRequest(`the request could not be processed: ${error.message}`);
  return internalError(`an error on the server has prevented the request from succeeding: ${error instanceof Error ? error.message : String(error)}`);
}

/**
 * Writes the Status of an error in the client's first choice of media type, as kube-apiserver negotiates errors:
 * protobuf (the `runtime.Unknown` envelope of a v1 Status) for a client that asks for it first, JSON otherwise. A
 * 406 stays JSON: a real server writes the failure to negotiate in JSON.
 */
export function sendStatus(res: ServerResponse, error: unknown, accept?: string): void {
  const status = statusOf(error).status;
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const retryAfter = status.details?.retryAfterSeconds;
  if (typeof retryAfter === "number") res.setHeader("Retry-After", String(retryAfter));
  if (status.code !== 406 && prefersProtobuf(accept)) return sendProtobuf(res, status.code, encodeProtobuf(status as unknown as Record<string, unknown>, "meta/v1.Status"));
  sendJson(res, status.code, status);
}

export function sendSuccess(res: ServerResponse, details?: Record<string, unknown>): void {
  sendJson(res, 200, { apiVersion: "v1", kind: "Status", metadata: {}, status: "Success", ...(details === undefined ? {} : { details }) });
}

/**
 * Reads the whole body, refusing more than `bytesMax` (413) before buffering it: a declared Content-Length over
 * the bound is refused without reading, a chunked body as soon as it crosses it.
 */
export function readBody(req: IncomingMessage, bytesMax: number, deadline?: BodyDeadline): Promise<Buffer> {
  const declared = Number(req.headers["content-length"] ?? "0");
  if (Number.isFinite(declared) && declared > bytesMax) return Promise.reject(bodyTooLarge(bytesMax));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let bytes = 0;
    const stop = (error: ApiError) => {
      timer?.cancel();
      req.removeAllListeners("data");
      req.pause();
      reject(error);
    };
    // A body that stops coming holds its connection and its handler: it gets as long as kube-apiserver gives a request.
    const timer = req.complete || deadline === undefined ? undefined : deadline.clock.setTimer(deadline.ms, () => stop(bodyTimeout()));
    req.on("data", (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes > bytesMax) return stop(bodyTooLarge(bytesMax));
      chunks.push(chunk);
    });
    // A body in one chunk (most are) is that chunk: the parser hands each chunk over as a buffer of its own.
    req.on("end", () => {
      timer?.cancel();
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks));
    });
    req.on("error", (error) => stop(badRequest(`reading the request body failed: ${error.message}`)));
  });
}

/** How long a request body may take to arrive, on which clock. */
export interface BodyDeadline {
  clock: Clock;
  ms: number;
}

/** kube-apiserver's answer to a request not done within its timeout (`--request-timeout`, 60 s by default). */
function bodyTimeout(): ApiError {
  return new ApiError("Timeout", 504, "Timeout: request did not complete within requested timeout - context deadline exceeded", {});
}

function bodyTooLarge(bytesMax: number): ApiError {
  return tooLarge(`the request body is larger than ${bytesMax} bytes`);
}

/** The media type of a Content-Type header, lower-case, without parameters. */
export function mediaType(header: string | undefined): string {
  return (header ?? "").split(";")[0]!.trim().toLowerCase();
}

/** Refuses nesting deeper than `jsonDepthMax`, iteratively, so that no later recursion can overflow the stack. */
export function checkDepth(value: unknown, what: string): void {
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (node === null || typeof node !== "object") continue;
    if (depth >= jsonDepthMax) throw tooDeep(what);
    for (const child of Object.values(node)) if (child !== null && typeof child === "object") stack.push([child, depth + 1]);
  }
}

function tooDeep(what: string): ApiError {
  return badRequest(`${what} is nested deeper than ${jsonDepthMax} levels`);
}

export function parseJson(body: Buffer, what: string): unknown {
  // Before parsing: the parser would build every level of a hostile body first.
  if (jsonNestedDeeper(body, jsonDepthMax)) throw tooDeep(what);
  // JSON.parse nests exactly as the brackets outside strings do, so the scan above bounds the parsed value too.
  try {
    return JSON.parse(body.toString("utf8"));
  } catch (error) {
    throw badRequest(`${what} is not valid JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/**
 * Nodes of a YAML body (not JSON) the server parses: about 70 ms of the YAML library's time on a 2-core machine (a
 * list of 9,500 scalars took 83 ms, a mapping costs more per node), so that no YAML body keeps other requests
 * waiting for more than about 100 ms. Clients send larger bodies as JSON (kubectl and helm always do).
 */
export const yamlNodesMax = 5_000;

/** JSON sent as YAML (what kubectl and helm send for apply) takes the fast JSON path. */
function looksLikeJson(body: Buffer): boolean {
  for (const c of body) {
    if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) continue;
    return c === 0x7b;
  }
  return false;
}

export function parseYaml(body: Buffer, what: string): unknown {
  return parseYamlBody(body, what).value;
}

/**
 * `parseYaml`, saying whether the value came from the JSON parser: then no container of it appears twice in it (a
 * YAML alias makes the anchor's value appear again), and its maker may hand it over whole.
 */
export function parseYamlBody(body: Buffer, what: string): { value: unknown; json: boolean } {
  if (looksLikeJson(body)) {
    try {
      return { value: parseJson(body, what), json: true };
    } catch (error) {
      // Flow-style YAML (`{a: 1}`) is not JSON: the YAML parser reads it below.
      if (!(isApiError(error) && error.message.startsWith(`${what} is not valid JSON`))) throw error;
    }
  }
  const tooMuch = yamlTooMuch(body, { depthMax: jsonDepthMax, nodesMax: yamlNodesMax });
  if (tooMuch === "depth") throw tooDeep(what);
  if (tooMuch === "nodes") throw tooLarge(`${what} has more than ${yamlNodesMax} YAML nodes; send it as JSON`);
  const text = body.toString("utf8");
  const documents = yaml().parseAllDocuments(text, yamlBodyParseOptions);
  if (!Array.isArray(documents) || documents.length !== 1) throw badRequest(`${what} must hold exactly one YAML document`);
  const document = documents[0]!;
  if (document.errors.length > 0) throw badRequest(`${what} is not valid YAML: ${document.errors[0]!.message}`);
  const duplicate = duplicateKeyMessage(yaml(), document.contents, text);
  if (duplicate !== undefined) throw badRequest(`${what} is not valid YAML: ${duplicate}`);
  let value: unknown;
  try {
    value = document.toJS({ maxAliasCount: 100 });
  } catch (error) {
    throw badRequest(`${what} is not valid YAML: ${error instanceof Error ? error.message : String(error)}`);
  }
  checkDepth(value, what);
  return { value, json: false };
}

const acceptedBodyTypes = `${jsonContentType}, application/yaml, ${protobufContentType}`;

/** Decodes a create/update/delete body by its Content-Type (JSON when absent, as curl users expect). */
export function decodeBody(contentType: string | undefined, body: Buffer, what = "the request body"): unknown {
  const type = mediaType(contentType);
  if (type === "" || type === jsonContentType) return parseJson(body, what);
  if (type === "application/yaml") return parseYaml(body, what);
  if (type === protobufContentType) return decodeProtobuf(body);
  throw new ApiError("UnsupportedMediaType", 415, `the body of the request was in an unknown format - accepted media types include: ${acceptedBodyTypes}`);
}

/**
 * True when the client accepts plain JSON: no Accept header, `*\/*`, `application/*`, or `application/json`
 * without an `as=` parameter. Tables (`as=Table`) are part 2: a client that offers JSON too falls back to it;
 * one that offers only Tables or protobuf gets 406, as from a real server that cannot serve the form asked.
 */
export function acceptsJson(accept: string | undefined): boolean {
  if (accept === undefined || accept.trim() === "") return true;
  return accept.split(",").some((entry) => {
    const [type, ...params] = entry.split(";").map((part) => part.trim().toLowerCase());
    if (type === "*/*" || type === "application/*") return true;
    if (type !== jsonContentType) return false;
    return !params.some((param) => param.startsWith("as="));
  });
}

/**
 * True when the client's first choice is protobuf (`application/vnd.kubernetes.protobuf`, as client-go typed clients
 * ask): kube-apiserver answers in the first media type of the Accept list it can serve.
 */
export function prefersProtobuf(accept: string | undefined): boolean {
  if (accept === undefined) return false;
  const first = accept.split(",")[0]!.split(";");
  return first[0]!.trim().toLowerCase() === protobufContentType && !first.slice(1).some((p) => p.trim().toLowerCase().startsWith("as="));
}

/** Writes a protobuf body (already enveloped). */
export function sendProtobuf(res: ServerResponse, code: number, body: Uint8Array): void {
  res.writeHead(code, { "Content-Type": protobufContentType, "Content-Length": body.length, "Cache-Control": "no-cache, private" });
  res.end(body);
}

export function notAcceptable(): ApiError {
  return new ApiError("NotAcceptable", 406, `only the following media types are accepted: ${jsonContentType}`);
}
