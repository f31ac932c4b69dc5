// Request targets: the split that skips the URL parser must route every target as the URL parser would.
import { test } from "node:test";
import assert from "node:assert/strict";
import { parseRoute, requestTarget } from "../../src/server/routes.ts";

function routeOf(pathname: string): string {
  try {
    return JSON.stringify(parseRoute(pathname));
  } catch (error) {
    return `error: ${(error as Error).message}`;
  }
}

test("a request target routes and queries as new URL reads it, escapes, dot segments and backslashes included", () => {
  const targets = [
    "/api/v1/namespaces/default/configmaps/x?watch=true&labelSelector=a%3Db",
    "/api/v1/namespaces/d/configmaps/a%2Fb",
    "/api\\v1/namespaces",
    "/api/./v1/pods",
    "/api/v1/namespaces/%2e%2e/pods",
    "/apis/apps/v1/deployments?fieldSelector=metadata.name%3Dweb&x=%20y+z",
    "/api/v1/pods#fragment",
    "/api/v1/namespaces/{a}/pods",
    "/openapi/v3/apis/apps/v1?hash=ABC",
    "/api/v1/namespaces/default/pods/caf%C3%A9",
  ];
  for (const target of targets) {
    const url = new URL(target, "http://server.invalid");
    const split = requestTarget(target);
    assert.equal(routeOf(split.pathname), routeOf(url.pathname), target);
    assert.equal(split.query.toString(), url.searchParams.toString(), target);
  }
  assert.throws(() => requestTarget("http://[bad"), /malformed request URL/);
});
