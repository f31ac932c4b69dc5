// Resources that are not stored: the review kinds (who the caller is, and what RBAC allows it or another user: see
// rbac.ts), a pod's `eviction` (which honours PodDisruptionBudgets) and a service account's `token` (a JWT signed
// with the server's key, which the server accepts as that account). Discovery lists them as a 1.35 server does.
import { formatTimestamp } from "../../api/clock.ts";
import type { Clock } from "../../api/clock.ts";
import { ApiError, badRequest, invalid } from "../../api/errors.ts";
import type { KubeObject } from "../../api/object.ts";
import { labelSelectorFromSpec, matchesLabels } from "../../api/selectors.ts";
import type { LabelSelector } from "../../api/object.ts";
import { decodeBody } from "../http.ts";
import { sendObject } from "../resources.ts";
import { subresourceDiscovery } from "../subresources.ts";
import type { ResourceRequest } from "../resources.ts";
import type { ResourceRoute } from "../routes.ts";
import type { ResourceType } from "../../api/resources.ts";
import { isRecord, type JsonObject } from "../../api/json.ts";
import type { Store } from "../../store/index.ts";
import { allowed, isMaster, requestUser, rulesOf } from "./rbac.ts";
import type { RequestAttributes, Tokens, UserInfo } from "./rbac.ts";

export { serverUser } from "./rbac.ts";

interface VirtualResource {
  group: string;
  version: string;
  plural: string;
  kind: string;
  namespaced: boolean;
}

const reviews: readonly VirtualResource[] = [
  { group: "authentication.k8s.io", version: "v1", plural: "selfsubjectreviews", kind: "SelfSubjectReview", namespaced: false },
  { group: "authentication.k8s.io", version: "v1", plural: "tokenreviews", kind: "TokenReview", namespaced: false },
  { group: "authorization.k8s.io", version: "v1", plural: "localsubjectaccessreviews", kind: "LocalSubjectAccessReview", namespaced: true },
  { group: "authorization.k8s.io", version: "v1", plural: "selfsubjectaccessreviews", kind: "SelfSubjectAccessReview", namespaced: false },
  { group: "authorization.k8s.io", version: "v1", plural: "selfsubjectrulesreviews", kind: "SelfSubjectRulesReview", namespaced: false },
  { group: "authorization.k8s.io", version: "v1", plural: "subjectaccessreviews", kind: "SubjectAccessReview", namespaced: false },
  // Not a review: create-only and never stored all the same (subresources.ts answers it).
  { group: "", version: "v1", plural: "bindings", kind: "Binding", namespaced: true },
];

/** Group versions that hold only create-only resources, for discovery. */
export const virtualGroupVersions: ReadonlyMap<string, readonly string[]> = new Map([
  ["authentication.k8s.io", ["v1"]],
  ["authorization.k8s.io", ["v1"]],
]);

/** Discovery entries of the resources and subresources this file serves, for one group version. */
export function virtualDiscovery(group: string, version: string): JsonObject[] {
  const entries: JsonObject[] = reviews
    .filter((r) => r.group === group && r.version === version)
    .map((r) => ({ name: r.plural, singularName: r.kind.toLowerCase(), namespaced: r.namespaced, kind: r.kind, verbs: ["create"] }));
  if (group === "" && version === "v1") {
    entries.push({ name: "pods/eviction", singularName: "", namespaced: true, group: "policy", version: "v1", kind: "Eviction", verbs: ["create"] });
    entries.push({ name: "serviceaccounts/token", singularName: "", namespaced: true, group: "authentication.k8s.io", version: "v1", kind: "TokenRequest", verbs: ["create"] });
  }
  return [...entries, ...subresourceDiscovery(group, version)];
}

export function reviewOf(route: ResourceRoute): VirtualResource | undefined {
  return reviews.find((r) => r.group === route.group && r.version === route.version && r.plural === route.plural);
}

/** A review kind as a resource type (create-only, never stored). */
export function reviewResourceType(review: VirtualResource): ResourceType {
  const { group, version, kind, plural, namespaced } = review;
  return { group, version, kind, plural, singular: kind.toLowerCase(), listKind: "", namespaced, statusSubresource: false, shortNames: [], fieldLabels: [], nameRule: "dns1123-subdomain", verbs: ["create"] };
}

const allowAll = {
  resourceRules: [{ verbs: ["*"], apiGroups: ["*"], resources: ["*"] }],
  nonResourceRules: [{ verbs: ["*"], nonResourceURLs: ["*"] }],
  incomplete: false,
};

/** What a SubjectAccessReview's spec asks about, as RBAC's request attributes. */
function attributesOf(spec: JsonObject): RequestAttributes {
  const resource = isRecord(spec.resourceAttributes) ? spec.resourceAttributes : undefined;
  if (resource === undefined) {
    const path = isRecord(spec.nonResourceAttributes) ? spec.nonResourceAttributes : {};
    return { verb: String(path.verb ?? ""), path: String(path.path ?? "") };
  }
  const text = (value: unknown) => (typeof value === "string" && value !== "" ? value : undefined);
  return { verb: String(resource.verb ?? ""), resource: { group: String(resource.group ?? ""), plural: String(resource.resource ?? ""), subresource: text(resource.subresource), namespace: text(resource.namespace), name: text(resource.name) } };
}

/** The rules a user holds in a namespace, split as a SelfSubjectRulesReview answers them. */
function rulesReview(store: Store, user: UserInfo, namespace: string | undefined): JsonObject {
  if (isMaster(user)) return allowAll;
  const rules = rulesOf(store, user, namespace);
  return {
    resourceRules: rules.filter((r) => (r.resources ?? []).length > 0).map(({ verbs, apiGroups, resources, resourceNames }) => ({ verbs, apiGroups, resources, ...(resourceNames === undefined ? {} : { resourceNames }) })),
    nonResourceRules: rules.filter((r) => (r.nonResourceURLs ?? []).length > 0).map(({ verbs, nonResourceURLs }) => ({ verbs, nonResourceURLs })),
    incomplete: false,
  };
}

function access(store: Store, user: UserInfo, spec: JsonObject): JsonObject {
  if (isMaster(user)) return { allowed: true, reason: "settle serve: system:masters may do anything" };
  return allowed(store, user, attributesOf(spec)) ? { allowed: true, reason: "RBAC: allowed by a binding of the user's" } : { allowed: false };
}

/** The answer of a review: who the caller is, and what RBAC allows the caller (or the user a review names). */
function reviewStatus(r: ResourceRequest, kind: string, spec: JsonObject, tokens: Tokens): JsonObject {
  const caller = requestUser(r.req);
  switch (kind) {
    case "SelfSubjectReview":
      return { userInfo: caller };
    case "TokenReview": {
      const user = typeof spec.token === "string" ? tokens.user(spec.token) : undefined;
      return user !== undefined ? { authenticated: true, user, audiences: spec.audiences ?? [] } : { authenticated: false, error: "invalid bearer token" };
    }
    case "SelfSubjectRulesReview":
      return rulesReview(r.store, caller, typeof spec.namespace === "string" ? spec.namespace : undefined);
    case "SelfSubjectAccessReview":
      return access(r.store, caller, spec);
    default: {
      // SubjectAccessReview and LocalSubjectAccessReview: the user the spec names.
      const groups = Array.isArray(spec.groups) ? spec.groups.filter((g): g is string => typeof g === "string") : [];
      return access(r.store, { username: String(spec.user ?? ""), groups }, spec);
    }
  }
}

/** POST of a review: the request echoed with its status, 201 as kube-apiserver answers a create. */
export async function handleReview(r: ResourceRequest, review: VirtualResource, tokens: Tokens): Promise<void> {
  if (r.req.method !== "POST" || r.route.name !== undefined) {
    throw new ApiError("MethodNotAllowed", 405, `the server does not allow this method on the requested resource (${r.req.method ?? ""} ${review.plural})`);
  }
  if (review.namespaced !== (r.route.namespace !== undefined)) throw new ApiError("NotFound", 404, "the server could not find the requested resource", {});
  const body = decodeBody(r.req.headers["content-type"], await r.body());
  if (!isRecord(body)) throw badRequest("the request body must be a JSON object");
  const spec = isRecord(body.spec) ? body.spec : {};
  if (review.kind === "LocalSubjectAccessReview" && isRecord(spec.resourceAttributes) && spec.resourceAttributes.namespace !== r.route.namespace) {
    throw invalid(review.kind, "", [{ field: "spec.resourceAttributes.namespace", type: "FieldValueInvalid", message: `Invalid value: ${JSON.stringify(spec.resourceAttributes.namespace)}: must match metadata.namespace` }], review.group);
  }
  const metadata = isRecord(body.metadata) ? body.metadata : {};
  const answer = { apiVersion: `${review.group}/${review.version}`, kind: review.kind, metadata: { ...metadata, creationTimestamp: null }, spec, status: reviewStatus(r, review.kind, spec, tokens) };
  sendObject(r, 201, answer as unknown as KubeObject);
}

/** The ready, not terminating pods a PodDisruptionBudget covers, and how many it must keep. */
function disruptionsAllowed(pdb: KubeObject, pods: readonly KubeObject[]): { allowed: number; healthy: number; desired: number } {
  const spec = (pdb.spec ?? {}) as JsonObject;
  const ready = (pod: KubeObject) => {
    const conditions = ((pod.status as JsonObject | undefined)?.conditions ?? []) as JsonObject[];
    return pod.metadata.deletionTimestamp === undefined && conditions.some((c) => c.type === "Ready" && c.status === "True");
  };
  const expected = pods.length;
  const healthy = pods.filter(ready).length;
  const amount = (value: unknown, roundUp: boolean): number => {
    if (typeof value === "number") return value;
    const percent = typeof value === "string" ? /^(\d+)%$/.exec(value) : null;
    if (percent === null) throw badRequest(`PodDisruptionBudget ${pdb.metadata.name}: invalid value ${JSON.stringify(value)}`);
    const exact = (Number(percent[1]) * expected) / 100;
    return roundUp ? Math.ceil(exact) : Math.floor(exact);
  };
  let desired = 0;
  if (spec.maxUnavailable !== undefined) desired = Math.max(0, expected - amount(spec.maxUnavailable, true));
  else if (spec.minAvailable !== undefined) desired = amount(spec.minAvailable, true);
  return { allowed: Math.max(0, healthy - desired), healthy, desired };
}

/**
 * POST `pods/{name}/eviction`: the pod is deleted (with the Eviction's deleteOptions) unless the one
 * PodDisruptionBudget that covers it allows no disruption now (429, as from kube-apiserver). The budget is computed
 * from the pods at hand (Ready and not terminating), as the disruption controller would have recorded it.
 */
export async function handleEviction(r: ResourceRequest): Promise<void> {
  if (r.req.method !== "POST") throw new ApiError("MethodNotAllowed", 405, `the server does not allow this method on the requested resource (${r.req.method ?? ""} pods/eviction)`);
  const namespace = r.route.namespace ?? "";
  const name = r.route.name ?? "";
  const body = decodeBody(r.req.headers["content-type"], await r.body());
  if (!isRecord(body)) throw badRequest("the request body must be an Eviction object");
  const evictedName = isRecord(body.metadata) ? body.metadata.name : undefined;
  if (evictedName !== undefined && evictedName !== name) throw badRequest(`name in URL does not match name in Eviction object`);
  const pod = r.store.get({ apiVersion: "v1", kind: "Pod", namespace, name });
  const options = isRecord(body.deleteOptions) ? body.deleteOptions : {};
  const phase = (pod.status as JsonObject | undefined)?.phase;
  // A pod that is done, not yet running, or already terminating cannot count against a budget.
  const ignoreBudgets = phase === "Succeeded" || phase === "Failed" || phase === "Pending" || pod.metadata.deletionTimestamp !== undefined;
  if (!ignoreBudgets) checkBudget(r, pod, namespace);
  const deleteOptions: Parameters<ResourceRequest["store"]["delete"]>[0] = { apiVersion: "v1", kind: "Pod", namespace, name };
  if (typeof options.gracePeriodSeconds === "number") deleteOptions.gracePeriodSeconds = options.gracePeriodSeconds;
  if (Array.isArray(options.dryRun) && options.dryRun.length > 0) deleteOptions.dryRun = true;
  const pre = isRecord(options.preconditions) ? options.preconditions : undefined;
  if (pre !== undefined) deleteOptions.preconditions = { ...(typeof pre.uid === "string" ? { uid: pre.uid } : {}), ...(typeof pre.resourceVersion === "string" ? { resourceVersion: pre.resourceVersion } : {}) };
  r.store.delete(deleteOptions);
  if (deleteOptions.dryRun !== true) r.wrote();
  sendObject(r, 201, { apiVersion: "v1", kind: "Status", metadata: {}, status: "Success", code: 201 } as unknown as KubeObject);
}

function checkBudget(r: ResourceRequest, pod: KubeObject, namespace: string): void {
  const budgets = r.store.list({ apiVersion: "policy/v1", kind: "PodDisruptionBudget", namespace }).items.filter((pdb) => {
    const selector = (pdb.spec as JsonObject | undefined)?.selector;
    if (!isRecord(selector)) return false;
    try {
      return matchesLabels(labelSelectorFromSpec(selector as LabelSelector), pod.metadata.labels ?? {});
    } catch {
      return false;
    }
  });
  if (budgets.length === 0) return;
  if (budgets.length > 1) throw new ApiError("InternalError", 500, "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.");
  const pdb = budgets[0]!;
  const selector = labelSelectorFromSpec((pdb.spec as JsonObject).selector as LabelSelector);
  const pods = r.store.list({ apiVersion: "v1", kind: "Pod", namespace }).items.filter((p) => matchesLabels(selector, p.metadata.labels ?? {}));
  const { allowed, healthy, desired } = disruptionsAllowed(pdb, pods);
  if (allowed > 0) return;
  throw new ApiError("TooManyRequests", 429, "Cannot evict pod as it would violate the pod's disruption budget.", {
    causes: [{ reason: "DisruptionBudget", message: `The disruption budget ${pdb.metadata.name} needs ${desired} healthy pods and has ${healthy} currently` }],
  });
}

const tokenSecondsMin = 600;

/** POST `serviceaccounts/{name}/token`: a JWT for the service account, signed with the server's key (rbac.ts). */
export async function handleTokenRequest(r: ResourceRequest, clock: Clock, tokens: Tokens): Promise<void> {
  if (r.req.method !== "POST") throw new ApiError("MethodNotAllowed", 405, `the server does not allow this method on the requested resource (${r.req.method ?? ""} serviceaccounts/token)`);
  const namespace = r.route.namespace ?? "";
  const name = r.route.name ?? "";
  const account = r.store.get({ apiVersion: "v1", kind: "ServiceAccount", namespace, name });
  const raw = await r.body();
  const body = raw.length === 0 ? {} : decodeBody(r.req.headers["content-type"], raw);
  if (!isRecord(body)) throw badRequest("the request body must be a TokenRequest object");
  const spec = isRecord(body.spec) ? body.spec : {};
  const seconds = typeof spec.expirationSeconds === "number" ? spec.expirationSeconds : 3600;
  if (seconds < tokenSecondsMin) {
    throw invalid("TokenRequest", name, [{ field: "spec.expirationSeconds", type: "FieldValueInvalid", message: `Invalid value: ${seconds}: may not specify a duration less than 10 minutes` }], "authentication.k8s.io");
  }
  const audiences = Array.isArray(spec.audiences) && spec.audiences.length > 0 ? spec.audiences : ["https://kubernetes.default.svc.cluster.local"];
  const nowSeconds = Math.floor(clock.now() / 1000);
  const claims = { aud: audiences, exp: nowSeconds + seconds, iat: nowSeconds, iss: "https://kubernetes.default.svc.cluster.local", sub: `system:serviceaccount:${namespace}:${name}`, "kubernetes.io": { namespace, serviceaccount: { name, uid: account.metadata.uid } } };
  const token = tokens.sign(claims);
  const metadata = { name, namespace, creationTimestamp: formatTimestamp(clock.now()) };
  const answer = { apiVersion: "authentication.k8s.io/v1", kind: "TokenRequest", metadata, spec: { ...spec, audiences, expirationSeconds: seconds }, status: { token, expirationTimestamp: formatTimestamp((nowSeconds + seconds) * 1000) } };
  sendObject(r, 201, answer as unknown as KubeObject);
}
