// Bounded work per request and query parsing as kube-apiserver does it: hostile bodies are refused in milliseconds
// with a Status before any parser runs, and booleans read as Go's strconv.ParseBool.
import { test } from "node:test";
import assert from "node:assert/strict";
import { jsonNestedDeeper, yamlTooMuch } from "../../src/server/nesting.ts";
import { request, testServer, widgetCrd } from "./helpers.ts";

const limits = { depthMax: 1000, nodesMax: 10_000 };

test("the YAML scan finds deep nesting of every kind, and passes real manifests", () => {
  assert.equal(yamlTooMuch(Buffer.from(`${"- ".repeat(1_000_000)}x\n`), limits), "depth");
  assert.equal(yamlTooMuch(Buffer.from(`a: ${"[".repeat(5000)}\n`), limits), "depth");
  assert.equal(yamlTooMuch(Buffer.from(`${"{a: ".repeat(5000)}\n`), limits), "depth");
  assert.equal(yamlTooMuch(Buffer.from(Array.from({ length: 1100 }, (_, i) => `${" ".repeat(i)}k:`).join("\n")), limits), "depth");
  assert.equal(yamlTooMuch(Buffer.from("- a\n".repeat(20_000)), limits), "nodes");
  assert.equal(yamlTooMuch(Buffer.from(`a: [${"x, ".repeat(20_000)}x]\n`), limits), "nodes");
  const manifest = [
    "apiVersion: apps/v1",
    "kind: Deployment",
    "metadata:",
    "  name: web # a comment with [ and {",
    "  annotations:",
    `    quoted: "[ { '"`,
    "    single: 'it''s [ fine'",
    "    plain: don't [worry",
    "spec:",
    "  template:",
    "    spec:",
    "      containers:",
    "      - name: c",
    '        args: ["a", {b: [1, 2]}]',
    "        script: |",
    "          if [ x ]; then {",
    "          [[[[[",
    "      - name: d",
  ].join("\n");
  assert.equal(yamlTooMuch(Buffer.from(manifest), limits), undefined);
  assert.equal(yamlTooMuch(Buffer.from(manifest), { depthMax: 7, nodesMax: 100 }), "depth", "the scan does count nesting");
  // A big block scalar is cheap to parse and counts little.
  assert.equal(yamlTooMuch(Buffer.from(`data:\n  big: |\n${"    text\n".repeat(50_000)}`), limits), undefined);
});

test("the JSON scan skips strings and counts brackets", () => {
  assert.equal(jsonNestedDeeper(Buffer.from("[".repeat(2_000_000)), 1000), true);
  assert.equal(jsonNestedDeeper(Buffer.from(`{"a": "${"[".repeat(5000)}\\"["}`), 1000), false);
  assert.equal(jsonNestedDeeper(Buffer.from(`${"[".repeat(1000)}${"]".repeat(1000)}`), 1000), false);
  // At the edge of the short-body shortcut: one bracket more than the bound is one level too deep.
  assert.equal(jsonNestedDeeper(Buffer.from("[".repeat(1001)), 1000), true);
  assert.equal(jsonNestedDeeper(Buffer.from("[".repeat(1000)), 1000), false);
});

test("a 1.9 MiB YAML apply nested a million deep is refused by the scan before parsing and the server stays responsive", async () => {
  const t = await testServer();
  try {
    const body = `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: deep\ndata:\n  x:\n  ${"- ".repeat(1_000_000)}x\n`;
    assert.ok(body.length > 1.9 * 1024 * 1024);
    const reply = await request(t.server, "PATCH", "/api/v1/namespaces/default/configmaps/deep?fieldManager=test", { raw: body, contentType: "application/apply-patch+yaml" });
    assert.equal(reply.status, 400, reply.text);
    assert.equal(reply.json.kind, "Status");
    assert.match(reply.json.message, /nested deeper than 1000 levels/);
    const flat = "- a\n".repeat(100_000);
    const big = await request(t.server, "POST", "/api/v1/namespaces/default/configmaps", { raw: flat, contentType: "application/yaml" });
    assert.equal(big.status, 413);
    assert.match(big.json.message, /YAML nodes/);
    const json = await request(t.server, "POST", "/api/v1/namespaces/default/configmaps", { raw: `{"metadata": ${"[".repeat(100_000)}`, contentType: "application/json" });
    assert.equal(json.status, 400);
    assert.equal((await request(t.server, "GET", "/api/v1/namespaces/default/configmaps")).status, 200);
  } finally {
    await t.close();
  }
});

// The apply's walks recurse as deep as the body does (the merge as nested generators), so the deepest body the scan
// lets through must fit the stack with room to spare: applied, re-applied by another manager, changed. A widget's
// status keeps unknown fields, so the whole chain is merged and owned.
test("an apply nested as deep as the server takes (1000 levels) is applied and re-applied; one level more is a 400", async () => {
  const t = await testServer();
  try {
    assert.equal((await request(t.server, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", { body: widgetCrd })).status, 201);
    const widget = "/apis/example.com/v1/namespaces/default/widgets";
    assert.equal((await request(t.server, "POST", widget, { body: { apiVersion: "example.com/v1", kind: "Widget", metadata: { name: "deep" }, spec: { size: 1 } } })).status, 201);
    // The body is one level, `status` the next, then the chain: `wrappers` + 2 levels in all.
    const body = (wrappers: number, leaf: string) => {
      let node: unknown = { leaf };
      for (let d = 0; d < wrappers; d++) node = { n: node };
      return JSON.stringify({ apiVersion: "example.com/v1", kind: "Widget", metadata: { name: "deep" }, status: node });
    };
    const apply = (text: string, manager: string) => request(t.server, "PATCH", `${widget}/deep/status?fieldManager=${manager}&force=true`, { raw: text, contentType: "application/apply-patch+yaml" });
    const statuses = [(await apply(body(998, "a"), "one")).status, (await apply(body(998, "a"), "two")).status];
    const changed = await apply(body(998, "b"), "one");
    assert.deepEqual([...statuses, changed.status], [200, 200, 200], changed.text.slice(0, 300));
    assert.match(changed.text, /\{"leaf":"b"\}/);
    const deeper = await apply(body(999, "c"), "one");
    assert.equal(deeper.status, 400);
    assert.match(deeper.json.message, /nested deeper than 1000 levels/);
  } finally {
    await t.close();
  }
});

test("JSON sent as apply YAML takes the JSON path; flow YAML still parses", async () => {
  const t = await testServer();
  try {
    const applied = await request(t.server, "PATCH", "/api/v1/namespaces/default/configmaps/a?fieldManager=test", { raw: JSON.stringify({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "a" }, data: { k: "v" } }), contentType: "application/apply-patch+yaml" });
    assert.equal(applied.status, 201, applied.text);
    const flow = await request(t.server, "PATCH", "/api/v1/namespaces/default/configmaps/b?fieldManager=test", { raw: "{apiVersion: v1, kind: ConfigMap, metadata: {name: b}, data: {k: v}}", contentType: "application/apply-patch+yaml" });
    assert.equal(flow.status, 201, flow.text);
    assert.deepEqual(flow.json.data, { k: "v" });
  } finally {
    await t.close();
  }
});

test("booleans in the query read as Go's strconv.ParseBool: True and t watch, yes is a 400", async () => {
  const t = await testServer();
  try {
    for (const value of ["True", "t", "1", "TRUE"]) {
      const controller = new AbortController();
      const response = await fetch(`${t.server.url}/api/v1/namespaces/default/configmaps?watch=${value}&timeoutSeconds=1`, { headers: { authorization: `Bearer ${t.server.token}` }, signal: controller.signal });
      assert.equal(response.status, 200, value);
      controller.abort();
    }
    const list = await request(t.server, "GET", "/api/v1/namespaces/default/configmaps?watch=False&limit=1");
    assert.equal(list.json.kind, "ConfigMapList");
    const bad = await request(t.server, "GET", "/api/v1/namespaces/default/configmaps?watch=yes");
    assert.equal(bad.status, 400);
    assert.match(bad.json.message, /ParseBool/);
    const timeout = await request(t.server, "GET", "/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=abc");
    assert.equal(timeout.status, 400);
  } finally {
    await t.close();
  }
});
