// Request paths, as kube-apiserver lays them out, parsed into a route: discovery, OpenAPI, or a resource
// (collection, item, or an item's subresource, optionally in a namespace; `/watch/` marks the legacy watch paths).
import { ApiError, badRequest } from "../api/errors.ts";
import { isPathSegmentName } from "../api/validation.ts";

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

/**
 * The segments of a path, each percent-decoded on its own (an escaped slash stays inside its segment). Dot segments
 * are kept as they are: a request acts on exactly what its path names, so `..` is never resolved (it is refused
 * where the route is read). An empty segment (a doubled slash) or one that decodes to a slash names nothing: 404.
 */
function segmentsOf(pathname: string): string[] {
  const raw = pathname.split("/").slice(1);
  if (raw.length > 0 && raw[raw.length - 1] === "") raw.pop();
  if (raw.length > pathSegmentsMax) throw pathNotFound();
  return raw.map((segment) => {
    // Most segments hold no escape: decoding would return them unchanged.
    if (!segment.includes("%")) {
      if (segment === "") throw pathNotFound();
      return segment;
    }
    let decoded: string;
    try {
      decoded = decodeURIComponent(segment);
    } catch {
      throw badRequest(`invalid path segment: ${JSON.stringify(segment)}`);
    }
    if (decoded === "" || decoded.includes("/")) throw pathNotFound();
    return decoded;
  });
}

const isDotSegment = (segment: string | undefined): boolean => segment === "." || segment === "..";

/** A control character (Go's URL parser refuses them in a request target; node's HTTP parser does too). */
const controlCharacter = /[\x00-\x1f\x7f]/;
/** The scheme and authority of an absolute-form target (`GET http://host/path`, as sent to proxies). */
const absoluteForm = /^[a-zA-Z][a-zA-Z0-9+.-]*:\/\/(?:[^/?#@[\]]*@)?(?:\[[0-9a-fA-F:.]+\]|[^/?#@[\]:]*)(?::\d*)?(?=[/?]|$)/;

/**
 * The path and query of a request target, read as Go's `url.ParseRequestURI` reads one for kube-apiserver: the path
 * is everything before the first `?`, taken literally. No dot segment is resolved, no backslash turned into a
 * slash, no `#` cut off (WHATWG's URL parser, `new URL`, does all three, and would route `configmaps/%2e%2e` to the
 * namespace). A target that is neither a path nor an absolute URL is a 400.
 */
export function requestTarget(target: string): { pathname: string; query: URLSearchParams } {
  if (target.charCodeAt(0) !== 0x2f) {
    const prefix = absoluteForm.exec(target);
    if (prefix === null) throw badRequest("malformed request URL");
    target = target.slice(prefix[0].length);
    if (target === "" || target.charCodeAt(0) === 0x3f) target = `/${target}`;
    if (target.charCodeAt(0) !== 0x2f) throw badRequest("malformed request URL");
  }
  const mark = target.indexOf("?");
  const pathname = mark < 0 ? target : target.slice(0, mark);
  if (controlCharacter.test(pathname)) throw badRequest("malformed request URL");
  return { pathname, query: new URLSearchParams(mark < 0 ? "" : target.slice(mark + 1)) };
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
  const [plural, name, subresource] = rest;
  // Dot segments name no group, version, resource, namespace or subresource.
  if (isDotSegment(group) || isDotSegment(version) || isDotSegment(plural) || isDotSegment(namespace) || isDotSegment(subresource)) throw pathNotFound();
  if (name !== undefined) checkPathName(name);
  return { type: "resource", group, version, plural: plural!, namespace, name, subresource, watchPath };
}

/** A name that cannot stand in a path is a 400, as kube-apiserver's storage key functions answer it. */
function checkPathName(name: string): void {
  const problems = isPathSegmentName(name);
  if (problems.length > 0) throw badRequest(`Name parameter invalid: ${JSON.stringify(name)}: ${problems.join(";")}`);
}

export function parseRoute(pathname: string): Route {
  const s = segmentsOf(pathname);
  const [first, second, third, fourth] = s;
  // Only an item's name may be a dot segment, to be refused by name (resourceRoute); elsewhere one names nothing.
  const resourcePath = (first === "api" && s.length > 2) || (first === "apis" && s.length > 3);
  if (!resourcePath && s.some(isDotSegment)) throw pathNotFound();
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
