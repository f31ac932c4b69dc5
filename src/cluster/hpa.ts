// The horizontal pod autoscaler's controller, on a cluster with no metrics API (as a fresh kind or minikube cluster
// without metrics-server): every 15 s, and on every change of an HPA, it reads the target's scale, keeps its
// replicas within `minReplicas`..`maxReplicas` (scaling the target to the nearer bound, with a `SuccessfulRescale`
// Event), and otherwise reports that it cannot compute a replica count, as kube-controller-manager does when its
// metrics calls fail: `status.currentReplicas` from the target, conditions `AbleToScale` and `ScalingActive=False`,
// Warning Events. So `kubectl get hpa` shows the target's replicas and `kubectl describe hpa` reads as on such a
// cluster. A target whose desired replicas are 0 disables scaling. Leaves out: metrics, behavior policies, the
// stabilization window (nothing to stabilize without metrics), CRD targets through their `/scale`.
import { isNotFound } from "../api/errors.ts";
import type { KubeObject } from "../api/object.ts";
import type { ActorDefinition } from "../sim/types.ts";
import { Action, defineController } from "../runtime/controller.ts";
import type { ReconcileContext } from "../runtime/controller.ts";
import { canonicalEqual, controllerActor, formatTime } from "./common.ts";
import type { WorkloadControllerOptions } from "./replicaset.ts";

export const hpaKind = { apiVersion: "autoscaling/v2", kind: "HorizontalPodAutoscaler" } as const;

/** The real controller's default sync period. */
const syncMs = 15_000;

/** Kinds whose replicas an HPA can read and set: `spec.replicas`, as their `/scale` shows it. */
const scalable = new Set(["apps/v1/Deployment", "apps/v1/ReplicaSet", "apps/v1/StatefulSet", "v1/ReplicationController"]);

interface Condition {
  type: string;
  status: "True" | "False";
  reason: string;
  message: string;
  lastTransitionTime?: string;
}

type Hpa = KubeObject & {
  spec: { scaleTargetRef: { apiVersion?: string; kind: string; name: string }; minReplicas?: number; maxReplicas: number; metrics?: Array<Record<string, any>> };
  status?: { currentReplicas?: number; desiredReplicas?: number; lastScaleTime?: string; conditions?: Condition[]; [field: string]: unknown };
};

type Target = KubeObject & { spec?: { replicas?: number } };

/**
 * Why no replica count can be computed from the first metric, in the real controller's reason and words: `message`
 * for the condition and its Event, `value` for the summary Event.
 */
function metricsFailure(hpa: Hpa): { reason: string; message: string; value: string } {
  const failure = firstMetricFailure(hpa);
  const count = Math.max(1, hpa.spec.metrics?.length ?? 0);
  return { ...failure, value: `invalid metrics (${count} invalid out of ${count}), first error is: failed to get ${failure.kind} metric value: ${failure.message}` };
}

function firstMetricFailure(hpa: Hpa): { reason: string; message: string; kind: string } {
  const metric = hpa.spec.metrics?.[0] ?? { type: "Resource", resource: { name: "cpu", target: { type: "Utilization" } } };
  const unavailable = (api: string, what: string) => `unable to fetch metrics from ${api} API: the server could not find the requested resource (get ${what})`;
  switch (metric.type) {
    case "Resource":
    case "ContainerResource": {
      const name = metric.resource?.name ?? metric.containerResource?.name ?? "cpu";
      const measure = (metric.resource ?? metric.containerResource)?.target?.type === "Utilization" ? "utilization" : "usage";
      const reason = metric.type === "Resource" ? "FailedGetResourceMetric" : "FailedGetContainerResourceMetric";
      return { reason, kind: `${name} ${metric.type === "Resource" ? "resource" : "container resource"}`, message: `failed to get ${name} ${measure}: unable to get metrics for resource ${name}: ${unavailable("resource metrics", "pods.metrics.k8s.io")}` };
    }
    case "Pods":
      return { reason: "FailedGetPodsMetric", kind: "pods", message: `unable to get metric ${metric.pods?.metric?.name ?? ""}: ${unavailable("custom metrics", "pods.custom.metrics.k8s.io")}` };
    case "Object":
      return { reason: "FailedGetObjectMetric", kind: "object", message: `unable to get metric ${metric.object?.metric?.name ?? ""}: ${unavailable("custom metrics", "custom.metrics.k8s.io")}` };
    default:
      return { reason: "FailedGetExternalMetric", kind: "external", message: `unable to get external metric ${metric.external?.metric?.name ?? ""}: ${unavailable("external metrics", "external.metrics.k8s.io")}` };
  }
}

/** `conditions` with `next` set, keeping the transition time of a condition whose status did not change. */
function withCondition(conditions: readonly Condition[], next: Condition, now: string): Condition[] {
  const previous = conditions.find((c) => c.type === next.type);
  const stamped = { ...next, lastTransitionTime: previous !== undefined && previous.status === next.status ? previous.lastTransitionTime : now };
  return [...conditions.filter((c) => c.type !== next.type), stamped];
}

async function reconcileHpa(hpa: Hpa, ctx: ReconcileContext, events: boolean): Promise<Action> {
  const now = formatTime(ctx.clock.now());
  const warn = (reason: string, message: string) => (events ? ctx.events.record(hpa, { type: "Warning", reason, message }) : Promise.resolve());
  let conditions = hpa.status?.conditions ?? [];
  const status = { ...hpa.status };
  const ref = hpa.spec.scaleTargetRef;
  const apiVersion = ref.apiVersion ?? "";
  let target: Target | undefined;
  try {
    if (scalable.has(`${apiVersion}/${ref.kind}`)) target = await ctx.client.get<Target>({ apiVersion, kind: ref.kind, namespace: hpa.metadata.namespace, name: ref.name });
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
  if (target === undefined) {
    const message = `the HPA controller was unable to get the target's current scale: ${scalable.has(`${apiVersion}/${ref.kind}`) ? `${ref.kind.toLowerCase()}s "${ref.name}" not found` : `no scale subresource for ${ref.kind} ${apiVersion} is served here`}`;
    conditions = withCondition(conditions, { type: "AbleToScale", status: "False", reason: "FailedGetScale", message }, now);
    await warn("FailedGetScale", message);
    return writeStatus(hpa, { ...status, conditions }, ctx);
  }
  conditions = withCondition(conditions, { type: "AbleToScale", status: "True", reason: "SucceededGetScale", message: "the HPA controller was able to get the target's current scale" }, now);
  // The replicas the target asks for (its scale's spec), as the real controller counts them.
  const current = target.spec?.replicas ?? 1;
  const min = hpa.spec.minReplicas ?? 1;
  let desired: number | undefined;
  let reason = "";
  if (current === 0 && min !== 0) {
    conditions = withCondition(conditions, { type: "ScalingActive", status: "False", reason: "ScalingDisabled", message: "scaling is disabled since the replica count of the target is zero" }, now);
    desired = 0;
  } else if (current > hpa.spec.maxReplicas) [desired, reason] = [hpa.spec.maxReplicas, "Current number of replicas above Spec.MaxReplicas"];
  else if (current < min) [desired, reason] = [min, "Current number of replicas below Spec.MinReplicas"];
  else {
    const failure = metricsFailure(hpa);
    conditions = withCondition(conditions, { type: "ScalingActive", status: "False", reason: failure.reason, message: `the HPA was unable to compute the replica count: ${failure.message}` }, now);
    await warn(failure.reason, failure.message);
    await warn("FailedComputeMetricsReplicas", failure.value);
    return writeStatus(hpa, { ...status, currentReplicas: current, conditions }, ctx);
  }
  if (desired !== current && reason !== "") {
    await ctx.client.patch({ readOnly: true, apiVersion, kind: ref.kind, namespace: hpa.metadata.namespace, name: ref.name, patchType: "merge", patch: { spec: { replicas: desired } } });
    conditions = withCondition(conditions, { type: "AbleToScale", status: "True", reason: "SucceededRescale", message: `the HPA controller was able to update the target scale to ${desired}` }, now);
    if (events) await ctx.events.record(hpa, { type: "Normal", reason: "SuccessfulRescale", message: `New size: ${desired}; reason: ${reason}` });
    status.lastScaleTime = now;
  }
  return writeStatus(hpa, { ...status, currentReplicas: current, desiredReplicas: desired, conditions }, ctx);
}

/** Writes the status when it changed; comes back at the next sync either way. */
async function writeStatus(hpa: Hpa, status: NonNullable<Hpa["status"]>, ctx: ReconcileContext): Promise<Action> {
  if (!canonicalEqual(status, hpa.status ?? {})) {
    try {
      await ctx.client.updateStatus({ readOnly: true, object: { ...hpa, status } });
    } catch (error) {
      if (!isNotFound(error)) throw error;
    }
  }
  return Action.requeueAfter(syncMs);
}

/** Actor `horizontal-pod-autoscaler`. Not part of `cluster()` unless asked for (`with: ["horizontal-pod-autoscaler"]`). */
export function hpaController(options: WorkloadControllerOptions = {}): ActorDefinition {
  return controllerActor("horizontal-pod-autoscaler", options, (ctx) => {
    const controller = defineController<Hpa>({ name: "horizontal-pod-autoscaler", for: hpaKind, resyncMs: 0, reconcile: (hpa, c) => reconcileHpa(hpa, c, options.events === true) });
    return [controller];
  });
}
