// Request targets are read literally, as Go's url.ParseRequestURI reads them for kube-apiserver: nothing in the
// path is resolved, and each segment is decoded on its own.
import { test } from "node:test";
import assert from "node:assert/strict";
import { parseRoute, requestTarget } from "../../src/server/routes.ts";

function routeOf(pathname: string): unknown {
  try {
    return parseRoute(pathname);
  } catch (error) {
    return `error ${(error as { code?: number }).code ?? ""}: ${(error as Error).message}`;
  }
}

test("a request target splits at its first ?, its path taken literally: no dot segment resolved, no backslash or # read", () => {
  const cases: Array<[string, string, string]> = [
    ["/api/v1/namespaces/default/configmaps/x?watch=true&labelSelector=a%3Db", "/api/v1/namespaces/default/configmaps/x", "watch=true&labelSelector=a%3Db"],
    ["/api/v1/namespaces/d/configmaps/%2e%2e", "/api/v1/namespaces/d/configmaps/%2e%2e", ""],
    ["/api/v1/namespaces/d/configmaps/x/..?a=1?b", "/api/v1/namespaces/d/configmaps/x/..", "a=1%3Fb"],
    ["/api\\v1/namespaces", "/api\\v1/namespaces", ""],
    ["/api/v1/pods#fragment", "/api/v1/pods#fragment", ""],
    ["/apis/apps/v1/deployments?fieldSelector=metadata.name%3Dweb&x=%20y+z", "/apis/apps/v1/deployments", "fieldSelector=metadata.name%3Dweb&x=+y+z"],
    ["http://127.0.0.1:6443/api/v1/pods/..?limit=1", "/api/v1/pods/..", "limit=1"],
    ["https://h?limit=1", "/", "limit=1"],
  ];
  for (const [target, pathname, query] of cases) {
    const split = requestTarget(target);
    assert.equal(split.pathname, pathname, target);
    assert.equal(split.query.toString(), query, target);
  }
  for (const bad of ["*", "api/v1", "http://[bad", "/api/v1/pods\u0000", "h:/x"]) assert.throws(() => requestTarget(bad), /malformed request URL/, bad);
});

test("a dot segment is refused where it stands: 400 by name for an item, 404 anywhere else", () => {
  const invalidName = (name: string, problem: string) => `error 400: Name parameter invalid: ${JSON.stringify(name)}: ${problem}`;
  assert.equal(routeOf("/api/v1/namespaces/d/configmaps/.."), invalidName("..", "may not be '..'"));
  assert.equal(routeOf("/api/v1/namespaces/d/configmaps/%2e%2E"), invalidName("..", "may not be '..'"));
  assert.equal(routeOf("/api/v1/namespaces/d/configmaps/%2e"), invalidName(".", "may not be '.'"));
  assert.equal(routeOf("/api/v1/namespaces/.."), invalidName("..", "may not be '..'"));
  assert.equal(routeOf("/api/v1/namespaces/../status"), invalidName("..", "may not be '..'"));
  assert.equal(routeOf("/api/v1/namespaces/d/pods/a%25b/status"), invalidName("a%b", "may not contain '%'"));
  // The same under a named group: an item's name is refused by name there too, not as a path nobody serves.
  assert.equal(routeOf("/apis/apps/v1/namespaces/d/deployments/.."), invalidName("..", "may not be '..'"));
  assert.equal(routeOf("/apis/example.com/v1/widgets/%2e"), invalidName(".", "may not be '.'"));
  const notFound = "error 404: the server could not find the requested resource";
  for (const path of [
    "/api/v1/namespaces/d/configmaps/x/..",
    "/api/v1/namespaces/d/configmaps/x/.",
    "/api/v1/namespaces/../configmaps",
    "/api/v1/namespaces/../configmaps/x",
    "/api/v1/namespaces/d/../x",
    "/api/../v1/pods",
    "/apis/../v1/pods",
    "/apis/apps/%2e%2e/deployments",
    "/api/v1/watch/..",
    "/api/..",
    "/apis/..",
    "/apis/apps/.",
    "/openapi/v3/api/..",
    "/version/..",
    "/healthz/.",
    "/api/v1/namespaces/d/configmaps/a%2Fb",
    "/api/v1/namespaces/d/configmaps/a%2f..",
    "/api/v1/namespaces/d//configmaps",
  ]) {
    assert.equal(routeOf(path), notFound, path);
  }
  // Plain paths, escaped or not, with one trailing slash or none.
  assert.deepEqual(routeOf("/api/v1/namespaces/d/configmaps/%61/"), routeOf("/api/v1/namespaces/d/configmaps/a"));
  assert.deepEqual(routeOf("/api/v1/namespaces/d/configmaps/a.b..c"), { type: "resource", group: "", version: "v1", plural: "configmaps", namespace: "d", name: "a.b..c", subresource: undefined, watchPath: false });
});

/** A resource route with the fields a case leaves out at their defaults. */
function resource(fields: { group?: string; version?: string; plural: string; namespace?: string; name?: string; subresource?: string; watchPath?: boolean }) {
  return { type: "resource", group: "", version: "v1", namespace: undefined, name: undefined, subresource: undefined, watchPath: false, ...fields };
}

test("every path kube-apiserver serves parses to its route, and a near miss is a 404", () => {
  const cases: Array<[string, unknown]> = [
    ["/version", { type: "version" }],
    ["/version/", { type: "version" }],
    ["/settle/faults", { type: "faults" }],
    ["/healthz", { type: "health" }],
    ["/livez", { type: "health" }],
    ["/readyz", { type: "health" }],
    ["/openapi/v2", { type: "openapiV2" }],
    ["/openapi/v3", { type: "openapiIndex" }],
    ["/openapi/v3/api/v1", { type: "openapiDoc", group: "", version: "v1" }],
    ["/openapi/v3/apis/apps/v1", { type: "openapiDoc", group: "apps", version: "v1" }],
    ["/api", { type: "apiVersions" }],
    ["/api/v1", { type: "resourceList", group: "", version: "v1" }],
    ["/apis", { type: "apiGroups" }],
    ["/apis/apps", { type: "apiGroup", group: "apps" }],
    ["/apis/apps/v1", { type: "resourceList", group: "apps", version: "v1" }],
    ["/api/v1/pods", resource({ plural: "pods" })],
    ["/api/v1/nodes/n1", resource({ plural: "nodes", name: "n1" })],
    ["/api/v1/nodes/n1/status", resource({ plural: "nodes", name: "n1", subresource: "status" })],
    ["/api/v1/namespaces", resource({ plural: "namespaces" })],
    ["/api/v1/namespaces/d", resource({ plural: "namespaces", name: "d" })],
    ["/api/v1/namespaces/d/status", resource({ plural: "namespaces", name: "d", subresource: "status" })],
    ["/api/v1/namespaces/d/finalize", resource({ plural: "namespaces", name: "d", subresource: "finalize" })],
    // Past a namespace's own subresource, the path reads as a namespaced collection of that name (none is served).
    ["/api/v1/namespaces/d/status/x", resource({ plural: "status", namespace: "d", name: "x" })],
    ["/api/v1/namespaces/d/finalize/x/y", resource({ plural: "finalize", namespace: "d", name: "x", subresource: "y" })],
    ["/api/v1/namespaces/d/pods", resource({ plural: "pods", namespace: "d" })],
    ["/api/v1/namespaces/d/pods/p/log", resource({ plural: "pods", namespace: "d", name: "p", subresource: "log" })],
    ["/api/v1/watch/pods", resource({ plural: "pods", watchPath: true })],
    ["/api/v1/watch/namespaces/d/pods/p", resource({ plural: "pods", namespace: "d", name: "p", watchPath: true })],
    ["/apis/apps/v1/namespaces/d/deployments/web/scale", resource({ group: "apps", plural: "deployments", namespace: "d", name: "web", subresource: "scale" })],
    ["/apis/example.com/v1/namespaces/d/status", resource({ group: "example.com", plural: "status", namespace: "d" })],
    ["/apis/apps/v1/watch/deployments", resource({ group: "apps", plural: "deployments", watchPath: true })],
  ];
  for (const [path, route] of cases) assert.deepEqual(routeOf(path), route, path);
  const notFound = "error 404: the server could not find the requested resource";
  for (const path of [
    "/",
    "/versions",
    "/version/x",
    "/settle",
    "/settle/faults/x",
    "/settle/other",
    "/other/faults",
    "/healthz/x",
    "/livez/x",
    "/readyz/x",
    "/openapi",
    "/openapi/v2/x",
    "/openapi/v4",
    "/openapi/v3/api",
    "/openapi/v3/api/v1/x",
    "/openapi/v3/apis/apps",
    "/openapi/v3/apis/apps/v1/x",
    "/openapi/v3/other/v1",
    "/api/v1/nodes/n1/status/x",
    "/api/v1/namespaces/d/pods/p/log/x",
    "/api/v1/watch",
    "/apis/apps/v1/watch",
  ]) {
    assert.equal(routeOf(path), notFound, path);
  }
});

test("a path of more than 16 segments is a 404 before it is decoded, and a malformed escape is a 400 naming the segment", () => {
  const sixteen = `/api/v1/namespaces/d/configmaps/${Array.from({ length: 11 }, () => "x").join("/")}`;
  assert.equal(sixteen.split("/").length - 1, 16);
  assert.equal(routeOf(sixteen), "error 404: the server could not find the requested resource", "16 segments: no route, but parsed");
  assert.equal(routeOf(`${sixteen}/`), routeOf(sixteen), "a trailing slash adds no segment");
  assert.equal(routeOf(`${sixteen}/%zz`), "error 404: the server could not find the requested resource", "17 segments: refused before any is decoded");
  assert.equal(routeOf(sixteen.replace(/x$/, "%zz")), 'error 400: invalid path segment: "%zz"', "16 segments: each is decoded");
  assert.equal(routeOf("/api/v1/namespaces/d/configmaps/%zz"), 'error 400: invalid path segment: "%zz"');
  assert.equal(routeOf("/api/v1/namespaces/d/configmaps/%"), 'error 400: invalid path segment: "%"');
  assert.equal(routeOf("/api/v1/namespaces/d/configmaps/%2F"), "error 404: the server could not find the requested resource");
  assert.deepEqual(routeOf("/api/v1/namespaces/d/config%6daps/a%20b%2e"), resource({ plural: "configmaps", namespace: "d", name: "a b." }));
});

test("an absolute-form target loses its scheme, user and authority, and keeps its path and query", () => {
  const cases: Array<[string, string, string]> = [
    ["http://host/api/v1/pods", "/api/v1/pods", ""],
    ["https://user:secret@host:6443/api?x=1", "/api", "x=1"],
    ["http://[::1]:6443/version", "/version", ""],
    ["http://h:", "/", ""],
    ["HTTP+x-1.2://h/a", "/a", ""],
    ["http://h?", "/", ""],
  ];
  for (const [target, pathname, query] of cases) {
    const split = requestTarget(target);
    assert.equal(split.pathname, pathname, target);
    assert.equal(split.query.toString(), query, target);
  }
  for (const bad of ["http://h:x/a", "http://h#x", "1http://h/a", "http:/h/a", "http://a@b@c/x", "http://h]/x", "http://h/a\u007f", "\u0000/a", "/a\tb", "/a\u001f", "__http://h/a"]) {
    assert.throws(() => requestTarget(bad), /malformed request URL/, JSON.stringify(bad));
  }
});
