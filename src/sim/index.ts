// The simulator's barrel: everything the checker, explorer and scenarios build on.
export { Rng } from "./rng.ts";
export { VirtualClock, DEFAULT_EPOCH_MS, type VirtualClockOptions } from "./clock.ts";
export {
  fifoStrategy,
  randomStrategy,
  pctStrategy,
  replayStrategy,
  type Strategy,
  type ReadyStep,
  type StepKind,
  type Choices,
  type PctOptions,
} from "./strategy.ts";
export { canonicalLine, toJsonl, traceHashOf, firstDivergence, recordKey, type TraceRecord, type TraceMode, type Divergence } from "./trace.ts";
export { createSimulation, defineActor, defineFaultKind, type Simulation } from "./simulation.ts";
export { BUILTIN_FAULT_KINDS } from "./faults.ts";
export type {
  ActorContext,
  ActorDefinition,
  ActorLog,
  CrashContext,
  ExternalCell,
  ExternalHandle,
  FaultBudget,
  FaultKind,
  FaultTarget,
  PlannedFault,
  RunOptions,
  RunResult,
  RunStatus,
  SimulationOptions,
  WorldView,
} from "./types.ts";
