// The one interpreter of a scenario.yaml's workload steps, for both ways of running a scenario: the simulator's
// workload actor (`settle explore`, virtual time) and the drill's real-time workload (`settle drill`). What differs
// between them is injected (the client, the clock, how to wait for the world to change, where a note goes); what a
// step does is decided here once:
//
// - A namespaced object or reference that names no namespace means `default`, as kubectl takes it; a cluster-scoped
//   one is left without a namespace.
// - `apply` creates the object, or merges its fields, labels and annotations into the existing one.
// - A `waitFor` whose condition is still false at its timeout stops the workload there: the steps after it would act
//   on a world they were not written for, and meeting the condition was the controller's job, so the properties judge
//   the world it left (the note says which wait timed out). It is never a scenario error.
// - A step that fails otherwise (an unknown kind, a request the server refuses) throws, naming the step's file:line.
import type { Client } from "../api/client.ts";
import { isApiError, isNotFound } from "../api/errors.ts";
import { cloneJson } from "../api/json.ts";
import type { KubeObject, ObjectRef } from "../api/object.ts";
import { assert } from "../api/assert.ts";
import type { WorldView } from "../sim/types.ts";
import type { Ref, WorkloadStep } from "./load.ts";
import { kindIn, type KindTable } from "./world.ts";

/** What a workload runs against: everything that differs between the simulator and the drill. */
export interface WorkloadHost {
  client: Client;
  /** The workload's clock: `sleep` steps and `waitFor` deadlines. */
  now(): number;
  sleep(ms: number): Promise<void>;
  /** The world as the workload reads it for `waitFor`. */
  view: WorldView;
  /** Resolves when the world may have changed, or after `leftMs` at the latest: when a `waitFor` looks again. */
  nextCheck(leftMs: number): Promise<void>;
  /** A line for the run's record (the simulator's trace, the drill's report). */
  note(line: string): void;
}

/** What a workload reads of its scenario. */
export interface WorkloadScenario {
  workload: readonly WorkloadStep[];
  kinds: KindTable;
  /** Whether a kind (`apiVersion` and `kind`) is namespaced. */
  namespaced(kind: { apiVersion: string; kind: string }): boolean;
}

/** How a workload ended: every step ran, or a `waitFor` timed out at `at` (the steps after it did not run). */
export type WorkloadOutcome = { ended: "done" } | { ended: "wait-timed-out"; at: string; note: string };

/** Runs the steps in order; throws an `Error` naming the step's file:line when a step fails (not a timed-out wait). */
export async function runWorkload(scenario: WorkloadScenario, host: WorkloadHost): Promise<WorkloadOutcome> {
  for (const step of scenario.workload) {
    let timedOut: boolean;
    try {
      timedOut = (await runStep(scenario, step, host)) === "timed-out";
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      throw new Error(`${step.at}: workload ${step.kind}: ${message}`);
    }
    if (timedOut) {
      assert(step.kind === "waitFor", "workload-only-a-wait-times-out");
      // Not `step.at`: it holds the file's absolute path, and a trace line must not depend on where the checkout is.
      const note = `waitFor ${JSON.stringify(step.condition.text)} not true within ${step.timeoutMs} ms: later steps not run`;
      host.note(note);
      return { ended: "wait-timed-out", at: step.at, note };
    }
  }
  return { ended: "done" };
}

async function runStep(scenario: WorkloadScenario, step: WorkloadStep, host: WorkloadHost): Promise<"timed-out" | void> {
  const client = host.client;
  switch (step.kind) {
    case "sleep":
      return host.sleep(step.ms);
    case "apply":
      return apply(scenario, client, step.object);
    case "patch": {
      const options = { ...objectRef(scenario, step.ref), patchType: step.json === undefined ? ("merge" as const) : ("json" as const), patch: step.json ?? step.merge };
      await (step.status ? client.patchStatus(options) : client.patch(options));
      return;
    }
    case "delete":
      await client.delete(objectRef(scenario, step.ref));
      return;
    case "waitFor":
      return waitFor(step, host);
  }
}

/** Looks at the world now and each time the host says it may have changed, until the condition holds or time is up. */
async function waitFor(step: Extract<WorkloadStep, { kind: "waitFor" }>, host: WorkloadHost): Promise<"timed-out" | void> {
  assert(step.timeoutMs >= 0, "workload-wait-timeout-not-negative");
  const deadline = host.now() + step.timeoutMs;
  while (!step.condition.test(host.view)) {
    const leftMs = deadline - host.now();
    if (leftMs <= 0) return "timed-out";
    await host.nextCheck(leftMs);
  }
}

/** The namespace a step's object or reference lands in: its own, else `default` for a namespaced kind. */
function namespaceOf(scenario: WorkloadScenario, kind: { apiVersion: string; kind: string }, given: string | undefined): string | undefined {
  if (given !== undefined) return given;
  return scenario.namespaced(kind) ? "default" : undefined;
}

function objectRef(scenario: WorkloadScenario, ref: Ref): ObjectRef {
  const kind = kindIn(scenario.kinds, ref);
  const namespace = namespaceOf(scenario, kind, ref.namespace);
  return { ...kind, name: ref.name, ...(namespace === undefined ? {} : { namespace }) };
}

/** Creates the object, or merges it into the existing one (what `kubectl apply` amounts to for a workload). */
async function apply(scenario: WorkloadScenario, client: Client, source: KubeObject): Promise<void> {
  const object = { ...cloneJson(source), ...kindIn(scenario.kinds, source) };
  const namespace = namespaceOf(scenario, object, object.metadata.namespace);
  if (namespace !== undefined) object.metadata.namespace = namespace;
  try {
    await client.create({ object });
  } catch (error) {
    if (!isApiError(error) || error.code !== 409 || isNotFound(error)) throw error;
    const { metadata, ...rest } = object;
    const ref: ObjectRef = { apiVersion: object.apiVersion, kind: object.kind, name: metadata.name ?? "", ...(namespace === undefined ? {} : { namespace }) };
    // Only what the manifest gives: a merge patch is JSON, which has no `undefined`.
    const merged = { ...(metadata.labels === undefined ? {} : { labels: metadata.labels }), ...(metadata.annotations === undefined ? {} : { annotations: metadata.annotations }) };
    await client.patch({ ...ref, patchType: "merge", patch: { ...rest, metadata: merged } });
  }
}
