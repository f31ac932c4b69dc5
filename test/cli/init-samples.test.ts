// `settle init --crd` writes a sample, and a workload change, that the CRD's own validation accepts: over the
// examples' CRDs and CRDs shaped like real ones (cert-manager's Certificate, the Prometheus operator's
// ServiceMonitor, a backup schedule with a cron pattern and CEL rules, a cluster-scoped pipeline run with an
// embedded resource), each sample is created, and its spec changed, in a fresh store serving the CRD.
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseAllDocuments } from "yaml";
import type { KubeObject } from "../../src/api/object.ts";
import { changePatch, readCrd } from "../../src/cli/init.ts";
import { sampleNumber, sampleString } from "../../src/cli/crd-sample.ts";
import { createStore } from "../../src/store/index.ts";
import { skyhookCrd } from "../../examples/skyhook-config/skyhook.ts";
import { bootcNodeCrd, poolCrd } from "../../examples/bootc-rollout/model.ts";

const repo = fileURLToPath(new URL("../../", import.meta.url));
const realWorld = join(repo, "test", "fixtures", "crd", "real-world");
const scratch = mkdtempSync(join(tmpdir(), "settle-init-samples-"));
after(() => rmSync(scratch, { recursive: true, force: true }));

/** The CRD files to scaffold from: YAML files as they are, CRD objects of the TypeScript examples written out. */
function crdFiles(): string[] {
  const files = [join(repo, "examples/shell-operator/world.yaml"), join(repo, "examples/python-operator/world.yaml"), join(repo, "test/fixtures/crd/widgets.yaml")];
  files.push(...readdirSync(realWorld).sort().map((name) => join(realWorld, name)));
  for (const [name, crd] of Object.entries({ skyhook: skyhookCrd, pool: poolCrd, bootcnode: bootcNodeCrd })) {
    const path = join(scratch, `${name}.json`);
    writeFileSync(path, JSON.stringify(crd));
    files.push(path);
  }
  return files;
}

function crdOf(path: string): KubeObject {
  return parseAllDocuments(readFileSync(path, "utf8")).map((doc) => doc.toJS() as KubeObject).find((doc) => doc?.kind === "CustomResourceDefinition")!;
}

for (const path of crdFiles()) {
  test(`the sample and the workload's change for ${path.slice(repo.length)} pass the CRD's validation`, () => {
    const facts = readCrd(path);
    assert.equal(facts.sampleProblem, undefined);
    const store = createStore({ now: () => 0 });
    store.create(structuredClone(crdOf(path)));
    const metadata = facts.namespaced ? { name: "sample", namespace: "default" } : { name: "sample" };
    const created = store.create({ apiVersion: facts.apiVersion, kind: facts.kind, metadata, spec: facts.sampleSpec } as KubeObject);
    assert.ok((created as KubeObject & { spec?: unknown }).spec !== undefined);
    assert.ok(facts.change !== undefined, "a spec field the workload can change");
    store.patch({ apiVersion: facts.apiVersion, kind: facts.kind, ...metadata, patchType: "merge", patch: changePatch(facts.change) });
  });
}

test("what samples used to get wrong: a cron pattern, CEL rules asking for an optional field, unique list-map keys", () => {
  const facts = readCrd(join(realWorld, "backup-schedule.yaml"));
  const spec = facts.sampleSpec as { schedule: string; targets: Array<{ name: string }>; retention?: unknown; keepLast?: unknown; minCopies: number; maxCopies: number };
  assert.notEqual(spec.schedule, "example");
  assert.ok(spec.retention !== undefined || spec.keepLast !== undefined);
  assert.ok(spec.minCopies <= spec.maxCopies);
  assert.equal(new Set(spec.targets.map((t) => t.name)).size, spec.targets.length);
  assert.ok(spec.targets.length >= 2);
  // The same CRD always gives the same scaffold: the generator is seeded.
  assert.deepEqual(readCrd(join(realWorld, "backup-schedule.yaml")).sampleSpec, spec);
});

test("strings keep to patterns and lengths, numbers to bounds and multiples", () => {
  for (let variant = 0; variant < 5; variant++) {
    const text = sampleString({ pattern: "^[a-z]{3}-[0-9]{2,4}$", maxLength: 7 }, variant, "x");
    assert.match(text, /^[a-z]{3}-[0-9]{2,3}$/);
    assert.equal(sampleString({ minLength: 12, maxLength: 14 }, variant, "y").length >= 12, true);
  }
  assert.equal(sampleNumber({ minimum: 3, exclusiveMinimum: true, maximum: 10, multipleOf: 2 }, 0, true), 4);
  assert.equal(sampleNumber({ maximum: -5 }, 0, true), -5);
  assert.equal(sampleNumber({ minimum: 256, maximum: 512, multipleOf: 256 }, 3, true), 256, "a step past the maximum stays at the first valid value");
  assert.equal(sampleString({ format: "date-time" }, 0, "t"), "2024-01-01T00:00:00Z");
});

test("init --crd of a CRD with a cron pattern and CEL rules writes a scenario that explores clean", () => {
  const dir = mkdtempSync(join(scratch, "project-"));
  writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "user", private: true, type: "module" }));
  mkdirSync(join(dir, "node_modules"));
  symlinkSync(repo, join(dir, "node_modules", "settle"), "dir");
  const bin = join(repo, "bin", "settle.js");
  const init = spawnSync(process.execPath, [bin, "init", "--crd", join(realWorld, "backup-schedule.yaml")], { cwd: dir, encoding: "utf8" });
  assert.equal(init.status, 0, init.stderr);
  assert.doesNotMatch(init.stdout, /Note:/);
  const explored = spawnSync(process.execPath, [bin, "explore", "settle", "--runs", "4", "--workers", "1"], { cwd: dir, encoding: "utf8" });
  assert.equal(explored.status, 0, `${explored.stdout}\n${explored.stderr}`);
  assert.match(explored.stdout, /backupschedule --variant main: 4 runs, no finding/);
});
