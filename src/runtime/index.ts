// `settle`: the controller runtime. Everything here is written against `Client` and `Clock`, so the same
// controller runs in the simulator and against a real API server.
export { defineController, runController, Action, TerminalError, requeueAfterMsMax, maxConcurrentReconcilesMax } from "./controller.ts";
export type {
  Controller,
  ControllerSpec,
  ControllerHandle,
  ReconcileContext,
  MapContext,
  RunOptions,
  RunOptionsBase,
  Source,
  WatchSource,
  PrimaryRef,
  StopReason,
} from "./controller.ts";
export { ProcessExit } from "../api/exit.ts";
export { Informer } from "./informer.ts";
export type { EventHandler, InformerOptions, InformerSelector } from "./informer.ts";
export { step as informerStep, backoffDefaults } from "./informer-state.ts";
export type { InformerState, InformerInput, InformerEffect, InformerPhase, BackoffOptions } from "./informer-state.ts";
export { Cache, builtinIndexers, indexNames, objectKey } from "./cache.ts";
export { deepFreeze } from "../api/json.ts";
export type { Lister, IndexFunc, ListFilter } from "./cache.ts";
export { WorkQueue, exponentialRateLimiter, rateLimiterDefaults } from "./workqueue.ts";
export type { RateLimiter, WorkQueueOptions, ExponentialRateLimiterOptions } from "./workqueue.ts";
export { getCondition, setCondition, removeCondition, withCondition, isConditionTrue, conditionsEqual, conditionsMax } from "./conditions.ts";
export type { Condition, ConditionStatus, ConditionInput } from "./conditions.ts";
export { createEventRecorder } from "./events.ts";
export type { EventRecorder, EventOptions, EventType, EventRecorderOptions } from "./events.ts";
export {
  ensureOwned,
  setControllerReference,
  controllerReference,
  isControlledBy,
  matchesDesired,
  OwnershipError,
} from "./ownership.ts";
export type { EnsureOwnedOptions, EnsureResult, EnsureOperation } from "./ownership.ts";
export { LeaderElector, leaderElectionDefaults } from "./leader.ts";
export type { LeaderElectionConfig, LeaderElectorOptions, Lease, LeaseSpec, HoldResult } from "./leader.ts";
export { silentLog } from "./log.ts";
export type { Log } from "./log.ts";

// The api types and helpers a controller author needs.
export type {
  KubeObject,
  KindRef,
  ObjectRef,
  ObjectMeta,
  OwnerReference,
  ObjectList,
  WatchEvent,
  LabelSelector,
} from "../api/object.ts";
export { keyOf, splitKey, refOf, controllerOf, describeRef } from "../api/object.ts";
export type { Client, Watch, ListOptions, WatchOptions, GetOptions, PatchOptions, DeleteOptions } from "../api/client.ts";
export type { Clock, Timer } from "../api/clock.ts";
export { monotonicNow, realClock } from "../api/clock.ts";
export {
  ApiError,
  isApiError,
  isNotFound,
  isAlreadyExists,
  isConflict,
  isInvalid,
  isGone,
  isExpired,
  isBadRequest,
  isRequestEntityTooLarge,
  isTooManyRequests,
  isInternalError,
  isTimeout,
  isServerTimeout,
  isMethodNotAllowed,
  isUnsupportedMediaType,
  isNotAcceptable,
  isForbidden,
  isUnauthorized,
  retryAfterSeconds,
} from "../api/errors.ts";
export type { StatusReason } from "../api/errors.ts";
