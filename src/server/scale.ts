// The `/scale` subresource of Deployment, ReplicaSet, StatefulSet and ReplicationController: an autoscaling/v1
// `Scale` view of the object (spec.replicas, status.replicas and the selector as a string), which `kubectl scale`
// and autoscalers read and write. A write changes `spec.replicas` of the parent only; a `resourceVersion` in the
// Scale is a precondition on the parent, as on kube-apiserver.
import { badRequest, conflict } from "../api/errors.ts";
import type { KubeObject, LabelSelector } from "../api/object.ts";
import { formatLabelSelector, labelSelectorFromSet, labelSelectorFromSpec } from "../api/selectors.ts";
import { applyJsonPatch, applyMergePatch } from "../api/patch.ts";
import type { ResourceType } from "../api/resources.ts";

type Json = Record<string, unknown>;

function selectorText(resource: ResourceType, spec: Json): string {
  const selector = spec.selector;
  if (typeof selector !== "object" || selector === null) return "";
  try {
    // ReplicationController selects with a plain label map; the apps kinds with a LabelSelector.
    if (resource.group === "") return formatLabelSelector(labelSelectorFromSet(selector as Record<string, string>));
    return formatLabelSelector(labelSelectorFromSpec(selector as LabelSelector));
  } catch {
    return "";
  }
}

/** The Scale view of a scalable object. */
export function scaleOf(resource: ResourceType, object: KubeObject): KubeObject {
  const spec = (object.spec ?? {}) as Json;
  const status = (object.status ?? {}) as Json;
  const meta = object.metadata;
  const metadata: Json = { name: meta.name, uid: meta.uid, resourceVersion: meta.resourceVersion, creationTimestamp: meta.creationTimestamp };
  if (meta.namespace !== undefined) metadata.namespace = meta.namespace;
  const replicas = typeof spec.replicas === "number" ? spec.replicas : 1;
  const scaleStatus: Json = { replicas: typeof status.replicas === "number" ? status.replicas : 0 };
  const selector = selectorText(resource, spec);
  if (selector !== "") scaleStatus.selector = selector;
  return { apiVersion: "autoscaling/v1", kind: "Scale", metadata, spec: { replicas }, status: scaleStatus } as unknown as KubeObject;
}

/** The replica count a written Scale asks for; 400 when the body is not a Scale, 422-like 400 on a bad count. */
export function replicasFrom(scale: unknown, current: KubeObject, resource: ResourceType): number {
  if (typeof scale !== "object" || scale === null || Array.isArray(scale)) throw badRequest("the request body must be a Scale object");
  const body = scale as Json;
  if (body.kind !== undefined && body.kind !== "Scale") throw badRequest(`the kind in the data (${String(body.kind)}) does not match the expected kind (Scale)`);
  const meta = (body.metadata ?? {}) as Json;
  const rv = meta.resourceVersion;
  if (typeof rv === "string" && rv !== "" && rv !== current.metadata.resourceVersion) {
    throw conflict(resource.plural, current.metadata.name ?? "", "the object has been modified; please apply your changes to the latest version and try again", resource.group);
  }
  const replicas = ((body.spec ?? {}) as Json).replicas ?? 0;
  if (typeof replicas !== "number" || !Number.isSafeInteger(replicas) || replicas < 0 || replicas > 2_147_483_647) {
    throw badRequest(`Scale.spec.replicas: Invalid value: ${JSON.stringify(replicas)}: must be greater than or equal to 0`);
  }
  return replicas;
}

/** Applies a merge or JSON patch to the Scale view (strategic merge on a Scale is a merge: it has no lists). */
export function patchScale(view: KubeObject, type: "merge" | "json" | "strategic", patch: unknown): unknown {
  return type === "json" ? applyJsonPatch(view, patch) : applyMergePatch(view, patch);
}
