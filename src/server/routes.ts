// Request paths, as kube-apiserver lays them out, parsed into a route: discovery, OpenAPI, or a resource
// (collection, item, or an item's subresource, optionally in a namespace; `/watch/` marks the legacy watch paths).
import { ApiError, badRequest } from "../api/errors.ts";

export type Route =
  | { type: "version" }
  | { type: "health" }
  | { type: "apiVersions" }
  | { type: "apiGroups" }
  | { type: "apiGroup"; group: string }
  | { type: "resourceList"; group: string; version: string }
  | { type: "openapiIndex" }
  | { type: "openapiDoc"; group: string; version: string }
  | { type: "openapiV2" }
  | { type: "faults" }
  | ResourceRoute;

export interface ResourceRoute {
  type: "resource";
  group: string;
  version: string;
  plural: string;
  namespace: string | undefined;
  name: string | undefined;
  subresource: string | undefined;
  /** `/api/v1/watch/...`: the deprecated path form of `?watch=true`. */
  watchPath: boolean;
}

/** A 404 worded as kube-apiserver words it for a path it does not serve. */
export function pathNotFound(): ApiError {
  return new ApiError("NotFound", 404, "the server could not find the requested resource", {});
}

const pathSegmentsMax = 16;

function segmentsOf(pathname: string): string[] {
  const raw = pathname.split("/").slice(1);
  if (raw.length > 0 && raw[raw.length - 1] === "") raw.pop();
  if (raw.length > pathSegmentsMax) throw pathNotFound();
  return raw.map((segment) => {
    // Most segments hold no escape: decoding would return them unchanged.
    if (!segment.includes("%")) {
      if (segment === "" || segment === "." || segment === "..") throw pathNotFound();
      return segment;
    }
    let decoded: string;
    try {
      decoded = decodeURIComponent(segment);
    } catch {
      throw badRequest(`invalid path segment: ${JSON.stringify(segment)}`);
    }
    if (decoded === "" || decoded === "." || decoded === ".." || decoded.includes("/")) throw pathNotFound();
    return decoded;
  });
}

/**
 * Request targets that `new URL` would read the same: printable ASCII without `#` (a fragment) or `\` (a slash to
 * URL), and no dot segment. Characters URL would percent-encode come out of segment decoding unchanged either way.
 */
const plainTarget = /^\/[\x21\x22\x24-\x5b\x5d-\x7e]*$/;
const dotSegment = /\/\.|%2e/i;

/**
 * The path and query of a request target, as `new URL(target, base)` reads them. Most targets need no normalizing
 * (no dot segments, escapes of dots, or characters URL would escape), and are split at the first `?` instead: the
 * same answer without building a URL per request. Anything else goes through URL; a target it cannot read is a 400.
 */
export function requestTarget(target: string): { pathname: string; query: URLSearchParams } {
  if (plainTarget.test(target)) {
    const mark = target.indexOf("?");
    const pathname = mark < 0 ? target : target.slice(0, mark);
    if (!dotSegment.test(pathname)) return { pathname, query: new URLSearchParams(mark < 0 ? "" : target.slice(mark + 1)) };
  }
  let url: URL;
  try {
    url = new URL(target, "http://server.invalid");
  } catch {
    throw badRequest("malformed request URL");
  }
  return { pathname: url.pathname, query: url.searchParams };
}

/** Namespace subresources share the shape of a namespaced collection: `/api/v1/namespaces/{ns}/status`. */
const namespaceSubresources = new Set(["status", "finalize"]);

function resourceRoute(group: string, version: string, rest: string[]): ResourceRoute {
  let watchPath = false;
  if (rest[0] === "watch") {
    watchPath = true;
    rest = rest.slice(1);
  }
  let namespace: string | undefined;
  if (rest[0] === "namespaces" && rest.length >= 3 && !(group === "" && rest.length === 3 && namespaceSubresources.has(rest[2]!))) {
    namespace = rest[1];
    rest = rest.slice(2);
  }
  if (rest.length === 0 || rest.length > 3) throw pathNotFound();
  return { type: "resource", group, version, plural: rest[0]!, namespace, name: rest[1], subresource: rest[2], watchPath };
}

export function parseRoute(pathname: string): Route {
  const s = segmentsOf(pathname);
  const [first, second, third, fourth] = s;
  if (first === "version" && s.length === 1) return { type: "version" };
  if (first === "settle" && second === "faults" && s.length === 2) return { type: "faults" };
  if ((first === "healthz" || first === "livez" || first === "readyz") && s.length === 1) return { type: "health" };
  if (first === "openapi") {
    if (second === "v2" && s.length === 2) return { type: "openapiV2" };
    if (second !== "v3") throw pathNotFound();
    if (s.length === 2) return { type: "openapiIndex" };
    if (third === "api" && fourth !== undefined && s.length === 4) return { type: "openapiDoc", group: "", version: fourth };
    if (third === "apis" && fourth !== undefined && s.length === 5) return { type: "openapiDoc", group: fourth, version: s[4]! };
    throw pathNotFound();
  }
  if (first === "api") {
    if (s.length === 1) return { type: "apiVersions" };
    if (s.length === 2) return { type: "resourceList", group: "", version: second! };
    return resourceRoute("", second!, s.slice(2));
  }
  if (first === "apis") {
    if (s.length === 1) return { type: "apiGroups" };
    if (s.length === 2) return { type: "apiGroup", group: second! };
    if (s.length === 3) return { type: "resourceList", group: second!, version: third! };
    return resourceRoute(second!, third!, s.slice(3));
  }
  throw pathNotFound();
}
