// Stage pods on the cluster actors' kubelet.
//
// A real Skyhook stage pod runs the package step as an init container and then a pause container that keeps
// the pod Running until the operator deletes it; the operator reads success from `initContainerStatuses`.
// Deleting a Running pod is graceful: it stays in the API, terminating, until the kubelet has stopped it (at
// most the 30 s grace period). That window is what the gate trips on.
//
// settle's kubelet leaves init containers out, so the pause container's program stands in for them: it runs
// the stage for `stageMs`, reports the init container's exit 0 on the pod status as the kubelet would, and
// then waits to be stopped.
import { defineActor, kubelet, type ActorDefinition, type PodProgram } from "settle/sim";
import { pauseImage } from "./operator.ts";

export interface StagePodOptions {
  node: string;
  /** How long the package step of a stage runs. */
  stageMs: number;
  /** Pull to Running. */
  startMs: number;
  /**
   * Deletion to removal of a stage pod: drawn from this range by each kubelet incarnation (its own seeded
   * stream), so each run stands for one CI run's timing. Capped by the pod's 30 s grace period.
   */
  stopMs: readonly [number, number];
}

function stageProgram(stageMs: number): PodProgram {
  return async ({ pod, client, clock, signal }) => {
    await clock.sleep(stageMs, { signal });
    const initContainers = (pod.spec.initContainers ?? []).map((c) => ({
      name: c.name,
      image: c.image ?? "",
      imageID: "",
      ready: false,
      restartCount: 0,
      state: { terminated: { exitCode: 0, reason: "Completed" } },
    }));
    await client.patchStatus({
      apiVersion: "v1",
      kind: "Pod",
      namespace: pod.metadata.namespace,
      name: pod.metadata.name!,
      patchType: "merge",
      patch: { metadata: { uid: pod.metadata.uid }, status: { initContainerStatuses: initContainers } },
    });
    // The pause container: runs until the pod is deleted (the kubelet aborts the program then).
    await new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
    return 0;
  };
}

/** The node's kubelet, running stage pods; no Lease heartbeats (nothing here reads them). */
export function stageKubelet(options: StagePodOptions): ActorDefinition {
  const [stopMsMin, stopMsMax] = options.stopMs;
  const settings = {
    node: options.node,
    startMs: options.startMs,
    heartbeatMs: 0,
    programs: { [pauseImage.split(":")[0]!]: stageProgram(options.stageMs) },
  };
  const definition = kubelet({ ...settings, stopMs: stopMsMin });
  return defineActor({
    ...definition,
    // How fast this node's kubelet tears a pod down is a property of the run, not of the scenario.
    start: (ctx) => kubelet({ ...settings, stopMs: ctx.rng.between(stopMsMin, stopMsMax) }).start(ctx),
  });
}
