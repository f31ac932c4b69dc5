// The `/scale` subresource of Deployment, ReplicaSet, StatefulSet and ReplicationController, and of custom resources
// whose CRD declares one: an autoscaling/v1 `Scale` view of the object (the desired and observed replica counts and
// the selector as a string), which `kubectl scale` and autoscalers read and write. A write changes the desired count
// of the parent only; a `resourceVersion` in the Scale is a precondition on the parent, as on kube-apiserver. A custom
// resource's counts live where its CRD's `specReplicasPath`/`statusReplicasPath` say, absent counting as 0.
import { badRequest, conflict } from "../api/errors.ts";
import type { KubeObject, LabelSelector } from "../api/object.ts";
import { formatLabelSelector, labelSelectorFromSet, labelSelectorFromSpec } from "../api/selectors.ts";
import { applyJsonPatch, applyMergePatch } from "../api/patch.ts";
import type { ResourceType } from "../api/resources.ts";
import type { JsonObject } from "../api/json.ts";
import { cloneJson } from "../api/json.ts";

function selectorText(resource: ResourceType, spec: JsonObject): string {
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

/** `.spec.replicas` -> ["spec", "replicas"]. */
function segments(path: string): string[] {
  return path.replace(/^\./, "").split(".");
}

function valueAt(object: unknown, path: string): unknown {
  let value = object;
  for (const key of segments(path)) value = typeof value === "object" && value !== null && !Array.isArray(value) ? (value as JsonObject)[key] : undefined;
  return value;
}

/** The Scale view of a scalable object. */
export function scaleOf(resource: ResourceType, object: KubeObject): KubeObject {
  const meta = object.metadata;
  const metadata: JsonObject = { name: meta.name, uid: meta.uid, resourceVersion: meta.resourceVersion, creationTimestamp: meta.creationTimestamp };
  if (meta.namespace !== undefined) metadata.namespace = meta.namespace;
  const count = (value: unknown, absent: number) => (typeof value === "number" && Number.isInteger(value) ? value : absent);
  const paths = resource.scalePaths;
  let replicas: number;
  let scaleStatus: JsonObject;
  if (paths !== undefined) {
    replicas = count(valueAt(object, paths.specReplicas), 0);
    scaleStatus = { replicas: count(valueAt(object, paths.statusReplicas), 0) };
    const selector = paths.labelSelector === undefined ? undefined : valueAt(object, paths.labelSelector);
    if (typeof selector === "string" && selector !== "") scaleStatus.selector = selector;
  } else {
    const spec = (object.spec ?? {}) as JsonObject;
    replicas = count(spec.replicas, 1);
    scaleStatus = { replicas: count(((object.status ?? {}) as JsonObject).replicas, 0) };
    const selector = selectorText(resource, spec);
    if (selector !== "") scaleStatus.selector = selector;
  }
  return { apiVersion: "autoscaling/v1", kind: "Scale", metadata, spec: { replicas }, status: scaleStatus } as unknown as KubeObject;
}

/** The object with its desired replica count set, what a Scale write stores. */
export function withReplicas(resource: ResourceType, object: KubeObject, replicas: number): KubeObject {
  const paths = resource.scalePaths;
  if (paths === undefined) return { ...object, spec: { ...((object.spec ?? {}) as JsonObject), replicas } } as KubeObject;
  const next = cloneJson(object) as unknown as JsonObject;
  const keys = segments(paths.specReplicas);
  let at = next;
  for (const key of keys.slice(0, -1)) {
    if (typeof at[key] !== "object" || at[key] === null || Array.isArray(at[key])) at[key] = {};
    at = at[key] as JsonObject;
  }
  at[keys[keys.length - 1]!] = replicas;
  return next as unknown as KubeObject;
}

/** The replica count a written Scale asks for; 400 when the body is not a Scale, 422-like 400 on a bad count. */
export function replicasFrom(scale: unknown, current: KubeObject, resource: ResourceType): number {
  if (typeof scale !== "object" || scale === null || Array.isArray(scale)) throw badRequest("the request body must be a Scale object");
  const body = scale as JsonObject;
  if (body.kind !== undefined && body.kind !== "Scale") throw badRequest(`the kind in the data (${String(body.kind)}) does not match the expected kind (Scale)`);
  const meta = (body.metadata ?? {}) as JsonObject;
  const rv = meta.resourceVersion;
  if (typeof rv === "string" && rv !== "" && rv !== current.metadata.resourceVersion) {
    throw conflict(resource.plural, current.metadata.name ?? "", "the object has been modified; please apply your changes to the latest version and try again", resource.group);
  }
  const replicas = ((body.spec ?? {}) as JsonObject).replicas ?? 0;
  if (typeof replicas !== "number" || !Number.isSafeInteger(replicas) || replicas < 0 || replicas > 2_147_483_647) {
    throw badRequest(`Scale.spec.replicas: Invalid value: ${JSON.stringify(replicas)}: must be greater than or equal to 0`);
  }
  return replicas;
}

/** Applies a merge or JSON patch to the Scale view (strategic merge on a Scale is a merge: it has no lists). */
export function patchScale(view: KubeObject, type: "merge" | "json" | "strategic", patch: unknown): unknown {
  return type === "json" ? applyJsonPatch(view, patch) : applyMergePatch(view, patch);
}
