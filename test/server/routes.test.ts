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
