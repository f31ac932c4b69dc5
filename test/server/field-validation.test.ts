// What kube-apiserver says about a body's fields and a dry run's object: duplicate fields are a 400 with
// fieldValidation=Strict and a warning by default (Warn), as unknown fields are; a ConfigMap's or Secret's data holds
// 1 MiB at most (422); a dry-run create answers a uid no real object gets.
import { test } from "node:test";
import assert from "node:assert/strict";
import { request, testServer, widgetCrd } from "./helpers.ts";

const configMaps = "/api/v1/namespaces/default/configmaps";

test("duplicate and unknown fields are a 400 with Strict, a Warning header each by default, nothing with Ignore", async () => {
  const t = await testServer();
  try {
    const body = (name: string) => `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"${name}","name":"${name}"},"data":{"a":"1","a":"2"},"spec":{}}`;
    const strict = await request(t.server, "POST", `${configMaps}?fieldValidation=Strict`, { raw: body("s") });
    assert.equal(strict.status, 400, strict.text);
    assert.equal(strict.json.reason, "BadRequest");
    assert.equal(strict.json.message, 'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: unknown field "spec", duplicate field "metadata.name", duplicate field "data.a"');
    const warned = await request(t.server, "POST", configMaps, { raw: body("w") });
    assert.equal(warned.status, 201, warned.text);
    assert.equal(warned.headers.get("warning"), '299 - "unknown field \\"spec\\"", 299 - "duplicate field \\"metadata.name\\"", 299 - "duplicate field \\"data.a\\""');
    assert.deepEqual(warned.json.data, { a: "2" }, "the last value counts, as in Go's decoder");
    const ignored = await request(t.server, "POST", `${configMaps}?fieldValidation=Ignore`, { raw: body("i") });
    assert.deepEqual([ignored.status, ignored.headers.get("warning")], [201, null]);
    // Nested and in arrays, on an update too.
    const pod = await request(t.server, "PUT", `${configMaps}/w?fieldValidation=Strict`, { raw: '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"w","labels":{"x":"1"},"ownerReferences":[{"name":"a"},{"name":"b","name":"c"}]}}' });
    assert.equal(pod.json.message, 'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: duplicate field "metadata.ownerReferences[1].name"');
    // Patches and applies are read the same way.
    const patched = await request(t.server, "PATCH", `${configMaps}/w?fieldValidation=Strict`, { raw: '{"data":{"b":"1","b":"2"}}', contentType: "application/merge-patch+json" });
    assert.equal(patched.json.message, 'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: duplicate field "data.b"');
    const applyBody = '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"w"},"data":{"c":"1","c":"2"}}';
    const applied = await request(t.server, "PATCH", `${configMaps}/w?fieldManager=m&fieldValidation=Strict`, { raw: applyBody, contentType: "application/apply-patch+yaml" });
    assert.equal(applied.status, 400, applied.text);
    const appliedWarned = await request(t.server, "PATCH", `${configMaps}/w?fieldManager=m`, { raw: applyBody, contentType: "application/apply-patch+yaml" });
    assert.deepEqual([appliedWarned.status, appliedWarned.headers.get("warning")], [200, '299 - "duplicate field \\"data.c\\""']);
    const clean = await request(t.server, "POST", `${configMaps}?fieldValidation=Strict`, { raw: '{"metadata":{"name":"c","labels":{"name":"x"}},"data":{"name":"\\"name\\""}}' });
    assert.deepEqual([clean.status, clean.headers.get("warning")], [201, null], "a key seen in another object, or in a string, is no duplicate");
  } finally {
    await t.close();
  }
});

test("a custom resource's fields its schema does not declare are reported as kube-apiserver reports them, then pruned", async () => {
  const t = await testServer();
  try {
    assert.equal((await request(t.server, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", { body: widgetCrd })).status, 201);
    const widgets = "/apis/example.com/v1/namespaces/default/widgets";
    const widget = (name: string) => ({ apiVersion: "example.com/v1", kind: "Widget", metadata: { name }, spec: { size: 1, colour: "red" }, status: { anything: 1 }, extra: true });
    const strict = await request(t.server, "POST", `${widgets}?fieldValidation=Strict`, { body: widget("s") });
    assert.equal(strict.status, 400, strict.text);
    assert.equal(strict.json.message, 'Widget in version "v1" cannot be handled as a Widget: strict decoding error: unknown field "spec.colour", unknown field "extra"');
    const warned = await request(t.server, "POST", widgets, { body: widget("w") });
    assert.equal(warned.status, 201, warned.text);
    assert.equal(warned.headers.get("warning"), '299 - "unknown field \\"spec.colour\\"", 299 - "unknown field \\"extra\\""');
    assert.deepEqual(warned.json.spec, { size: 1 }, "pruned as before");
    const ignored = await request(t.server, "POST", `${widgets}?fieldValidation=Ignore`, { body: widget("i") });
    assert.deepEqual([ignored.status, ignored.headers.get("warning")], [201, null]);
  } finally {
    await t.close();
  }
});

test("a ConfigMap or Secret holding more than 1 MiB of data is a 422 in the real words; 1 MiB is fine", async () => {
  const t = await testServer();
  try {
    const mib = 1024 * 1024;
    const fits = await request(t.server, "POST", configMaps, { body: { metadata: { name: "fits" }, data: { a: "x".repeat(mib - 10) }, binaryData: { b: Buffer.alloc(10).toString("base64") } } });
    assert.equal(fits.status, 201, fits.text.slice(0, 300));
    const big = await request(t.server, "POST", configMaps, { body: { metadata: { name: "big" }, data: { a: "x".repeat(mib - 10) }, binaryData: { b: Buffer.alloc(11).toString("base64") } } });
    assert.equal(big.status, 422);
    assert.equal(big.json.message, 'ConfigMap "big" is invalid: []: Too long: must have at most 1048576 bytes');
    const secret = await request(t.server, "POST", "/api/v1/namespaces/default/secrets", { body: { metadata: { name: "s" }, data: { a: Buffer.alloc(mib / 2).toString("base64") }, stringData: { b: "y".repeat(mib / 2 + 1) } } });
    assert.equal(secret.status, 422);
    assert.equal(secret.json.message, 'Secret "s" is invalid: data: Too long: must have at most 1048576 bytes');
    const grown = await request(t.server, "PATCH", `${configMaps}/fits`, { body: { data: { c: "zz" } }, contentType: "application/merge-patch+json" });
    assert.equal(grown.status, 422, "an update is held to it too");
  } finally {
    await t.close();
  }
});

test("a dry-run create answers a uid (and a generated name) of its own, never the one the next real create gets", async () => {
  const t = await testServer();
  try {
    const uids: string[] = [];
    for (const name of ["a", "b", "c"]) {
      const dry = await request(t.server, "POST", `${configMaps}?dryRun=All`, { body: { metadata: { name } } });
      assert.equal(dry.status, 201);
      uids.push(dry.json.metadata.uid);
    }
    const applied = await request(t.server, "PATCH", `${configMaps}/d?dryRun=All&fieldManager=m`, { body: { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "d" } }, contentType: "application/apply-patch+yaml" });
    assert.equal(applied.status, 201);
    uids.push(applied.json.metadata.uid);
    const real = await request(t.server, "POST", configMaps, { body: { metadata: { name: "a" } } });
    uids.push(real.json.metadata.uid);
    assert.equal(new Set(uids).size, uids.length, `distinct: ${uids.join(" ")}`);
    for (const uid of uids) assert.match(uid, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    // A generated name is drawn afresh too: a dry run does not foretell the next real one.
    const names: string[] = [];
    for (const dryRun of ["?dryRun=All", "?dryRun=All", ""]) {
      const made = await request(t.server, "POST", `${configMaps}${dryRun}`, { body: { metadata: { generateName: "gen-" } } });
      assert.equal(made.status, 201, made.text);
      names.push(made.json.metadata.name);
    }
    assert.equal(new Set(names).size, 3, names.join(" "));
    for (const name of names) assert.match(name, /^gen-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
  } finally {
    await t.close();
  }
});
