// The compiled CLI's explore workers start from one bundle of settle and the scenario. CEL and ajv are loaded
// lazily, also inside the bundle, and old bundles are pruned from the shared temporary directory while the ones in
// use are kept. Spawns the compiled CLI (npm test builds it) with a temporary directory of its own.
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const repo = fileURLToPath(new URL("../../", import.meta.url));
const bin = join(repo, "bin", "settle.js");

// A CRD whose schema carries a CEL rule, and a workload that breaks it: the rule holds only if the worker's store
// loads CEL and enforces it (a worker that cannot load CEL fails the exploration instead).
const scenarioText = `
import { always, scenario } from "settle/sim";
const crd = {
  apiVersion: "apiextensions.k8s.io/v1",
  kind: "CustomResourceDefinition",
  metadata: { name: "gadgets.example.com" },
  spec: {
    group: "example.com",
    scope: "Namespaced",
    names: { plural: "gadgets", singular: "gadget", kind: "Gadget", listKind: "GadgetList" },
    versions: [{
      name: "v1", served: true, storage: true,
      schema: { openAPIV3Schema: { type: "object", properties: { spec: {
        type: "object",
        properties: { replicas: { type: "integer" } },
        "x-kubernetes-validations": [{ rule: "self.replicas <= 5", message: "at most 5 replicas" }],
      } } } },
    }],
  },
};
const ref = { apiVersion: "example.com/v1", kind: "Gadget", namespace: "default", name: "sample" };
export default scenario({
  name: "gadget",
  variants: { main: { expect: "ok" } },
  faults: "none",
  setup: () => [crd, { apiVersion: ref.apiVersion, kind: ref.kind, metadata: { name: "sample", namespace: "default" }, spec: { replicas: 1 } }],
  actors: () => [],
  workloads: {
    "break-the-rule": async (ctx) => {
      await ctx.clock.sleep(1000);
      await ctx.client.patch({ ...ref, patchType: "merge", patch: { spec: { replicas: 9 } } }).catch((error) => {
        if (error?.code !== 422 || !String(error.message).includes("at most 5 replicas")) throw error;
      });
    },
  },
  properties: () => [always("the CEL rule holds", (view) => (view.get(ref)?.spec?.replicas ?? 0) <= 5)],
});
`;

function project(): { dir: string; temp: string } {
  const dir = mkdtempSync(join(tmpdir(), "settle-bundle-"));
  after(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "user", private: true, type: "module" }));
  mkdirSync(join(dir, "node_modules"));
  symlinkSync(repo, join(dir, "node_modules", "settle"), "dir");
  mkdirSync(join(dir, "gadget"));
  writeFileSync(join(dir, "gadget", "scenario.ts"), scenarioText);
  const temp = join(dir, "tmp");
  mkdirSync(join(temp, "settle-worker-bundles"), { recursive: true });
  return { dir, temp };
}

const explore = (dir: string, temp: string) =>
  spawnSync(process.execPath, [bin, "explore", "gadget", "--runs", "4", "--workers", "2"], { cwd: dir, encoding: "utf8", env: { ...process.env, TMPDIR: temp } });

test("explore workers enforce a CEL rule from the bundle, and a new bundle prunes only long-idle ones", () => {
  const { dir, temp } = project();
  const bundles = join(temp, "settle-worker-bundles");
  const stale = join(bundles, "scenario-0000000000000000.mjs");
  const recent = join(bundles, "scenario-1111111111111111.mjs");
  writeFileSync(stale, "export {};\n");
  writeFileSync(recent, "export {};\n");
  const dayAgoSeconds = statSync(stale).mtimeMs / 1000 - 24 * 60 * 60;
  utimesSync(stale, dayAgoSeconds, dayAgoSeconds);

  const first = explore(dir, temp);
  assert.equal(first.status, 0, `${first.stdout}\n${first.stderr}`);
  assert.match(first.stdout, /gadget --variant main: 4 runs, no finding/);
  assert.equal(existsSync(stale), false, "a bundle idle for a day is removed");
  assert.equal(existsSync(recent), true, "a bundle used recently (maybe by another exploration) stays");
  const made = readdirSync(bundles).filter((name) => name !== "scenario-1111111111111111.mjs");
  assert.equal(made.length, 1, `one new bundle: ${made.join(", ")}`);

  // The same settle and scenario bundle to the same content: the second exploration reuses the file.
  const second = explore(dir, temp);
  assert.equal(second.status, 0, `${second.stdout}\n${second.stderr}`);
  assert.deepEqual(readdirSync(bundles).filter((name) => name !== "scenario-1111111111111111.mjs"), made);
});
