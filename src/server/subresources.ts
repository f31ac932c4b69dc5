// The subresources a real server lists beyond status and scale, each answered as kube-apiserver answers it where
// settle can do so honestly: `pods/binding` and `bindings` assign a node (what the scheduler calls),
// `namespaces/finalize` sets spec.finalizers, `certificatesigningrequests/approval` sets the approval conditions,
// and `pods/log` reads a log settle does not have (empty, after the real checks of the container). The streaming
// ones (exec, attach, portforward, proxy) need a kubelet or a backend settle does not run: they get the errors a
// real server gives when it cannot reach one, never a 404 that would say the API is missing.
import { formatTimestamp } from "../api/clock.ts";
import type { Clock } from "../api/clock.ts";
import { ApiError, badRequest, conflict, invalid } from "../api/errors.ts";
import type { KubeObject } from "../api/object.ts";
import { decodeBody } from "./http.ts";
import { sendObject } from "./resources.ts";
import type { ResourceRequest } from "./resources.ts";
import type { ResourceRoute } from "./routes.ts";
import { cloneJson, type LooseJsonObject as Json } from "../api/json.ts";


const proxyVerbs = ["create", "delete", "get", "patch", "update"];

/** Discovery entries, as the real server's core/v1 and certificates.k8s.io/v1 documents list them. */
export function subresourceDiscovery(group: string, version: string): Json[] {
  const entry = (name: string, kind: string, verbs: string[], namespaced = true) => ({ name, singularName: "", namespaced, kind, verbs });
  if (group === "" && version === "v1") {
    return [
      entry("pods/attach", "PodAttachOptions", ["create", "get"]),
      entry("pods/binding", "Binding", ["create"]),
      entry("pods/exec", "PodExecOptions", ["create", "get"]),
      entry("pods/log", "Pod", ["get"]),
      entry("pods/portforward", "PodPortForwardOptions", ["create", "get"]),
      entry("pods/proxy", "PodProxyOptions", proxyVerbs),
      entry("nodes/proxy", "NodeProxyOptions", proxyVerbs, false),
      entry("services/proxy", "ServiceProxyOptions", proxyVerbs),
      entry("namespaces/finalize", "Namespace", ["update"], false),
    ];
  }
  if (group === "certificates.k8s.io" && version === "v1") return [entry("certificatesigningrequests/approval", "CertificateSigningRequest", ["get", "patch", "update"], false)];
  return [];
}

const served: Readonly<Record<string, readonly string[]>> = {
  "/pods": ["attach", "binding", "exec", "log", "portforward", "proxy"],
  "/nodes": ["proxy"],
  "/services": ["proxy"],
  "/namespaces": ["finalize"],
  "certificates.k8s.io/certificatesigningrequests": ["approval"],
};

/** True for an item subresource this file answers. */
export function isServedSubresource(route: ResourceRoute): boolean {
  if (route.name === undefined || route.subresource === undefined) return false;
  return served[`${route.group}/${route.plural}`]?.includes(route.subresource) ?? false;
}

function methodNotAllowed(r: ResourceRequest, allowed: readonly string[]): void {
  if (!allowed.includes(r.req.method ?? "")) {
    throw new ApiError("MethodNotAllowed", 405, `the server does not allow this method on the requested resource (${r.req.method ?? ""} ${r.route.plural}/${r.route.subresource ?? ""})`);
  }
}

async function bodyOf(r: ResourceRequest, what: string): Promise<Json> {
  const body = decodeBody(r.req.headers["content-type"], await r.body());
  if (body === null || typeof body !== "object" || Array.isArray(body)) throw badRequest(`the request body must be a ${what} object`);
  return body as Json;
}

export async function handleServedSubresource(r: ResourceRequest, clock: Clock): Promise<void> {
  const name = r.route.name!;
  switch (`${r.route.plural}/${r.route.subresource}`) {
    case "pods/binding":
      methodNotAllowed(r, ["POST"]);
      return handleBinding(r, clock, name);
    case "pods/log":
      methodNotAllowed(r, ["GET"]);
      return handleLog(r);
    case "namespaces/finalize":
      methodNotAllowed(r, ["PUT"]);
      return handleFinalize(r);
    case "certificatesigningrequests/approval":
      methodNotAllowed(r, ["GET", "PUT"]);
      return handleApproval(r);
    default:
      return refuseStream(r);
  }
}

/**
 * POST `pods/{name}/binding` or `bindings`: sets spec.nodeName of an unassigned pod, copies the Binding's
 * annotations onto it and marks it PodScheduled, as the registry's assignPod does; 409 for a pod already assigned
 * or being deleted.
 */
export async function handleBinding(r: ResourceRequest, clock: Clock, urlName?: string): Promise<void> {
  if (r.req.method !== "POST" || (urlName === undefined && r.route.name !== undefined)) {
    throw new ApiError("MethodNotAllowed", 405, `the server does not allow this method on the requested resource (${r.req.method ?? ""} bindings)`);
  }
  if (r.route.namespace === undefined) throw new ApiError("NotFound", 404, "the server could not find the requested resource", {});
  const binding = await bodyOf(r, "Binding");
  const name = typeof binding.metadata?.name === "string" ? binding.metadata.name : "";
  if (urlName !== undefined && name !== urlName) throw badRequest("name in URL does not match name in Binding object");
  const target = binding.target ?? {};
  const errors = [];
  if (typeof target.name !== "string" || target.name === "") errors.push({ field: "target.name", type: "FieldValueRequired", message: "Required value" });
  if (target.kind !== undefined && target.kind !== "" && target.kind !== "Node") errors.push({ field: "target.kind", type: "FieldValueNotSupported", message: `Unsupported value: ${JSON.stringify(target.kind)}: must be empty or 'Node'` });
  if (errors.length > 0) throw invalid("Binding", name, errors);
  const namespace = r.route.namespace ?? "";
  const pod = r.store.get({ apiVersion: "v1", kind: "Pod", namespace, name }) as Json;
  if (pod.metadata.deletionTimestamp !== undefined) throw conflict("pods/binding", name, `pod ${name} is being deleted, cannot be assigned to a host`);
  if (typeof pod.spec?.nodeName === "string" && pod.spec.nodeName !== "") throw conflict("pods/binding", name, `pod ${name} is already assigned to node ${JSON.stringify(pod.spec.nodeName)}`);
  const annotations = { ...pod.metadata.annotations, ...binding.metadata?.annotations };
  const next = cloneJson(pod);
  next.spec.nodeName = target.name;
  if (Object.keys(annotations).length > 0) next.metadata.annotations = annotations;
  const updated = r.store.update(next as KubeObject) as Json;
  // The scheduled condition goes through the status subresource, as the registry writes pod and status at once.
  const conditions = ((updated.status?.conditions ?? []) as Json[]).filter((c) => c?.type !== "PodScheduled");
  conditions.push({ type: "PodScheduled", status: "True", lastProbeTime: null, lastTransitionTime: formatTimestamp(clock.now()) });
  r.store.updateStatus({ ...updated, status: { ...updated.status, conditions } } as unknown as KubeObject);
  r.wrote();
  sendObject(r, 201, { apiVersion: "v1", kind: "Status", metadata: {}, status: "Success", code: 201 } as unknown as KubeObject);
}

/**
 * GET `pods/{name}/log`: the container is checked as the real server checks it (named and in the pod, or the
 * pod's only container); settle runs no containers, so the log is empty, as a real server's is for a pod no node
 * has started.
 */
async function handleLog(r: ResourceRequest): Promise<void> {
  const name = r.route.name!;
  const pod = r.store.get({ apiVersion: "v1", kind: "Pod", namespace: r.route.namespace ?? "", name }) as Json;
  const names = ["containers", "initContainers", "ephemeralContainers"].flatMap((field) => ((pod.spec?.[field] ?? []) as Json[]).map((c) => String(c?.name)));
  const asked = r.query.get("container");
  const defaulted = pod.metadata.annotations?.["kubectl.kubernetes.io/default-container"];
  const container = asked ?? (typeof defaulted === "string" ? defaulted : undefined);
  if (container === undefined || container === "") {
    const main = ((pod.spec?.containers ?? []) as Json[]).map((c) => String(c?.name));
    if (main.length !== 1) throw badRequest(`a container name must be specified for pod ${name}, choose one of: [${main.join(" ")}]`);
  } else if (!names.includes(container)) throw badRequest(`container ${container} is not valid for pod ${name}`);
  r.res.writeHead(200, { "Content-Type": "text/plain", "Content-Length": 0, "Cache-Control": "no-cache, private" });
  r.res.end();
}

/** PUT `namespaces/{name}/finalize`: only spec.finalizers of the body is taken, as the finalize strategy does. */
async function handleFinalize(r: ResourceRequest): Promise<void> {
  const body = await bodyOf(r, "Namespace");
  const name = r.route.name!;
  if (body.metadata?.name !== undefined && body.metadata.name !== name) throw badRequest("the name of the object (" + String(body.metadata.name) + ") does not match the name on the URL (" + name + ")");
  const finalizers = body.spec?.finalizers ?? [];
  if (!Array.isArray(finalizers) || !finalizers.every((f) => typeof f === "string")) throw badRequest("spec.finalizers must be a list of strings");
  const resourceVersion = typeof body.metadata?.resourceVersion === "string" ? body.metadata.resourceVersion : undefined;
  if (r.store.finalizeNamespace === undefined) throw new ApiError("MethodNotAllowed", 405, "this store cannot finalize namespaces");
  const updated = r.store.finalizeNamespace(name, finalizers, resourceVersion);
  r.wrote();
  sendObject(r, 200, updated);
}

/**
 * GET or PUT `certificatesigningrequests/{name}/approval`: a PUT changes only status.conditions, where approvers
 * add Approved or Denied (one of them at most, as the real validation requires).
 */
async function handleApproval(r: ResourceRequest): Promise<void> {
  const name = r.route.name!;
  const current = r.store.get({ apiVersion: "certificates.k8s.io/v1", kind: "CertificateSigningRequest", name }) as Json;
  if (r.req.method === "GET") return sendObject(r, 200, current as KubeObject);
  const body = await bodyOf(r, "CertificateSigningRequest");
  const conditions = (body.status?.conditions ?? []) as Json[];
  if (!Array.isArray(conditions)) throw badRequest("status.conditions must be a list");
  const types = new Set(conditions.map((c) => c?.type));
  if (types.has("Approved") && types.has("Denied")) {
    throw invalid("CertificateSigningRequest", name, [{ field: "status.conditions", type: "FieldValueInvalid", message: "Invalid value: \"Approved\": Approved and Denied conditions are mutually exclusive" }], "certificates.k8s.io");
  }
  const next = { ...current, metadata: { ...current.metadata, resourceVersion: body.metadata?.resourceVersion ?? current.metadata.resourceVersion }, status: { ...current.status, conditions } };
  const updated = r.store.updateStatus(next as unknown as KubeObject);
  r.wrote();
  sendObject(r, 200, updated);
}

/** A 503 ServiceUnavailable Status (a reason the store's own errors never carry). */
function unavailable(message: string): ApiError {
  return ApiError.fromStatus({ apiVersion: "v1", kind: "Status", metadata: {}, status: "Failure", reason: "ServiceUnavailable", code: 503, message });
}

/**
 * exec, attach, portforward and proxy: what kube-apiserver answers when there is no backend to reach. A pod no
 * node runs has no host (400, as the real registry says); otherwise the kubelet or the service's endpoints are
 * what settle does not run, which a real server reports as a backend it cannot dial.
 */
function refuseStream(r: ResourceRequest): void {
  const name = r.route.name!;
  const namespace = r.route.namespace ?? "";
  if (r.route.plural === "services") {
    const service = name.split(":")[0]!;
    r.store.get({ apiVersion: "v1", kind: "Service", namespace, name: service });
    throw unavailable(`no endpoints available for service ${JSON.stringify(service)}`);
  }
  if (r.route.plural === "nodes") {
    const node = name.split(":")[0]!;
    r.store.get({ apiVersion: "v1", kind: "Node", name: node });
    throw unavailable(`error trying to reach service: settle serve runs no kubelet on node ${JSON.stringify(node)}`);
  }
  const podName = r.route.subresource === "proxy" ? name.split(":")[0]! : name;
  const pod = r.store.get({ apiVersion: "v1", kind: "Pod", namespace, name: podName }) as Json;
  const container = r.query.get("container");
  const containers = ((pod.spec?.containers ?? []) as Json[]).map((c) => String(c?.name));
  if (container !== null && container !== "" && r.route.subresource !== "portforward" && r.route.subresource !== "proxy" && !containers.includes(container)) {
    throw badRequest(`container ${container} is not valid for pod ${podName}`);
  }
  if (typeof pod.spec?.nodeName !== "string" || pod.spec.nodeName === "") throw badRequest(`pod ${podName} does not have a host assigned`);
  throw new ApiError("InternalError", 500, `error dialing backend: settle serve runs no kubelet on node ${JSON.stringify(pod.spec.nodeName)}, so ${r.route.subresource} is not available`);
}
