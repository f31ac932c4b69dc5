// `settle/sim`: build worlds, write scenarios and properties, explore them.
export * from "../sim/index.ts";
export { createStore } from "../store/index.ts";
export type { Store, StoreOptions, Admission, AdmissionRequest, StoreEvent } from "../store/types.ts";
export {
  always,
  eventually,
  PropertyMonitor,
  type Property,
  type Predicate,
  type PropertyCounter,
  type LastStep,
  type StepWrite,
  type MissedDeadline,
} from "../check/properties.ts";
export type { Verdict, VerdictKind, ThrownError } from "../check/verdict.ts";
export { scenario, defaultFaultBudget, type Scenario, type ScenarioDefinition, type ScenarioContext, type SetupWorld, type Workload, type WorkloadContext, type Params, type VariantInfo, type Timing } from "../explore/scenario.ts";
export { runScenario, type RunSpec, type RunOutcome } from "../explore/run.ts";
export * from "../cluster/index.ts";
export { moduleActor, type ModuleActorOptions } from "../module/actor.ts";
export { goActor, type GoActorOptions } from "../go/actor.ts";
