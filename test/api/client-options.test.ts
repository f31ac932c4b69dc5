// Client options are checked at the boundary: a mistaken call names the method, the option and what was
// passed, the same way in the simulator's client and in settle/kube's.
import { test } from "node:test";
import assert from "node:assert/strict";
import { checkClientOptions } from "../../src/api/client-options.ts";
import { createSimulation, defineActor } from "../../src/public/sim.ts";

const configMap = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "a", namespace: "default" }, data: {} };

test("create called with the object instead of { object } says to pass { object }", () => {
  assert.throws(() => checkClientOptions("create", configMap), {
    name: "TypeError",
    message: "create: options.object is required (got an object with apiVersion/kind/metadata/data: pass { object })",
  });
});

test("a well-formed call of every method passes", () => {
  const ref = { apiVersion: "v1", kind: "ConfigMap", namespace: "default", name: "a" };
  for (const method of ["get", "delete"] as const) checkClientOptions(method, ref);
  for (const method of ["list", "watch"] as const) checkClientOptions(method, { apiVersion: "v1", kind: "ConfigMap", labelSelector: "a=b", limit: 10 });
  for (const method of ["create", "update", "updateStatus"] as const) checkClientOptions(method, { object: configMap, dryRun: true });
  for (const method of ["patch", "patchStatus"] as const) {
    checkClientOptions(method, { ...ref, patchType: "merge", patch: { data: { a: "1" } } });
    checkClientOptions(method, { ...ref, patchType: "json", patch: [{ op: "add", path: "/data/a", value: "1" }] });
  }
});

test("each kind of mistake is named with what was passed", () => {
  const cases: Array<[Parameters<typeof checkClientOptions>[0], unknown, RegExp]> = [
    ["get", undefined, /^get: expects one options object \(got undefined\)$/],
    ["get", configMap, /^get: options\.name is required, a non-empty string \(got an object with .*: pass a reference \{ apiVersion, kind, namespace, name \}, not the object\)$/],
    ["list", { kind: "ConfigMap" }, /^list: options\.apiVersion is required/],
    ["list", { apiVersion: "v1", kind: "ConfigMap", limit: -1 }, /^list: options\.limit must be a non-negative integer \(got number -1\)$/],
    ["watch", { apiVersion: "v1", kind: "ConfigMap", labelSelector: { app: "x" } }, /^watch: options\.labelSelector must be a string when given/],
    ["update", { object: { kind: "ConfigMap", metadata: {} } }, /^update: options\.apiVersion is required.* in options\.object\)$/],
    ["updateStatus", { object: { apiVersion: "v1", kind: "ConfigMap" } }, /^updateStatus: options\.object\.metadata is required \(got undefined\)$/],
    ["patch", { apiVersion: "v1", kind: "ConfigMap", name: "a", patchType: "strategic", patch: {} }, /^patch: options\.patchType must be "merge" or "json"/],
    ["patchStatus", { apiVersion: "v1", kind: "ConfigMap", name: "a", patchType: "json", patch: { op: "add" } }, /^patchStatus: a "json" patch is an array of RFC 6902 operations/],
    ["delete", { apiVersion: "v1", kind: "Pod", name: "p", propagationPolicy: "background" }, /^delete: options\.propagationPolicy must be one of Background, Foreground, Orphan/],
  ];
  for (const [method, options, message] of cases) assert.throws(() => checkClientOptions(method, options), { name: "TypeError", message }, `${method} ${JSON.stringify(options)}`);
});

test("the simulator's client rejects a mistaken create before it becomes a step, and the actor's error names it", async () => {
  const sim = createSimulation({ seed: 1 });
  let caught: unknown;
  sim.addActor(
    defineActor({
      name: "careless",
      start: async (ctx) => {
        try {
          await ctx.client.create(configMap as never);
        } catch (error) {
          caught = error;
        }
      },
    }),
  );
  await sim.run();
  assert.ok(caught instanceof TypeError, "a TypeError reached the actor");
  assert.match(caught.message, /^create: options\.object is required .*pass \{ object \}\)$/);
});
