// `settle init`: scaffolds a scenario and a test for the user's controller, optionally from a CRD file: the CRD
// in the world, a sample object built from its schema, a workload that changes its spec, property stubs and
// the default fault budget. The scaffold explores clean as generated (a placeholder reconciler stands where
// the user's controller goes), so the first `settle explore` shows the loop working before anything is edited.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { parseAllDocuments } from "yaml";
import { parse, UsageError } from "./args.ts";
import { isApiError } from "../api/errors.ts";
import { cloneJson, isRecord } from "../api/json.ts";
import type { KubeObject, ObjectRef } from "../api/object.ts";
import { createStore } from "../store/index.ts";
import type { Store } from "../store/types.ts";
import { sampleValue, type SampleOptions, type Schema } from "./crd-sample.ts";

export const initUsage = `Usage: settle init [--crd FILE] [--dir DIR] [--force]

Writes DIR/scenario.ts (a scenario for your controller) and DIR/scenario.test.ts (a node:test file using
settle/test), then prints what to do next. DIR defaults to "settle".

Options:
  --crd FILE   a CustomResourceDefinition (YAML or JSON): the scenario creates it, a sample object of its kind
               (built from its openAPIV3Schema: patterns, formats, enums, bounds, lengths, required fields; the
               first candidate the CRD's own validation accepts, CEL rules included) and a workload that
               changes a field of the sample's spec to another accepted value
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
  /** A spec field (dotted path) the workload changes, with its new value (undefined: the workload sets a label instead). */
  change: { field: string; value: unknown } | undefined;
  /** Why no generated sample passed the CRD's validation (the scaffold then says to edit it); undefined when one did. */
  sampleProblem?: string;
}

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

/** Candidates tried for the sample: required fields only, then every field, each with a few seeds. */
const sampleCandidates: readonly SampleOptions[] = [0, 1, 2, 3].flatMap((variant) => [{ full: false, variant }, { full: true, variant }]);
/** Other values tried per spec field for the workload's change. */
const changeVariantsMax = 6;

/**
 * A store that serves the CRD, to check candidates with the API server's own validation (schema, formats, CEL
 * rules) before the scaffold is written. Undefined when the store refuses the CRD itself (then explore says why).
 */
function scratchStore(crd: Record<string, unknown>): Store | undefined {
  const store = createStore({ now: () => 0 });
  try {
    store.create(cloneJson(crd) as KubeObject);
    return store;
  } catch (error) {
    if (isApiError(error)) return undefined;
    throw error;
  }
}

/** Runs `write` on the store; false when the store refuses it (an API error), with the first such message kept. */
function tryWrite(write: () => void, problems: string[]): boolean {
  try {
    write();
    return true;
  } catch (error) {
    if (!isApiError(error)) throw error;
    problems.push(error.message);
    return false;
  }
}

/** The first candidate spec a fresh store accepts; else the first candidate and the store's objection. */
function validSample(crd: Record<string, unknown>, object: (spec: Record<string, unknown>) => KubeObject, specSchema: Schema | undefined): { spec: Record<string, unknown>; problem?: string } {
  const specs = sampleCandidates.map((options) => sampleValue(specSchema, options, "spec") as Record<string, unknown>);
  const problems: string[] = [];
  for (const spec of specs) {
    const store = scratchStore(crd);
    if (store === undefined) return { spec: specs[0]! };
    if (tryWrite(() => store.create(object(spec)), problems)) return { spec };
  }
  return { spec: specs[0]!, problem: problems[0]! };
}

/**
 * The first spec field the workload can change to another value the store accepts, as a merge patch of the stored
 * sample (so transition rules apply too): top-level fields first, then fields of nested objects, breadth first.
 * Undefined: the workload sets a label instead.
 */
function changeOf(crd: Record<string, unknown>, sample: KubeObject, spec: Schema | undefined, sampleSpec: Record<string, unknown>): CrdFacts["change"] {
  const ref: ObjectRef = { apiVersion: sample.apiVersion, kind: sample.kind, name: sample.metadata.name!, ...(sample.metadata.namespace === undefined ? {} : { namespace: sample.metadata.namespace }) };
  for (const { path, schema } of scalarFields(spec)) {
    const current = path.reduce<unknown>((value, key) => (isRecord(value) ? value[key] : undefined), sampleSpec);
    for (let variant = 1; variant <= changeVariantsMax; variant++) {
      const value = sampleValue(schema, { full: false, variant }, `spec.${path.join(".")}`);
      if (JSON.stringify(value) === JSON.stringify(current) || (typeof value === "object" && value !== null)) continue;
      const change = { field: path.join("."), value };
      const store = scratchStore(crd);
      if (store === undefined) return change;
      store.create(cloneJson(sample));
      if (tryWrite(() => store.patch({ ...ref, patchType: "merge", patch: changePatch(change) }), [])) return change;
    }
  }
  return undefined;
}

/** Fields of plain objects under `schema` whose values are scalars, shallowest first (maps and lists not entered). */
function scalarFields(schema: Schema | undefined): Array<{ path: string[]; schema: Schema }> {
  const found: Array<{ path: string[]; schema: Schema }> = [];
  let level: Array<{ path: string[]; schema: Schema }> = [{ path: [], schema: schema ?? {} }];
  for (let depth = 0; depth < changeDepthMax && level.length > 0; depth++) {
    const next: typeof level = [];
    for (const { path, schema: parent } of level) {
      for (const [field, child] of Object.entries(parent.properties ?? {})) {
        if (child.properties !== undefined) next.push({ path: [...path, field], schema: child });
        else if (child.type !== "object" && child.type !== "array" && child.items === undefined) found.push({ path: [...path, field], schema: child });
      }
    }
    level = next;
  }
  return found;
}

const changeDepthMax = 4;

/** The merge patch that sets the change's (dotted) spec field. */
export function changePatch(change: NonNullable<CrdFacts["change"]>): Record<string, unknown> {
  return { spec: change.field.split(".").reduceRight<unknown>((value, key) => ({ [key]: value }), change.value) };
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
  const apiVersion = `${spec.group}/${version.name}`;
  const namespaced = spec.scope !== "Cluster";
  const object = (sampleSpec: Record<string, unknown>) => sampleObject({ apiVersion, kind: spec.names!.kind!, namespaced }, sampleSpec) as KubeObject;
  const { spec: sampleSpec, problem } = validSample(crd, object, specSchema);
  return {
    crd,
    apiVersion,
    kind: spec.names.kind,
    namespaced,
    // The stub property and placeholder reconciler use status.observedGeneration only where a write of it is kept.
    statusSubresource: version.subresources?.status !== undefined && keepsObservedGeneration(version.schema?.openAPIV3Schema),
    sampleSpec,
    change: problem === undefined ? changeOf(crd, object(sampleSpec), specSchema, sampleSpec) : undefined,
    ...(problem === undefined ? {} : { sampleProblem: problem }),
  };
}

/** The sample object of the scaffold (its name and namespace fixed). */
function sampleObject(facts: Pick<CrdFacts, "apiVersion" | "kind" | "namespaced">, spec: Record<string, unknown>): Record<string, unknown> {
  return { apiVersion: facts.apiVersion, kind: facts.kind, metadata: facts.namespaced ? { name: "sample", namespace: "default" } : { name: "sample" }, spec };
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
  const warning =
    facts?.sampleProblem === undefined
      ? ""
      : `\nNote: no generated ${facts.kind} passed the CRD's own validation (${facts.sampleProblem}); edit the sample in\n${written[0]}'s setup before exploring.\n`;
  return `Wrote ${written.join(" and ")}: a scenario with ${subject}, a workload that changes it, property stubs and the
default fault budget, with a placeholder reconciler where your controller goes.

Next:
  1. In ${written[0]}, replace placeholderController with your controller (runController(yourController, ...))
     and write the properties your controller must make true ("eventually") and keep true ("always").
  2. npx settle explore ${dir} --runs 200          # explore: every fault point, then random schedules
  3. node --import settle/register --test ${written[1]}   # the same from your test runner, with settle/test
${warning}`;
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
  const sample = sampleObject(facts, facts.sampleSpec);
  const patch = facts.change === undefined ? { metadata: { labels: { "example.settle.dev/changed": "yes" } } } : changePatch(facts.change);
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
  setup: () => [crd, ${JSON.stringify(sample)}],
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
