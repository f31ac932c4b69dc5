// `settle init`: scaffolds a scenario and a test for the user's controller, optionally from a CRD file: the CRD
// in the world, a sample object built from its schema, a workload that changes its spec, property stubs and
// the default fault budget. The scaffold explores clean as generated (a placeholder reconciler stands where
// the user's controller goes), so the first `settle explore` shows the loop working before anything is edited.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { parseAllDocuments } from "yaml";
import { parse, UsageError } from "./args.ts";

export const initUsage = `Usage: settle init [--crd FILE] [--dir DIR] [--force]

Writes DIR/scenario.ts (a scenario for your controller) and DIR/scenario.test.ts (a node:test file using
settle/test), then prints what to do next. DIR defaults to "settle".

Options:
  --crd FILE   a CustomResourceDefinition (YAML or JSON): the scenario creates it, a sample object of its kind
               (built from its openAPIV3Schema) and a workload that changes the sample's spec
  --dir DIR    where to write the files (default settle)
  --force      overwrite existing files

Exit codes: 0 written, 2 usage or input error (nothing is written then).
`;

/** What the scaffold needs to know about the custom resource. */
export interface CrdFacts {
  crd: Record<string, unknown>;
  apiVersion: string;
  kind: string;
  namespaced: boolean;
  statusSubresource: boolean;
  sampleSpec: Record<string, unknown>;
  /** A spec field the workload changes, with its new value (undefined: the workload sets a label instead). */
  change: { field: string; value: unknown } | undefined;
}

type Schema = { type?: string; properties?: Record<string, Schema>; required?: string[]; default?: unknown; enum?: unknown[]; minimum?: number; items?: Schema; "x-kubernetes-preserve-unknown-fields"?: boolean };

/**
 * Whether a write of `status.observedGeneration` survives: the API server prunes fields a structural schema does
 * not declare, so a CRD whose schema has no `status` silently drops every status write.
 */
function keepsObservedGeneration(root: Schema | undefined): boolean {
  if (root === undefined || root["x-kubernetes-preserve-unknown-fields"] === true) return true;
  const status = root.properties?.status;
  if (status === undefined) return false;
  return status["x-kubernetes-preserve-unknown-fields"] === true || status.properties?.observedGeneration !== undefined;
}

const sampleDepthMax = 4;

/** A value that satisfies the schema: its default or first enum value, else the required fields filled in. */
function sample(schema: Schema | undefined, depth: number): unknown {
  if (schema === undefined) return {};
  if (schema.default !== undefined) return schema.default;
  if (schema.enum !== undefined && schema.enum.length > 0) return schema.enum[0];
  switch (schema.type) {
    case "string":
      return "example";
    case "integer":
    case "number":
      return Math.max(1, schema.minimum ?? 1);
    case "boolean":
      return false;
    case "array":
      return [];
    default: {
      if (depth >= sampleDepthMax) return {};
      const fields = Object.keys(schema.properties ?? {});
      const required = new Set(schema.required ?? fields);
      return Object.fromEntries(fields.filter((f) => required.has(f)).map((f) => [f, sample(schema.properties![f], depth + 1)]));
    }
  }
}

/** The first top-level spec field the workload can change to another valid value. */
function changeOf(spec: Schema | undefined, sampleSpec: Record<string, unknown>): CrdFacts["change"] {
  for (const [field, schema] of Object.entries(spec?.properties ?? {})) {
    const current = sampleSpec[field];
    if (schema.enum !== undefined) {
      const other = schema.enum.find((value) => value !== current);
      if (other !== undefined) return { field, value: other };
      continue;
    }
    if (schema.type === "integer" || schema.type === "number") return { field, value: (typeof current === "number" ? current : 1) + 1 };
    if (schema.type === "string") return { field, value: `${typeof current === "string" ? current : "example"}-changed` };
    if (schema.type === "boolean") return { field, value: current !== true };
  }
  return undefined;
}

/** Reads a CRD file and the facts the scaffold needs, or throws a UsageError naming what is missing. */
export function readCrd(path: string): CrdFacts {
  if (!existsSync(path)) throw new UsageError(`--crd: ${path}: no such file`);
  const documents = parseAllDocuments(readFileSync(path, "utf8")).map((doc) => doc.toJS() as Record<string, unknown> | null);
  const crd = documents.find((doc) => doc?.kind === "CustomResourceDefinition");
  if (crd === undefined || crd === null) throw new UsageError(`--crd: ${path}: no document of kind CustomResourceDefinition`);
  const spec = crd.spec as { group?: string; scope?: string; names?: { kind?: string }; versions?: Array<{ name: string; served?: boolean; storage?: boolean; schema?: { openAPIV3Schema?: Schema }; subresources?: { status?: unknown } }> };
  const version = spec.versions?.find((v) => v.storage === true) ?? spec.versions?.find((v) => v.served !== false);
  if (spec.group === undefined || spec.names?.kind === undefined || version === undefined) {
    throw new UsageError(`--crd: ${path}: the CRD needs spec.group, spec.names.kind and at least one version`);
  }
  const specSchema = version.schema?.openAPIV3Schema?.properties?.spec;
  const sampleSpec = sample(specSchema, 1) as Record<string, unknown>;
  return {
    crd,
    apiVersion: `${spec.group}/${version.name}`,
    kind: spec.names.kind,
    namespaced: spec.scope !== "Cluster",
    // The stub property and placeholder reconciler use status.observedGeneration only where a write of it is kept.
    statusSubresource: version.subresources?.status !== undefined && keepsObservedGeneration(version.schema?.openAPIV3Schema),
    sampleSpec,
    change: changeOf(specSchema, sampleSpec),
  };
}

export async function initCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv, { crd: { type: "string" }, dir: { type: "string" }, force: { type: "boolean" } });
  if (positionals.length > 0) throw new UsageError(`takes no positional arguments, got "${positionals[0]}"`);
  const dir = typeof values.dir === "string" ? values.dir : "settle";
  const facts = typeof values.crd === "string" ? readCrd(values.crd) : undefined;
  const files = [
    { path: join(dir, "scenario.ts"), text: scenarioText(facts) },
    { path: join(dir, "scenario.test.ts"), text: testText(dir) },
  ];
  const existing = files.filter((f) => existsSync(f.path));
  if (existing.length > 0 && values.force !== true) {
    throw new UsageError(`${existing.map((f) => f.path).join(", ")} already exist (--force overwrites)`);
  }
  mkdirSync(dir, { recursive: true });
  for (const file of files) writeFileSync(file.path, file.text);
  const shown = relative(process.cwd(), dir) || ".";
  process.stdout.write(nextSteps(shown, files.map((f) => relative(process.cwd(), f.path)), facts));
  return 0;
}

function nextSteps(dir: string, written: string[], facts: CrdFacts | undefined): string {
  const subject = facts === undefined ? "a ConfigMap" : `a ${facts.kind}`;
  return `Wrote ${written.join(" and ")}: a scenario with ${subject}, a workload that changes it, property stubs and the
default fault budget, with a placeholder reconciler where your controller goes.

Next:
  1. In ${written[0]}, replace placeholderController with your controller (runController(yourController, ...))
     and write the properties your controller must make true ("eventually") and keep true ("always").
  2. npx settle explore ${dir} --runs 200          # explore: every fault point, then random schedules
  3. node --import settle/register --test ${written[1]}   # the same from your test runner, with settle/test
`;
}

function scenarioText(facts: CrdFacts | undefined): string {
  return facts === undefined ? configMapScenario : crdScenario(facts);
}

const configMapScenario = `// A scenario for your controller, written by \`settle init\`: the world at t=0, the actors, a workload and the
// properties. Explore it with \`npx settle explore <this folder>\`.
import { defineActor, eventually, scenario, type WorldView } from "settle/sim";
import { Action, defineController, runController } from "settle";

const sample = { apiVersion: "v1", kind: "ConfigMap", namespace: "default", name: "sample" } as const;

// Stands in for your controller: it marks the ConfigMap as seen at its current content.
const placeholderController = defineController<{ apiVersion: string; kind: string; metadata: { name?: string; namespace?: string; annotations?: Record<string, string> }; data?: Record<string, string> }>({
  name: "placeholder",
  for: { apiVersion: "v1", kind: "ConfigMap", namespace: "default" },
  async reconcile(object, ctx) {
    const seen = JSON.stringify(object.data ?? {});
    if (object.metadata.annotations?.["example.settle.dev/seen"] !== seen) {
      await ctx.client.patch({ ...sample, name: object.metadata.name!, patchType: "merge", patch: { metadata: { annotations: { "example.settle.dev/seen": seen } } } });
    }
    return Action.awaitChange();
  },
});

function configMap(view: WorldView): { metadata: { annotations?: Record<string, string> }; data?: Record<string, string> } | undefined {
  return view.get(sample) as ReturnType<typeof configMap>;
}

export default scenario({
  name: "my-controller",
  variants: { main: { expect: "ok" } },
  setup: () => [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: sample.name, namespace: sample.namespace }, data: { color: "blue" } }],
  actors: () => [
    defineActor({ name: "controller", start: async (ctx) => void (await runController(placeholderController, { client: ctx.client, clock: ctx.clock }).done) }),
  ],
  workloads: {
    "change-data": async (ctx) => {
      await ctx.clock.sleep(5000);
      await ctx.client.patch({ ...sample, patchType: "merge", patch: { data: { color: "green" } } });
    },
  },
  // No \`faults\`: the default budget (every built-in fault kind). \`faults: "none"\` turns them off.
  properties: () => [
    eventually("the controller has seen the current data", (view) => {
      const cm = configMap(view);
      return cm !== undefined && cm.metadata.annotations?.["example.settle.dev/seen"] === JSON.stringify(cm.data ?? {});
    }),
  ],
});
`;

function crdScenario(facts: CrdFacts): string {
  const namespace = facts.namespaced ? '"default"' : "undefined";
  const sampleObject = { apiVersion: facts.apiVersion, kind: facts.kind, metadata: facts.namespaced ? { name: "sample", namespace: "default" } : { name: "sample" }, spec: facts.sampleSpec };
  const patch = facts.change === undefined ? { metadata: { labels: { "example.settle.dev/changed": "yes" } } } : { spec: { [facts.change.field]: facts.change.value } };
  const statusProperty = facts.statusSubresource
    ? `    eventually("status.observedGeneration == metadata.generation", (view) => {
      const object = sample(view);
      return object !== undefined && object.status?.observedGeneration === object.metadata.generation;
    }),\n`
    : "";
  const reconcile = facts.statusSubresource
    ? `    if (object.status?.observedGeneration !== object.metadata.generation) {
      await ctx.client.patchStatus({ ...ref, patchType: "merge", patch: { status: { observedGeneration: object.metadata.generation } } });
    }\n`
    : "";
  return `// A scenario for your ${facts.kind} controller, written by \`settle init --crd\`: the CRD and a sample ${facts.kind}
// at t=0, your controller, a workload that changes the sample's spec, and property stubs. Explore it with
// \`npx settle explore <this folder>\`.
import { always, defineActor, eventually, scenario, type WorldView } from "settle/sim";
import { Action, defineController, runController, type KubeObject } from "settle";

type Resource = KubeObject & { spec?: Record<string, unknown>; status?: { observedGeneration?: number } & Record<string, unknown> };

const crd = ${JSON.stringify(facts.crd, null, 2)} as KubeObject;
const ref = { apiVersion: ${JSON.stringify(facts.apiVersion)}, kind: ${JSON.stringify(facts.kind)}, namespace: ${namespace}, name: "sample" };

// Stands in for your controller${facts.statusSubresource ? ": it records the generation it has seen in status.observedGeneration" : ""}.
const placeholderController = defineController<Resource>({
  name: "placeholder",
  for: { apiVersion: ref.apiVersion, kind: ref.kind },
  async reconcile(object, ctx) {
${reconcile}    return Action.awaitChange();
  },
});

function sample(view: WorldView): Resource | undefined {
  return view.get(ref) as Resource | undefined;
}

export default scenario({
  name: ${JSON.stringify(facts.kind.toLowerCase())},
  variants: { main: { expect: "ok" } },
  setup: () => [crd, ${JSON.stringify(sampleObject)}],
  actors: () => [
    defineActor({ name: "controller", start: async (ctx) => void (await runController(placeholderController, { client: ctx.client, clock: ctx.clock }).done) }),
  ],
  workloads: {
    "change-spec": async (ctx) => {
      await ctx.clock.sleep(5000);
      await ctx.client.patch({ ...ref, patchType: "merge", patch: ${JSON.stringify(patch)} });
    },
  },
  // No \`faults\`: the default budget (every built-in fault kind). \`faults: "none"\` turns them off.
  properties: () => [
    always("the sample exists", (view) => sample(view) !== undefined),
${statusProperty}    // eventually("what your controller must make true", (view) => ...),
  ],
});
`;
}

function testText(dir: string): string {
  const path = join(dir, "scenario.ts").split("\\").join("/");
  return `// Your scenario from node's test runner (vitest and jest work the same way), written by \`settle init\`.
// Run it with: node --import settle/register --test ${join(dir, "scenario.test.ts").split("\\").join("/")}
import { test } from "node:test";
import { assertNoFindings } from "settle/test";

test("the controller converges under every fault the explorer tries", async () => {
  // The path is relative to the directory the tests run from (the project root).
  await assertNoFindings(${JSON.stringify(path)}, { variant: "main", runs: 200 });
});
`;
}
