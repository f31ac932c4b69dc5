// `src/cluster`: deterministic cluster actors for the simulator (re-exported from `settle/sim`).
export { cluster, clusterExternals, nodeNames } from "./cluster.ts";
export type { ClusterOptions, ClusterExternalsOptions } from "./cluster.ts";
export { kubelet, kubeletExternals, hostCell, podLogsCell, requestReboot, jobLogs } from "./kubelet.ts";
export type { KubeletOptions, HostState, PodLogs, PodProgram, ProgramContext } from "./kubelet.ts";
export { scheduler, podFitsNode } from "./scheduler.ts";
export type { SchedulerOptions } from "./scheduler.ts";
export { registryCell, imageCacheCell, parseImage, digestOf, pullImage, defaultPullPolicy, emptyImageCache } from "./images.ts";
export type { ImageCache, Registry, ImageRef, PullResult } from "./images.ts";
export { annotations, isPodReady, isNodeReady, isTerminating, templateHash } from "./common.ts";
export { replicaSetController, isPodAvailable } from "./replicaset.ts";
export type { WorkloadControllerOptions } from "./replicaset.ts";
export { deploymentController, deploymentRolloutStatus, rolloutRestart, restartedAtAnnotation, revisionAnnotation } from "./deployment.ts";
export { daemonSetController, daemonSetRolloutStatus, daemonHashLabel } from "./daemonset.ts";
export { jobController, cronJobController, jobFinished, cronTimes } from "./job.ts";
export { nodeLifecycle, disruptionController, drain, drainOnce, drainCell, evictPod, cordon, pdbStatus } from "./node.ts";
export type { NodeLifecycleOptions, DrainOptions, EvictionResult } from "./node.ts";
export { nodeActor, rebootFaultKind } from "./node-actor.ts";
export type { NodeActorOptions } from "./node-actor.ts";
