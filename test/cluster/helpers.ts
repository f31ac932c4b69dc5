// Shared setup for the cluster tests: a simulation with nodes, externals and a namespace.
import assert from "node:assert/strict";
import { createSimulation } from "../../src/sim/index.ts";
import type { ActorDefinition, FaultBudget, PlannedFault, RunResult, Simulation } from "../../src/sim/index.ts";
import type { KubeObject } from "../../src/api/object.ts";
import { clusterExternals } from "../../src/cluster/index.ts";
import { annotations } from "../../src/cluster/index.ts";
import type { Registry } from "../../src/cluster/index.ts";

export const ns = "app";

export function world(seed: number, options: { nodes?: string[]; registry?: Registry; actors?: ActorDefinition[] } = {}): Simulation {
  const sim = createSimulation({ seed, traceMode: "hash-only" });
  sim.store.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: ns } });
  for (const [name, value] of Object.entries(clusterExternals({ nodes: options.nodes ?? ["n1"], registry: options.registry ?? {} }))) {
    sim.defineExternal(name, value);
  }
  for (const actor of options.actors ?? []) sim.addActor(actor);
  return sim;
}

/** Runs for `ms` of virtual time (a cluster with heartbeats is never idle). */
export async function runFor(sim: Simulation, ms: number, options: { faultBudget?: FaultBudget; maxSteps?: number; faults?: PlannedFault[] } = {}): Promise<RunResult> {
  const result = await sim.run({ untilMs: sim.clock.now() + ms, maxSteps: sim.steps + (options.maxSteps ?? 200_000), ...(options.faultBudget ? { faultBudget: options.faultBudget } : {}), ...(options.faults ? { faults: options.faults } : {}) });
  assert.ok(result.status === "until" || result.status === "idle", `${result.status}: ${result.message ?? ""}`);
  return result;
}

export function list(sim: Simulation, apiVersion: string, kind: string): readonly KubeObject[] {
  return sim.view().list({ apiVersion, kind });
}

export function pod(name: string, extra: { annotations?: Record<string, string>; image?: string; nodeName?: string; restartPolicy?: string } = {}): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: ns, ...(extra.annotations ? { annotations: extra.annotations } : {}) },
    spec: {
      containers: [{ name: "main", image: extra.image ?? "app:v1" }],
      ...(extra.nodeName ? { nodeName: extra.nodeName } : {}),
      ...(extra.restartPolicy ? { restartPolicy: extra.restartPolicy } : {}),
    },
  };
}

export function deployment(replicas: number, options: { image?: string; strategy?: unknown; readyMs?: number; progressDeadlineSeconds?: number } = {}): KubeObject {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: "web", namespace: ns },
    spec: {
      replicas,
      selector: { matchLabels: { app: "web" } },
      ...(options.strategy ? { strategy: options.strategy } : {}),
      ...(options.progressDeadlineSeconds ? { progressDeadlineSeconds: options.progressDeadlineSeconds } : {}),
      template: {
        metadata: { labels: { app: "web" }, annotations: { [annotations.readyMs]: String(options.readyMs ?? 2000) } },
        spec: { containers: [{ name: "web", image: options.image ?? "web:v1" }] },
      },
    },
  };
}

export const registry = { "web:v1": "sha256:w1", "web:v2": "sha256:w2" };
